package deployer_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
)

const appAndWeb = `  - name: app
    template_path: templates/join.yaml
    parameters:
      First: ${output database::Name}
      Second: ${output cache::Name}
  - name: web
    template_path: templates/parameter.yaml
    parameters:
      Value: ${output app::Name}
      Size: small
`

func (w *world) fault(f cfnlocal.Fault) {
	w.t.Helper()
	if err := w.cfn.InjectFault(f); err != nil {
		w.t.Fatal(err)
	}
}

// TestFailedCreateIsReportedThenRecreated fails the cache's creation: the cache's stack
// rolls back, app and web (which need it) are blocked, the independent database still
// deploys, and the report carries the failing resource's reason; the graph records the
// ROLLBACK_COMPLETE stack. The next push deletes it (its cairn tags agree) and creates it
// again.
func TestFailedCreateIsReportedThenRecreated(t *testing.T) {
	w := newWorld(t, worldOptions{})
	const reason = "Parameter limit of 10000 reached for this account"
	w.fault(cfnlocal.Fault{Stack: "shop-cache", LogicalID: "Parameter", Operation: "CREATE", Reason: reason, Count: 1})
	dir := copyBundle(t, chain)
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.RunFailed {
		t.Fatalf("run: %s, want failed", doc.Run.Status)
	}
	want := map[string]run.Phase{"network": run.Done, "database": run.Done, "cache": run.Failed, "app": run.Blocked, "web": run.Blocked}
	for n, p := range want {
		if got := doc.Run.Stacks[n].Phase; got != p {
			t.Errorf("stack %s: %s (%s), want %s", n, got, doc.Run.Stacks[n].Reason, p)
		}
	}
	cache := doc.Run.Stacks["cache"]
	if !strings.Contains(cache.Reason, "ROLLBACK_COMPLETE") || !strings.Contains(cache.Reason, "Parameter (AWS::SSM::Parameter): "+reason) {
		t.Errorf("cache reason %q does not name the failing resource and its reason", cache.Reason)
	}
	if r := doc.Run.Stacks["app"].Reason; r != "dependency cache failed" {
		t.Errorf("app reason %q", r)
	}
	report := w.object("runs/shop/" + doc.Run.ID + ".md")
	if !strings.Contains(report, reason) {
		t.Errorf("report lacks the reason:\n%s", report)
	}
	if s := w.stacks()["shop-cache"]; s.StackStatus != cfntypes.StackStatusRollbackComplete {
		t.Fatalf("shop-cache is %s, want ROLLBACK_COMPLETE", s.StackStatus)
	}
	// The failed create made the stack, so the graph holds it, as it is.
	g := w.graph("shop", "shop")
	if c := g.Stacks["cache"]; c == nil || c.Status != "ROLLBACK_COMPLETE" || g.Stacks["database"] == nil || len(g.Stacks) != 3 {
		t.Errorf("graph after a failed run: %v (cache %+v), want network, database and cache ROLLBACK_COMPLETE", g.Names(), g.Stacks["cache"])
	}

	doc2 := w.wait("shop", w.push("shop", dir))
	if doc2.Run.Status != run.Succeeded {
		t.Fatalf("second run: %s (%s); stacks %v", doc2.Run.Status, doc2.Run.Reason, phases(doc2))
	}
	if s := doc2.Run.Stacks["cache"]; s.Phase != run.Done || s.ChangeSetType != "CREATE" {
		t.Errorf("cache: %s by %q, want re-created", s.Phase, s.ChangeSetType)
	}
	for _, dec := range doc2.Decisions {
		if dec.Stack == "cache" && dec.Action != "recreate" {
			t.Errorf("cache decision %s, want recreate", dec.Action)
		}
	}
	live := w.stacks()["shop-cache"]
	if live.StackStatus != cfntypes.StackStatusCreateComplete || aws.ToString(live.StackId) == cache.StackID {
		t.Errorf("shop-cache: %s, id %s (old %s): want a new stack", live.StackStatus, aws.ToString(live.StackId), cache.StackID)
	}
}

// TestUpdateRollbackFailedGetsContinueUpdateRollback makes an update fail and its rollback
// fail once: cairn continues the rollback, and the stack fails with the first failing
// resource's reason.
func TestUpdateRollbackFailedGetsContinueUpdateRollback(t *testing.T) {
	w := newWorld(t, worldOptions{})
	dir, _ := deployChain(t, w)
	const reason = "User is not authorized to perform ssm:PutParameter"
	w.fault(cfnlocal.Fault{Stack: "shop-cache", LogicalID: "Parameter", Operation: "UPDATE", Reason: reason, Count: 1})
	w.fault(cfnlocal.Fault{Stack: "shop-cache", LogicalID: "Parameter", Operation: "UPDATE", Reason: "Rate exceeded while reverting", DuringRollback: true, Count: 1})
	edit(t, dir, "cairn.yaml", "      Value: ${output network::VpcId}\n      Size: small\n  - name: app", "      Value: ${output network::VpcId}\n      Size: large\n  - name: app")
	before := w.cfnCalls()
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.RunFailed {
		t.Fatalf("run: %s, want failed", doc.Run.Status)
	}
	cache := doc.Run.Stacks["cache"]
	if cache.Phase != run.Failed || cache.Rollbacks != 1 {
		t.Fatalf("cache: %s after %d rollback(s): %s", cache.Phase, cache.Rollbacks, cache.Reason)
	}
	if !strings.Contains(cache.Reason, "rolled back after ContinueUpdateRollback") || !strings.Contains(cache.Reason, reason) {
		t.Errorf("cache reason %q", cache.Reason)
	}
	if n := w.cfnCalls()["ContinueUpdateRollback"] - before["ContinueUpdateRollback"]; n != 1 {
		t.Errorf("%d ContinueUpdateRollback calls, want 1", n)
	}
	if s := w.stacks()["shop-cache"]; s.StackStatus != cfntypes.StackStatusUpdateRollbackComplete {
		t.Errorf("shop-cache is %s, want UPDATE_ROLLBACK_COMPLETE", s.StackStatus)
	}
	if p := doc.Run.Stacks["app"].Phase; p != run.Blocked {
		t.Errorf("app: %s, want blocked", p)
	}
}

// TestDeleteFailedStopsWithTheReason fails the deletion of web: it stops with the
// resource's reason, and app, which web depends on, is not deleted.
func TestDeleteFailedStopsWithTheReason(t *testing.T) {
	w := newWorld(t, worldOptions{})
	dir, _ := deployChain(t, w)
	const reason = "Parameter is in use by an EventBridge rule"
	w.fault(cfnlocal.Fault{Stack: "shop-web", LogicalID: "Parameter", Operation: "DELETE", Reason: reason})
	edit(t, dir, "cairn.yaml", appAndWeb, "")
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.RunFailed {
		t.Fatalf("run: %s, want failed", doc.Run.Status)
	}
	web, app := doc.Run.Stacks["web"], doc.Run.Stacks["app"]
	if web.Phase != run.Failed || !strings.Contains(web.Reason, "delete failed") || !strings.Contains(web.Reason, reason) {
		t.Errorf("web: %s: %q", web.Phase, web.Reason)
	}
	if app.Phase != run.Blocked || !strings.Contains(app.Reason, "web") {
		t.Errorf("app: %s: %q, want blocked by web", app.Phase, app.Reason)
	}
	live := w.stacks()
	if s := live["shop-app"]; s.StackStatus != cfntypes.StackStatusCreateComplete {
		t.Errorf("shop-app is %s, want untouched", s.StackStatus)
	}
	if s := live["shop-web"]; s.StackStatus != cfntypes.StackStatusDeleteFailed {
		t.Errorf("shop-web is %s, want DELETE_FAILED", s.StackStatus)
	}
	g := w.graph("shop", "shop")
	if g.Stacks["web"] == nil || g.Stacks["app"] == nil {
		t.Errorf("graph %v lost a stack that still exists", g.Names())
	}
}

// TestReviewInProgressIsCreated finds a stack left in REVIEW_IN_PROGRESS by a create that
// never ran, tagged for this graph: the run creates it with a CREATE change set.
func TestReviewInProgressIsCreated(t *testing.T) {
	w := newWorld(t, worldOptions{})
	ctx := context.Background()
	body, err := os.ReadFile(chain + "/templates/network.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.cfnc.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{
		StackName: aws.String("shop-network"), ChangeSetName: aws.String("abandoned"), ChangeSetType: cfntypes.ChangeSetTypeCreate,
		TemplateBody: aws.String(string(body)), Parameters: []cfntypes.Parameter{{ParameterKey: aws.String("CidrBlock"), ParameterValue: aws.String("10.1.0.0/16")}},
		Tags: []cfntypes.Tag{{Key: aws.String(state.TagNamespace), Value: aws.String("shop")}, {Key: aws.String(state.TagGraphKey), Value: aws.String("shop")}, {Key: aws.String(state.TagName), Value: aws.String("network")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // let the virtual clock complete the change set
	if s := w.stacks()["shop-network"]; s.StackStatus != cfntypes.StackStatusReviewInProgress {
		t.Fatalf("shop-network is %s, want REVIEW_IN_PROGRESS", s.StackStatus)
	}
	doc := w.wait("shop", w.push("shop", copyBundle(t, chain)))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("run: %s (%s); stacks %v", doc.Run.Status, doc.Run.Reason, phases(doc))
	}
	if s := doc.Run.Stacks["network"]; s.ChangeSetType != "CREATE" || s.Phase != run.Done {
		t.Errorf("network: %s by %q, want created", s.Phase, s.ChangeSetType)
	}
}

// TestRefusals checks each deletion guard: the run names the reason and deletes nothing
// it refused.
func TestRefusals(t *testing.T) {
	t.Run("termination protection", func(t *testing.T) {
		w := newWorld(t, worldOptions{})
		dir, _ := deployChain(t, w)
		if _, err := w.cfnc.UpdateTerminationProtection(context.Background(), &cloudformation.UpdateTerminationProtectionInput{
			StackName: aws.String("shop-web"), EnableTerminationProtection: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
		edit(t, dir, "cairn.yaml", appAndWeb, "")
		doc := w.wait("shop", w.push("shop", dir))
		web := doc.Run.Stacks["web"]
		if doc.Run.Status != run.RunFailed || web.Phase != run.Failed || !strings.Contains(web.Reason, "deletion refused: termination protection is on") {
			t.Fatalf("run %s; web %s: %q", doc.Run.Status, web.Phase, web.Reason)
		}
		if app := doc.Run.Stacks["app"]; app.Phase != run.Blocked {
			t.Errorf("app: %s (%s), want blocked: its dependent web stays", app.Phase, app.Reason)
		}
		if !strings.Contains(w.object("runs/shop/"+doc.Run.ID+".md"), "termination protection is on") {
			t.Errorf("report lacks the refusal")
		}
		if _, ok := w.stacks()["shop-web"]; !ok {
			t.Errorf("shop-web was deleted")
		}
	})
	t.Run("export still imported", func(t *testing.T) {
		w := newWorld(t, worldOptions{})
		dir := copyBundle(t, chain)
		bus := "  - name: bus\n    template_path: templates/topic.yaml\n"
		if err := os.WriteFile(dir+"/cairn.yaml", append(mustRead(t, dir+"/cairn.yaml"), bus...), 0o644); err != nil {
			t.Fatal(err)
		}
		if doc := w.wait("shop", w.push("shop", dir)); doc.Run.Status != run.Succeeded {
			t.Fatalf("first run: %s (%s)", doc.Run.Status, doc.Run.Reason)
		}
		_, err := w.cfnc.CreateStack(context.Background(), &cloudformation.CreateStackInput{StackName: aws.String("reporting"), TemplateBody: aws.String(string(mustRead(t, "testdata/importer.yaml")))})
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, w, "reporting", cfntypes.StackStatusCreateComplete)
		edit(t, dir, "cairn.yaml", bus, "")
		doc := w.wait("shop", w.push("shop", dir))
		b := doc.Run.Stacks["bus"]
		if doc.Run.Status != run.RunFailed || b.Phase != run.Failed || !strings.Contains(b.Reason, "export shop-bus-TopicArn is imported by reporting") {
			t.Fatalf("run %s; bus %s: %q", doc.Run.Status, b.Phase, b.Reason)
		}
		if _, ok := w.stacks()["shop-bus"]; !ok {
			t.Errorf("shop-bus was deleted")
		}
	})
	t.Run("too many deletions", func(t *testing.T) {
		w := newWorld(t, worldOptions{})
		dir, _ := deployChain(t, w)
		edit(t, dir, "cairn.yaml", appAndWeb, "")
		edit(t, dir, "cairn.yaml", "max_deletions: 2", "max_deletions: 1")
		before := w.cfnCalls()
		doc := w.wait("shop", w.push("shop", dir))
		if doc.Run.Status != run.RunFailed || len(doc.Refusals) != 1 || !strings.Contains(doc.Refusals[0], "would delete 2 stacks (app, web), more than deletion_policy.max_deletions 1") {
			t.Fatalf("run %s, refusals %q", doc.Run.Status, doc.Refusals)
		}
		for action, n := range w.cfnCalls() {
			if n > before[action] && !strings.HasPrefix(action, "Describe") && !strings.HasPrefix(action, "List") {
				t.Errorf("a refused run called %s", action)
			}
		}
		if !strings.Contains(w.object("runs/shop/"+doc.Run.ID+".md"), "max_deletions 1") {
			t.Errorf("report lacks the refusal")
		}
		if _, err := w.s3.HeadObject(context.Background(), headLock()); err == nil {
			t.Errorf("the lock was left behind")
		}
	})
}

// TestInvalidBundleFailsWithEveryError pushes a config with two errors: the run fails
// with both, located, and makes no CloudFormation call.
func TestInvalidBundleFailsWithEveryError(t *testing.T) {
	w := newWorld(t, worldOptions{})
	dir := copyBundle(t, chain)
	edit(t, dir, "cairn.yaml", "namespace: shop", "namespace: shop\ncolour: blue")
	edit(t, dir, "cairn.yaml", "${output app::Name}", "${output nowhere::Name}")
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.RunFailed || len(doc.Errors) != 2 {
		t.Fatalf("run %s with errors %q, want failed with 2", doc.Run.Status, doc.Errors)
	}
	if !strings.Contains(doc.Errors[0], "cairn.yaml:4:1: colour") || !strings.Contains(doc.Errors[1], "nowhere") {
		t.Errorf("errors %q", doc.Errors)
	}
	if calls := w.cfnCalls(); len(calls) != 0 {
		t.Errorf("an invalid bundle made CloudFormation calls %v", calls)
	}
	if !strings.Contains(w.object("runs/shop/"+doc.Run.ID+".md"), "colour") {
		t.Errorf("report lacks the errors")
	}
}

// TestRacingUploads pushes a second and a third version while the first runs: never two
// runs at once, the second is superseded by the third, and the third is what is applied.
func TestRacingUploads(t *testing.T) {
	w := newWorld(t, worldOptions{ResourceDelay: 5 * time.Minute})
	dir := copyBundle(t, chain)
	v1 := w.push("shop", dir)
	deadline := time.Now().Add(30 * time.Second)
	for len(w.runs("shop")) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	edit(t, dir, "cairn.yaml", "Size: small\n  - name: app", "Size: medium\n  - name: app")
	v2 := w.push("shop", dir)
	edit(t, dir, "cairn.yaml", "Size: medium\n  - name: app", "Size: large\n  - name: app")
	v3 := w.push("shop", dir)
	d1, d2, d3 := w.wait("shop", v1), w.wait("shop", v2), w.wait("shop", v3)
	if d1.Run.Status != run.Succeeded || d3.Run.Status != run.Succeeded {
		t.Fatalf("runs: %s, %s, %s", d1.Run.Status, d2.Run.Status, d3.Run.Status)
	}
	if d2.Run.Status != "superseded" {
		t.Errorf("second upload: %s, want superseded by the third", d2.Run.Status)
	}
	if !d3.Run.StartedAt.After(d1.Run.FinishedAt) {
		t.Errorf("third run started %s before the first finished %s", d3.Run.StartedAt, d1.Run.FinishedAt)
	}
	if got := d3.Run.Stacks["cache"].Parameters["Size"]; got != "large" {
		t.Errorf("applied Size %q, want large", got)
	}
	g := w.graph("shop", "shop")
	if g.Bundle.VersionID != v3 || g.Stacks["cache"].ParametersHash != d3.Run.Stacks["cache"].ParametersHash {
		t.Errorf("graph applies %s, want %s", g.Bundle.VersionID, v3)
	}
}

func headLock() *s3.HeadObjectInput {
	return &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(layout.LockKey("shop", "shop"))}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func waitStatus(t *testing.T, w *world, stack string, want cfntypes.StackStatus) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if s, ok := w.stacks()[stack]; ok && s.StackStatus == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("stack %s never reached %s", stack, want)
}

// TestUploadWaitsForTheLock pushes a second version while the first runs: the second
// waits (its event goes back to the queue with a delay) and then runs against the state
// the first one left.
func TestUploadWaitsForTheLock(t *testing.T) {
	w := newWorld(t, worldOptions{ResourceDelay: 5 * time.Minute})
	dir := copyBundle(t, chain)
	v1 := w.push("shop", dir)
	deadline := time.Now().Add(30 * time.Second)
	for len(w.runs("shop")) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	edit(t, dir, "cairn.yaml", "Size: small\n  - name: app", "Size: medium\n  - name: app")
	v2 := w.push("shop", dir)
	d1, d2 := w.wait("shop", v1), w.wait("shop", v2)
	if d1.Run.Status != run.Succeeded || d2.Run.Status != run.Succeeded {
		t.Fatalf("runs: %s, %s", d1.Run.Status, d2.Run.Status)
	}
	if !strings.Contains(w.logs.String(), "another run holds the lock; the upload waits") {
		t.Errorf("the second upload never waited for the lock")
	}
	// The virtual clock may not move between the first run's release and the second's start.
	if d2.Run.StartedAt.Before(d1.Run.FinishedAt) {
		t.Errorf("second run started %s before the first finished %s", d2.Run.StartedAt, d1.Run.FinishedAt)
	}
	for n, want := range map[string]run.Phase{"network": run.Unchanged, "database": run.Unchanged, "cache": run.Done, "app": run.Unchanged, "web": run.Unchanged} {
		if got := d2.Run.Stacks[n].Phase; got != want {
			t.Errorf("second run: %s %s, want %s", n, got, want)
		}
	}
}
