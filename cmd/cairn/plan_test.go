package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
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
	out := stdout.String()
	for _, re := range []string{
		`(?m)^approved plan ` + id + ` of deployment cli \(s3://cairn-state/approvals/cli/` + id + `\): its apply run executes exactly the reviewed change sets$`,
		`(?m)^run (\S+) of deployment cli: apply of plan ` + id + `$`,
		`(?m)^  \d\d:\d\d  extra  create    done$`,
		`(?m)^run \S+ succeeded in \S+: 1 created, 0 updated, 0 deleted, 2 unchanged, 0 failed$`,
		`(?m)^report: s3://cairn-state/runs/cli/\S+\.md$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("approve output lacks a line matching %s:\n%s", re, out)
		}
	}
	applyRun := regexp.MustCompile(`(?m)^run (\S+) of deployment cli: apply`).FindStringSubmatch(out)

	// Approving it again is refused at once: nothing is written, exit 1.
	tests := []struct {
		name string
		args []string
		want string // a regular expression of the whole of stderr
	}{
		{"already applied", []string{"approve", "cli", id},
			"cairn: plan " + id + " was already applied at \\S+ by run " + applyRun[1] + ": a plan applies at most once; make a new one with `cairn plan PATH --deployment cli`"},
		{"unknown plan", []string{"approve", "cli", "no-such-plan"},
			"cairn: deployment cli has no plan no-such-plan; its recent plans: " + id + " \\(applied, \\S+ ago\\), \\S+ \\(superseded, \\S+ ago\\), \\S+ \\(superseded, \\S+ ago\\) \\(see `cairn plans cli`\\)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := approvals(t)
			stdout.Reset()
			stderr.Reset()
			if code := run(tt.args, &stdout, &stderr); code != 1 || stdout.Len() != 0 || !regexp.MustCompile("^"+tt.want+"\n$").MatchString(stderr.String()) {
				t.Errorf("exit %d\nstdout: %s\nstderr: %s\nwant stderr matching: %s", code, stdout.String(), stderr.String(), tt.want)
			}
			if after := approvals(t); after != before {
				t.Errorf("a refused approval wrote an approval object: %d before, %d after", before, after)
			}
		})
	}
}

// approvals counts the approval objects in the bucket.
func approvals(t *testing.T) int {
	t.Helper()
	cfg, err := awsclient.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out, err := awsclient.S3(cfg).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("cairn-state"), Prefix: aws.String("approvals/")})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Contents)
}
