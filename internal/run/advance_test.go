package run

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// world is a minimal simulated CloudFormation: every operation takes `delay` steps.
type world struct {
	t        *testing.T
	delay    int
	stacks   map[string]*fakeStack // by config name
	failOn   map[string]string     // config name -> failure status to end an execution in
	emptyCS  map[string]bool       // change sets of these stacks have no changes
	apiErrs  map[string]int        // config name -> number of API errors to return for its next actions
	calls    []Action
	inFlight int
	maxSeen  int
}

type fakeStack struct {
	status    string
	outputs   map[string]string
	csStatus  string
	csReason  string
	remaining int
	params    map[string]string
	pending   string // final status when remaining reaches 0
}

func newWorld(t *testing.T) *world {
	return &world{t: t, delay: 2, stacks: map[string]*fakeStack{}, failOn: map[string]string{}, emptyCS: map[string]bool{}, apiErrs: map[string]int{}}
}

// perform applies actions; it returns observations for action errors right away.
func (w *world) perform(actions []Action) []Observation {
	var obs []Observation
	for _, a := range actions {
		w.calls = append(w.calls, a)
		if w.apiErrs[a.Stack] > 0 {
			w.apiErrs[a.Stack]--
			obs = append(obs, Observation{Stack: a.Stack, Err: "Rate exceeded"})
			continue
		}
		fs := w.stacks[a.Stack]
		if fs == nil {
			fs = &fakeStack{}
			w.stacks[a.Stack] = fs
		}
		switch a.Kind {
		case CreateChangeSet:
			fs.params = a.Parameters
			fs.csStatus, fs.remaining = "CREATE_IN_PROGRESS", w.delay
			if a.ChangeSetType == "CREATE" {
				fs.status = "REVIEW_IN_PROGRESS"
			}
		case ExecuteChangeSet:
			if fs.csStatus != "CREATE_COMPLETE" {
				w.t.Fatalf("execute of %s with change set %s", a.Stack, fs.csStatus)
			}
			fs.csStatus = "EXECUTE"
			fs.status, fs.remaining = "UPDATE_IN_PROGRESS", w.delay
			fs.pending = "UPDATE_COMPLETE"
			if f := w.failOn[a.Stack]; f != "" {
				fs.pending = f
			}
		case DeleteStack:
			fs.status, fs.remaining, fs.pending = "DELETE_IN_PROGRESS", w.delay, "DELETE_COMPLETE"
		case ContinueUpdateRollback:
			fs.status, fs.remaining, fs.pending = "UPDATE_ROLLBACK_IN_PROGRESS", w.delay, "UPDATE_ROLLBACK_COMPLETE"
		case DeleteChangeSet:
			fs.csStatus = ""
		}
	}
	return obs
}

// tick moves every operation one step and observes what the run watches.
func (w *world) tick(r *Run, errs []Observation) []Observation {
	for name, fs := range w.stacks {
		if fs.remaining > 0 {
			fs.remaining--
			if fs.remaining == 0 {
				switch {
				case fs.csStatus == "CREATE_IN_PROGRESS":
					fs.csStatus = "CREATE_COMPLETE"
					if w.emptyCS[name] {
						fs.csStatus, fs.csReason = "FAILED", "The submitted information didn't contain changes. Submit different information to create a change set."
					}
				default:
					fs.status = fs.pending
					if fs.status == "UPDATE_COMPLETE" {
						fs.outputs = map[string]string{"Out": name + ":" + fmt.Sprint(fs.params)}
					}
				}
			}
		}
	}
	cs, st := r.Watch()
	var obs []Observation
	for _, n := range cs {
		fs := w.stacks[n]
		if fs == nil || slices.ContainsFunc(errs, func(o Observation) bool { return o.Stack == n }) {
			continue // the driver reports the action's error instead
		}
		obs = append(obs, Observation{Stack: n, ChangeSetID: "arn:cs/" + n, ChangeSetStatus: fs.csStatus, ChangeSetReason: fs.csReason, Changes: 1})
	}
	for _, n := range st {
		fs := w.stacks[n]
		o := Observation{Stack: n, StackStatus: fs.status, Outputs: fs.outputs, StackGone: fs.status == "DELETE_COMPLETE"}
		if strings.Contains(fs.status, "ROLLBACK") || strings.HasSuffix(fs.status, "FAILED") {
			o.Reason = "Resource Bucket: Access Denied"
		}
		obs = append(obs, o)
	}
	return obs
}

// drive runs the run to completion, checking the engine's invariants at every step.
func (w *world) drive(r *Run, opts Options) *Run {
	w.t.Helper()
	now := t0
	var obs []Observation
	for step := 0; step < 1000; step++ {
		next, actions := Advance(r, obs, now, opts)
		in := 0
		for _, s := range next.Stacks {
			if s.Phase.InFlight() && !settled(next, s) {
				in++
			}
			for _, a := range actions {
				if a.Stack == s.Name && (a.Kind == CreateChangeSet || a.Kind == DeleteStack && s.Intent != IntentDelete) {
					for _, d := range s.Requires {
						if dp := next.Stacks[d]; dp != nil && dp.Phase != Done && dp.Phase != Unchanged && !(next.Mode == ModePlan && dp.Phase == Ready) {
							w.t.Fatalf("%s started before its dependency %s (%s)", s.Name, d, dp.Phase)
						}
					}
				}
			}
		}
		if lim := max(next.MaxConcurrency, 1); in > lim {
			w.t.Fatalf("%d stacks in flight, limit %d", in, lim)
		}
		w.maxSeen = max(w.maxSeen, in)
		r = next
		errs := w.perform(actions)
		if r.Status != Running {
			return r
		}
		obs = append(errs, w.tick(r, errs)...)
		now = now.Add(time.Minute)
	}
	w.t.Fatalf("run did not finish in 1000 steps")
	return nil
}

func resolveOutputs(_ string, raw map[string]string, out func(string, string) (string, bool)) (map[string]string, error) {
	res := map[string]string{}
	for k, v := range raw {
		if dep, ok := strings.CutPrefix(v, "out:"); ok {
			val, found := out(dep, "Out")
			if !found {
				return nil, fmt.Errorf("output %s::Out not found", dep)
			}
			v = val
		}
		res[k] = v
	}
	return res, nil
}

// chain builds a run over stacks a <- b <- c ... where each consumes its predecessor's output.
func chain(names ...string) *Run {
	r := &Run{ID: "r1", Mode: ModeDeploy, Status: Running, MaxConcurrency: 10, Stacks: map[string]*Stack{}, StartedAt: t0}
	for i, n := range names {
		s := &Stack{Name: n, StackName: "shop-" + n, Intent: IntentDeploy, Phase: Pending, TemplateHash: "t-" + n, RawParameters: map[string]string{"P": "v"}}
		if i > 0 {
			s.Requires = []string{names[i-1]}
			s.RawParameters["Dep"] = "out:" + names[i-1]
		}
		r.Stacks[n] = s
	}
	return r
}

func phases(r *Run) map[string]Phase {
	m := map[string]Phase{}
	for n, s := range r.Stacks {
		m[n] = s.Phase
	}
	return m
}

func kinds(calls []Action) []string {
	var ks []string
	for _, c := range calls {
		ks = append(ks, string(c.Kind)+" "+c.Stack)
	}
	return ks
}

func TestDeployChainInOrder(t *testing.T) {
	w := newWorld(t)
	r := w.drive(chain("network", "database", "service"), Options{Resolve: resolveOutputs})
	if r.Status != Succeeded {
		t.Fatalf("status %s: %s", r.Status, r.Reason)
	}
	want := []string{"CreateChangeSet network", "ExecuteChangeSet network", "CreateChangeSet database", "ExecuteChangeSet database", "CreateChangeSet service", "ExecuteChangeSet service"}
	if got := kinds(w.calls); !slices.Equal(got, want) {
		t.Fatalf("calls\n got %v\nwant %v", got, want)
	}
	if got := r.Stacks["service"].Parameters["Dep"]; !strings.HasPrefix(got, "database:") {
		t.Fatalf("service's Dep = %q, want database's output", got)
	}
	if r.Stacks["network"].ChangeSetType != "CREATE" || r.Stacks["network"].ChangeSetName != "cairn-r1-1" {
		t.Fatalf("network change set %s %s", r.Stacks["network"].ChangeSetType, r.Stacks["network"].ChangeSetName)
	}
	// The report's timeline: each stack made its change set, then executed it, then ended.
	for _, n := range r.Names() {
		s := r.Stacks[n]
		if s.StartedAt.IsZero() || s.ExecutedAt.Before(s.StartedAt) || s.FinishedAt.Before(s.ExecutedAt) || s.ExecutedAt.IsZero() {
			t.Errorf("stack %s: started %s, executed %s, finished %s", n, s.StartedAt, s.ExecutedAt, s.FinishedAt)
		}
	}
	if r.Stacks["database"].ExecutedAt.Before(r.Stacks["network"].FinishedAt) {
		t.Errorf("database executed at %s, before network finished at %s", r.Stacks["database"].ExecutedAt, r.Stacks["network"].FinishedAt)
	}
}

// applied turns a finished run into the next run's starting point, as the persistent graph does.
func applied(prev *Run) *Run {
	r := chain(prev.Names()...)
	r.ID = "r2"
	for n, s := range r.Stacks {
		p := prev.Stacks[n]
		s.Requires, s.RawParameters = p.Requires, p.RawParameters
		s.Exists, s.PrevTemplateHash, s.PrevParametersHash, s.Outputs = true, p.TemplateHash, p.ParametersHash, p.Outputs
		s.TemplateHash = p.TemplateHash
	}
	return r
}

func TestUnchangedRunMakesNoCalls(t *testing.T) {
	w := newWorld(t)
	first := w.drive(chain("a", "b", "c"), Options{Resolve: resolveOutputs})
	w.calls = nil
	second := w.drive(applied(first), Options{Resolve: resolveOutputs})
	if second.Status != Succeeded || len(w.calls) != 0 {
		t.Fatalf("status %s, calls %v", second.Status, kinds(w.calls))
	}
	for n, p := range phases(second) {
		if p != Unchanged {
			t.Fatalf("%s is %s", n, p)
		}
	}
}

func TestChangeTouchesOnlyAffectedDependents(t *testing.T) {
	w := newWorld(t)
	first := w.drive(chain("a", "b", "c"), Options{Resolve: resolveOutputs})
	// b's template changes but its outputs do not (the fake's outputs depend on parameters only),
	// so c, which consumes b's output, stays unchanged.
	r := applied(first)
	r.Stacks["b"].TemplateHash = "t-b-v2"
	w.calls = nil
	second := w.drive(r, Options{Resolve: resolveOutputs})
	if got, want := kinds(w.calls), []string{"CreateChangeSet b", "ExecuteChangeSet b"}; !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	if p := phases(second); p["a"] != Unchanged || p["b"] != Done || p["c"] != Unchanged {
		t.Fatalf("phases %v", p)
	}
	// a's parameter changes: its output changes, so b and c must update too.
	r = applied(second)
	r.Stacks["a"].RawParameters = map[string]string{"P": "v2"}
	w.calls = nil
	third := w.drive(r, Options{Resolve: resolveOutputs})
	if p := phases(third); p["a"] != Done || p["b"] != Done || p["c"] != Done {
		t.Fatalf("phases %v", p)
	}
}

func TestFailureBlocksDependentsOnly(t *testing.T) {
	w := newWorld(t)
	r := chain("a", "b", "c")
	r.Stacks["x"] = &Stack{Name: "x", StackName: "shop-x", Intent: IntentDeploy, Phase: Pending, TemplateHash: "t"}
	r.Stacks["old"] = &Stack{Name: "old", StackName: "shop-old", Intent: IntentDelete, Phase: Pending, Exists: true}
	w.failOn["b"] = "UPDATE_ROLLBACK_COMPLETE"
	got := w.drive(r, Options{Resolve: resolveOutputs})
	want := map[string]Phase{"a": Done, "b": Failed, "c": Blocked, "x": Done, "old": Blocked}
	if p := phases(got); !maps.Equal(p, want) {
		t.Fatalf("phases %v, want %v", p, want)
	}
	if got.Status != RunFailed {
		t.Fatalf("status %s", got.Status)
	}
	if reason := got.Stacks["b"].Reason; reason != "stack shop-b is UPDATE_ROLLBACK_COMPLETE: Resource Bucket: Access Denied" {
		t.Fatalf("b reason %q", reason)
	}
	if reason := got.Stacks["c"].Reason; reason != "dependency b failed" {
		t.Fatalf("c reason %q", reason)
	}
	if reason := got.Stacks["old"].Reason; !strings.Contains(reason, "stopped before deletions") {
		t.Fatalf("old reason %q", reason)
	}
}

func TestNoChangesChangeSetIsDeleted(t *testing.T) {
	w := newWorld(t)
	r := chain("a")
	r.Stacks["a"].Exists = true
	r.Stacks["a"].Force = true
	w.stacks["a"] = &fakeStack{status: "UPDATE_COMPLETE"}
	w.emptyCS["a"] = true
	got := w.drive(r, Options{})
	if got.Stacks["a"].Phase != Unchanged || got.Status != Succeeded {
		t.Fatalf("a %s, run %s", got.Stacks["a"].Phase, got.Status)
	}
	if k := kinds(w.calls); !slices.Equal(k, []string{"CreateChangeSet a", "DeleteChangeSet a"}) {
		t.Fatalf("calls %v", k)
	}
}

func TestUpdateRollbackFailedContinues(t *testing.T) {
	w := newWorld(t)
	r := chain("a")
	w.failOn["a"] = "UPDATE_ROLLBACK_FAILED"
	got := w.drive(r, Options{})
	if k := kinds(w.calls); !slices.Equal(k, []string{"CreateChangeSet a", "ExecuteChangeSet a", "ContinueUpdateRollback a"}) {
		t.Fatalf("calls %v", k)
	}
	if s := got.Stacks["a"]; s.Phase != Failed || !strings.Contains(s.Reason, "rolled back after ContinueUpdateRollback: Resource Bucket: Access Denied") {
		t.Fatalf("a %s %q", s.Phase, s.Reason)
	}
}

func TestDeletionsDependentsFirstAfterDeploys(t *testing.T) {
	w := newWorld(t)
	r := chain("keep")
	// app depends on db depends on net; deletion order must be app, db, net.
	for _, n := range []string{"net", "db", "app"} {
		r.Stacks[n] = &Stack{Name: n, StackName: "shop-" + n, Intent: IntentDelete, Phase: Pending, Exists: true}
	}
	r.Stacks["net"].Requires = []string{"db"} // for deletions, Requires lists dependents
	r.Stacks["db"].Requires = []string{"app"}
	w.drive(r, Options{})
	want := []string{"CreateChangeSet keep", "ExecuteChangeSet keep", "DeleteStack app", "DeleteStack db", "DeleteStack net"}
	if k := kinds(w.calls); !slices.Equal(k, want) {
		t.Fatalf("calls %v, want %v", k, want)
	}
}

func TestRecreateAfterRollbackComplete(t *testing.T) {
	w := newWorld(t)
	r := chain("a")
	r.Stacks["a"].Intent = IntentRecreate
	r.Stacks["a"].Exists = true
	w.stacks["a"] = &fakeStack{status: "ROLLBACK_COMPLETE"}
	got := w.drive(r, Options{})
	if k := kinds(w.calls); !slices.Equal(k, []string{"DeleteStack a", "CreateChangeSet a", "ExecuteChangeSet a"}) {
		t.Fatalf("calls %v", k)
	}
	if got.Stacks["a"].ChangeSetType != "CREATE" || got.Stacks["a"].Phase != Done {
		t.Fatalf("a: %s %s", got.Stacks["a"].ChangeSetType, got.Stacks["a"].Phase)
	}
}

func TestAPIErrorsAreRetriedThenFail(t *testing.T) {
	for _, tc := range []struct {
		errs  int
		phase Phase
	}{{2, Done}, {3, Failed}} {
		w := newWorld(t)
		w.apiErrs["a"] = tc.errs
		got := w.drive(chain("a"), Options{MaxAttempts: 3})
		s := got.Stacks["a"]
		if s.Phase != tc.phase {
			t.Fatalf("%d errors: phase %s (%s)", tc.errs, s.Phase, s.Reason)
		}
		if tc.phase == Failed && s.Reason != "create change set cairn-r1-1 failed after 3 attempt(s): Rate exceeded" {
			t.Fatalf("reason %q", s.Reason)
		}
		if tc.phase == Done && s.ChangeSetName != "cairn-r1-1" {
			t.Fatalf("retry renamed the change set: %s", s.ChangeSetName)
		}
	}
}

func TestPhaseTimeoutEndsTheRun(t *testing.T) {
	w := newWorld(t)
	w.delay = 10_000 // CloudFormation never answers
	got := w.drive(chain("a"), Options{PhaseTimeout: 30 * time.Minute})
	if s := got.Stacks["a"]; s.Phase != Failed || !strings.Contains(s.Reason, "no result after 30m0s") {
		t.Fatalf("a %s %q", s.Phase, s.Reason)
	}
}

func TestPlanModeStopsAtReady(t *testing.T) {
	w := newWorld(t)
	r := chain("a", "b")
	r.Mode = ModePlan
	for _, s := range r.Stacks { // updates: a stack created by the plan defers its dependents
		s.Exists = true
	}
	got := w.drive(r, Options{Resolve: func(_ string, raw map[string]string, _ func(string, string) (string, bool)) (map[string]string, error) {
		return raw, nil
	}})
	if k := kinds(w.calls); !slices.Equal(k, []string{"CreateChangeSet a", "CreateChangeSet b"}) {
		t.Fatalf("calls %v", k)
	}
	if p := phases(got); p["a"] != Ready || p["b"] != Ready || got.Status != Succeeded {
		t.Fatalf("phases %v status %s", p, got.Status)
	}
}

func TestAdvanceDoesNotMutateInput(t *testing.T) {
	r := chain("a", "b")
	before := fmt.Sprint(phases(r))
	Advance(r, nil, t0, Options{})
	if after := fmt.Sprint(phases(r)); after != before {
		t.Fatalf("input changed: %s -> %s", before, after)
	}
}

// Property: over random DAGs, failures and concurrency limits, every run ends, respects
// dependencies and the limit (checked in drive), and blocks exactly the dependents of failures.
func TestRandomRunsTerminate(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 25).Draw(rt, "n")
		r := &Run{ID: "p", Mode: ModeDeploy, Status: Running, MaxConcurrency: rapid.IntRange(1, 6).Draw(rt, "limit"), Stacks: map[string]*Stack{}}
		w := newWorld(t)
		w.delay = rapid.IntRange(1, 4).Draw(rt, "delay")
		for i := range n {
			name := fmt.Sprintf("s%02d", i)
			s := &Stack{Name: name, StackName: "x-" + name, Intent: IntentDeploy, Phase: Pending, TemplateHash: "t"}
			for j := range i {
				if rapid.IntRange(0, 9).Draw(rt, fmt.Sprintf("e%d-%d", i, j)) == 0 {
					s.Requires = append(s.Requires, fmt.Sprintf("s%02d", j))
				}
			}
			if rapid.IntRange(0, 7).Draw(rt, "fail"+name) == 0 {
				w.failOn[name] = "UPDATE_ROLLBACK_COMPLETE"
			}
			s.Protect, s.Protected = rapid.Bool().Draw(rt, "protect"+name), rapid.Bool().Draw(rt, "protected"+name)
			r.Stacks[name] = s
		}
		got := w.drive(r, Options{})
		protections := map[string]int{}
		for _, a := range w.calls {
			if a.Kind == SetTerminationProtection {
				protections[a.Stack]++
				if a.Protect != r.Stacks[a.Stack].Protect {
					rt.Fatalf("%s: termination protection set to %v, the config wants %v", a.Stack, a.Protect, r.Stacks[a.Stack].Protect)
				}
			}
		}
		for _, name := range got.Names() {
			s := got.Stacks[name]
			// Protection is set once, and only on a stack whose deploy finished with
			// another one than the config wants.
			want := 0
			if s.Phase == Done && r.Stacks[name].Protect != r.Stacks[name].Protected {
				want = 1
			}
			if protections[name] != want {
				rt.Fatalf("%s (%s): termination protection set %d time(s), want %d", name, s.Phase, protections[name], want)
			}
			depBad := false
			for _, d := range s.Requires {
				if p := got.Stacks[d].Phase; p == Failed || p == Blocked {
					depBad = true
				}
			}
			switch {
			case w.failOn[name] != "" && !depBad && s.Phase != Failed:
				rt.Fatalf("%s should have failed, is %s", name, s.Phase)
			case depBad && s.Phase != Blocked:
				rt.Fatalf("%s should be blocked, is %s", name, s.Phase)
			case w.failOn[name] == "" && !depBad && s.Phase != Done:
				rt.Fatalf("%s should be done, is %s", name, s.Phase)
			}
		}
	})
}

func TestRefusedDeletionKeepsItsDependencies(t *testing.T) {
	w := newWorld(t)
	r := &Run{ID: "r1", Mode: ModeDeploy, Status: Running, MaxConcurrency: 10, Stacks: map[string]*Stack{}}
	r.Stacks["app"] = &Stack{Name: "app", StackName: "shop-app", Intent: IntentDelete, Phase: Failed, Reason: "termination protection is on"}
	r.Stacks["db"] = &Stack{Name: "db", StackName: "shop-db", Intent: IntentDelete, Phase: Pending, Requires: []string{"app"}}
	r.Stacks["logs"] = &Stack{Name: "logs", StackName: "shop-logs", Intent: IntentDelete, Phase: Pending}
	got := w.drive(r, Options{})
	if k := kinds(w.calls); !slices.Equal(k, []string{"DeleteStack logs"}) {
		t.Fatalf("calls %v", k)
	}
	if s := got.Stacks["db"]; s.Phase != Blocked || s.Reason != "not deleted: dependent stack app failed and still exists" {
		t.Fatalf("db %s %q", s.Phase, s.Reason)
	}
}

func TestPlanMarksCreatedAtApplyAndInputsMayChange(t *testing.T) {
	resolve := Options{Resolve: resolveOutputs}
	tests := []struct {
		name        string
		exists      map[string]bool
		deletes     []string
		wantCalls   []string
		wantAtApply map[string]bool
		wantMay     map[string]bool
	}{
		{name: "new chain: only the first change set is made", exists: map[string]bool{},
			wantCalls: []string{"CreateChangeSet a"}, wantAtApply: map[string]bool{"b": true, "c": true}, wantMay: map[string]bool{}},
		{name: "updates: dependents planned against current outputs", exists: map[string]bool{"a": true, "b": true, "c": true},
			wantCalls: []string{"CreateChangeSet a", "CreateChangeSet b", "CreateChangeSet c"}, wantAtApply: map[string]bool{}, wantMay: map[string]bool{"b": true, "c": true}},
		{name: "new stack in the middle", exists: map[string]bool{"a": true, "c": true},
			wantCalls: []string{"CreateChangeSet a", "CreateChangeSet b"}, wantAtApply: map[string]bool{"c": true}, wantMay: map[string]bool{"b": true}},
		{name: "deletions are recorded, never performed", exists: map[string]bool{"a": true, "b": true, "c": true}, deletes: []string{"old"},
			wantCalls: []string{"CreateChangeSet a", "CreateChangeSet b", "CreateChangeSet c"}, wantAtApply: map[string]bool{}, wantMay: map[string]bool{"b": true, "c": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			r := chain("a", "b", "c")
			r.Mode = ModePlan
			for n, s := range r.Stacks {
				s.Exists = tt.exists[n]
				if s.Exists {
					w.stacks[n] = &fakeStack{status: "UPDATE_COMPLETE", outputs: map[string]string{"Out": "live-" + n}}
					s.Outputs = map[string]string{"Out": "live-" + n}
				}
			}
			for _, d := range tt.deletes {
				r.Stacks[d] = &Stack{Name: d, StackName: "shop-" + d, Intent: IntentDelete, Phase: Pending, Exists: true}
			}
			got := w.drive(r, resolve)
			if k := kinds(w.calls); !slices.Equal(k, tt.wantCalls) {
				t.Fatalf("calls %v, want %v", k, tt.wantCalls)
			}
			if got.Status != Succeeded {
				t.Fatalf("status %s (%s), phases %v", got.Status, got.Reason, phases(got))
			}
			for n, s := range got.Stacks {
				if s.Phase != Ready {
					t.Errorf("%s: phase %s, want ready", n, s.Phase)
				}
				if s.AtApply != tt.wantAtApply[n] || s.InputsMayChange != tt.wantMay[n] {
					t.Errorf("%s: at apply %v, inputs may change %v; want %v, %v", n, s.AtApply, s.InputsMayChange, tt.wantAtApply[n], tt.wantMay[n])
				}
				if s.AtApply && s.ChangeSetName != "" {
					t.Errorf("%s: created at apply but has change set %s", n, s.ChangeSetName)
				}
			}
		})
	}
}

// An apply run executes the reviewed change sets in dependency order, creates only the
// deferred one, and refuses a stack whose consumed outputs changed since the plan.
func TestApplyExecutesReviewedChangeSets(t *testing.T) {
	tests := []struct {
		name       string
		plannedB   string // the value b's parameter Dep had at plan time
		wantCalls  []string
		wantPhases map[string]Phase
	}{
		{name: "fresh", plannedB: "a:map[P:v]",
			wantCalls:  []string{"ExecuteChangeSet a", "ExecuteChangeSet b", "CreateChangeSet c", "ExecuteChangeSet c"},
			wantPhases: map[string]Phase{"a": Done, "b": Done, "c": Done}},
		{name: "consumed output changed", plannedB: "a:old",
			wantCalls:  []string{"ExecuteChangeSet a"},
			wantPhases: map[string]Phase{"a": Done, "b": Failed, "c": Blocked}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			r := chain("a", "b", "c")
			for n, s := range r.Stacks {
				s.Exists = n != "c"
				if n == "c" {
					s.AtApply = true
					continue
				}
				s.ChangeSetName, s.ChangeSetID, s.ChangeSetType = "cairn-plan-"+n, "arn:cs/"+n, "UPDATE"
				w.stacks[n] = &fakeStack{status: "UPDATE_COMPLETE", csStatus: "CREATE_COMPLETE", params: map[string]string{"P": "v"}}
			}
			r.Stacks["a"].PlannedParametersHash = HashParameters(map[string]string{"P": "v"})
			r.Stacks["b"].InputsMayChange = true
			r.Stacks["b"].PlannedParametersHash = HashParameters(map[string]string{"P": "v", "Dep": tt.plannedB})
			got := w.drive(r, Options{Resolve: resolveOutputs})
			if k := kinds(w.calls); !slices.Equal(k, tt.wantCalls) {
				t.Fatalf("calls %v, want %v", k, tt.wantCalls)
			}
			if p := phases(got); !maps.Equal(p, tt.wantPhases) {
				t.Fatalf("phases %v, want %v", p, tt.wantPhases)
			}
			if b := got.Stacks["b"]; b.Phase == Failed && !strings.Contains(b.Reason, "change set cairn-plan-b is stale") || b.Phase == Failed && !strings.HasSuffix(b.Reason, ": re-plan") {
				t.Errorf("b: reason %q", b.Reason)
			}
		})
	}
}

func TestTerminationProtectionIsAnActionOfTheFinishedDeploy(t *testing.T) {
	for _, tc := range []struct {
		name               string
		intent             Intent
		protect, protected bool
		observed           *bool // what the last describe of the stack said
		fail               bool
		want               []string
	}{
		{name: "turned on after the deploy", intent: IntentDeploy, protect: true, want: []string{"CreateChangeSet", "ExecuteChangeSet", "SetTerminationProtection"}},
		{name: "turned off after the deploy", intent: IntentDeploy, protected: true, want: []string{"CreateChangeSet", "ExecuteChangeSet", "SetTerminationProtection"}},
		{name: "already as wanted", intent: IntentDeploy, protect: true, protected: true, want: []string{"CreateChangeSet", "ExecuteChangeSet"}},
		{name: "seen turned on meanwhile", intent: IntentDeploy, protect: true, observed: ptrTo(true), want: []string{"CreateChangeSet", "ExecuteChangeSet"}},
		{name: "seen turned off meanwhile", intent: IntentDeploy, protect: true, protected: true, observed: ptrTo(false), want: []string{"CreateChangeSet", "ExecuteChangeSet", "SetTerminationProtection"}},
		{name: "failed deploy keeps it", intent: IntentDeploy, protect: true, fail: true, want: []string{"CreateChangeSet", "ExecuteChangeSet"}},
		{name: "locked stack is never changed", intent: IntentRead, protect: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			if tc.fail {
				w.failOn["app"] = "UPDATE_ROLLBACK_COMPLETE"
			}
			r := &Run{ID: "r", Mode: ModeDeploy, Status: Running, Stacks: map[string]*Stack{
				"app": {Name: "app", StackName: "shop-app", Intent: tc.intent, Phase: Pending, Exists: true, TemplateHash: "t2", PrevTemplateHash: "t1",
					Protect: tc.protect, Protected: tc.protected},
			}}
			now := t0
			var obs []Observation
			for range 20 {
				next, actions := Advance(r, obs, now, Options{})
				for _, a := range actions {
					if a.Kind == SetTerminationProtection && (a.Protect != tc.protect || a.StackName != "shop-app") {
						t.Fatalf("action %+v", a)
					}
				}
				r = next
				w.perform(actions)
				if r.Status != Running {
					break
				}
				obs = w.tick(r, nil)
				for i := range obs {
					if obs[i].StackStatus != "" {
						obs[i].TerminationProtection = tc.observed
					}
				}
				now = now.Add(time.Minute)
			}
			var want []string
			for _, k := range tc.want {
				want = append(want, k+" app")
			}
			if got := kinds(w.calls); !slices.Equal(got, want) {
				t.Errorf("calls %v, want %v", got, want)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestFailSupersedeAbandon(t *testing.T) {
	start := func() *Run {
		return &Run{ID: "r", Mode: ModeDeploy, Status: Running, StartedAt: t0, Stacks: map[string]*Stack{
			"vpc": {Name: "vpc", Phase: Done, FinishedAt: t0},
			"app": {Name: "app", Phase: Pending},
			"db":  {Name: "db", Phase: Failed, Reason: "deletion refused: termination protection is on"},
			"web": {Name: "web", Phase: Pending, Reason: "its own reason"},
		}}
	}
	at := t0.Add(time.Hour)
	for _, tc := range []struct {
		name       string
		do         func(*Run) *Run
		status     Status
		reason     string
		updated    bool
		phases     map[string]Phase
		appReason  string
		webReason  string
		finishedAt time.Time
	}{
		{"fail", func(r *Run) *Run { return Fail(r, "refused: 1 reason(s); nothing was changed", at) }, RunFailed, "refused: 1 reason(s); nothing was changed", true,
			map[string]Phase{"vpc": Done, "app": Blocked, "db": Failed, "web": Blocked}, "not started: the run was refused", "its own reason", at},
		{"supersede", func(r *Run) *Run { return Supersede(r, "version v1 is no longer the newest", at) }, Superseded, "version v1 is no longer the newest", false,
			map[string]Phase{"vpc": Done, "app": Pending, "db": Failed, "web": Pending}, "", "its own reason", at},
		{"abandon", func(r *Run) *Run { return Abandon(r, "lock lost", at) }, RunFailed, "stopped: lock lost", true,
			map[string]Phase{"vpc": Done, "app": Pending, "db": Failed, "web": Pending}, "", "its own reason", at},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := start()
			got := tc.do(r)
			if r.Status != Running || r.Stacks["app"].Phase != Pending {
				t.Fatal("the transition changed its input")
			}
			if got.Status != tc.status || got.Reason != tc.reason || !got.FinishedAt.Equal(tc.finishedAt) || got.UpdatedAt.Equal(at) != tc.updated {
				t.Errorf("run %s %q finished %v updated %v", got.Status, got.Reason, got.FinishedAt, got.UpdatedAt)
			}
			if !maps.Equal(phases(got), tc.phases) {
				t.Errorf("phases %v, want %v", phases(got), tc.phases)
			}
			if got.Stacks["app"].Reason != tc.appReason || got.Stacks["web"].Reason != tc.webReason {
				t.Errorf("reasons app %q web %q", got.Stacks["app"].Reason, got.Stacks["web"].Reason)
			}
			if next, actions := Advance(got, nil, at.Add(time.Minute), Options{}); len(actions) > 0 || next.Status != tc.status {
				t.Errorf("an ended run advanced: %v, %s", actions, next.Status)
			}
		})
	}
}

func TestFailure(t *testing.T) {
	base := errors.New("CreateChangeSet shop-app: ValidationError: Template format error")
	for _, tc := range []struct {
		name      string
		err       error
		permanent bool
	}{
		{"transient", base, false},
		{"permanent", Permanent(base), true},
		{"permanent, wrapped", fmt.Errorf("prepare: %w", Permanent(base)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Failure("app", tc.err)
			if o.Stack != "app" || o.Err != tc.err.Error() || o.Permanent != tc.permanent {
				t.Errorf("%+v, want permanent %v", o, tc.permanent)
			}
		})
	}
	if !errors.Is(Permanent(base), base) || Permanent(base).Error() != base.Error() {
		t.Error("Permanent hides the error it marks")
	}
}

func TestCreateTimeoutFailsACreateOnly(t *testing.T) {
	for _, typ := range []string{"CREATE", "UPDATE"} {
		r := chain("a", "b")
		a := r.Stacks["a"]
		a.Phase, a.ChangeSetType, a.ChangeSetName, a.PhaseSince, a.CreateTimeout = Executing, typ, "cairn-r1-1", t0, 20*time.Minute
		got, _ := Advance(r, nil, t0.Add(21*time.Minute), Options{})
		s, b := got.Stacks["a"], got.Stacks["b"]
		if typ == "UPDATE" {
			if s.Phase != Executing {
				t.Errorf("an update past the create timeout: %s %q, want still executing", s.Phase, s.Reason)
			}
			continue
		}
		if s.Phase != Failed || s.Reason != "stack shop-a: the create did not finish within timeout_in_minutes (20m0s): check the stack in the CloudFormation console" {
			t.Errorf("create past its timeout: %s %q", s.Phase, s.Reason)
		}
		if b.Phase != Blocked {
			t.Errorf("its dependent: %s, want blocked", b.Phase)
		}
	}
}
