package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/plan"
)

// TestPlanApproveCLI plans a change with `cairn plan --wait` in each format, approves it
// with `cairn approve --wait`, and is refused when approving it again.
func TestPlanApproveCLI(t *testing.T) {
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
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
			if !strings.HasPrefix(out, "<!-- cairn:plan deployment=cli -->\n# cairn plan ") || !strings.Contains(out, "| extra | cli-extra | create |") || !strings.Contains(stderr.String(), "plan id: ") {
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
		`(?m)^approved plan ` + id + ` of deployment cli \(s3://cairn-000000000000-us-east-1/approvals/cli/` + id + `\): its apply run executes exactly the reviewed change sets$`,
		`(?m)^run (\S+) of deployment cli: apply of plan ` + id + `$`,
		`(?m)^  \d\d:\d\d  extra  create    done$`,
		`(?m)^run \S+ succeeded in \S+: 1 created, 0 updated, 0 deleted, 2 unchanged, 0 failed$`,
		`(?m)^report: s3://cairn-000000000000-us-east-1/runs/cli/\S+\.md$`,
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
	out, err := awsclient.S3(cfg).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(localBucket), Prefix: aws.String("approvals/")})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Contents)
}

// TestPlansAndStatusAsTerraformUsersExpect: `cairn plan` without --wait names the plan and
// the next command; `cairn plans` lists each plan with what became of it; `cairn status`
// shows the last apply as the deployment's state, not an approval refused after it.
func TestPlansAndStatusAsTerraformUsersExpect(t *testing.T) {
	s3c := deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	waitArgs := []string{"--wait", "--poll", "20ms", "--timeout", "1m"}
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"push", bundleDir(t, ""), "--deployment", "cli"}, waitArgs...), &stdout, &stderr); code != 0 {
		t.Fatalf("push exited %d: %s %s", code, stdout.String(), stderr.String())
	}

	// Without --wait: the plan's id once its run started, and what to run next.
	stdout.Reset()
	first := bundleDir(t, "  - name: extra\n    template_path: topic.yaml\n")
	if code := run([]string{"plan", first, "--deployment", "cli"}, &stdout, &stderr); code != 0 {
		t.Fatalf("plan exited %d: %s %s", code, stdout.String(), stderr.String())
	}
	m := regexp.MustCompile("(?m)^plan (\\S+) is being made: show it with `cairn plans cli (\\S+)`, then apply exactly it with `cairn approve cli (\\S+)`$").FindStringSubmatch(stdout.String())
	if m == nil || m[1] != m[2] || m[1] != m[3] {
		t.Fatalf("plan without --wait:\n%s", stdout.String())
	}
	superseded := m[1]

	stdout.Reset()
	second := bundleDir(t, "  - name: other\n    template_path: topic.yaml\n")
	if code := run(append([]string{"plan", second, "--deployment", "cli"}, waitArgs...), &stdout, &stderr); code != 0 {
		t.Fatalf("plan --wait exited %d: %s %s", code, stdout.String(), stderr.String())
	}
	id := regexp.MustCompile(`(?m)^plan id: (\S+)$`).FindStringSubmatch(stdout.String())[1]

	list := func() string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run([]string{"plans", "cli"}, &out, &errOut); code != 0 {
			t.Fatalf("plans exited %d: %s", code, errOut.String())
		}
		return out.String()
	}
	got := list()
	for _, re := range []string{
		`^PLAN +STATUS +AGE +CHANGES +BUNDLE +DETAIL$`,
		`^` + id + ` +planned +\d+[smhd] +1 stack +…\S+ +cairn approve cli ` + id + `$`,
		`^` + superseded + ` +superseded +\d+[smhd] +\d+ stacks? +…\S+ +this checkout was planned again as plan ` + id + `$`,
	} {
		if !regexp.MustCompile("(?m)" + re).MatchString(got) {
			t.Errorf("plans lacks a line matching %s:\n%s", re, got)
		}
	}
	stdout.Reset()
	if code := run([]string{"plans", "cli", "--latest"}, &stdout, &stderr); code != 0 || stdout.String() != id+"\n" {
		t.Errorf("plans --latest: exit %d, %q; want %s", code, stdout.String(), id)
	}
	stdout.Reset()
	if code := run([]string{"plans", "cli", id}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "plan "+id+" of deployment cli: planned") {
		t.Errorf("plans cli %s: exit %d\n%s", id, code, stdout.String())
	}
	// Approving the superseded plan is refused at once, pointing at the newest.
	stderr.Reset()
	if code := run([]string{"approve", "cli", superseded}, &stdout, &stderr); code != 1 ||
		!regexp.MustCompile("^cairn: plan "+superseded+" is superseded \\(.+\\): approve the newest plan instead: `cairn approve cli "+id+"`\n$").MatchString(stderr.String()) {
		t.Errorf("approve of the superseded plan: exit %d, stderr %q", code, stderr.String())
	}

	stdout.Reset()
	if code := run(append([]string{"approve", "cli", id}, waitArgs...), &stdout, &stderr); code != 0 {
		t.Fatalf("approve exited %d: %s %s", code, stdout.String(), stderr.String())
	}
	applied := regexp.MustCompile(`(?m)^run (\S+) of deployment cli: apply of plan `).FindStringSubmatch(stdout.String())[1]
	if got := list(); !regexp.MustCompile(`(?m)^` + id + ` +applied +\S+ +1 stack +\S+ +applied at \S+ by run ` + applied + `$`).MatchString(got) {
		t.Errorf("plans after the approval:\n%s", got)
	}
	stderr.Reset()
	if code := run([]string{"plans", "cli", "--latest"}, &stdout, &stderr); code != 1 ||
		stderr.String() != "cairn: deployment cli has no plan waiting for approval: make one with `cairn plan PATH --deployment cli`\n" {
		t.Errorf("plans --latest with none open: exit %d, %q", code, stderr.String())
	}

	// An approval written again by hand (as `aws s3 cp` would) is refused by the deployer;
	// the deployment's state is still the apply.
	before := runIDs(t)
	if _, err := s3c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(localBucket), Key: aws.String(layout.ApprovalKey("cli", id)), Body: strings.NewReader("again")}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); len(runIDs(t)) == len(before); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second approval started no run")
		}
	}
	stdout.Reset()
	if code := run([]string{"status", "cli"}, &stdout, &stderr); code != 0 {
		t.Fatalf("status exited %d: %s", code, stderr.String())
	}
	got = stdout.String()
	for _, re := range []string{
		`^deployment cli: succeeded by run ` + applied + ` \(apply of plan ` + id + `\)$`,
		`^other +cli-other +create +done`,
		`^  \S+ +apply of plan ` + id + ` +refused +\S+ ago +plan ` + id + ` was already applied`,
		`^  ` + applied + ` +apply of plan ` + id + ` +succeeded +\S+ ago +1 created, 0 updated, 0 deleted, 2 unchanged, 0 failed$`,
		`^  ` + id + ` +plan run +succeeded +\S+ ago +plan ` + id + `$`,
		`^  \S+ +push +succeeded +\S+ ago +2 created`,
	} {
		if !regexp.MustCompile("(?m)" + re).MatchString(got) {
			t.Errorf("status lacks a line matching %s:\n%s", re, got)
		}
	}
}

// runIDs lists the run documents of deployment cli.
func runIDs(t *testing.T) []string {
	t.Helper()
	cfg, err := awsclient.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ids, err := (&history.Store{S3: awsclient.S3(cfg), Bucket: localBucket}).RunIDs(context.Background(), "cli")
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
