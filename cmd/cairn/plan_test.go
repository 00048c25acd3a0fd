package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/plan"
)

// TestPlanApproveCLI plans a change with `cairn plan --wait` in each format, approves it
// with `cairn approve --wait`, and is refused when approving it again.
func TestPlanApproveCLI(t *testing.T) {
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", "cairn-state")
	waitArgs := []string{"--wait", "--poll", "20ms", "--timeout", "1m"}
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"push", bundleDir(t, ""), "--deployment", "cli"}, waitArgs...), &stdout, &stderr); code != 0 {
		t.Fatalf("push exited %d: %s %s", code, stdout.String(), stderr.String())
	}
	changed := bundleDir(t, "  - name: extra\n    template_path: topic.yaml\n")

	var id string
	for _, format := range []string{"md", "json", "text"} {
		stdout.Reset()
		stderr.Reset()
		code := run(append([]string{"plan", changed, "--deployment", "cli", "--format", format}, waitArgs...), &stdout, &stderr)
		if code != 0 {
			t.Fatalf("plan --format %s exited %d\nstdout:\n%s\nstderr:\n%s", format, code, stdout.String(), stderr.String())
		}
		out := stdout.String()
		switch format {
		case "md":
			if !strings.HasPrefix(out, "# cairn plan ") || !strings.Contains(out, "| extra | cli-extra | create |") || !strings.Contains(stderr.String(), "plan id: ") {
				t.Errorf("markdown plan:\n%s\nstderr:\n%s", out, stderr.String())
			}
		case "json":
			var p plan.Document
			if err := json.Unmarshal(stdout.Bytes(), &p); err != nil || p.Stack("extra") == nil || p.Stack("extra").ChangeSetID == "" {
				t.Errorf("json plan: %v\n%s", err, out)
			}
		case "text":
			m := regexp.MustCompile(`plan id: (\S+)`).FindStringSubmatch(out)
			if m == nil || !strings.Contains(out, "extra") || !strings.Contains(out, "apply exactly this plan: cairn approve cli "+m[1]) {
				t.Fatalf("text plan:\n%s", out)
			}
			id = m[1]
		}
	}

	stdout.Reset()
	if code := run(append([]string{"approve", "cli", id}, waitArgs...), &stdout, &stderr); code != 0 {
		t.Fatalf("approve exited %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "apply run ") || !strings.Contains(out, "extra") || !strings.Contains(out, "succeeded") {
		t.Errorf("approve output:\n%s", out)
	}
	stdout.Reset()
	if code := run(append([]string{"approve", "cli", id}, waitArgs...), &stdout, &stderr); code != 1 || !strings.Contains(stdout.String(), "was already applied by run") {
		t.Errorf("second approve exited %d:\n%s", code, stdout.String())
	}
	stderr.Reset()
	if code := run([]string{"approve", "cli", "no-such-plan"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "is no-such-plan a plan id of deployment cli?") {
		t.Errorf("approve of an unknown plan exited %d: %s", code, stderr.String())
	}
}
