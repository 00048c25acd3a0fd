package run

import (
	"strings"
	"testing"
)

// TestDriftStopsRefusingAndProtectedStacks: a drift-aware change set that would bring
// back properties changed outside cairn is not executed for a stack whose on_drift is
// refuse (in a push or a plan), nor for a protected stack when the apply of an approved
// plan had to make it; SyncWithActual drift (the template adopts the change) is no stop,
// and an unprotected revert stack executes.
func TestDriftStopsRefusingAndProtectedStacks(t *testing.T) {
	revert := []DriftedProperty{{LogicalID: "Web", Property: "SecurityGroupIngress", Revert: true}, {LogicalID: "Queue", Property: "VisibilityTimeout"}}
	adopt := []DriftedProperty{{LogicalID: "Queue", Property: "VisibilityTimeout"}}
	for _, tc := range []struct {
		name              string
		mode              Mode
		plan              string
		refuse, protected bool
		drift             []DriftedProperty
		want              Phase
		reason            string
	}{
		{name: "refuse, push, drift to revert", mode: ModeDeploy, refuse: true, drift: revert, want: Failed,
			reason: "stack shop-app: stopped: its on_drift is refuse and it was changed outside cairn: Web.SecurityGroupIngress; its change set cairn-r-1 was not executed. " +
				"Adopt the change: set those properties in its template to what they are now (`cairn drift shop` shows the values), then `cairn plan PATH --deployment shop`; " +
				"or revert it through review: set `on_drift: revert` on the stack and `cairn plan PATH --deployment shop`, whose comment shows what it brings back"},
		{name: "refuse, plan, drift to revert", mode: ModePlan, refuse: true, drift: revert, want: Failed, reason: "its on_drift is refuse"},
		{name: "refuse, the template adopts the drift", mode: ModeDeploy, refuse: true, drift: adopt, want: Executing},
		{name: "refuse, no drift", mode: ModeDeploy, refuse: true, want: Executing},
		{name: "revert, unprotected push", mode: ModeDeploy, drift: revert, want: Executing},
		{name: "protected, plan: shown for review", mode: ModePlan, protected: true, drift: revert, want: Ready},
		{name: "protected, apply made the change set", mode: ModeDeploy, plan: "p-1", protected: true, drift: revert, want: Failed,
			reason: "it is protected, and its change set cairn-r-1, made by this apply (the plan could not make it), would bring back properties changed outside cairn that the approved plan did not show: Web.SecurityGroupIngress"},
	} {
		r := &Run{ID: "r", Deployment: "shop", Mode: tc.mode, Plan: tc.plan, Status: Running, Stacks: map[string]*Stack{
			"app": {Name: "app", StackName: "shop-app", Phase: CreatingChangeSet, ChangeSetName: "cairn-r-1", ChangeSetType: "UPDATE", Exists: true,
				Intent: IntentDeploy, RefuseDrift: tc.refuse, PlanOnly: tc.protected},
		}}
		got, actions := Advance(r, []Observation{{Stack: "app", ChangeSetID: "arn:cs/1", ChangeSetStatus: "CREATE_COMPLETE", Changes: 2, Drift: tc.drift}}, t0, Options{})
		s := got.Stacks["app"]
		if s.Phase != tc.want || !strings.Contains(s.Reason, tc.reason) {
			t.Errorf("%s: %s %q, want %s %q", tc.name, s.Phase, s.Reason, tc.want, tc.reason)
		}
		if tc.want == Failed {
			if s.Stopped != tc.protected || s.Class != Fix {
				t.Errorf("%s: stopped %v class %s, want class fix, stopped (planned again) only when protected", tc.name, s.Stopped, s.Class)
			}
			for _, a := range actions {
				if a.Kind == ExecuteChangeSet {
					t.Errorf("%s: its change set is executed", tc.name)
				}
			}
		}
	}
}
