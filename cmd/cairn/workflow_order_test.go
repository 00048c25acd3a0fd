package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/plan"
)

// GitHub's events in the orders that broke review before: jobs that run late, after the
// merge they belong before, and re-runs of jobs on their original commit. Each is played
// through the workflow of docs/review.md and the action's own scripts, with a recording
// gh, against the emulator.

// workflowWorld is the emulator with main pushed (the topic → param bundle under deploy/),
// the workflow, and the tree main holds.
func workflowWorld(t *testing.T) (ghWorkflow, string) {
	t.Helper()
	for _, tool := range []string{"bash", "go", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the workflow's steps need %s on PATH: %v", tool, err)
		}
	}
	w := docsWorkflow(t)
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	t.Setenv("GITHUB_ACTIONS", "")
	mainTree := t.TempDir()
	if err := os.CopyFS(filepath.Join(mainTree, "deploy"), os.DirFS(bundleDir(t, ""))); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, append([]string{"push", filepath.Join(mainTree, "deploy"), "--deployment", "shop"}, reviewWait...)...)
	return w, mainTree
}

// withTopic is a checkout of tree whose topic has display name name.
func withTopic(t *testing.T, tree, name string, n int) string {
	t.Helper()
	out := checkout(t, tree, timeAt(n))
	topic := filepath.Join(out, "deploy", "topic.yaml")
	if err := os.WriteFile(topic, []byte(strings.Replace(readFile(t, topic), "    Type: AWS::SNS::Topic\n", "    Type: AWS::SNS::Topic\n    Properties:\n      DisplayName: "+name+"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

func prEvent(n int, head, sha string) map[string]any {
	return map[string]any{"number": n, "pull_request": map[string]any{"number": n, "head": map[string]any{"ref": head, "sha": sha, "repo": map[string]any{"full_name": "shop/infra"}}}}
}

// TestGitHubMergeBeforeItsPlanJob: pull request #7 is planned (P1), force-pushed, and
// merged before the force-push's plan job ran. The merge's apply job finds no reviewed
// plan of what was merged: it plans the merged content (P2, marked merged) for the gate.
// Then the late plan job runs: before, it superseded P2 and a re-run of the apply job
// executed it, unreviewed and ungated. Now the late plan is refused as late, planning and
// posting nothing (P2 and its comment stay); a re-run of the apply job executes nothing
// (a plan of merged content applies only through the gate), and the gate applies exactly
// the plan it approves.
func TestGitHubMergeBeforeItsPlanJob(t *testing.T) {
	w, mainTree := workflowWorld(t)
	first, pushed := withTopic(t, mainTree, "first", 1), withTopic(t, mainTree, "pushed", 2)

	// 1. #7's first push is planned: P1.
	pr := newRunner(t, first, "pull_request", "refs/pull/7/merge", "1111111111111111111111111111111111111111", prEvent(7, "topic", "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"))
	fakeGH(t, pr, "")
	out, err := pr.job(w, "plan")
	if err != nil || out["plan-id"] == "" {
		t.Fatalf("the plan job of #7: %v %v\n%s", err, out, pr.out.String())
	}
	if out["plan-id"] == "" {
		t.Fatal("no plan id")
	}

	// 2. #7 is force-pushed, and merged before that push's plan job runs: the apply job
	// is refused (P1 was made for other content) and plans the merged content for the gate.
	executed := len(executedChangeSets(t))
	apply := newRunner(t, checkout(t, pushed, timeAt(3)), "push", "refs/heads/main", "3333333333333333333333333333333333333333", map[string]any{"ref": "refs/heads/main"})
	fakeGH(t, apply, "555")
	_, applyOut, err := apply.jobOutputs(w, "apply")
	t.Logf("apply job of the merge:\n%s", apply.out.String())
	p2 := applyOut["replan-id"]
	if err != nil || p2 == "" || len(executedChangeSets(t)) != executed {
		t.Fatalf("the merge's apply job: %v, replan %q, executed %d; want a plan for the gate, nothing executed\n%s", err, p2, len(executedChangeSets(t))-executed, apply.out.String())
	}
	if doc := planDocument(t, "shop", p2); !doc.Bundle.Source.Merged || doc.Bundle.Source.PullRequest != 7 || !doc.AfterMerge() {
		t.Errorf("the plan of the merged content: source %+v, want #7's merged content", doc.Bundle.Source)
	}

	// 3. The late plan job of the force-push runs now.
	late := newRunner(t, pushed, "pull_request", "refs/pull/7/merge", "2222222222222222222222222222222222222222", prEvent(7, "topic", "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"))
	log := fakeGH(t, late, "555")
	if _, err := late.job(w, "plan"); err != nil {
		t.Fatalf("the late plan job failed: %v\n%s", err, late.out.String())
	}
	t.Logf("late plan job:\n%s", late.out.String())
	if !strings.Contains(late.out.String(), "is late: pull request #7 was merged before this plan was made (its merged content went to apply run ") ||
		!strings.Contains(late.out.String(), "cairn: nothing to post") {
		t.Errorf("the late plan job does not say it is late:\n%s", late.out.String())
	}
	if b := bodies(t, log); len(b) != 0 {
		t.Errorf("the late plan job posted %d comment(s) over the gate's plan:\n%s", len(b), strings.Join(b, "\n---\n"))
	}
	if st := planStatus(t, "shop", p2); st != "planned" {
		t.Errorf("the gate's plan after the late plan job: %s, want planned", st)
	}
	if plans := mustCLI(t, "plans", "shop"); !strings.Contains(plans, " late ") {
		t.Errorf("cairn plans does not show the late plan as late:\n%s", plans)
	}
	dir := t.TempDir()
	mustCLI(t, "plans", "shop", "--comments", dir)
	if c := readFile(t, filepath.Join(dir, "7.md")); !strings.Contains(c, "# cairn plan "+p2+" of deployment shop: planned\n") {
		t.Errorf("#7's comment, as CI posts it again, is not the gate's plan %s:\n%s", p2, c)
	}

	// 4. The apply job re-run (GitHub re-runs it on its commit): nothing runs without the
	// gate; it plans the merged content again for the gate.
	executed = len(executedChangeSets(t))
	rerun := newRunner(t, checkout(t, pushed, timeAt(4)), "push", "refs/heads/main", "3333333333333333333333333333333333333333", map[string]any{"ref": "refs/heads/main"})
	fakeGH(t, rerun, "555")
	_, rerunOut, err := rerun.jobOutputs(w, "apply")
	t.Logf("apply job re-run:\n%s", rerun.out.String())
	if err != nil || len(executedChangeSets(t)) != executed || rerunOut["replan-id"] == "" {
		t.Fatalf("the re-run apply job: %v, executed %d, replan %q\n%s", err, len(executedChangeSets(t))-executed, rerunOut["replan-id"], rerun.out.String())
	}
	if !strings.Contains(rerun.out.String(), "  refused: ") {
		t.Errorf("the re-run apply job does not say it was refused:\n%s", rerun.out.String())
	}

	// 5. The gate approves the plan its run made: exactly its change sets run.
	p3 := rerunOut["replan-id"]
	gate := newRunner(t, checkout(t, pushed, timeAt(5)), "push", "refs/heads/main", "3333333333333333333333333333333333333333", map[string]any{"ref": "refs/heads/main"})
	fakeGH(t, gate, "555")
	before := len(executedChangeSets(t))
	if _, err := gate.job(w, "gate", map[string]map[string]string{"apply": rerunOut}); err != nil {
		t.Fatalf("the gate: %v\n%s", err, gate.out.String())
	}
	ran := slices.Clone(executedChangeSets(t)[before:])
	slices.Sort(ran)
	if want := planChangeSets(t, p3); !slices.Equal(ran, want) || len(want) == 0 {
		t.Errorf("the gate executed %v, want exactly plan %s's %v", ran, p3, want)
	}
}

// TestGitHubOlderApplyJobReRun: main's commit C1 applied, then C2 (a later merge). The
// apply job of C1, re-run after C2 applied (GitHub re-runs a job on its original commit),
// would have planned C1's content for the gate: a plan that reverts C2. Now it says C1 is
// older than what is applied and does nothing: no upload, no plan, exit 0.
func TestGitHubOlderApplyJobReRun(t *testing.T) {
	w, _ := workflowWorld(t)
	repo := t.TempDir()
	if err := os.CopyFS(filepath.Join(repo, "deploy"), os.DirFS(bundleDir(t, ""))); err != nil {
		t.Fatal(err)
	}
	c1 := gitInit(t, repo, "https://github.com/shop/infra")
	mustCLI(t, append([]string{"push", filepath.Join(repo, "deploy"), "--deployment", "shop"}, reviewWait...)...)
	topic := filepath.Join(repo, "deploy", "topic.yaml")
	if err := os.WriteFile(topic, []byte(strings.Replace(readFile(t, topic), "    Type: AWS::SNS::Topic\n", "    Type: AWS::SNS::Topic\n    Properties:\n      DisplayName: c2\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	c2 := gitCommit(t, repo, "c2")
	mustCLI(t, append([]string{"push", filepath.Join(repo, "deploy"), "--deployment", "shop"}, reviewWait...)...)

	// The re-run job's checkout: the repository at C1.
	old := t.TempDir()
	if out, err := exec.Command("git", "clone", "-q", repo, old).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v %s", err, out)
	}
	if out, err := exec.Command("git", "-C", old, "checkout", "-q", c1).CombinedOutput(); err != nil {
		t.Fatalf("git checkout: %v %s", err, out)
	}
	uploads := runCount(t, "shop")
	rerun := newRunner(t, old, "push", "refs/heads/main", c1, map[string]any{"ref": "refs/heads/main"})
	log := fakeGH(t, rerun, "555")
	_, out, err := rerun.jobOutputs(w, "apply")
	t.Logf("older apply job re-run:\n%s", rerun.out.String())
	if err != nil || out["replan-id"] != "" || runCount(t, "shop") != uploads {
		t.Fatalf("the re-run of C1's apply job after C2 applied: %v, replan %q, %d run(s) started\n%s", err, out["replan-id"], runCount(t, "shop")-uploads, rerun.out.String())
	}
	if !strings.Contains(rerun.out.String(), "deployment shop: commit "+c1[:12]+" is older than the commit applied ("+c2[:12]+", by run ") {
		t.Errorf("the re-run does not say its commit is older than what is applied:\n%s", rerun.out.String())
	}
	if b := bodies(t, log); len(b) != 0 {
		t.Errorf("the re-run posted %d comment(s)", len(b))
	}
	if status := mustCLI(t, "status", "shop"); strings.Contains(status, "behind:") {
		t.Errorf("status after the older re-run says behind:\n%s", status)
	}
}

// gitCommit commits everything in dir and returns the commit.
func gitCommit(t *testing.T, dir, msg string) string {
	t.Helper()
	var out bytes.Buffer
	for _, args := range [][]string{{"add", "."}, {"commit", "-q", "-m", msg}, {"rev-parse", "HEAD"}} {
		out.Reset()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out.String())
		}
	}
	return strings.TrimSpace(out.String())
}

// planDocument is plan id of deployment as `cairn plans` prints it in JSON.
func planDocument(t *testing.T, deployment, id string) *plan.Document {
	t.Helper()
	var p plan.Document
	if err := json.Unmarshal([]byte(mustCLI(t, "plans", deployment, id, "--format", "json")), &p); err != nil {
		t.Fatalf("plan %s: %v", id, err)
	}
	return &p
}

// runCount is how many run documents deployment has: each upload that started a run.
func runCount(t *testing.T, deployment string) int {
	t.Helper()
	cfg, err := awsclient.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out, err := awsclient.S3(cfg).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(localBucket), Prefix: aws.String("runs/" + deployment + "/")})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range out.Contents {
		if strings.HasSuffix(aws.ToString(o.Key), ".json") {
			n++
		}
	}
	return n
}
