package run

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// updated is the run after first whose stacks all changed their templates (so each needs a
// change set), each allowed to make it early.
func updated(first *Run) *Run {
	r := applied(first)
	for _, s := range r.Stacks {
		s.TemplateHash += "-v2"
		s.Early = true
	}
	return r
}

// steps counts how many steps drive took (one a minute).
func steps(r *Run) int { return int(r.UpdatedAt.Sub(t0).Minutes()) }

// TestEarlyChangeSetsLeaveTheCriticalPath: a chain whose stacks all change makes each
// dependent's change set while its dependency executes, and executes it the moment the
// dependency finished with the outputs it had: one change set a stack, none deleted, and
// fewer steps than making each after its dependency.
func TestEarlyChangeSetsLeaveTheCriticalPath(t *testing.T) {
	w := newWorld(t)
	first := w.drive(chain("a", "b", "c"), Options{Resolve: resolveOutputs})

	late := applied(first)
	for _, s := range late.Stacks {
		s.TemplateHash += "-v2"
	}
	w.calls = nil
	lateDone := w.drive(late, Options{Resolve: resolveOutputs})

	w.calls = nil
	r := w.drive(updated(first), Options{Resolve: resolveOutputs})
	if r.Status != Succeeded {
		t.Fatalf("status %s: %s", r.Status, r.Reason)
	}
	want := []string{"CreateChangeSet a", "ExecuteChangeSet a", "CreateChangeSet b", "ExecuteChangeSet b", "CreateChangeSet c", "ExecuteChangeSet c"}
	if got := kinds(w.calls); !slices.Equal(got, want) {
		t.Fatalf("calls\n got %v\nwant %v", got, want)
	}
	if steps(r) >= steps(lateDone) {
		t.Errorf("early: %d steps, made after the dependencies: %d", steps(r), steps(lateDone))
	}
	for _, n := range []string{"b", "c"} {
		s, dep := r.Stacks[n], r.Stacks[n].Requires[0]
		if s.MadeEarly || s.Phase != Done {
			t.Errorf("%s: %s, made early still %v", n, s.Phase, s.MadeEarly)
		}
		if !s.StartedAt.Before(r.Stacks[dep].FinishedAt) || s.ExecutedAt.Before(r.Stacks[dep].FinishedAt) {
			t.Errorf("%s: started %s, executed %s; %s finished %s", n, s.StartedAt, s.ExecutedAt, dep, r.Stacks[dep].FinishedAt)
		}
	}
}

// TestEarlyChangeSetOfStaleParametersIsMadeAgain: when the dependency's update changes the
// output a stack's parameter reads, the change set made early is deleted, never executed,
// and one of the new value is made and executed.
func TestEarlyChangeSetOfStaleParametersIsMadeAgain(t *testing.T) {
	w := newWorld(t)
	first := w.drive(chain("a", "b"), Options{Resolve: resolveOutputs})
	r := updated(first)
	r.Stacks["a"].RawParameters = map[string]string{"P": "v2"} // a's output changes with it
	w.calls = nil
	var executed []string
	r = w.drive(r, Options{Resolve: resolveOutputs})
	if r.Status != Succeeded {
		t.Fatalf("status %s: %s", r.Status, r.Reason)
	}
	want := []string{"CreateChangeSet a", "ExecuteChangeSet a", "CreateChangeSet b", "DeleteChangeSet b", "CreateChangeSet b", "ExecuteChangeSet b"}
	if got := kinds(w.calls); !slices.Equal(got, want) {
		t.Fatalf("calls\n got %v\nwant %v", got, want)
	}
	var made []string
	for _, c := range w.calls {
		if c.Stack != "b" {
			continue
		}
		switch c.Kind {
		case CreateChangeSet:
			made = append(made, c.ChangeSetName)
		case ExecuteChangeSet:
			executed = append(executed, c.ChangeSetName)
		case DeleteChangeSet:
			if c.ChangeSetName != made[0] {
				t.Errorf("deleted %s, made early %s", c.ChangeSetName, made[0])
			}
		}
	}
	if len(made) != 2 || made[0] == made[1] || !slices.Equal(executed, made[1:]) {
		t.Fatalf("b's change sets made %v, executed %v", made, executed)
	}
	if got, wantDep := r.Stacks["b"].Parameters["Dep"], r.Stacks["a"].Outputs["Out"]; got != wantDep || !strings.Contains(got, "v2") {
		t.Fatalf("b's Dep = %q, a's output %q", got, wantDep)
	}
}

// TestEarlyChangeSetOfAFailedDependencyIsDeleted: a dependency that fails leaves the change
// set made early unexecuted and deleted, its stack blocked, and the rest of the chain
// never started.
func TestEarlyChangeSetOfAFailedDependencyIsDeleted(t *testing.T) {
	w := newWorld(t)
	first := w.drive(chain("a", "b", "c"), Options{Resolve: resolveOutputs})
	w.failOn["a"] = "UPDATE_ROLLBACK_COMPLETE"
	w.calls = nil
	r := w.drive(updated(first), Options{Resolve: resolveOutputs})
	want := map[string]Phase{"a": Failed, "b": Blocked, "c": Blocked}
	if p := phases(r); !maps.Equal(p, want) || r.Status != RunFailed {
		t.Fatalf("%s, phases %v, want %v", r.Status, p, want)
	}
	if got, want := kinds(w.calls), []string{"CreateChangeSet a", "ExecuteChangeSet a", "CreateChangeSet b", "DeleteChangeSet b"}; !slices.Equal(got, want) {
		t.Fatalf("calls\n got %v\nwant %v", got, want)
	}
	if !strings.Contains(r.Stacks["b"].Reason, "dependency a failed") {
		t.Errorf("b's reason %q", r.Stacks["b"].Reason)
	}
}

// TestEarlyChangeSetWithNoChanges: an early change set with nothing to change is deleted;
// the stack is unchanged once its dependency finished with the outputs it had, and makes
// a change set when the outputs changed.
func TestEarlyChangeSetWithNoChanges(t *testing.T) {
	for _, tc := range []struct {
		name    string
		aParams map[string]string
		want    []string
		phase   Phase
	}{
		{"outputs kept", nil, []string{"CreateChangeSet a", "ExecuteChangeSet a", "CreateChangeSet b", "DeleteChangeSet b"}, Unchanged},
		{"outputs changed", map[string]string{"P": "v2"}, []string{"CreateChangeSet a", "ExecuteChangeSet a", "CreateChangeSet b", "DeleteChangeSet b", "CreateChangeSet b", "ExecuteChangeSet b"}, Done},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			first := w.drive(chain("a", "b"), Options{Resolve: resolveOutputs})
			r := updated(first)
			if tc.aParams != nil {
				r.Stacks["a"].RawParameters = tc.aParams
			}
			w.emptyCS["b"] = tc.aParams == nil
			w.calls = nil
			r = w.drive(r, Options{Resolve: resolveOutputs})
			if got := kinds(w.calls); !slices.Equal(got, tc.want) {
				t.Fatalf("calls\n got %v\nwant %v", got, tc.want)
			}
			if s := r.Stacks["b"]; s.Phase != tc.phase || r.Status != Succeeded {
				t.Fatalf("b %s (%s), run %s", s.Phase, s.Reason, r.Status)
			}
		})
	}
}

// TestEarlyChangeSetThatFails: a change set made early that CloudFormation fails for
// another reason than no changes (an export the dependency's update adds) is deleted and
// made again after the dependency finished; the stack does not fail for it.
func TestEarlyChangeSetThatFails(t *testing.T) {
	r := chain("a", "b")
	for _, s := range r.Stacks {
		s.Exists, s.Early, s.Outputs = true, true, map[string]string{"Out": "old"}
	}
	a := r.Stacks["a"]
	a.Phase, a.PhaseSince, a.ChangeSetName, a.ChangeSetID = Executing, t0, "cairn-r1-1", "arn:cs/a"
	r.Seq = 1
	next, actions := Advance(r, nil, t0, Options{Resolve: resolveOutputs})
	if got := kinds(actions); !slices.Equal(got, []string{"CreateChangeSet b"}) || !next.Stacks["b"].MadeEarly {
		t.Fatalf("while a executes: %v, b %+v", got, next.Stacks["b"])
	}
	next, actions = Advance(next, []Observation{{Stack: "b", ChangeSetID: "arn:cs/b", ChangeSetStatus: "FAILED", ChangeSetReason: "No export named shop-a-Queue found"}}, t0.Add(time.Minute), Options{Resolve: resolveOutputs})
	if got := kinds(actions); !slices.Equal(got, []string{"DeleteChangeSet b"}) {
		t.Fatalf("after the failure: %v", got)
	}
	if s := next.Stacks["b"]; s.Phase != Pending || s.Early || s.MadeEarly || s.ChangeSetName != "" {
		t.Fatalf("b after the failure: %s early %v made early %v change set %q", s.Phase, s.Early, s.MadeEarly, s.ChangeSetName)
	}
	_, actions = Advance(next, []Observation{{Stack: "a", StackStatus: "UPDATE_COMPLETE", Outputs: map[string]string{"Out": "new"}}}, t0.Add(2*time.Minute), Options{Resolve: resolveOutputs})
	if len(actions) != 1 || actions[0].Kind != CreateChangeSet || actions[0].Stack != "b" || actions[0].Parameters["Dep"] != "new" {
		t.Fatalf("after a finished: %+v", actions)
	}
}

// TestNoEarlyChangeSet: what keeps a stack's change set from being made early.
func TestNoEarlyChangeSet(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(r *Run)
	}{
		{"not allowed by its templates", func(r *Run) { r.Stacks["b"].Early = false }},
		{"a plan", func(r *Run) { r.Mode = ModePlan }},
		{"the apply of a plan", func(r *Run) { r.Plan = "p-1" }},
		{"protected", func(r *Run) { r.Stacks["b"].PlanOnly = true }},
		{"the output it reads comes with the dependency's create", func(r *Run) {
			r.Stacks["a"].Exists, r.Stacks["a"].Outputs = false, nil
		}},
		{"its inputs unchanged as things stand", func(r *Run) {
			b := r.Stacks["b"]
			b.TemplateHash, b.PrevParametersHash = b.PrevTemplateHash, HashParameters(map[string]string{"Dep": "old", "P": "v"})
		}},
		{"the dependency still makes its change set", func(r *Run) { r.Stacks["a"].Phase = CreatingChangeSet }},
		{"no concurrency slot", func(r *Run) { r.MaxConcurrency = 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := chain("a", "b")
			for _, s := range r.Stacks {
				s.Exists, s.Early, s.Outputs = true, true, map[string]string{"Out": "old"}
				s.PrevTemplateHash, s.TemplateHash = s.TemplateHash, s.TemplateHash+"-v2"
			}
			a := r.Stacks["a"]
			a.Phase, a.PhaseSince, a.ChangeSetName, a.ChangeSetID = Executing, t0, "cairn-r1-1", "arn:cs/a"
			tc.setup(r)
			next, actions := Advance(r, nil, t0, Options{Resolve: resolveOutputs})
			for _, a := range actions {
				if a.Stack == "b" {
					t.Fatalf("b: %s while a is %s", a.Kind, next.Stacks["a"].Phase)
				}
			}
			if s := next.Stacks["b"]; s.Phase != Pending || s.MadeEarly {
				t.Fatalf("b is %s, made early %v", s.Phase, s.MadeEarly)
			}
		})
	}
}
