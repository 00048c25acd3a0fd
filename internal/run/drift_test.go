package run

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"
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

// TestPlanDetectsDrift: a plan run's stack asked to detect its drift (DetectDrift) starts a
// detection once its change set is ready, holds the plan open while CloudFormation
// detects (its dependents start meanwhile), and is ready once the detection ends: with
// the stack's drift status, or not known (with why) when the detection fails, cannot
// start or takes too long; a push does not detect, nor a plan of a stack not asked to.
func TestPlanDetectsDrift(t *testing.T) {
	ready := Observation{Stack: "app", ChangeSetID: "arn:cs/1", StackID: "arn:stack/app", ChangeSetStatus: "CREATE_COMPLETE", Changes: 1}
	for _, tc := range []struct {
		name      string
		mode      Mode
		detect    bool
		then      []Observation
		at        time.Duration // when the second step is, after the first
		phase     Phase
		drift     string
		note      string
		succeeded bool
	}{
		{name: "in sync", mode: ModePlan, detect: true, phase: Ready, drift: StackInSync, succeeded: true,
			then: []Observation{{Stack: "app", DriftDetectionID: "d-1", DriftDetectionStatus: "DETECTION_COMPLETE", StackDriftStatus: "IN_SYNC"}}},
		{name: "drifted", mode: ModePlan, detect: true, phase: Ready, drift: StackDrifted, succeeded: true,
			then: []Observation{{Stack: "app", DriftDetectionID: "d-1", DriftDetectionStatus: "DETECTION_COMPLETE", StackDriftStatus: "DRIFTED"}}},
		{name: "still detecting", mode: ModePlan, detect: true, phase: DetectingDrift,
			then: []Observation{{Stack: "app", DriftDetectionID: "d-1", DriftDetectionStatus: "DETECTION_IN_PROGRESS"}}},
		{name: "some resources not checked", mode: ModePlan, detect: true, phase: Ready, drift: StackDrifted, note: "checked only some resources: Failed to detect drift on resource [Fn]", succeeded: true,
			then: []Observation{{Stack: "app", DriftDetectionStatus: "DETECTION_FAILED", StackDriftStatus: "DRIFTED", DriftDetectionReason: "Failed to detect drift on resource [Fn]"}}},
		{name: "detection failed", mode: ModePlan, detect: true, phase: Ready, drift: DriftUnknown, note: "drift detection failed: Stack is busy", succeeded: true,
			then: []Observation{{Stack: "app", DriftDetectionStatus: "DETECTION_FAILED", DriftDetectionReason: "Stack is busy"}}},
		{name: "could not start", mode: ModePlan, detect: true, phase: Ready, drift: DriftUnknown, note: "could not start: DetectStackDrift shop-app: AccessDenied", succeeded: true,
			then: []Observation{{Stack: "app", Err: "DetectStackDrift shop-app: AccessDenied"}}},
		{name: "too long", mode: ModePlan, detect: true, phase: Ready, drift: DriftUnknown, note: "gave no result within 5m0s", succeeded: true,
			at: DriftDetectionTimeout + time.Second},
		{name: "not asked", mode: ModePlan, phase: Ready, succeeded: true},
		{name: "a push", mode: ModeDeploy, detect: true, phase: Executing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Run{ID: "r", Deployment: "shop", Mode: tc.mode, Status: Running, Stacks: map[string]*Stack{
				"app": {Name: "app", StackName: "shop-app", StackID: "arn:stack/app", Phase: CreatingChangeSet, ChangeSetName: "cairn-r-1", ChangeSetType: "UPDATE",
					Exists: true, Intent: IntentDeploy, DetectDrift: tc.detect},
				"web": {Name: "web", StackName: "shop-web", Phase: Pending, Intent: IntentDeploy, Requires: []string{"app"}},
			}}
			got, actions := Advance(r, []Observation{ready}, t0, Options{})
			app := got.Stacks["app"]
			detecting := tc.mode == ModePlan && tc.detect
			if detecting != (app.Phase == DetectingDrift) || detecting != slices.ContainsFunc(actions, func(a Action) bool {
				return a.Kind == DetectStackDrift && a.StackID == "arn:stack/app"
			}) {
				t.Fatalf("after the change set: %s, actions %+v", app.Phase, actions)
			}
			if detecting && (got.Status != Running || got.Stacks["web"].Phase != CreatingChangeSet) {
				t.Errorf("while detecting: run %s, web %s; want the run open and web started", got.Status, got.Stacks["web"].Phase)
			}
			if !detecting {
				if app.Phase != tc.phase {
					t.Errorf("phase %s, want %s", app.Phase, tc.phase)
				}
				return
			}
			got, _ = Advance(got, []Observation{{Stack: "app", DriftDetectionID: "d-1"}}, t0.Add(time.Second), Options{})
			if got.Stacks["app"].DriftDetection != "d-1" || got.Stacks["app"].Phase != DetectingDrift {
				t.Fatalf("the detection's id: %+v", got.Stacks["app"])
			}
			got, _ = Advance(got, tc.then, t0.Add(cmp.Or(tc.at, 2*time.Second)), Options{})
			app = got.Stacks["app"]
			if app.Phase != tc.phase || app.StackDrift != tc.drift || !strings.Contains(app.DriftNote, tc.note) {
				t.Errorf("%s %q %q, want %s %q %q", app.Phase, app.StackDrift, app.DriftNote, tc.phase, tc.drift, tc.note)
			}
			if tc.phase == DetectingDrift && (app.Looks != 1 || app.CheckAt.IsZero()) {
				t.Errorf("still detecting: looks %d, next look %s", app.Looks, app.CheckAt)
			}
			got.Stacks["web"].Phase = Ready // its own change set is ready
			got, _ = Advance(got, nil, t0.Add(cmp.Or(tc.at, 2*time.Second)+time.Second), Options{})
			if (got.Status == Succeeded) != tc.succeeded {
				t.Errorf("run %s, want succeeded %v", got.Status, tc.succeeded)
			}
		})
	}
}

// TestPushSettlesDriftFromItsReport: a push's stack whose drift report showed properties
// changed outside cairn (Outside) learns, once its ordinary change set is made, what it does
// with each: a property the change set changes (at any depth of its path) is overwritten,
// the others and a resource deleted out of band are left; the change set executes.
func TestPushSettlesDriftFromItsReport(t *testing.T) {
	outside := []DriftedProperty{{LogicalID: "Web", Property: "/SecurityGroupIngress/1/CidrIp"}, {LogicalID: "Queue", Property: "/VisibilityTimeout"}, {LogicalID: "Gone"}}
	for _, tc := range []struct {
		name    string
		touched []string
		want    []string
	}{
		{"the template changes the timeout", []string{Touch("Queue", "VisibilityTimeout")}, []string{DriftLeft, DriftOverwritten, DriftLeft}},
		{"the template changes the rules", []string{Touch("Web", "SecurityGroupIngress"), Touch("Queue", "DelaySeconds")}, []string{DriftOverwritten, DriftLeft, DriftLeft}},
		{"another resource changes", []string{Touch("Topic", "VisibilityTimeout")}, []string{DriftLeft, DriftLeft, DriftLeft}},
	} {
		r := &Run{ID: "r", Deployment: "shop", Mode: ModeDeploy, Status: Running, Stacks: map[string]*Stack{
			"app": {Name: "app", StackName: "shop-app", Phase: CreatingChangeSet, ChangeSetName: "cairn-r-1", ChangeSetType: "UPDATE", Exists: true,
				Intent: IntentDeploy, Outside: slices.Clone(outside)},
		}}
		got, _ := Advance(r, []Observation{{Stack: "app", ChangeSetID: "arn:cs/1", ChangeSetStatus: "CREATE_COMPLETE", Changes: 1, Touched: tc.touched}}, t0, Options{})
		s := got.Stacks["app"]
		var does []string
		for _, d := range s.Outside {
			does = append(does, d.Does)
		}
		if !slices.Equal(does, tc.want) || s.Phase != Executing {
			t.Errorf("%s: %v, stack %s; want %v, executing", tc.name, does, s.Phase, tc.want)
		}
	}
}
