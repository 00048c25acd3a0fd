package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/plan"
)

// The review flow of a team with several open pull requests, through the CLI as CI and
// people type it, against the emulator: plans of different pull requests coexist, and
// `cairn apply` of the merged content runs exactly the reviewed change sets made for it.

var reviewWait = []string{"--wait", "--poll", "20ms", "--timeout", "2m"}

// cli runs cairn with args and returns its exit code, stdout and stderr.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// mustCLI runs cairn with args, which must exit 0, and returns its stdout.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := cli(t, args...)
	if code != 0 {
		t.Fatalf("cairn %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// planPR plans dir for deployment as pull request pr and returns the plan.
func planPR(t *testing.T, deployment, dir, pr string) *plan.Document {
	t.Helper()
	out := mustCLI(t, append([]string{"plan", dir, "--deployment", deployment, "--pr", pr, "--format", "json"}, reviewWait...)...)
	var p plan.Document
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan of #%s: %v\n%s", pr, err, out)
	}
	if p.Status != plan.Planned {
		t.Fatalf("plan of #%s: %s (%s) %v", pr, p.Status, p.Reason, p.Refusals)
	}
	return &p
}

func changeSetIDs(p *plan.Document) []string {
	var ids []string
	for _, s := range p.Changing() {
		if s.ChangeSetID != "" {
			ids = append(ids, s.ChangeSetID)
		}
	}
	slices.Sort(ids)
	return ids
}

// applied runs `cairn apply dir` and returns its exit code and output with the change
// sets it created and executed.
func applied(t *testing.T, deployment, dir string) (code int, out string, created int, executed []string) {
	t.Helper()
	c0, e0 := changeSetsCreated(t), executedChangeSets(t)
	code, out, errOut := cli(t, append([]string{"apply", dir, "--deployment", deployment}, reviewWait...)...)
	executed = slices.Clone(executedChangeSets(t)[len(e0):])
	slices.Sort(executed)
	return code, out + errOut, changeSetsCreated(t) - c0, executed
}

// planStatus is the status `cairn plans` shows for plan id.
func planStatus(t *testing.T, deployment, id string) string {
	t.Helper()
	out := mustCLI(t, "plans", deployment)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + ` +(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("cairn plans %s does not list %s:\n%s", deployment, id, out)
	}
	return m[1]
}

// jobsBundle is the two-stack bundle with a third, independent stack jobs.
func jobsBundle(t *testing.T, topicName, jobsValue string) string {
	t.Helper()
	dir := bundleDir(t, "  - name: jobs\n    template_path: param.yaml\n    parameters:\n      Value: "+jobsValue+"\n")
	if topicName != "" {
		topic := "Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n    Properties:\n      DisplayName: " + topicName + "\nOutputs:\n  Arn:\n    Value: !Ref Topic\n"
		if err := os.WriteFile(filepath.Join(dir, "topic.yaml"), []byte(topic), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestTwoPullRequestsOnDifferentStacksBothApply: pull request #21 changes topic, #22
// changes jobs; both are planned before either merges, and both plans stay open. Each
// merge's `cairn apply` runs exactly its pull request's reviewed change set, creating
// none; a retried apply of applied content exits 0 and uploads nothing.
func TestTwoPullRequestsOnDifferentStacksBothApply(t *testing.T) {
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	t.Setenv("GITHUB_ACTIONS", "")
	mustCLI(t, append([]string{"push", jobsBundle(t, "", "v1"), "--deployment", "cli"}, reviewWait...)...)

	p21 := planPR(t, "cli", jobsBundle(t, "shop", "v1"), "21")
	p22 := planPR(t, "cli", jobsBundle(t, "", "v2"), "22")
	if got := [][]string{changeSetIDs(p21), changeSetIDs(p22)}; len(got[0]) != 1 || len(got[1]) != 1 || p21.Stack("topic").ChangeSetID == "" || p22.Stack("jobs").ChangeSetID == "" {
		t.Fatalf("plans: #21 %v, #22 %v", got[0], got[1])
	}
	if s := p21.Stack("param"); !s.InputsMayChange || !slices.Equal(s.KnownAfterApply, []string{"Value"}) || !slices.Equal(s.Feeds["Value"], []string{"P"}) {
		t.Errorf("#21's param reads topic's Arn: known after apply %v, feeds %v", s.KnownAfterApply, s.Feeds)
	}
	for _, p := range []*plan.Document{p21, p22} {
		if st := planStatus(t, "cli", p.ID); st != "planned" {
			t.Errorf("plan %s is %s with both pull requests open, want planned", p.ID, st)
		}
	}

	// #21 merges: main holds its content.
	code, out, created, executed := applied(t, "cli", checkout(t, jobsBundle(t, "shop", "v1"), timeAt(1)))
	t.Logf("merge of #21: exit %d, change sets created %d, executed %d %v (planned %v)\n%s", code, created, len(executed), executed, changeSetIDs(p21), out)
	if code != 0 || created != 0 || !slices.Equal(executed, changeSetIDs(p21)) {
		t.Fatalf("merge of #21: exit %d, created %d, executed %v; want 0, 0 and exactly %v\n%s", code, created, executed, changeSetIDs(p21), out)
	}
	if !strings.Contains(out, "plan "+p21.ID+" of pull request #21 (made ") || !strings.Contains(out, "its reviewed entries for param, topic") {
		t.Errorf("the apply does not say which plan it applied:\n%s", out)
	}
	if st := planStatus(t, "cli", p21.ID); st != "applied" {
		t.Errorf("plan of #21 after its merge: %s", st)
	}
	if st := planStatus(t, "cli", p22.ID); st != "planned" {
		t.Errorf("plan of #22 after #21 merged: %s, want planned (another stack)", st)
	}

	// #22 merges: main holds both changes.
	merged := checkout(t, jobsBundle(t, "shop", "v2"), timeAt(2))
	code, out, created, executed = applied(t, "cli", merged)
	t.Logf("merge of #22: exit %d, change sets created %d, executed %d %v (planned %v)\n%s", code, created, len(executed), executed, changeSetIDs(p22), out)
	if code != 0 || created != 0 || !slices.Equal(executed, changeSetIDs(p22)) {
		t.Fatalf("merge of #22: exit %d, created %d, executed %v; want 0, 0 and exactly %v\n%s", code, created, executed, changeSetIDs(p22), out)
	}
	if st := planStatus(t, "cli", p22.ID); st != "applied" {
		t.Errorf("plan of #22 after its merge: %s", st)
	}

	// The job retried after it succeeded: nothing to apply, exit 0, nothing uploaded.
	approved := approvals(t)
	code, out, created, executed = applied(t, "cli", merged)
	if code != 0 || !strings.Contains(out, "is already applied") || approvals(t) != approved || created != 0 || len(executed) != 0 {
		t.Errorf("apply retried: exit %d, %d uploads, created %d, executed %v\n%s", code, approvals(t)-approved, created, executed, out)
	}
	if out := mustCLI(t, "status", "cli"); strings.Contains(out, "behind:") {
		t.Errorf("status after both merges says behind:\n%s", out)
	}
}

// TestTwoPullRequestsOnOneStackSecondRefused: #21 and #22 both change jobs. #21 merges
// and applies; #22's merge is refused, naming the stack, why (#21 changed it after #22's
// plan) and the way forward, executing and creating nothing; status says the deployment
// is behind what was merged. The way forward: a plan of main's content, approved.
func TestTwoPullRequestsOnOneStackSecondRefused(t *testing.T) {
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	t.Setenv("GITHUB_ACTIONS", "")
	mustCLI(t, append([]string{"push", jobsBundle(t, "", "v1"), "--deployment", "cli"}, reviewWait...)...)
	p21 := planPR(t, "cli", jobsBundle(t, "", "v2"), "21")
	p22 := planPR(t, "cli", jobsBundle(t, "", "v3"), "22")

	if code, out, created, executed := applied(t, "cli", jobsBundle(t, "", "v2")); code != 0 || created != 0 || !slices.Equal(executed, changeSetIDs(p21)) {
		t.Fatalf("merge of #21: exit %d, created %d, executed %v\n%s", code, created, executed, out)
	}
	main := jobsBundle(t, "", "v3")
	code, out, created, executed := applied(t, "cli", main)
	t.Logf("merge of #22: exit %d, change sets created %d, executed %d\n%s", code, created, len(executed), out)
	want := regexp.MustCompile(`(?m)^  refused: stack jobs \(cli-jobs\): the plan of pull request #22 \(` + regexp.QuoteMeta(p22.ID) +
		`\) for stack jobs went stale: the stack was changed by pull request #21, plan ` + regexp.QuoteMeta(p21.ID) + ` \(run \S+\) at \d\d:\d\d:\d\d, after the plan \(\d\d:\d\d:\d\d; now UPDATE_COMPLETE, was CREATE_COMPLETE\): plan this content \(` +
		"`cairn plan PATH --deployment cli`; after a merge, the workflow's apply job does and posts it on the merged pull request\\), review that plan, then approve exactly it \\(`cairn approve cli PLAN_ID`: the workflow's gate\\)$")
	if code != 1 || created != 0 || len(executed) != 0 || !want.MatchString(out) {
		t.Fatalf("merge of #22: exit %d, created %d, executed %v; want exit 1, nothing created or executed, and the refusal %s\n%s", code, created, executed, want, out)
	}
	if st := planStatus(t, "cli", p22.ID); st != "stale" {
		t.Errorf("plan of #22: %s, want stale", st)
	}
	status := mustCLI(t, "status", "cli")
	if !regexp.MustCompile(`(?m)^behind: the content last merged \(cairn apply\) \(bundle sha256 [0-9a-f]{12}, run \S+: refused\) is not applied; the graph's applied content is bundle sha256 [0-9a-f]{12}$`).MatchString(status) {
		t.Errorf("status does not say the deployment is behind what was merged:\n%s", status)
	}

	// The reviewed way forward: main's content planned, and exactly that plan approved.
	pMain := planPR(t, "cli", main, "22")
	if st := planStatus(t, "cli", p22.ID); st != "superseded" {
		t.Errorf("#22's first plan after #22's content was planned again: %s", st)
	}
	c0, e0 := changeSetsCreated(t), len(executedChangeSets(t))
	out = mustCLI(t, append([]string{"approve", "cli", pMain.ID}, reviewWait...)...)
	if n, ran := changeSetsCreated(t)-c0, executedChangeSets(t)[e0:]; n != 0 || !slices.Equal(ran, changeSetIDs(pMain)) {
		t.Errorf("approve of main's plan: created %d, executed %v, want 0 and %v\n%s", n, ran, changeSetIDs(pMain), out)
	}
	if out := mustCLI(t, "status", "cli"); strings.Contains(out, "behind:") {
		t.Errorf("status after the gate still says behind:\n%s", out)
	}
}

// timeAt is the file time of the n-th checkout a test makes.
func timeAt(n int) time.Time { return time.Date(2030, 1, 1, n, 0, 0, 0, time.UTC) }
