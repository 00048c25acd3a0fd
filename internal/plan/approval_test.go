package plan

import (
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
	return &Document{ID: "P1", Deployment: "shop", Namespace: "shop", GraphKey: "shop", Status: Planned, CreatedAt: planned,
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
