package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
)

var planned = time.Date(2026, 11, 30, 11, 58, 0, 0, time.UTC)

// reviewed is a plan of three stacks: network unchanged, app updated by a reviewed change
// set and consuming network's VpcId, web created at apply.
func reviewed() *Document {
	r := &run.Run{ID: "P1", Deployment: "shop", Mode: run.ModePlan, Status: run.Succeeded, Stacks: map[string]*run.Stack{
		"network": {Name: "network", StackName: "shop-network", Intent: run.IntentDeploy, Phase: run.Unchanged, Exists: true, Protect: true},
		"app": {Name: "app", StackName: "shop-app", Intent: run.IntentDeploy, Phase: run.Ready, Exists: true, Requires: []string{"network"},
			RawParameters: map[string]string{"VpcId": "${output network::VpcId}"}, Parameters: map[string]string{"VpcId": "vpc-1"},
			ParametersHash: run.HashParameters(map[string]string{"VpcId": "vpc-1"}), ChangeSetName: "cairn-P1-1", ChangeSetID: "cs-app", ChangeSetType: "UPDATE"},
		"web": {Name: "web", StackName: "shop-web", Intent: run.IntentDeploy, Phase: run.Ready, AtApply: true, Requires: []string{"app"}, Reason: "created at apply"},
		"old": {Name: "old", StackName: "shop-old", Intent: run.IntentDelete, Phase: run.Ready, Exists: true},
	}}
	return &Document{ID: "P1", Deployment: "shop", Namespace: "shop", GraphKey: "shop", Status: Planned, CreatedAt: planned, Generation: 3,
		Bundle: BundleVersion{Bucket: "cairn-state", Key: "plans/shop.zip", VersionID: "v1"}, Run: r,
		Lookups: map[string][]config.Lookup{"app": {{Kind: "output", Stack: "network", StackName: "shop-network", Output: "VpcId"}}},
		Stacks: []Stack{
			{Name: "app", StackName: "shop-app", Action: Update, ChangeSetName: "cairn-P1-1", ChangeSetID: "cs-app", Status: "UPDATE_COMPLETE", LastUpdated: planned.Add(-time.Hour),
				ParametersHash: r.Stacks["app"].ParametersHash, Parameters: map[string]string{"VpcId": "vpc-1"}},
			{Name: "network", StackName: "shop-network", Action: None, Status: "CREATE_COMPLETE", LastUpdated: planned.Add(-2 * time.Hour)},
			{Name: "old", StackName: "shop-old", Action: Delete, Status: "CREATE_COMPLETE", LastUpdated: planned.Add(-2 * time.Hour)},
			{Name: "web", StackName: "shop-web", Action: Create, CreatedAtApply: true},
		}}
}

// fresh is what an approval sees when nothing changed since the plan.
func fresh() Observed {
	return Observed{Generation: 3, LatestVersion: "v1",
		Live: map[string]Live{
			"shop-network": {StackName: "shop-network", StackID: "id-net", Status: "CREATE_COMPLETE", LastUpdated: planned.Add(-2 * time.Hour), Outputs: map[string]string{"VpcId": "vpc-1"}, TerminationProtection: true},
			"shop-app":     {StackName: "shop-app", StackID: "id-app", Status: "UPDATE_COMPLETE", LastUpdated: planned.Add(-time.Hour)},
			"shop-old":     {StackName: "shop-old", StackID: "id-old", Status: "CREATE_COMPLETE", LastUpdated: planned.Add(-2 * time.Hour)},
		},
		ChangeSets: map[string]ChangeSet{"cs-app": {Found: true, Status: "CREATE_COMPLETE", ExecutionStatus: "AVAILABLE"}}}
}

func TestLapsed(t *testing.T) {
	ttl := 7 * 24 * time.Hour
	for _, tc := range []struct {
		name   string
		change func(*Document)
		now    time.Time
		want   []string
		final  bool
	}{
		{"planned", func(*Document) {}, planned.Add(time.Hour), nil, false},
		{"applied", func(p *Document) { p.Status, p.AppliedBy, p.AppliedAt = Applied, "R9", planned.Add(time.Minute) }, planned.Add(time.Hour),
			[]string{"plan P1 was already applied by run R9 at 2026-11-30T11:59:00Z: a plan applies at most once; re-plan"}, true},
		{"applying", func(p *Document) { p.Status, p.AppliedBy = Applying, "R9" }, planned.Add(time.Hour), []string{"plan P1 was already applied by run R9"}, true},
		{"failed", func(p *Document) { p.Status, p.Reason = PlanFailed, "stack app failed" }, planned.Add(time.Hour),
			[]string{"plan P1 failed (stack app failed): nothing to apply; re-plan"}, true},
		{"superseded", func(p *Document) { p.Status, p.Reason = Superseded, "a newer bundle was planned as plan P2" }, planned.Add(time.Hour),
			[]string{"plan P1 is superseded (a newer bundle was planned as plan P2): re-plan"}, false},
		{"expired", func(*Document) {}, planned.Add(ttl + time.Minute), []string{"plan P1 expired: made 168h1m0s ago, plans stay approvable for 168h0m0s; re-plan"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := reviewed()
			tc.change(p)
			got, final := p.Lapsed(tc.now, ttl)
			if final != tc.final || len(got) != len(tc.want) {
				t.Fatalf("%q final %v, want %q final %v", got, final, tc.want, tc.final)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("reason %q, want %q", got[i], tc.want[i])
				}
			}
		})
	}
}

func TestStaleReasons(t *testing.T) {
	for _, tc := range []struct {
		name    string
		observe func(*Observed)
		want    []string
	}{
		{"fresh", func(*Observed) {}, nil},
		{"graph changed", func(o *Observed) { o.Generation, o.GraphRunID = 4, "R7" },
			[]string{"the persistent graph shop/shop changed since the plan (generation 4, planned at 3): another run applied by run R7 in between: re-plan"}},
		{"newer bundle", func(o *Observed) { o.LatestVersion = "v2" },
			[]string{"a newer bundle was uploaded to s3://cairn-state/plans/shop.zip (version v2; the plan is of version v1): re-plan"}},
		{"bundle gone", func(o *Observed) { o.LatestVersion = "" },
			[]string{"a newer bundle was uploaded to s3://cairn-state/plans/shop.zip (version none; the plan is of version v1): re-plan"}},
		{"stack updated", func(o *Observed) {
			l := o.Live["shop-app"]
			l.Status, l.LastUpdated = "UPDATE_ROLLBACK_COMPLETE", time.Date(2026, 11, 30, 12, 3, 0, 0, time.UTC)
			o.Live["shop-app"] = l
		}, []string{"stack shop-app: change set cairn-P1-1 is stale (stack updated 12:03:00 after plan 11:58:00; now UPDATE_ROLLBACK_COMPLETE, was UPDATE_COMPLETE): re-plan"}},
		{"stack deleted", func(o *Observed) { delete(o.Live, "shop-old") },
			[]string{"stack shop-old: the plan is stale (stack deleted after plan 11:58:00): re-plan"}},
		{"stack created", func(o *Observed) {
			o.Live["shop-web"] = Live{StackName: "shop-web", Status: "CREATE_COMPLETE", LastUpdated: time.Date(2026, 11, 30, 12, 1, 0, 0, time.UTC)}
		}, []string{"stack shop-web: the plan is stale (stack created at 12:01:00 after plan 11:58:00): re-plan"}},
		{"change set gone", func(o *Observed) { delete(o.ChangeSets, "cs-app") },
			[]string{"stack shop-app: change set cairn-P1-1 no longer exists (deleted after plan 11:58:00): re-plan"}},
		{"change set executed", func(o *Observed) {
			o.ChangeSets["cs-app"] = ChangeSet{Found: true, Status: "CREATE_COMPLETE", ExecutionStatus: "EXECUTE_COMPLETE"}
		},
			[]string{"stack shop-app: change set cairn-P1-1 is CREATE_COMPLETE/EXECUTE_COMPLETE, not CREATE_COMPLETE/AVAILABLE: re-plan"}},
		{"consumed output changed", func(o *Observed) {
			l := o.Live["shop-network"]
			l.Outputs = map[string]string{"VpcId": "vpc-9"}
			o.Live["shop-network"] = l
		}, []string{`stack shop-app: change set cairn-P1-1 is stale (the outputs it consumes changed since the plan: VpcId was "vpc-1", now "vpc-9"): re-plan`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fresh()
			tc.observe(&o)
			if got := reviewed().StaleReasons(o); !slices.Equal(got, tc.want) {
				t.Errorf("reasons\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestChangeSetsToCheck(t *testing.T) {
	p := reviewed()
	if got := p.ChangeSetsToCheck(fresh().Live); !slices.Equal(got, []string{"cs-app"}) {
		t.Errorf("fresh: %q", got)
	}
	live := fresh().Live
	l := live["shop-app"]
	l.Status = "UPDATE_ROLLBACK_COMPLETE"
	live["shop-app"] = l
	if got := p.ChangeSetsToCheck(live); len(got) != 0 {
		t.Errorf("the change set of a stack that changed since the plan is described: %q", got)
	}
}

func TestApplyRun(t *testing.T) {
	at := planned.Add(time.Hour)
	p := reviewed()
	live := fresh().Live
	live["shop-web"] = Live{StackName: "shop-web", StackID: "id-web", Status: "REVIEW_IN_PROGRESS"}
	r := p.ApplyRun("R2", live, at)
	if p.Run.ID != "P1" || p.Run.Stacks["app"].Phase != run.Ready {
		t.Fatal("ApplyRun changed the plan's run")
	}
	if r.ID != "R2" || r.Mode != run.ModeDeploy || r.Status != run.Running || !r.StartedAt.Equal(at) || r.Seq != 0 {
		t.Fatalf("apply run %+v", r)
	}
	app, net, web, old := r.Stacks["app"], r.Stacks["network"], r.Stacks["web"], r.Stacks["old"]
	if app.Phase != run.Pending || app.PlannedParametersHash != app.ParametersHash || app.ChangeSetID != "cs-app" {
		t.Errorf("reviewed stack %+v: its change set waits, its parameters must resolve as planned", app)
	}
	if net.Phase != run.Pending || net.ChangeSetName != "" || net.PlannedParametersHash != net.ParametersHash || net.Outputs["VpcId"] != "vpc-1" {
		t.Errorf("unchanged stack %+v: re-checked with today's outputs", net)
	}
	if !net.Protect || !net.Protected || app.Protected {
		t.Errorf("termination protection wanted/seen: network %v/%v, app %v", net.Protect, net.Protected, app.Protected)
	}
	if web.Phase != run.Pending || web.ChangeSetName != "" || web.Exists || web.StackID != "id-web" || web.Reason != "" {
		t.Errorf("created-at-apply stack %+v: made at apply, on the empty stack", web)
	}
	if old.Phase != run.Pending || old.Intent != run.IntentDelete {
		t.Errorf("deletion %+v", old)
	}
	// A plan recorded before stacks carried termination protection still applies it.
	p = reviewed()
	p.Run.Stacks["network"].Protect = false
	p.Protection = map[string]bool{"network": true}
	if r := p.ApplyRun("R2", live, at); !r.Stacks["network"].Protect {
		t.Error("the protection of an older plan document is lost")
	}
}

func TestActionOf(t *testing.T) {
	for _, tc := range []struct {
		s    run.Stack
		want Action
	}{
		{run.Stack{Intent: run.IntentDelete}, Delete},
		{run.Stack{Intent: run.IntentRecreate}, Recreate},
		{run.Stack{Intent: run.IntentRead, Phase: run.Done}, None},
		{run.Stack{Intent: run.IntentDeploy, Phase: run.Unchanged, Exists: true}, None},
		{run.Stack{Intent: run.IntentDeploy, Phase: run.Ready, ChangeSetType: "CREATE"}, Create},
		{run.Stack{Intent: run.IntentDeploy, Phase: run.Ready, AtApply: true}, Create},
		{run.Stack{Intent: run.IntentDeploy, Phase: run.Ready, Exists: true, ChangeSetType: "UPDATE"}, Update},
	} {
		if got := ActionOf(&tc.s); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.s, got, tc.want)
		}
	}
}
