package deployer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
)

const chain = "testdata/chain"

var chainStacks = []string{"network", "database", "cache", "app", "web"}

// TestDeployThenUnchangedRepush deploys 5 stacks through the emulator's
// event wiring (S3 notification → SQS → deployer), then pushes the same content again:
// that run must make no CloudFormation write call and at most one read call.
func TestDeployThenUnchangedRepush(t *testing.T) {
	w := newWorld(t, worldOptions{})
	dir := copyBundle(t, chain)
	v1 := w.push("shop", dir)
	doc := w.wait("shop", v1)
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("first run %s: %s (%s); stacks %v", doc.Run.ID, doc.Run.Status, doc.Run.Reason, phases(doc))
	}
	live := w.stacks()
	for _, n := range chainStacks {
		s := doc.Run.Stacks[n]
		if s.Phase != run.Done || s.ChangeSetType != "CREATE" {
			t.Errorf("stack %s: phase %s, change set type %q, want done by a CREATE change set", n, s.Phase, s.ChangeSetType)
		}
		st, ok := live["shop-"+n]
		if !ok || !strings.HasSuffix(string(st.StackStatus), "_COMPLETE") {
			t.Errorf("stack shop-%s: live %v status %s", n, ok, st.StackStatus)
			continue
		}
		tags := map[string]string{}
		for _, tg := range st.Tags {
			tags[*tg.Key] = *tg.Value
		}
		for k, want := range map[string]string{state.TagNamespace: "shop", state.TagGraphKey: "shop", state.TagName: n,
			state.TagGitRef: "0123456789abcdef0123456789abcdef01234567", state.TagGitRemote: "https://example.com/shop.git",
			state.TagBundleSHA256: doc.Bundle.SHA256, "team": "web"} {
			if tags[k] != want {
				t.Errorf("stack shop-%s: tag %s = %q, want %q", n, k, tags[k], want)
			}
		}
	}
	// Dependencies first.
	order := func(n string) int64 { return doc.Run.Stacks[n].StartedAt.UnixNano() }
	fin := func(n string) int64 { return doc.Run.Stacks[n].FinishedAt.UnixNano() }
	for _, e := range [][2]string{{"database", "network"}, {"cache", "network"}, {"app", "database"}, {"app", "cache"}, {"web", "app"}} {
		if order(e[0]) < fin(e[1]) {
			t.Errorf("stack %s started before its dependency %s finished", e[0], e[1])
		}
	}
	if p := live["shop-database"].EnableTerminationProtection; p == nil || !*p {
		t.Errorf("shop-database: termination protection %v, want on (config)", p)
	}
	g := w.graph("shop", "shop")
	if len(g.Stacks) != 5 || g.Bundle.VersionID != v1 || g.Bundle.GitRef == "" {
		t.Fatalf("graph: %d stacks, bundle %+v", len(g.Stacks), g.Bundle)
	}
	if got := g.Stacks["app"].Requires; strings.Join(got, ",") != "cache,database" {
		t.Errorf("graph: app requires %v", got)
	}
	if g.Stacks["web"].Outputs["Name"] == "" || g.Stacks["web"].TemplateHash == "" || g.Stacks["web"].ParametersHash == "" || g.Stacks["web"].StackID == "" || g.Stacks["web"].Region != "us-east-1" {
		t.Errorf("graph: web = %+v", g.Stacks["web"])
	}
	report := w.object("runs/shop/" + doc.Run.ID + ".md")
	if !strings.Contains(report, "succeeded") || !strings.Contains(report, "| web | shop-web | create | done |") {
		t.Errorf("report:\n%s", report)
	}

	// The same content again: nothing to do, and CloudFormation is barely asked.
	before := w.cfnCalls()
	v2 := w.push("shop", dir)
	doc2 := w.wait("shop", v2)
	if doc2.Run.Status != run.Succeeded {
		t.Fatalf("re-push run: %s (%s)", doc2.Run.Status, doc2.Run.Reason)
	}
	for _, n := range chainStacks {
		if s := doc2.Run.Stacks[n]; s.Phase != run.Unchanged {
			t.Errorf("re-push: stack %s phase %s (%s), want unchanged", n, s.Phase, s.Reason)
		}
	}
	after := w.cfnCalls()
	reads, writes := 0, 0
	for action, n := range after {
		n -= before[action]
		if n == 0 {
			continue
		}
		if strings.HasPrefix(action, "Describe") || strings.HasPrefix(action, "List") || strings.HasPrefix(action, "Get") {
			reads += n
		} else {
			writes += n
			t.Errorf("re-push made %d %s call(s)", n, action)
		}
	}
	if reads > 1 {
		t.Errorf("re-push made %d CloudFormation read calls, want at most 1 per 100 stacks (%v → %v)", reads, before, after)
	}
}

// deployChain deploys the chain bundle from a copy and returns the copy and the run.
func deployChain(t *testing.T, w *world) (string, *rundoc.Document) {
	t.Helper()
	dir := copyBundle(t, chain)
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("first run: %s (%s); stacks %v", doc.Run.Status, doc.Run.Reason, phases(doc))
	}
	return dir, doc
}

// TestChangeUpdatesOnlyStacksWhoseInputsChanged changes the network's CIDR block: the VPC
// is replaced, so the stacks reading its id are updated; the stacks further down read
// parameter names that do not change, so they make no CloudFormation call at all.
func TestChangeUpdatesOnlyStacksWhoseInputsChanged(t *testing.T) {
	w := newWorld(t, worldOptions{})
	dir, first := deployChain(t, w)
	edit(t, dir, "cairn.yaml", "CidrBlock: 10.20.0.0/16", "CidrBlock: 10.30.0.0/16")
	before := w.cfnCalls()
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("run: %s (%s); stacks %v", doc.Run.Status, doc.Run.Reason, phases(doc))
	}
	for n, want := range map[string]run.Phase{"network": run.Done, "database": run.Done, "cache": run.Done, "app": run.Unchanged, "web": run.Unchanged} {
		s := doc.Run.Stacks[n]
		if s.Phase != want {
			t.Errorf("stack %s: phase %s (%s), want %s", n, s.Phase, s.Reason, want)
		}
		if want == run.Done && (s.ChangeSetType != "UPDATE" || s.Changes == 0) {
			t.Errorf("stack %s: change set type %q with %d changes, want an UPDATE with changes", n, s.ChangeSetType, s.Changes)
		}
		if want == run.Unchanged && s.ChangeSetName != "" {
			t.Errorf("stack %s: made change set %s although its inputs did not change", n, s.ChangeSetName)
		}
	}
	if got, was := doc.Run.Stacks["database"].Parameters["Value"], first.Run.Stacks["database"].Parameters["Value"]; got == was {
		t.Errorf("database: Value %q did not follow the new VPC id", got)
	}
	calls := w.cfnCalls()
	if n := calls["CreateChangeSet"] - before["CreateChangeSet"]; n != 3 {
		t.Errorf("%d change sets created, want 3 (network, database, cache)", n)
	}
	g := w.graph("shop", "shop")
	if g.Stacks["database"].ParametersHash != doc.Run.Stacks["database"].ParametersHash || g.Bundle.VersionID != doc.Bundle.VersionID {
		t.Errorf("graph not updated: database %+v, bundle %+v", g.Stacks["database"], g.Bundle)
	}
}

// TestRemovalDeletesDependentsFirst removes app and web from the config: web (which
// depends on app) is deleted before app, and both leave the graph.
func TestRemovalDeletesDependentsFirst(t *testing.T) {
	w := newWorld(t, worldOptions{})
	dir, _ := deployChain(t, w)
	edit(t, dir, "cairn.yaml", `  - name: app
    template_path: templates/join.yaml
    parameters:
      First: ${output database::Name}
      Second: ${output cache::Name}
  - name: web
    template_path: templates/parameter.yaml
    parameters:
      Value: ${output app::Name}
      Size: small
`, "")
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("run: %s (%s); stacks %v", doc.Run.Status, doc.Run.Reason, phases(doc))
	}
	app, web := doc.Run.Stacks["app"], doc.Run.Stacks["web"]
	if app.Intent != run.IntentDelete || app.Phase != run.Done || web.Intent != run.IntentDelete || web.Phase != run.Done {
		t.Fatalf("app %s %s, web %s %s: want both deleted", app.Intent, app.Phase, web.Intent, web.Phase)
	}
	if app.StartedAt.Before(web.FinishedAt) {
		t.Errorf("app deletion started %s, before its dependent web was deleted at %s", app.StartedAt, web.FinishedAt)
	}
	live := w.stacks()
	for _, n := range []string{"shop-app", "shop-web"} {
		if s, ok := live[n]; ok && s.StackStatus != cfntypes.StackStatusDeleteComplete {
			t.Errorf("%s still exists: %s", n, s.StackStatus)
		}
	}
	g := w.graph("shop", "shop")
	if _, ok := g.Stacks["app"]; ok {
		t.Errorf("graph still holds app")
	}
	if _, ok := g.Stacks["web"]; ok {
		t.Errorf("graph still holds web")
	}
	if len(g.Stacks) != 3 {
		t.Errorf("graph holds %v, want network, database, cache", g.Names())
	}
}

// TestLongRunFinishesByHeartbeatsAlone runs with no stack status events at all, resources
// that take ten virtual minutes each, a lock lease of twenty minutes and a deployer whose
// timeout (two seconds of wall time) is far shorter than the run: the heartbeats alone
// carry it to the end, renewing the lock as they go.
func TestLongRunFinishesByHeartbeatsAlone(t *testing.T) {
	// Its deployer times out after 4 s of wall time (a step under -race and make test's
	// load takes more than a second or two), well inside the run's wall time.
	w := newWorld(t, worldOptions{NoStackEvents: true, LambdaTimeout: 4 * time.Second, ResourceDelay: 10 * time.Minute, Lease: 20 * time.Minute})
	startedAt := time.Now()
	dir := copyBundle(t, chain)
	// Its many heartbeat steps take wall time of their own: on a loaded machine more than
	// the minute w.wait allows.
	doc := w.waitRun("shop", w.push("shop", dir), 3*time.Minute)
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("run: %s (%s); stacks %v", doc.Run.Status, doc.Run.Reason, phases(doc))
	}
	if took := time.Since(startedAt); took < 4*time.Second {
		t.Errorf("run took %s of wall time, not longer than the deployer's 4s timeout: the test proves nothing", took)
	}
	if took := doc.Run.FinishedAt.Sub(doc.Run.StartedAt); took < 40*time.Minute {
		t.Errorf("run took %s of virtual time, want longer than 40 minutes (15 minutes is Lambda's limit)", took)
	}
	if strings.Contains(w.logs.String(), "Task timed out") {
		t.Errorf("a deployer invocation timed out")
	}
	if doc.Steps < 10 {
		t.Errorf("run finished in %d steps; heartbeats should have made many", doc.Steps)
	}
}

// TestThrottlingIsRetried answers a third of all CloudFormation calls with "Rate exceeded":
// the SDK's backoff and the run's bounded retries still deploy everything.
func TestThrottlingIsRetried(t *testing.T) {
	w := newWorld(t, worldOptions{})
	if err := w.em.SetFaults(awslocal.Fault{Target: "cloudformation.*", ThrottleRate: 0.3}); err != nil {
		t.Fatal(err)
	}
	doc := w.wait("shop", w.push("shop", copyBundle(t, chain)))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("run: %s (%s); stacks %v", doc.Run.Status, doc.Run.Reason, phases(doc))
	}
	if !strings.Contains(w.logs.String(), "injected throttling") {
		t.Errorf("no call was throttled: the test proves nothing")
	}
}

// TestVanishedStacks deletes stacks behind cairn's back: one still in the config is
// created again; one also removed from the config is dropped from the graph.
func TestVanishedStacks(t *testing.T) {
	w := newWorld(t, worldOptions{})
	dir, _ := deployChain(t, w)
	for _, name := range []string{"shop-web", "shop-app"} {
		if _, err := w.cfnc.DeleteStack(context.Background(), &cloudformation.DeleteStackInput{StackName: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, w, name)
	}
	edit(t, dir, "cairn.yaml", `  - name: web
    template_path: templates/parameter.yaml
    parameters:
      Value: ${output app::Name}
      Size: small
`, "")
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("run: %s (%s); stacks %v", doc.Run.Status, doc.Run.Reason, phases(doc))
	}
	if s := doc.Run.Stacks["app"]; s == nil || s.Phase != run.Done || s.ChangeSetType != "CREATE" {
		t.Errorf("app: %+v, want re-created", s)
	}
	if _, ok := doc.Run.Stacks["web"]; ok {
		t.Errorf("web is part of the run although it is gone from AWS and the config")
	}
	found := false
	for _, d := range doc.Decisions {
		found = found || (d.Stack == "web" && d.Action == "drop")
	}
	if !found {
		t.Errorf("decisions %+v lack the drop of web", doc.Decisions)
	}
	g := w.graph("shop", "shop")
	if _, ok := g.Stacks["web"]; ok || g.Stacks["app"] == nil {
		t.Errorf("graph %v: want app, and web dropped", g.Names())
	}
}

func waitGone(t *testing.T, w *world, stack string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if s, ok := w.stacks()[stack]; !ok || s.StackStatus == cfntypes.StackStatusDeleteComplete {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("stack %s was never deleted", stack)
}

// TestStepsDoNotDownloadTheBundleAgain deploys the five stacks of the chain, each made by
// a change set created in one step and executed in a later one: the bundle is downloaded
// when the run starts, and no step after that downloads it again (a warm deployer keeps
// what it loaded).
func TestStepsDoNotDownloadTheBundleAgain(t *testing.T) {
	calls := &callCounter{}
	w := newWorld(t, worldOptions{Calls: calls})
	_, doc := deployChain(t, w)
	got := calls.take()
	executed := 0
	for _, s := range doc.Run.Stacks {
		if s.ChangeSetID != "" {
			executed++
		}
	}
	gets := got["S3.GetObject deployments/shop.zip"]
	t.Logf("%d change sets executed in %d steps; the bundle was downloaded %d time(s), %.1f per change set executed", executed, doc.Steps, gets, float64(gets)/float64(executed))
	if executed != len(chainStacks) {
		t.Fatalf("%d change sets executed, want %d", executed, len(chainStacks))
	}
	if gets != 1 {
		t.Errorf("the bundle was downloaded %d times, want once, when the run started", gets)
	}
}
