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
	t       *testing.T
	delay   int
	stacks  map[string]*fakeStack       // by config name
	failOn  map[string]string           // config name -> failure status to end an execution in
	emptyCS map[string]bool             // change sets of these stacks have no changes
	apiErrs map[string]int              // config name -> number of API errors to return for its next actions
	changes map[string][]ResourceChange // config name -> the resource changes of its change sets
	calls   []Action
	maxSeen int
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
		obs = append(obs, Observation{Stack: n, ChangeSetID: "arn:cs/" + n, ChangeSetStatus: fs.csStatus, ChangeSetReason: fs.csReason, Changes: 1, ResourceChanges: w.changes[n]})
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
			if s.Phase.InFlight() && !settled(next, s) && !waitsEarly(s) {
				in++
			}
			for _, a := range actions {
				if a.Stack != s.Name || s.Intent == IntentDelete {
					continue
				}
				early := a.Kind == CreateChangeSet && s.MadeEarly // its dependencies may be executing
				if a.Kind == CreateChangeSet || a.Kind == DeleteStack || a.Kind == ExecuteChangeSet {
					for _, d := range s.Requires {
						dp := next.Stacks[d]
						if dp == nil || dp.Phase == Done || dp.Phase == Unchanged || next.Mode == ModePlan && dp.Phase == Ready || early && dp.Phase == Executing {
							continue
						}
						w.t.Fatalf("%s: %s before its dependency %s finished (%s)", s.Name, a.Kind, d, dp.Phase)
					}
					for _, d := range s.After {
						// A change set made early is executed only once they are gone.
						if dp := next.Stacks[d]; !early && dp.Phase != Done && !(next.Mode == ModePlan && dp.Phase == Ready) {
							w.t.Fatalf("%s: %s before %s, which imports its exports, was deleted (%s)", s.Name, a.Kind, d, dp.Phase)
						}
					}
				}
			}
		}
		if lim := max(next.MaxConcurrency, 1); in > lim {
			w.t.Fatalf("%d stacks in flight, limit %d", in, lim)
		}
		checkWake(w.t, next, now, opts)
		w.maxSeen = max(w.maxSeen, in)
		r = next
		errs := w.perform(actions)
		if r.Status != Running {
			return r
		}
		obs = append(errs, w.tick(r, errs)...)
		now = now.Add(time.Minute)
	}
	var dump []string
	for _, n := range slices.Sorted(maps.Keys(r.Stacks)) {
		s := r.Stacks[n]
		dump = append(dump, fmt.Sprintf("%s %s %s req=%v after=%v early=%v made=%v reason=%q", n, s.Intent, s.Phase, s.Requires, s.After, s.Early, s.MadeEarly, s.Reason))
	}
	w.t.Fatalf("run did not finish in 1000 steps:\n%s", strings.Join(dump, "\n"))
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

// TestUnchangedChainSettlesInOneStep: stacks whose inputs did not change settle as they
// start, and so let their dependents start in the same step; a chain of them needs no
// trigger after the first.
func TestUnchangedChainSettlesInOneStep(t *testing.T) {
	w := newWorld(t)
	// Named so that each stack sorts before the one it depends on.
	r := applied(w.drive(chain("e", "d", "c", "b", "a"), Options{Resolve: resolveOutputs}))
	next, actions := Advance(r, nil, t0, Options{Resolve: resolveOutputs})
	if next.Status != Succeeded || len(actions) != 0 {
		t.Fatalf("after one step: %s, %v; phases %v", next.Status, kinds(actions), phases(next))
	}
	for n, p := range phases(next) {
		if p != Unchanged {
			t.Errorf("%s is %s", n, p)
		}
	}
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
			s.Early = rapid.Bool().Draw(rt, "early"+name)
			r.Stacks[name] = s
		}
		// Removed stacks, some importing the exports of stacks the run deploys (After).
		for i := range rapid.IntRange(0, 4).Draw(rt, "deletions") {
			name := fmt.Sprintf("d%02d", i)
			s := &Stack{Name: name, StackName: "x-" + name, Intent: IntentDelete, Phase: Pending, Exists: true}
			for j := range i {
				if rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("de%d-%d", i, j)) == 0 {
					s.Requires = append(s.Requires, fmt.Sprintf("d%02d", j))
				}
			}
			r.Stacks[name] = s
			for j := range n {
				if rapid.IntRange(0, 5).Draw(rt, fmt.Sprintf("after%d-%d", i, j)) == 0 {
					e := r.Stacks[fmt.Sprintf("s%02d", j)]
					e.After = append(e.After, name)
				}
			}
		}
		got := w.drive(r, Options{})
		// Every change set made is executed or deleted: none made early is left behind.
		made := map[string]bool{}
		for _, a := range w.calls {
			switch a.Kind {
			case CreateChangeSet:
				made[a.ChangeSetName] = true
			case ExecuteChangeSet, DeleteChangeSet:
				delete(made, a.ChangeSetName)
			}
		}
		if len(made) > 0 {
			rt.Fatalf("change sets neither executed nor deleted: %v", slices.Sorted(maps.Keys(made)))
		}
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
			if s.Intent == IntentDelete {
				// Deleted, unless a deploy failed before its deletion could start.
				if s.Phase != Done && (s.Phase != Blocked || got.Status != RunFailed) {
					rt.Fatalf("deletion %s is %s (%s)", name, s.Phase, s.Reason)
				}
				continue
			}
			depBad := false
			for _, d := range append(slices.Clone(s.Requires), s.After...) {
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

// TestRippleRunsOnlyWhatItsInputsExplain: a reviewed stack whose inputs come from a stack
// the apply changes first executes its reviewed change set when its parameters come out as
// planned; otherwise a new change set of the new values runs only if Explain finds every
// change explained by the parameters that changed, else the stack stops, its change set
// kept and not executed.
func TestRippleRunsOnlyWhatItsInputsExplain(t *testing.T) {
	explain := func(s *Stack, changes []ResourceChange) string {
		if !slices.Equal(s.Rippled, []string{"Dep"}) {
			return fmt.Sprintf("rippled %v", s.Rippled)
		}
		for _, c := range changes {
			if !slices.Equal(c.Causes, []string{"ParameterReference Dep"}) {
				return c.LogicalID + " is not explained"
			}
		}
		return ""
	}
	for _, tc := range []struct {
		name      string
		plannedB  string
		changes   []ResourceChange
		wantCalls []string
		wantB     Phase
	}{
		{name: "came out as planned: the reviewed change set", plannedB: "a:map[P:v]",
			wantCalls: []string{"ExecuteChangeSet a", "ExecuteChangeSet b"}, wantB: Done},
		{name: "other values, explained by them", plannedB: "a:old", changes: []ResourceChange{{LogicalID: "Sg", Action: "Modify", Causes: []string{"ParameterReference Dep"}}},
			wantCalls: []string{"ExecuteChangeSet a", "CreateChangeSet b", "ExecuteChangeSet b"}, wantB: Done},
		{name: "other values, more than they explain: stopped", plannedB: "a:old", changes: []ResourceChange{{LogicalID: "Extra", Action: "Add"}},
			wantCalls: []string{"ExecuteChangeSet a", "CreateChangeSet b"}, wantB: Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.changes = map[string][]ResourceChange{"b": tc.changes}
			r := chain("a", "b")
			r.Plan = "P1"
			for n, s := range r.Stacks {
				s.Exists = true
				s.ChangeSetName, s.ChangeSetID, s.ChangeSetType = "cairn-plan-"+n, "arn:cs/"+n, "UPDATE"
				w.stacks[n] = &fakeStack{status: "UPDATE_COMPLETE", csStatus: "CREATE_COMPLETE", params: map[string]string{"P": "v"}}
			}
			r.Stacks["a"].PlannedParametersHash = HashParameters(map[string]string{"P": "v"})
			b := r.Stacks["b"]
			b.Ripple, b.PlanOnly = true, true
			b.Parameters = map[string]string{"P": "v", "Dep": tc.plannedB}
			b.PlannedParametersHash = HashParameters(b.Parameters)
			got := w.drive(r, Options{Resolve: resolveOutputs, Explain: explain})
			if k := kinds(w.calls); !slices.Equal(k, tc.wantCalls) {
				t.Fatalf("calls %v, want %v", k, tc.wantCalls)
			}
			gb := got.Stacks["b"]
			if gb.Phase != tc.wantB {
				t.Fatalf("b %s (%s), want %s", gb.Phase, gb.Reason, tc.wantB)
			}
			if tc.wantB == Failed && (!gb.Stopped || !strings.Contains(gb.Reason, "stopped: its inputs Dep came out of the apply with other values than planned") ||
				!strings.Contains(gb.Reason, "Extra is not explained") || gb.ChangeSetName != "cairn-r1-1") {
				t.Errorf("b stopped: %+v", gb)
			}
		})
	}
	// Without Explain nothing a ripple's new change set holds is explained.
	w := newWorld(t)
	r := chain("a", "b")
	r.Plan = "P1"
	for n, s := range r.Stacks {
		s.Exists = true
		w.stacks[n] = &fakeStack{status: "UPDATE_COMPLETE", params: map[string]string{"P": "v"}}
	}
	r.Stacks["a"].ChangeSetName, r.Stacks["a"].ChangeSetID = "cairn-plan-a", "arn:cs/a"
	w.stacks["a"].csStatus = "CREATE_COMPLETE"
	r.Stacks["a"].PlannedParametersHash = HashParameters(map[string]string{"P": "v"})
	b := r.Stacks["b"]
	b.Ripple, b.Parameters = true, map[string]string{"P": "v", "Dep": "a:old"}
	b.PlannedParametersHash = HashParameters(b.Parameters)
	if got := w.drive(r, Options{Resolve: resolveOutputs}); got.Stacks["b"].Phase != Failed || !got.Stacks["b"].Stopped {
		t.Errorf("b without Explain: %s", got.Stacks["b"].Phase)
	}
}

// TestRecheckedStackWhoseInputsChangeStops: a stack no plan of the apply covers is only
// re-checked against its parameters as applied: came out the same, it is unchanged and
// needs no cover; changed, it stops for review, nothing made or executed for it.
func TestRecheckedStackWhoseInputsChangeStops(t *testing.T) {
	for _, tc := range []struct {
		name      string
		appliedB  string // b's Dep as applied
		wantCalls []string
		wantB     Phase
	}{
		{name: "inputs came out unchanged", appliedB: "a:map[P:v]", wantCalls: []string{"ExecuteChangeSet a"}, wantB: Unchanged},
		{name: "inputs came out changed", appliedB: "a:old", wantCalls: []string{"ExecuteChangeSet a"}, wantB: Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			r := chain("a", "b")
			r.Plan = "P1"
			for n, s := range r.Stacks {
				s.Exists = true
				w.stacks[n] = &fakeStack{status: "UPDATE_COMPLETE", csStatus: "CREATE_COMPLETE", params: map[string]string{"P": "v"}}
			}
			a := r.Stacks["a"]
			a.ChangeSetName, a.ChangeSetID, a.ChangeSetType = "cairn-plan-a", "arn:cs/a", "UPDATE"
			a.PlannedParametersHash = HashParameters(map[string]string{"P": "v"})
			b := r.Stacks["b"]
			b.Parameters = map[string]string{"P": "v", "Dep": tc.appliedB}
			b.PrevParametersHash = HashParameters(b.Parameters)
			b.PlannedParametersHash = b.PrevParametersHash
			got := w.drive(r, Options{Resolve: resolveOutputs})
			if k := kinds(w.calls); !slices.Equal(k, tc.wantCalls) {
				t.Fatalf("calls %v, want %v", k, tc.wantCalls)
			}
			gb := got.Stacks["b"]
			if gb.Phase != tc.wantB {
				t.Fatalf("b %s (%s), want %s", gb.Phase, gb.Reason, tc.wantB)
			}
			if tc.wantB == Failed && (gb.Class != Review || !strings.Contains(gb.Reason, `its inputs came out of the apply changed (Dep was "a:old", now "a:map[P:v]"), and no plan this apply runs shows it as known after apply: it was not changed`)) {
				t.Errorf("b: %s %q", gb.Class, gb.Reason)
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
		{"abandon", func(r *Run) *Run { next, _ := Abandon(r, "lock lost", at); return next }, Abandoned, "abandoned: lock lost", true,
			map[string]Phase{"vpc": Done, "app": Blocked, "db": Failed, "web": Blocked}, "the run lost its lock: not started", "the run lost its lock: not started", at},
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

// checkWake checks what every step promises the driver: each stack that waits for
// CloudFormation is looked at within a heartbeat, and the earliest of them is either
// waited for in the invocation (within Linger) or has a delayed check queued in the second
// before it (SQS delays whole seconds; the step waits the rest).
func checkWake(t testing.TB, r *Run, now time.Time, opts Options) {
	t.Helper()
	opts = opts.withDefaults()
	var due time.Time
	for _, name := range r.Names() {
		s := r.Stacks[name]
		if !s.Phase.Waits() {
			if !s.CheckAt.IsZero() {
				t.Fatalf("%s (%s) has a check at %v though it waits for nothing", name, s.Phase, s.CheckAt)
			}
			continue
		}
		if !s.CheckAt.After(now) || s.CheckAt.After(now.Add(opts.Heartbeat)) {
			t.Fatalf("%s (%s): next check at %v, want within a heartbeat (%v) after %v", name, s.Phase, s.CheckAt, opts.Heartbeat, now)
		}
		if due.IsZero() || s.CheckAt.Before(due) {
			due = s.CheckAt
		}
	}
	if d, lingers := Lingers(r, now); lingers != (r.Status == Running && !due.IsZero() && due.Sub(now) < Linger) || lingers && !now.Add(d).Equal(due) {
		t.Fatalf("at %v the driver lingers %v (%v), want it to wait for a look due within %v (next at %v)", now, d, lingers, Linger, due)
	}
	if r.Status == Running && !due.IsZero() && due.Sub(now) >= Linger && (r.CheckQueued.After(due) || due.Sub(r.CheckQueued) >= time.Second) {
		t.Fatalf("check queued for %v at %v, want one within the second before %v", r.CheckQueued, now, due)
	}
}

// TestLooksComeWhenAWaitIsLikelyOver follows one stack through its change set and its
// execution, looking whenever its check falls due, and checks when the looks came into
// each wait: a change set from when it is likely ready (its history, else what the run
// learned of its place, else 2 s), a short step apart until it is overdue, then backing off
// up to the heartbeat; an operation in the window its history gives, else backing off from
// a second (its end comes as a stack event).
func TestLooksComeWhenAWaitIsLikelyOver(t *testing.T) {
	s := func(v ...float64) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x*float64(time.Second)))
		}
		return out
	}
	steps := func(from, step float64, n int) []time.Duration {
		var out []time.Duration
		for i := range n {
			out = append(out, time.Duration((from+float64(i)*step)*float64(time.Second)).Round(10*time.Millisecond))
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		history    Timing
		learned    map[string]Place
		csLooks    int // looks that find the change set in progress
		opLooks    int // looks that find the operation in progress
		wantCS     []time.Duration
		wantOp     []time.Duration
		heartbeats time.Duration
	}{
		{name: "no history", csLooks: 32, opLooks: 5,
			wantCS: append(steps(1, 0.4, 29), s(13.2, 14.4, 16.8, 21.6)...), // the window 1 to 12 s, in short steps, then back off
			wantOp: s(5, 10, 20, 35, 50, 65)},                               // its stack event is the signal: the looks are a backstop, from OperationFirstLook
		{name: "a history of 5 s and 60 s: never more than a heartbeat apart", history: Timing{ChangeSet: 5 * time.Second, Operation: time.Minute}, csLooks: 17, opLooks: 7,
			wantCS: append(steps(3, 0.4, 16), s(10, 11)...),
			wantOp: s(15, 30, 45, 60, 75, 90, 98, 99)}, // the operation's window 36 to 98 s: its end is the backstop, then back off
		{name: "the place's change sets took 1.2 to 9 s", learned: map[string]Place{"/": {Fastest: 1200 * time.Millisecond, Slowest: 9 * time.Second, Seen: 2}}, csLooks: 2, opLooks: 0,
			wantCS: s(1, 1.4, 1.8), wantOp: s(5)}, // the window 1 to 13.5 s
		{name: "a long history backs off to the heartbeat", history: Timing{ChangeSet: 40 * time.Second}, csLooks: 0, opLooks: 0,
			wantCS: s(15), wantOp: s(5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Heartbeat: 15 * time.Second}
			r := &Run{ID: "r", Mode: ModeDeploy, Status: Running, Learned: tc.learned, Stacks: map[string]*Stack{
				"app": {Name: "app", StackName: "shop-app", Intent: IntentDeploy, Phase: Pending, TemplateHash: "t", History: tc.history},
			}}
			r, actions := Advance(r, nil, t0, opts)
			if len(actions) != 1 || actions[0].Kind != CreateChangeSet {
				t.Fatalf("actions %v", actions)
			}
			var gaps []time.Duration
			look := func(o Observation) {
				t.Helper()
				at := r.Stacks["app"].CheckAt
				if cs, st := r.Due(at); len(cs)+len(st) != 1 {
					t.Fatalf("at its check %v the stack is not due: %v %v", at, cs, st)
				}
				if cs, st := r.Due(at.Add(-Piggyback - time.Millisecond)); len(cs)+len(st) != 0 {
					t.Fatalf("the stack is due before its check")
				}
				o.Stack = "app"
				prev := r
				r, actions = Advance(r, []Observation{o}, at, opts)
				checkWake(t, r, at, opts)
				gaps = append(gaps, at.Sub(prev.Stacks["app"].PhaseSince).Round(10*time.Millisecond))
			}
			for range tc.csLooks {
				look(Observation{ChangeSetStatus: "CREATE_IN_PROGRESS"})
			}
			look(Observation{ChangeSetStatus: "CREATE_COMPLETE", ChangeSetID: "arn:cs/1"})
			if len(actions) != 1 || actions[0].Kind != ExecuteChangeSet {
				t.Fatalf("actions %v", actions)
			}
			if !slices.Equal(gaps, tc.wantCS) {
				t.Errorf("change set looked at %v into its wait, want %v", gaps, tc.wantCS)
			}
			gaps = nil
			for range tc.opLooks {
				look(Observation{StackStatus: "CREATE_IN_PROGRESS"})
			}
			look(Observation{StackStatus: "CREATE_COMPLETE"})
			if !slices.Equal(gaps, tc.wantOp) {
				t.Errorf("operation looked at %v into its wait, want %v", gaps, tc.wantOp)
			}
			if r.Status != Succeeded {
				t.Errorf("run %s", r.Status)
			}
			took := r.Stacks["app"].Took
			if took.ChangeSet != tc.wantCS[len(tc.wantCS)-1].Round(10*time.Millisecond) && took.ChangeSet.Round(10*time.Millisecond) != tc.wantCS[len(tc.wantCS)-1] || took.Operation.Round(10*time.Millisecond) != tc.wantOp[len(tc.wantOp)-1] {
				t.Errorf("took %+v, want the change set %v and the operation %v (the graph keeps them)", took, tc.wantCS[len(tc.wantCS)-1], tc.wantOp[len(tc.wantOp)-1])
			}
			if p := r.Learned["/"]; p.Seen != 1+tc.learned["/"].Seen {
				t.Errorf("learned %+v of the place", p)
			}
		})
	}
}

// TestShortStepsShareTheBudget: when many stacks are in their windows at once, their
// looks come further apart, so a run's looks stay within half its API budget.
func TestShortStepsShareTheBudget(t *testing.T) {
	r := &Run{ID: "r", Mode: ModeDeploy, Status: Running, MaxConcurrency: 50, Stacks: map[string]*Stack{}}
	for i := range 20 {
		n := fmt.Sprintf("s%02d", i)
		r.Stacks[n] = &Stack{Name: n, StackName: n, Intent: IntentDeploy, Phase: Pending, TemplateHash: "t"}
	}
	opts := Options{Heartbeat: 15 * time.Second}
	r, _ = Advance(r, nil, t0, opts)
	at := t0.Add(2 * time.Second)
	var obs []Observation
	for n := range r.Stacks {
		obs = append(obs, Observation{Stack: n, ChangeSetStatus: "CREATE_IN_PROGRESS"})
	}
	r, _ = Advance(r, obs, at, opts)
	for n, s := range r.Stacks {
		if got := s.CheckAt.Sub(at); got != 20*lookCost {
			t.Fatalf("%s: next look in %v, want %v (20 stacks in their windows)", n, got, 20*lookCost)
		}
	}
	if perSecond := 20 / (20 * lookCost).Seconds(); perSecond > 12.5 { // half of awsclient.DefaultBudget
		t.Errorf("%.1f looks a second", perSecond)
	}
}

// TestWakeQueuesOneCheckAtATime: a step queues a delayed check only when one is due
// sooner than the check already queued, so the stack events and heartbeats of a run never
// fan out into a stream of checks.
func TestWakeQueuesOneCheckAtATime(t *testing.T) {
	opts := Options{Heartbeat: 15 * time.Second}
	r := &Run{ID: "r", Mode: ModeDeploy, Status: Running, MaxConcurrency: 1, Stacks: map[string]*Stack{
		"a": {Name: "a", StackName: "x-a", Intent: IntentDeploy, Phase: Pending, TemplateHash: "t"},
		"b": {Name: "b", StackName: "x-b", Intent: IntentDeploy, Phase: Pending, TemplateHash: "t"},
	}}
	type step struct {
		at     time.Duration
		obs    []Observation
		delay  time.Duration // 0: no check queued
		linger time.Duration // 0: the driver does not wait in the invocation
	}
	for i, st := range []step{
		{at: 0, delay: time.Second},                                  // a's change set: first look in 1s
		{at: 500 * time.Millisecond, linger: 500 * time.Millisecond}, // an event step: the queued check comes in time, and the look is half a second away
		{at: time.Second, obs: []Observation{{Stack: "a", ChangeSetStatus: "CREATE_IN_PROGRESS"}}, linger: ShortStep},               // the check: next look in a short step, waited for
		{at: 1500 * time.Millisecond, obs: []Observation{{Stack: "a", ChangeSetStatus: "CREATE_COMPLETE"}}, delay: 5 * time.Second}, // executing: its stack event is the signal, the first look a backstop (OperationFirstLook)
		{at: 2 * time.Second}, // a heartbeat: nothing due, the check queued stands
		{at: 2500 * time.Millisecond, obs: []Observation{{Stack: "a", StackStatus: "CREATE_COMPLETE"}}, delay: time.Second},                                              // its stack event: a done, b's change set: the place's took 1.5 s, the window still opens at 1 s
		{at: 3500 * time.Millisecond, obs: []Observation{{Stack: "b", ChangeSetStatus: "FAILED", ChangeSetReason: "The submitted information didn't contain changes."}}}, // run ends
	} {
		now := t0.Add(st.at)
		next, _ := Advance(r, st.obs, now, opts)
		delay, ok := Wake(r, next, now)
		if ok != (st.delay > 0) || delay != st.delay {
			t.Fatalf("step %d at +%v: check queued %v (%v), want %v", i, st.at, delay, ok, st.delay)
		}
		if linger, ok := Lingers(next, now); ok != (st.linger > 0) || linger != st.linger {
			t.Fatalf("step %d at +%v: lingers %v (%v), want %v", i, st.at, linger, ok, st.linger)
		}
		r = next
	}
	if r.Status != Succeeded {
		t.Fatalf("run %s: %s", r.Status, r.Reason)
	}
}

// TestFailedLookBacksOff: a stack that cannot be described is looked at again later, a
// little later each time, rather than every second or only at the next heartbeat.
func TestFailedLookBacksOff(t *testing.T) {
	opts := Options{Heartbeat: 15 * time.Second}
	r := &Run{ID: "r", Mode: ModeDeploy, Status: Running, Stacks: map[string]*Stack{
		"app": {Name: "app", StackName: "shop-app", Intent: IntentDeploy, Phase: Executing, PhaseSince: t0, CheckAt: t0.Add(time.Second), ChangeSetName: "cs"},
	}}
	now := t0.Add(time.Second)
	for _, want := range []time.Duration{1, 2, 4, 8, 15, 15} {
		r, _ = Advance(r, []Observation{{Stack: "app", LookErr: "describe stack shop-app: Rate exceeded"}}, now, opts)
		if got := r.Stacks["app"].CheckAt.Sub(now); got != want*time.Second || r.Stacks["app"].Phase != Executing {
			t.Fatalf("after a failed look: %s, next look in %v, want executing, %v", r.Stacks["app"].Phase, got, want*time.Second)
		}
		now = r.Stacks["app"].CheckAt
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

// TestAbandonDeletesUnexecutedChangeSets: an abandoned run deletes every change set it may
// not have executed (being made, ready, reviewed and waiting, or just given to
// ExecuteChangeSet), blocks every unfinished stack with what CloudFormation may still do,
// and leaves finished stacks as they are.
func TestAbandonDeletesUnexecutedChangeSets(t *testing.T) {
	r := &Run{ID: "r", Mode: ModeDeploy, Status: Running, Stacks: map[string]*Stack{
		"done":     {Name: "done", StackName: "s-done", Phase: Done, ChangeSetName: "cairn-r-1"},
		"making":   {Name: "making", StackName: "s-making", Phase: CreatingChangeSet, ChangeSetName: "cairn-r-2"},
		"reviewed": {Name: "reviewed", StackName: "s-reviewed", Phase: Pending, ChangeSetName: "cairn-p-3", ChangeSetID: "arn:cs/3"},
		"running":  {Name: "running", StackName: "s-running", Phase: Executing, ChangeSetName: "cairn-r-4", ChangeSetID: "arn:cs/4"},
		"deleting": {Name: "deleting", StackName: "s-deleting", Phase: Deleting, Intent: IntentDelete},
		"waiting":  {Name: "waiting", StackName: "s-waiting", Phase: Pending},
	}}
	next, actions := Abandon(r, "the lock was removed", t0)
	var deleted []string
	for _, a := range actions {
		if a.Kind != DeleteChangeSet {
			t.Errorf("an abandoned run may only delete change sets, not %s", a.Kind)
		}
		deleted = append(deleted, a.Stack+"="+a.ChangeSetName)
	}
	if want := []string{"making=cairn-r-2", "reviewed=cairn-p-3", "running=cairn-r-4"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	if next.Status != Abandoned || next.Reason != "abandoned: the lock was removed" {
		t.Errorf("run %s %q", next.Status, next.Reason)
	}
	for name, want := range map[string]string{
		"making":   "the run lost its lock: its change set cairn-r-2 was never executed and is deleted",
		"running":  "the run lost its lock: CloudFormation may still be executing its change set cairn-r-4; the next run re-plans the stack from its live tags",
		"deleting": "the run lost its lock: CloudFormation may still be working on it (deleting); the next run re-plans the stack from its live tags",
		"waiting":  "the run lost its lock: not started",
	} {
		if s := next.Stacks[name]; s.Phase != Blocked || s.Reason != want {
			t.Errorf("%s: %s %q, want blocked %q", name, s.Phase, s.Reason, want)
		}
	}
	if s := next.Stacks["done"]; s.Phase != Done || s.Reason != "" {
		t.Errorf("done: %s %q", s.Phase, s.Reason)
	}
}

// TestProtectedStackChangesOnlyInTheApplyOfAPlan: a protected stack (PlanOnly) is never
// changed, re-created or deleted by a run that applies no approved plan, whatever that
// run's plan let through: the stack fails with the way forward, its dependents are
// blocked, and no call is made for it. The apply run of a plan (Run.Plan) changes it.
func TestProtectedStackChangesOnlyInTheApplyOfAPlan(t *testing.T) {
	tests := []struct {
		name  string
		setup func(r *Run, w *world)
		calls []string
	}{
		{name: "changed inputs", calls: []string{"CreateChangeSet a", "ExecuteChangeSet a"}},
		{name: "re-created", calls: []string{"DeleteStack a", "CreateChangeSet a", "ExecuteChangeSet a"},
			setup: func(r *Run, w *world) {
				r.Stacks["a"].Intent, r.Stacks["a"].Exists = IntentRecreate, true
				w.stacks["a"] = &fakeStack{status: "ROLLBACK_COMPLETE"}
			}},
		{name: "deleted", calls: []string{"DeleteStack a"},
			setup: func(r *Run, w *world) {
				r.Stacks["a"].Intent, r.Stacks["a"].Exists = IntentDelete, true
				delete(r.Stacks, "b")
			}},
	}
	for _, tt := range tests {
		for _, plan := range []string{"", "20261130-120000000-1a2b3c4d"} {
			t.Run(fmt.Sprintf("%s in plan %q", tt.name, plan), func(t *testing.T) {
				w := newWorld(t)
				r := chain("a", "b")
				r.Plan, r.Deployment = plan, "shop"
				r.Stacks["a"].PlanOnly = true
				if tt.setup != nil {
					tt.setup(r, w)
				}
				got := w.drive(r, Options{})
				a := got.Stacks["a"]
				if plan != "" {
					if k := kinds(w.calls); !slices.Equal(k[:len(tt.calls)], tt.calls) || a.Phase != Done {
						t.Errorf("apply of a plan: calls %v, a %s (%s)", k, a.Phase, a.Reason)
					}
					return
				}
				if len(w.calls) != 0 || a.Phase != Failed || !strings.HasPrefix(a.Reason, "protected stack shop-a: ") ||
					!strings.Contains(a.Reason, "needs an approved plan, and this run applies none: nothing was changed; run `cairn plan PATH --deployment shop`") {
					t.Errorf("a run applying no plan: calls %v, a %s: %q", kinds(w.calls), a.Phase, a.Reason)
				}
				if b := got.Stacks["b"]; b != nil && b.Phase != Blocked {
					t.Errorf("b depends on a: %s", b.Phase)
				}
			})
		}
	}
}
