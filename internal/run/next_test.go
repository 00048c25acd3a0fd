package run

import (
	"errors"
	"testing"
	"time"
)

// oneStack is a running deploy run of deployment shop with one stack, app (shop-app),
// in phase p.
func oneStack(p Phase) *Run {
	s := &Stack{Name: "app", StackName: "shop-app", Intent: IntentDeploy, Exists: true, Phase: p, PhaseSince: t0,
		ChangeSetName: "cairn-r-1", ChangeSetID: "cs-1", StackID: "arn:stack/shop-app"}
	return &Run{ID: "r", Deployment: "shop", Mode: ModeDeploy, Status: Running, MaxConcurrency: 1, StartedAt: t0, Stacks: map[string]*Stack{"app": s}}
}

// TestFailureClasses: each way a stack fails records the class of its failure, through
// Advance as the driver calls it.
func TestFailureClasses(t *testing.T) {
	tests := []struct {
		name  string
		phase Phase
		obs   Observation
		later time.Duration // how long after the phase began the step comes
		opts  Options
		want  Class
	}{
		{"a resource failed and the update rolled back", Executing, Observation{StackStatus: "UPDATE_ROLLBACK_COMPLETE", Reason: "Group (AWS::Logs::LogGroup): already exists"}, 0, Options{}, Fix},
		{"a create failed and rolled back", Executing, Observation{StackStatus: "ROLLBACK_COMPLETE"}, 0, Options{}, Fix},
		{"the change set failed", CreatingChangeSet, Observation{ChangeSetStatus: "FAILED", ChangeSetReason: "Template format error"}, 0, Options{}, Fix},
		{"a validation error", CreatingChangeSet, Failure("app", Permanent(errors.New("ValidationError: bad parameter"))), 0, Options{}, Fix},
		{"throttled three times", CreatingChangeSet, Failure("app", errors.New("Throttling: Rate exceeded")), 0, Options{MaxAttempts: 1}, Wait},
		{"the update was kept failed (disable_rollback)", Executing, Observation{StackStatus: "UPDATE_FAILED"}, 0, Options{}, Recover},
		{"the create was kept failed (disable_rollback)", Executing, Observation{StackStatus: "CREATE_FAILED"}, 0, Options{}, Recover},
		{"the rollback failed once more", RollingBack, Observation{StackStatus: "UPDATE_ROLLBACK_FAILED"}, 0, Options{}, Recover},
		{"ContinueUpdateRollback was refused", RollingBack, Failure("app", errors.New("ValidationError: no")), 0, Options{}, Recover},
		{"the rollback of a create failed", Executing, Observation{StackStatus: "ROLLBACK_FAILED"}, 0, Options{}, Review},
		{"a deletion failed", Deleting, Observation{StackStatus: "DELETE_FAILED", Reason: "Bucket: not empty"}, 0, Options{}, Review},
		{"no answer in three hours", Executing, Observation{}, 4 * time.Hour, Options{}, Wait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := oneStack(tt.phase)
			if tt.phase == RollingBack {
				r.Stacks["app"].Rollbacks = 1
			}
			var obs []Observation
			if tt.obs.looked() || tt.obs.Err != "" {
				tt.obs.Stack = "app"
				obs = append(obs, tt.obs)
			}
			next, _ := Advance(r, obs, t0.Add(tt.later), tt.opts)
			s := next.Stacks["app"]
			if s.Phase != Failed || s.Class != tt.want {
				t.Fatalf("stack is %s with class %q (%s), want failed with class %q", s.Phase, s.Class, s.Reason, tt.want)
			}
		})
	}
}

// TestProtectedStackChangeIsReview: a push changing a protected stack fails it as a
// review, not a fix.
func TestProtectedStackChangeIsReview(t *testing.T) {
	r := oneStack(Pending)
	r.Stacks["app"].PlanOnly = true
	r.Stacks["app"].TemplateHash = "new"
	r.Stacks["app"].ChangeSetName, r.Stacks["app"].ChangeSetID = "", ""
	next, actions := Advance(r, nil, t0, Options{})
	if s := next.Stacks["app"]; s.Phase != Failed || s.Class != Review || len(actions) != 0 {
		t.Fatalf("stack %s class %q, actions %v; want failed, review, none", s.Phase, s.Class, actions)
	}
}

// TestNextStep: the command after each kind of ending.
func TestNextStep(t *testing.T) {
	failed := func(class Class, mode Mode, plan string) *Run {
		r := oneStack(Failed)
		r.Status, r.Mode, r.Plan = RunFailed, mode, plan
		r.Stacks["app"].Class = class
		return r
	}
	withStacks := func(r *Run, extra ...*Stack) *Run {
		for _, s := range extra {
			r.Stacks[s.Name] = s
		}
		return r
	}
	withReason := func(r *Run, reason string) *Run {
		r.Stacks["app"].Reason = reason
		return r
	}
	refused := &Run{ID: "r", Deployment: "shop", Mode: ModeDeploy, Status: RunFailed, Stacks: map[string]*Stack{}}
	applyRefused := &Run{ID: "r", Deployment: "shop", Mode: ModeDeploy, Status: RunFailed, Plan: "p1", Stacks: map[string]*Stack{}}
	tests := []struct {
		name    string
		e       Ending
		none    bool
		class   Class
		command string
		then    string
		why     string
	}{
		{name: "succeeded", e: Ending{Run: &Run{Status: Succeeded}}, none: true},
		{name: "a stack stopped for review at apply", e: Ending{Run: func() *Run {
			r := failed(Fix, ModeDeploy, "p1")
			r.Stacks["app"].Stopped = true
			return r
		}(), Path: "d"},
			class: Review, command: "cairn plans shop", then: "cairn approve shop PLAN_ID",
			why: "stack shop-app stopped for review: its change set at apply held more than a reviewed plan showed; review the new plan of the stopped stacks (the note above names it), then approve it"},
		{name: "an export still imported by a stack that stays", e: Ending{Run: withReason(failed(Fix, ModeDeploy, ""),
			"stack shop-app is UPDATE_ROLLBACK_COMPLETE: Export shop-app-Queue cannot be deleted as it is in use by shop-web"), Path: "d"},
			class: Fix, command: "cairn push d --deployment shop",
			why: "stack shop-app failed: stack shop-web still imports its export shop-app-Queue, which CloudFormation does not drop or change while it is in use: deploy shop-web without that import first (or delete it), keeping the export until then, then deploy again"},
		{name: "an export's value changed under its importer", e: Ending{Run: withReason(failed(Fix, ModeDeploy, ""),
			"stack shop-app is UPDATE_ROLLBACK_COMPLETE: Cannot update export shop-app-Queue as it is in use by shop-web"), Path: "d"},
			class: Fix, command: "cairn push d --deployment shop",
			why: "stack shop-app failed: stack shop-web still imports its export shop-app-Queue, which CloudFormation does not drop or change while it is in use: deploy shop-web without that import first (or delete it), keeping the export until then, then deploy again"},
		{name: "running", e: Ending{Run: &Run{Status: Running}}, none: true},
		{name: "a failed resource of a push", e: Ending{Run: failed(Fix, ModeDeploy, ""), Path: "./deploy"},
			class: Fix, command: "cairn push ./deploy --deployment shop"},
		{name: "a failed resource of an apply", e: Ending{Run: failed(Fix, ModeDeploy, "p1")},
			class: Fix, command: "cairn plan PATH --deployment shop", then: "cairn approve shop PLAN_ID"},
		{name: "a failed change set of a plan run", e: Ending{Run: failed(Fix, ModePlan, ""), Path: "x"},
			class: Fix, command: "cairn plan x --deployment shop"},
		{name: "a stack stuck in UPDATE_ROLLBACK_FAILED", e: Ending{Run: failed(Recover, ModeDeploy, ""), Statuses: map[string]string{"app": "UPDATE_ROLLBACK_FAILED"}, Path: "d"},
			class: Recover, command: "cairn recover shop app", then: "cairn push d --deployment shop"},
		{name: "a create kept failed", e: Ending{Run: failed(Recover, ModeDeploy, ""), Statuses: map[string]string{"app": "CREATE_FAILED"}},
			class: Recover, command: "cairn recover shop app --rollback", then: "cairn push PATH --deployment shop"},
		{name: "a protected stack", e: Ending{Run: failed(Review, ModeDeploy, "")},
			class: Review, command: "cairn plan PATH --deployment shop", then: "cairn approve shop PLAN_ID"},
		{name: "throttled", e: Ending{Run: failed(Wait, ModeDeploy, "")},
			class: Wait, command: "cairn push PATH --deployment shop"},
		{name: "an older document without classes", e: Ending{Run: failed("", ModeDeploy, "")},
			class: Fix, command: "cairn push PATH --deployment shop"},
		{name: "recover comes before a fix", e: Ending{Run: withStacks(failed(Fix, ModeDeploy, ""),
			&Stack{Name: "db", StackName: "shop-db", Phase: Failed, Class: Recover})},
			class: Recover, command: "cairn recover shop db", then: "cairn push PATH --deployment shop"},
		{name: "a push denied by policy", e: Ending{Run: &Run{Deployment: "shop", Mode: ModeDeploy, Status: RunFailed, Policy: PolicyDenied,
			Stacks: map[string]*Stack{"app": {Name: "app", StackName: "shop-app", Phase: Blocked}}}, Path: "b"},
			class: Review, command: "cairn plan b --deployment shop", then: "cairn approve shop PLAN_ID"},
		{name: "superseded", e: Ending{Run: &Run{Deployment: "shop", Status: Superseded}},
			class: Wait, command: "cairn follow shop"},
		{name: "abandoned", e: Ending{Run: &Run{Deployment: "shop", Status: Abandoned}},
			class: Wait, command: "cairn push PATH --deployment shop"},
		{name: "an invalid bundle", e: Ending{Run: refused, Errors: []string{"cairn.yaml:3:1: unknown key"}, Path: "b"},
			class: Fix, command: "cairn push b --deployment shop"},
		{name: "refused: a busy stack", e: Ending{Run: refused, Refusals: []string{"stack shop-app is busy (UPDATE_IN_PROGRESS): wait until it settles, then push again"}},
			class: Wait, command: "cairn push PATH --deployment shop"},
		{name: "refused: a stuck stack names its recovery", e: Ending{Run: refused, Path: "b", Refusals: []string{
			"stack shop-app is busy (UPDATE_IN_PROGRESS): wait until it settles, then push again",
			"stack shop-db is CREATE_FAILED (disable_rollback kept its resources): roll it back with `cairn recover shop db --rollback`, then push again"}},
			class: Recover, command: "cairn recover shop db --rollback", then: "cairn push b --deployment shop"},
		{name: "refused: protected stacks", e: Ending{Run: refused, Path: "b", Refusals: []string{
			"protected stack(s) shop-db change only through an approved plan: run `cairn plan PATH --deployment shop`, review it, then `cairn approve shop PLAN_ID`"}},
			class: Review, command: "cairn plan b --deployment shop", then: "cairn approve shop PLAN_ID"},
		{name: "refused: too many deletions", e: Ending{Run: refused, Refusals: []string{
			"the run would delete 3 stacks (a, b, c), more than deletion_policy.max_deletions 1: plan and approve it (`cairn plan PATH --deployment shop`)"}},
			class: Review, command: "cairn plan PATH --deployment shop", then: "cairn approve shop PLAN_ID"},
		{name: "refused: a stack cairn did not create", e: Ending{Run: refused, Refusals: []string{
			"stack shop-app exists but cairn did not create it (no cairn:* tags): rename the stack in the config"}},
			class: Fix, command: "cairn push PATH --deployment shop"},
		{name: "refused: a stack cairn did not create, with the command tagging it", e: Ending{Run: refused, Path: "b", Refusals: []string{
			"stack shop-app exists but cairn did not create it (no cairn:* tags): rename the stack in the config, or adopt it: tag it with cairn:namespace=shop, cairn:graph-key=shop, cairn:name=app (the command keeps its template, parameters and tags, and adds cairn's), then push again: `aws cloudformation update-stack --stack-name shop-app --use-previous-template --tags Key=cairn:namespace,Value=shop`"}},
			class: Fix, command: "aws cloudformation update-stack --stack-name shop-app --use-previous-template --tags Key=cairn:namespace,Value=shop", then: "cairn push b --deployment shop"},
		{name: "refused: an unknown plan id names only the command", e: Ending{Run: applyRefused, Refusals: []string{
			"plan p1 of deployment shop does not exist (no plans/shop/p1.json): check the plan id printed by `cairn plan`"}},
			class: Review, command: "cairn plan PATH --deployment shop", then: "cairn approve shop PLAN_ID"},
		{name: "refused: a stale plan", e: Ending{Run: applyRefused, Refusals: []string{"stack shop-app changed since the plan (last updated 12:03, planned 11:58)"}},
			class: Review, command: "cairn plan PATH --deployment shop", then: "cairn approve shop PLAN_ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := NextStep(tt.e)
			if tt.none {
				if ok {
					t.Fatalf("NextStep = %+v, want none", n)
				}
				return
			}
			if !ok || n.Class != tt.class || n.Command != tt.command || n.Then != tt.then || n.Why == "" || tt.why != "" && n.Why != tt.why {
				t.Fatalf("NextStep = %+v (ok %v)\nwant class %q, command %q, then %q", n, ok, tt.class, tt.command, tt.then)
			}
		})
	}
}
