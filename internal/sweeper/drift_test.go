package sweeper_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/drift"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
	"github.com/cairn-dev/cairn/internal/sweeper"
)

func stackOf(t *testing.T, r *drift.Report, name string) *drift.Stack {
	t.Helper()
	for _, s := range r.Graph.Stacks {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("report %s has no stack %s", r.Sweep, name)
	return nil
}

func onlyReport(t *testing.T, v *env, name string) *drift.Report {
	t.Helper()
	rs := v.reports(name)
	if len(rs) != 1 {
		t.Fatalf("drift/%s/ holds %d reports, want 1", name, len(rs))
	}
	return rs[0]
}

func TestTamperedResourceIsReportedWithItsPropertyDifference(t *testing.T) {
	v := newEnv(t, envOptions{})
	g := v.deployment("testdata/bundle", "shop", "shop", "app", "web", "cache")
	// The graph also lists a stack deleted by hand, and a stack carries the graph's tags
	// without being in it.
	g.Stacks["gone"] = &state.Stack{Name: "gone", StackName: "shop-gone"}
	v.writeGraph("shop", "shop", g)
	tmpl, _ := os.ReadFile("testdata/bundle/templates/app.yaml")
	v.createStack("shop-stray", string(tmpl), map[string]string{state.TagNamespace: "shop", state.TagGraphKey: "shop"})
	v.clk.Advance(time.Hour)

	v.tamper("shop-app", "Bucket", "VersioningConfiguration/Status", "Suspended")
	v.tamper("shop-cache", "Queue", "VisibilityTimeout", "60") // drift.ignore: [cache]

	v.invoke(v.scheduledEvent())
	v.pump(50)

	r := onlyReport(t, v, "shop")
	app := stackOf(t, r, "app")
	if app.Status != drift.Drifted || len(app.Resources) != 1 {
		t.Fatalf("app: %s with %d drifted resources, want DRIFTED with 1: %+v", app.Status, len(app.Resources), app)
	}
	res := app.Resources[0]
	want := drift.Difference{Path: "/VersioningConfiguration/Status", Expected: "Enabled", Actual: "Suspended", Type: "NOT_EQUAL"}
	if res.LogicalID != "Bucket" || res.Type != "AWS::S3::Bucket" || res.Status != "MODIFIED" || !slices.Equal(res.Differences, []drift.Difference{want}) {
		t.Fatalf("app's drift = %+v, want Bucket AWS::S3::Bucket MODIFIED %+v", res, want)
	}
	if s := stackOf(t, r, "web"); s.Status != drift.InSync {
		t.Errorf("web: %s (%s), want IN_SYNC", s.Status, s.Reason)
	}
	if s := stackOf(t, r, "cache"); s.Status != drift.NotChecked || !strings.Contains(s.Reason, `drift.ignore pattern "cache"`) {
		t.Errorf("cache: %s (%s), want NOT_CHECKED by the ignore pattern", s.Status, s.Reason)
	}
	if s := stackOf(t, r, "gone"); s.Status != drift.NotChecked || !slices.Equal(r.Graph.Missing, []string{"shop-gone"}) {
		t.Errorf("gone: %s, missing %v; want NOT_CHECKED and listed missing", s.Status, r.Graph.Missing)
	}
	if !slices.Equal(r.Graph.Untracked, []string{"shop-stray"}) {
		t.Errorf("untracked = %v, want [shop-stray]", r.Graph.Untracked)
	}
	md := v.object(layout.DriftMarkdownKey("shop", r.Sweep))
	for _, s := range []string{"| app | shop-app | DRIFTED |", "`/VersioningConfiguration/Status` | Enabled | Suspended | NOT_EQUAL", "shop-gone", "shop-stray"} {
		if !strings.Contains(md, s) {
			t.Errorf("Markdown report lacks %q:\n%s", s, md)
		}
	}
	if !r.Graph.Notified {
		t.Error("the drifted graph's report says it was not notified")
	}
	notes := v.notifications()
	if len(notes) != 1 {
		t.Fatalf("%d notifications, want 1: %q", len(notes), notes)
	}
	if !strings.Contains(notes[0], "1 of 4 stacks drifted") || !strings.Contains(notes[0], "shop-app Bucket (AWS::S3::Bucket) /VersioningConfiguration/Status: expected Enabled, actual Suspended") {
		t.Errorf("notification lacks the drifted property:\n%s", notes[0])
	}
}

func TestInSyncGraphSendsNoNotification(t *testing.T) {
	v := newEnv(t, envOptions{})
	v.deployment("testdata/bundle", "shop", "shop", "app", "web")
	for range 2 {
		v.invoke(v.scheduledEvent())
		v.pump(50)
	}
	rs := v.reports("shop")
	if len(rs) != 2 {
		t.Fatalf("%d reports, want 2", len(rs))
	}
	for _, r := range rs {
		if n := r.Graph.Count(drift.InSync); n != 2 {
			t.Errorf("report %s: %d stacks in sync, want 2", r.Sweep, n)
		}
		if r.Graph.Notified {
			t.Errorf("report %s says it was notified", r.Sweep)
		}
	}
	if rs[1].Previous == "" || len(rs[1].Changes) != 0 {
		t.Errorf("second report: previous %q, changes %v; want the first report and no changes", rs[1].Previous, rs[1].Changes)
	}
	if notes := v.notifications(); len(notes) != 0 {
		t.Fatalf("in-sync graph sent notifications: %q", notes)
	}

	// The same graph, drifted and then put back, is news both times.
	v.tamper("shop-web", "Queue", "VisibilityTimeout", "60")
	v.invoke(v.scheduledEvent())
	v.pump(50)
	v.tamper("shop-web", "Queue", "VisibilityTimeout", "30")
	v.invoke(v.scheduledEvent())
	v.pump(50)
	notes := v.notifications()
	if len(notes) != 2 || !strings.Contains(notes[0], "1 of 2 stacks drifted") || !strings.Contains(notes[1], "now in sync") {
		t.Fatalf("notifications = %q, want one drifted and one back in sync", notes)
	}
}

func TestLockedGraphIsSkipped(t *testing.T) {
	v := newEnv(t, envOptions{})
	v.deployment("testdata/bundle", "shop", "shop", "app", "web")
	v.deployment("testdata/bundle", "other", "other", "api")
	l, err := v.store().Acquire(context.Background(), "shop", "shop", "20261130T110000Z-run1", statestore.Owner{Function: "cairn-deployer", RequestID: "req-42"})
	if err != nil {
		t.Fatal(err)
	}
	v.invoke(v.scheduledEvent())
	v.pump(50)
	r := onlyReport(t, v, "shop")
	for _, s := range r.Graph.Stacks {
		if s.Status != drift.NotChecked || !strings.Contains(s.Reason, "deploy in progress (lock held by run 20261130T110000Z-run1, function cairn-deployer, request req-42, since "+l.AcquiredAt.Format(time.RFC3339)) {
			t.Errorf("%s: %s (%s), want NOT_CHECKED: deploy in progress", s.Name, s.Status, s.Reason)
		}
	}
	if other := onlyReport(t, v, "other"); stackOf(t, other, "api").Status != drift.InSync {
		t.Errorf("the unlocked graph was not checked: %+v", other.Graph.Stacks)
	}
	if _, started := v.flight.stats(); started != 1 {
		t.Errorf("%d detections started, want 1 (only the unlocked graph's stack)", started)
	}
	if notes := v.notifications(); len(notes) != 0 {
		t.Errorf("a skipped graph sent notifications: %q", notes)
	}
}

func TestConcurrencyLimitHoldsOverFiftyStacks(t *testing.T) {
	// Detections take longer than the 30s between continuations, so passes run while
	// detections are in flight.
	v := newEnv(t, envOptions{concurrency: 5, detectDelay: 45 * time.Second})
	var names []string
	for i := range 50 {
		names = append(names, "s"+string(rune('a'+i/10))+string(rune('0'+i%10)))
	}
	v.deployment("testdata/bundle", "big", "big", names...)
	v.invoke(v.scheduledEvent())
	v.pump(200)
	maxInFlight, started := v.flight.stats()
	if started != 50 {
		t.Errorf("%d detections started, want 50", started)
	}
	if maxInFlight != 5 {
		t.Errorf("at most %d detections in flight, want exactly the limit 5", maxInFlight)
	}
	if n := onlyReport(t, v, "big").Graph.Count(drift.InSync); n != 50 {
		t.Errorf("%d stacks in sync, want 50", n)
	}
	if calls := v.e.Calls()["cloudformation.DetectStackDrift"]; calls != 50 {
		t.Errorf("emulator counted %d DetectStackDrift calls, want 50", calls)
	}
}

func TestHandlerAcceptsTheExactScheduledEvent(t *testing.T) {
	v := newEnv(t, envOptions{})
	v.deployment("testdata/bundle", "shop", "shop", "app")
	exact, err := os.ReadFile("../../events/scheduled-event.json")
	if err != nil {
		t.Fatal(err)
	}
	v.invoke(exact)
	// The sweep is named after the event (time and id), so a redelivery starts nothing new.
	const id = "20261130T120000Z-53dc4d37"
	sw := v.sweep(id)
	if sw.Trigger != "schedule" || sw.Graphs[0].Stacks[0].Status != drift.Detecting {
		t.Fatalf("sweep after the scheduled event: trigger %q, stack %s; want schedule, DETECTING", sw.Trigger, sw.Graphs[0].Stacks[0].Status)
	}
	v.invoke(exact)
	if _, started := v.flight.stats(); started != 1 {
		t.Errorf("redelivered scheduled event started %d detections in all, want 1", started)
	}
	v.pump(50)
	if r := onlyReport(t, v, "shop"); r.Sweep != id {
		t.Errorf("report of sweep %s, want %s", r.Sweep, id)
	}

	// The sample drift status change, in its SQS record, is accepted with no sweep open.
	sample, err := os.ReadFile("../../events/drift-status-change.json")
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		BatchItemFailures []any `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(v.invoke(sample), &resp); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("drift status change event: failures %v, err %v", resp.BatchItemFailures, err)
	}
}

func TestLongDetectionFinishesAcrossInvocations(t *testing.T) {
	v := newEnv(t, envOptions{detectDelay: 5 * time.Minute})
	v.deployment("testdata/bundle", "shop", "shop", "app", "web")
	v.tamper("shop-web", "Bucket", "Tags.0.Value", "growth")
	v.invoke(v.scheduledEvent())
	ids := v.openSweeps()
	if len(ids) != 1 {
		t.Fatalf("open sweeps %v, want 1 after the first invocation", ids)
	}
	sw := v.sweep(ids[0])
	for _, s := range sw.Graphs[0].Stacks {
		if s.Status != drift.Detecting || s.DetectionID == "" {
			t.Fatalf("after the first invocation %s is %s (detection %q), want DETECTING with an id", s.Name, s.Status, s.DetectionID)
		}
	}
	if sw.Continuation != 1 {
		t.Fatalf("continuation %d, want 1 (handed off to a delayed message)", sw.Continuation)
	}
	rounds := v.pump(50)
	if rounds < 10 {
		t.Errorf("a 5-minute detection finished after %d rounds of 30s", rounds)
	}
	r := onlyReport(t, v, "shop")
	web := stackOf(t, r, "web")
	if web.Status != drift.Drifted || web.Resources[0].Differences[0].Path != "/Tags/0/Value" || web.Resources[0].Differences[0].Actual != "growth" {
		t.Fatalf("web: %s %+v, want DRIFTED on /Tags/0/Value", web.Status, web.Resources)
	}
	if s := stackOf(t, r, "app"); s.Status != drift.InSync {
		t.Errorf("app: %s, want IN_SYNC", s.Status)
	}
}

func (v *env) sweep(id string) *drift.Sweep {
	v.t.Helper()
	var sw drift.Sweep
	if err := json.Unmarshal([]byte(v.object(layout.SweepKey(id))), &sw); err != nil {
		v.t.Fatal(err)
	}
	return &sw
}

func TestDeployStartingMidSweepStopsFurtherDetections(t *testing.T) {
	v := newEnv(t, envOptions{concurrency: 1})
	v.deployment("testdata/bundle", "shop", "shop", "app", "web")
	v.invoke(v.scheduledEvent())
	if _, started := v.flight.stats(); started != 1 {
		t.Fatalf("%d detections started, want 1 (limit 1)", started)
	}
	if _, err := v.store().Acquire(context.Background(), "shop", "shop", "run-2", statestore.Owner{Function: "cairn-deployer"}); err != nil {
		t.Fatal(err)
	}
	v.pump(50)
	r := onlyReport(t, v, "shop")
	if s := stackOf(t, r, "app"); s.Status != drift.InSync {
		t.Errorf("app (started before the deploy): %s, want IN_SYNC", s.Status)
	}
	if s := stackOf(t, r, "web"); s.Status != drift.NotChecked || !strings.Contains(s.Reason, "deploy in progress (lock held by run run-2") {
		t.Errorf("web: %s (%s), want NOT_CHECKED: deploy in progress", s.Status, s.Reason)
	}
	if _, started := v.flight.stats(); started != 1 {
		t.Errorf("%d detections started in all, want 1: none after the lock was taken", started)
	}
}

func TestAppliedConfigDecidesWhatIsChecked(t *testing.T) {
	v := newEnv(t, envOptions{})
	v.deployment("testdata/disabled", "quiet", "quiet", "app")
	lost := v.deployment("testdata/bundle", "shop", "shop", "app", "cache")
	lost.Bundle.VersionID = "no-such-version"
	v.writeGraph("shop", "shop", lost)
	v.invoke(v.scheduledEvent())
	v.pump(50)

	quiet := onlyReport(t, v, "quiet")
	if s := stackOf(t, quiet, "app"); s.Status != drift.NotChecked || !strings.Contains(s.Reason, "drift.enabled: false") {
		t.Errorf("quiet/app: %s (%s), want NOT_CHECKED by drift.enabled: false", s.Status, s.Reason)
	}
	shop := onlyReport(t, v, "shop")
	if s := stackOf(t, shop, "cache"); s.Status != drift.InSync {
		t.Errorf("shop/cache: %s (%s), want IN_SYNC: without a readable config nothing is ignored", s.Status, s.Reason)
	}
	if len(shop.Graph.Notes) != 1 || !strings.Contains(shop.Graph.Notes[0], "applied config not readable") || !strings.Contains(shop.Graph.Notes[0], "every stack is checked") {
		t.Errorf("shop notes = %q, want the unreadable config explained", shop.Graph.Notes)
	}
}

// TestDriftIgnoreAppliesToABundleAppliedThroughAPlan: a bundle planned and approved was
// uploaded to plans/NAME.zip, not deployments/NAME.zip; its drift.ignore still applies.
func TestDriftIgnoreAppliesToABundleAppliedThroughAPlan(t *testing.T) {
	v := newEnv(t, envOptions{})
	g := v.deployment("testdata/bundle", "shop", "shop", "app", "cache")
	zipped, err := bundle.Zip("testdata/bundle")
	if err != nil {
		t.Fatal(err)
	}
	put, err := v.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(layout.PlanUploadKey("shop")), Body: bytes.NewReader(zipped)})
	if err != nil {
		t.Fatal(err)
	}
	g.Bundle.VersionID = aws.ToString(put.VersionId)
	v.writeGraph("shop", "shop", g)
	v.tamper("shop-cache", "Queue", "VisibilityTimeout", "60") // drift.ignore: [cache]
	v.invoke(v.scheduledEvent())
	v.pump(50)

	r := onlyReport(t, v, "shop")
	if s := stackOf(t, r, "cache"); s.Status != drift.NotChecked || !strings.Contains(s.Reason, `drift.ignore pattern "cache"`) {
		t.Errorf("cache: %s (%s), want NOT_CHECKED by the applied config's drift.ignore", s.Status, s.Reason)
	}
	if len(r.Graph.Notes) != 0 {
		t.Errorf("notes = %q, want none: the applied config was read from %s", r.Graph.Notes, layout.PlanUploadKey("shop"))
	}
}

func TestHandlerRefusesWhatItCannotUse(t *testing.T) {
	v := newEnv(t, envOptions{})
	v.deployment("testdata/bundle", "shop", "shop", "app")
	if _, err := v.e.Invoke(context.Background(), "drift", []byte(`{"detail-type":"Object Created","source":"aws.s3","detail":{}}`)); err == nil || !strings.Contains(err.Error(), `unknown event (detail-type "Object Created"`) {
		t.Fatalf("unknown event: err %v", err)
	}
	v.invoke(v.scheduledEvent())
	id := v.openSweeps()[0]
	payload, _ := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "garbage", Body: "not json"},
		{MessageId: "stale", Body: `{"cairn":"drift-continue","sweep":"` + id + `","seq":0}`},
	}})
	var resp events.SQSEventResponse
	if err := json.Unmarshal(v.invoke(payload), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "garbage" {
		t.Fatalf("batch failures %+v, want only the garbage record", resp.BatchItemFailures)
	}
	if sw := v.sweep(id); sw.Invocations != 1 {
		t.Errorf("a stale continuation drove the sweep: %d invocations, want 1", sw.Invocations)
	}
}

func TestDriftStatusEventFinishesTheSweepBeforeItsContinuation(t *testing.T) {
	v := newEnv(t, envOptions{detectDelay: time.Minute})
	v.deployment("testdata/bundle", "shop", "shop", "app")
	v.invoke(v.scheduledEvent())
	v.clk.Advance(61 * time.Second)
	var statusEvents, continuations []sqstypes.Message
	// The emulator emits the event from its own goroutine, which a loaded machine may run
	// seconds late.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		for _, m := range v.receive(v.queueURL) {
			if strings.Contains(aws.ToString(m.Body), sweeper.DriftStatusChange) {
				statusEvents = append(statusEvents, m)
			} else {
				continuations = append(continuations, m)
			}
		}
		if len(statusEvents) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(statusEvents) != 1 || len(continuations) != 1 {
		t.Fatalf("%d status events and %d continuations on the queue, want 1 and 1", len(statusEvents), len(continuations))
	}
	v.deliver(statusEvents)
	if r := onlyReport(t, v, "shop"); stackOf(t, r, "app").Status != drift.InSync {
		t.Fatalf("after the status event app is %s, want IN_SYNC", stackOf(t, r, "app").Status)
	}
	if open := v.openSweeps(); len(open) != 0 {
		t.Fatalf("sweeps still open: %v", open)
	}
	v.deliver(continuations) // finds the sweep finished: nothing to do, no error
	if len(v.reports("shop")) != 1 {
		t.Fatal("the late continuation wrote another report")
	}
}

func TestSweepClaimedByACrashedInvocationIsTakenOverOnceItsClaimExpires(t *testing.T) {
	v := newEnv(t, envOptions{detectDelay: 10 * time.Second})
	v.deployment("testdata/bundle", "shop", "shop", "app")
	v.invoke(v.scheduledEvent())
	id := v.openSweeps()[0]
	// An invocation claimed the sweep for two minutes and died without handing it off.
	sw := v.sweep(id)
	sw.Holder, sw.HeldUntil = "dead-invocation", v.clk.Now().Add(2*time.Minute)
	body, _ := json.Marshal(sw)
	v.must(v.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(layout.SweepKey(id)), Body: bytes.NewReader(body)}))
	rounds := v.pump(50)
	if rounds < 4 {
		t.Errorf("sweep finished after %d rounds of 30s, before the dead claim expired", rounds)
	}
	if r := onlyReport(t, v, "shop"); stackOf(t, r, "app").Status != drift.InSync {
		t.Fatalf("app: %s, want IN_SYNC", stackOf(t, r, "app").Status)
	}
}

// TestDriftOfASecretPropertyShowsNoValue tampers, out of band, an SSM parameter whose
// value a template sets from a NoEcho parameter, in a stack of the applied config and in
// one the config does not name (whose template the pass reads from CloudFormation). The
// drift report (JSON and Markdown) and the notification say they drifted, and hold neither
// the expected value (the secret) nor the actual one; a property free of secrets still
// shows its values.
func TestDriftOfASecretPropertyShowsNoValue(t *testing.T) {
	const secret, tampered = "Corr3ct-Horse-Battery-7", "admin:Tamp3red-Guess"
	v := newEnv(t, envOptions{})
	v.deployment("testdata/secret", "shop", "shop", "app", "unknown")
	v.tamper("shop-app", "Credential", "Value", tampered)
	v.tamper("shop-app", "Credential", "Description", "edited by hand")
	v.tamper("shop-unknown", "Credential", "Description", "edited too")
	v.tamper("shop-unknown", "Credential", "Value", tampered)
	v.invoke(v.scheduledEvent())
	v.pump(50)

	r := onlyReport(t, v, "shop")
	app := stackOf(t, r, "app")
	if app.Status != drift.Drifted || len(app.Resources) != 1 {
		t.Fatalf("app: %s %+v", app.Status, app.Resources)
	}
	diffs := map[string]drift.Difference{}
	for _, d := range app.Resources[0].Differences {
		diffs[d.Path] = d
	}
	if d := diffs["/Value"]; !d.Masked || d.Expected != "****" || d.Actual != "****" {
		t.Errorf("/Value drifted as %+v, want masked", d)
	}
	if d := diffs["/Description"]; d.Masked || d.Actual != "edited by hand" {
		t.Errorf("/Description drifted as %+v, want its values", d)
	}
	// Not in the applied config: its template is read from CloudFormation instead.
	if u := stackOf(t, r, "unknown"); u.Status != drift.Drifted || len(u.Resources) != 1 {
		t.Errorf("a stack of unknown template: %+v", u)
	} else {
		for _, d := range u.Resources[0].Differences {
			if d.Masked != (d.Path == "/Value") {
				t.Errorf("a stack of unknown template: %+v, want only /Value masked", d)
			}
		}
	}
	md := v.object(layout.DriftMarkdownKey("shop", r.Sweep))
	notes := v.notifications()
	if len(notes) != 1 {
		t.Fatalf("%d notifications", len(notes))
	}
	for where, text := range map[string]string{"JSON report": v.object(layout.DriftReportKey("shop", r.Sweep)), "Markdown report": md, "notification": notes[0]} {
		for _, s := range []string{secret, tampered, "Tamp3red"} {
			if strings.Contains(text, s) {
				t.Errorf("the %s holds %q:\n%s", where, s, text)
			}
		}
	}
	if !strings.Contains(md, "| `/Value` | \\*\\*\\*\\* | \\*\\*\\*\\* | NOT_EQUAL, a secret: values not shown |") && !strings.Contains(md, "| `/Value` | **** | **** | NOT_EQUAL, a secret: values not shown |") {
		t.Errorf("the Markdown report does not say the secret drifted:\n%s", md)
	}
	if !strings.Contains(notes[0], "shop-app Credential (AWS::SSM::Parameter) /Value: expected ****, actual **** (NOT_EQUAL, a secret: values not shown)") {
		t.Errorf("the notification does not say the secret drifted:\n%s", notes[0])
	}
}

// TestDriftOfAPropertySetFromASecretThroughAnotherResourceShowsNoValue tampers, out of
// band, an SSM parameter (Copy) whose value a template sets from another resource's
// attribute, itself set from a NoEcho parameter: in a stack of the applied config and in
// one whose template the pass reads from CloudFormation. The reports and the notification
// say Copy drifted, and hold neither value; its free property still shows its values.
func TestDriftOfAPropertySetFromASecretThroughAnotherResourceShowsNoValue(t *testing.T) {
	const secret, tampered = "Ch4ined-Horse-Battery-8", "admin:Tamp3red-Chain"
	v := newEnv(t, envOptions{})
	v.deployment("testdata/secretchain", "shop", "shop", "app", "unknown")
	for _, stack := range []string{"shop-app", "shop-unknown"} {
		v.tamper(stack, "Copy", "Value", tampered)
		v.tamper(stack, "Copy", "Description", "edited by hand")
	}
	v.invoke(v.scheduledEvent())
	v.pump(50)

	r := onlyReport(t, v, "shop")
	for _, name := range []string{"app", "unknown"} {
		s := stackOf(t, r, name)
		if s.Status != drift.Drifted || len(s.Resources) != 1 {
			t.Fatalf("%s: %s %+v", name, s.Status, s.Resources)
		}
		for _, d := range s.Resources[0].Differences {
			if d.Masked != (d.Path == "/Value") || d.Path == "/Description" && d.Actual != "edited by hand" {
				t.Errorf("%s: %+v, want only /Value masked", name, d)
			}
		}
	}
	notes := v.notifications()
	if len(notes) != 1 {
		t.Fatalf("%d notifications", len(notes))
	}
	for where, text := range map[string]string{"JSON report": v.object(layout.DriftReportKey("shop", r.Sweep)), "Markdown report": v.object(layout.DriftMarkdownKey("shop", r.Sweep)), "notification": notes[0]} {
		for _, s := range []string{secret, tampered, "Tamp3red"} {
			if strings.Contains(text, s) {
				t.Errorf("the %s holds %q:\n%s", where, s, text)
			}
		}
	}
}

// TestWaitReadsTheReportsOfASweepTheFunctionFinished: cairn drift --wait started a sweep,
// and the drift function finished it (status events, continuations) before the command's
// next step: Wait returns the sweep as its reports recorded it.
func TestWaitReadsTheReportsOfASweepTheFunctionFinished(t *testing.T) {
	v := newEnv(t, envOptions{})
	v.deployment("testdata/bundle", "shop", "shop", "app", "web")
	v.tamper("shop-web", "Queue", "VisibilityTimeout", "60")
	ctx := context.Background()
	sw, err := v.d.Start(ctx, sweeper.Request{Trigger: "cli"})
	if err != nil || sw.Done() || sw.InFlight() != 2 {
		t.Fatalf("started: %+v, %v; want two detections in flight", sw, err)
	}
	v.pump(50) // the function finishes it
	got, err := v.d.Wait(ctx, sw, time.Second)
	if err != nil || !got.Done() || len(got.Graphs) != 1 {
		t.Fatalf("Wait: %+v, %v", got, err)
	}
	g := got.Graphs[0]
	if g.Report == "" || g.Count(drift.Drifted) != 1 || g.Count(drift.InSync) != 1 {
		t.Errorf("graph as Wait returns it: report %q, %d drifted, %d in sync; want its report's: 1 and 1", g.Report, g.Count(drift.Drifted), g.Count(drift.InSync))
	}
}
