package run

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestStaleEarlyChangeSetStillBeingMade: once a's update finished, b's change set made
// early while a ran, which CloudFormation is still making, is made again at once when a's
// outputs changed what b's parameters resolve to (the stale one deleted, and remembered to
// delete again once b settles), and waited for when they did not.
func TestStaleEarlyChangeSetStillBeingMade(t *testing.T) {
	made := t0.Add(10 * time.Second)
	now := made.Add(2 * time.Second)
	for _, tc := range []struct {
		name     string
		aOut     string // a's output Out once a finished; b was made from "old"
		phase    Phase  // b's phase after the step
		want     []string
		stale    []string
		sameName bool
	}{
		{name: "outputs unchanged: waits for it", aOut: "old", phase: CreatingChangeSet, sameName: true},
		{name: "outputs changed: made again now", aOut: "new", phase: CreatingChangeSet,
			want: []string{"CreateChangeSet b"}, stale: []string{"cs-early"}}, // deleted once settled, unless executing removes it
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := chain("a", "b")
			a, b := r.Stacks["a"], r.Stacks["b"]
			a.Phase, a.Outputs, a.FinishedAt, a.PhaseSince = Done, map[string]string{"Out": tc.aOut}, now, now
			b.Early, b.MadeEarly, b.Exists = true, true, true
			b.Phase, b.PhaseSince, b.StartedAt = CreatingChangeSet, made, made
			b.ChangeSetName, b.ChangeSetID = "cs-early", "arn:cs-early"
			b.Parameters = map[string]string{"P": "v", "Dep": "old"}
			b.ParametersHash = HashParameters(b.Parameters)
			next, actions := Advance(r, nil, now, Options{Resolve: resolveOutputs})
			var got []string
			for _, a := range actions {
				k := string(a.Kind) + " " + a.Stack
				if a.Kind == DeleteChangeSet {
					k += " " + a.ChangeSetName
				}
				got = append(got, k)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("actions\n got %v\nwant %v", got, tc.want)
			}
			nb := next.Stacks["b"]
			if nb.Phase != tc.phase || !slices.Equal(nb.Stale, tc.stale) || (nb.ChangeSetName == "cs-early") != tc.sameName {
				t.Errorf("b: %s, change set %s, stale %v; want %s, stale %v", nb.Phase, nb.ChangeSetName, nb.Stale, tc.phase, tc.stale)
			}
			if tc.sameName {
				return
			}
			if nb.MadeEarly || nb.Parameters["Dep"] != "new" || !nb.PhaseSince.Equal(now) {
				t.Errorf("b made again: early %v, parameters %v, since %s", nb.MadeEarly, nb.Parameters, nb.PhaseSince)
			}
			if r.Stacks["b"].ChangeSetName != "cs-early" || r.Stacks["b"].Stale != nil {
				t.Errorf("Advance changed the run it was given: %+v", r.Stacks["b"])
			}
		})
	}
}

// TestStaleChangeSetsDeletedOnceSettled: the change sets of Stack.Stale are deleted when
// the stack settles (done, or unchanged), once, and not while it still works; a stack
// whose change set was executed deletes none (executing removed them).
func TestStaleChangeSetsDeletedOnceSettled(t *testing.T) {
	for _, tc := range []struct {
		phase    Phase
		executed bool
		want     []string
	}{
		{Executing, true, nil},
		{Done, false, []string{"DeleteChangeSet b cs-1", "DeleteChangeSet b cs-2"}},
		{Unchanged, false, []string{"DeleteChangeSet b cs-1", "DeleteChangeSet b cs-2"}},
		{Done, true, nil},
	} {
		t.Run(fmt.Sprintf("%s, executed %v", tc.phase, tc.executed), func(t *testing.T) {
			r := chain("a", "b")
			now := t0.Add(time.Minute)
			r.Stacks["a"].Phase = Done
			b := r.Stacks["b"]
			b.Phase, b.PhaseSince, b.ChangeSetName, b.Stale = tc.phase, now, "cs-3", []string{"cs-1", "cs-2"}
			if tc.executed {
				b.ExecutedAt = now.Add(-time.Second)
			}
			next, actions := Advance(r, nil, now, Options{Resolve: resolveOutputs})
			var got []string
			for _, a := range actions {
				got = append(got, string(a.Kind)+" "+a.Stack+" "+a.ChangeSetName)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("actions\n got %v\nwant %v", got, tc.want)
			}
			if tc.phase != Executing && next.Stacks["b"].Stale != nil {
				t.Errorf("stale %v left after deleting them", next.Stacks["b"].Stale)
			}
			if tc.want != nil {
				if _, again := Advance(next, nil, now.Add(time.Second), Options{Resolve: resolveOutputs}); len(again) > 0 {
					t.Errorf("deleted again: %v", again)
				}
			}
		})
	}
}

// TestEarlyChangeSetIsHeldUntilItsDependenciesFinish: a change set made early is not
// looked at in short steps while its dependency executes (nothing needs it before), but
// once, when it is likely made (the slowest change set the run saw in its place); made,
// it waits holding no slot; else, the step that sees the dependency finished has it looked
// at at once if its window opened, or when it opens.
func TestEarlyChangeSetIsHeldUntilItsDependenciesFinish(t *testing.T) {
	opts := Options{Resolve: resolveOutputs, Heartbeat: 15 * time.Second}
	learned := map[string]Place{"/": {Fastest: time.Second, Slowest: 3 * time.Second, Seen: 2}}
	for _, tc := range []struct {
		name     string
		made     bool          // the look when it is likely made finds it made
		finishIn time.Duration // when a finishes, after b's change set was asked for
		wantLook time.Duration // b's next look then, after its change set was asked for
	}{
		{name: "made when likely: waits, then executed", made: true, finishIn: 5 * time.Second},
		{name: "its window opened: looked at at once", finishIn: 2 * time.Second, wantLook: 2 * time.Second},
		{name: "its window not yet open: looked at when it opens", finishIn: 300 * time.Millisecond, wantLook: 900 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := chain("a", "b")
			r.Learned = learned
			a, b := r.Stacks["a"], r.Stacks["b"]
			a.Phase, a.PhaseSince, a.ChangeSetName, a.ChangeSetType, a.Exists = Executing, t0, "cs-a", "UPDATE", true
			a.Outputs = map[string]string{"Out": "old"}
			b.Early, b.Exists, b.PrevParametersHash = true, true, "before"
			r, actions := Advance(r, nil, t0, opts)
			if got := kinds(actions); !slices.Equal(got, []string{"CreateChangeSet b"}) {
				t.Fatalf("actions %v, want b's change set made early", got)
			}
			if nb := r.Stacks["b"]; !nb.MadeEarly || !nb.Held || !nb.CheckAt.Equal(t0.Add(3*time.Second)) {
				t.Fatalf("b: early %v, held %v, next look %s, want held, looked at when likely made (3s)", nb.MadeEarly, nb.Held, nb.CheckAt.Sub(t0))
			}
			if cs, _ := r.Due(t0.Add(3*time.Second - Piggyback - time.Millisecond)); len(cs) != 0 {
				t.Fatalf("b's change set looked at before it is likely made")
			}
			if tc.made {
				r, _ = Advance(r, []Observation{{Stack: "b", ChangeSetID: "arn:cs-b", ChangeSetStatus: "CREATE_COMPLETE", Changes: 1}}, t0.Add(3*time.Second), opts)
				if nb := r.Stacks["b"]; nb.Phase != Ready || !waitsEarly(nb) {
					t.Fatalf("b: %s, want waiting Ready with no slot", nb.Phase)
				}
				_, actions = Advance(r, []Observation{{Stack: "a", StackStatus: "UPDATE_COMPLETE", Outputs: map[string]string{"Out": "old"}}}, t0.Add(tc.finishIn), opts)
				if got := kinds(actions); !slices.Equal(got, []string{"ExecuteChangeSet b"}) {
					t.Fatalf("once a finished: actions %v, want b's change set executed", got)
				}
				return
			}
			now := t0.Add(tc.finishIn)
			r, _ = Advance(r, []Observation{{Stack: "a", StackStatus: "UPDATE_COMPLETE", Outputs: map[string]string{"Out": "old"}}}, now, opts)
			nb := r.Stacks["b"]
			if nb.Phase != CreatingChangeSet || nb.Held || !nb.CheckAt.Equal(t0.Add(tc.wantLook)) {
				t.Fatalf("b: %s, held %v, next look %v after it was asked for, want %v", nb.Phase, nb.Held, nb.CheckAt.Sub(t0), tc.wantLook)
			}
		})
	}
}

// TestEarlyChangeSetReadsTheOutputsComing: a dependency that passes a parameter through
// to an output (Stack.OutputParameters) gives, while it executes, the value it is deployed
// with: the change set made early from it is still current when the dependency finished
// with the output changed, and is executed, not made again.
func TestEarlyChangeSetReadsTheOutputsComing(t *testing.T) {
	opts := Options{Resolve: resolveOutputs, Heartbeat: 15 * time.Second}
	for _, tc := range []struct {
		name     string
		through  map[string]string // a's OutputParameters
		noEcho   bool              // a's P is NoEcho
		bMissing bool              // b does not exist yet
		early    string            // b's Dep in its change set made early; "" when none is made
		after    []string          // the actions once a finished with Out "new" (or finished), when stale
		finished string            // a's Out once it finished, when not "new"
	}{
		{name: "a passes P through: made from what comes", through: map[string]string{"Out": "P"}, early: "new"},
		{name: "an output not passed through: made from what was", through: map[string]string{"Other": "P"}, early: "old",
			after: []string{"CreateChangeSet b"}},
		{name: "a secret parameter is never read ahead", through: map[string]string{"Out": "P"}, noEcho: true, early: "old",
			after: []string{"CreateChangeSet b"}},
		{name: "a stack not yet created waits", through: map[string]string{"Out": "P"}, bMissing: true},
		// The read-ahead is a guess: an output that turns out otherwise (a macro rewrote
		// it) makes the change set stale, made again from the real value, never executed.
		{name: "a guess the real output belies: made again", through: map[string]string{"Out": "P"}, early: "new",
			finished: "rewritten", after: []string{"CreateChangeSet b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := chain("a", "b")
			a, b := r.Stacks["a"], r.Stacks["b"]
			a.Phase, a.PhaseSince, a.ChangeSetName, a.ChangeSetType, a.Exists = Executing, t0, "cs-a", "UPDATE", true
			a.Parameters, a.Outputs, a.OutputParameters = map[string]string{"P": "new"}, map[string]string{"Out": "old"}, tc.through
			if tc.noEcho {
				a.NoEcho = []string{"P"}
			}
			if tc.bMissing {
				a.Outputs = nil // a created too: nothing to read as it stood
			}
			b.Early, b.Exists, b.PrevParametersHash = true, !tc.bMissing, "before"
			r, actions := Advance(r, nil, t0, opts)
			if tc.early == "" {
				if len(actions) != 0 {
					t.Fatalf("actions %v, want none while a executes", kinds(actions))
				}
				return
			}
			if len(actions) != 1 || actions[0].Kind != CreateChangeSet || actions[0].Parameters["Dep"] != tc.early {
				t.Fatalf("actions %v (%v), want b's change set made early with Dep %q", kinds(actions), actions, tc.early)
			}
			out := cmp.Or(tc.finished, "new")
			r, actions = Advance(r, []Observation{{Stack: "a", StackStatus: "UPDATE_COMPLETE", Outputs: map[string]string{"Out": out}}}, t0.Add(5*time.Second), opts)
			if got := kinds(actions); !slices.Equal(got, tc.after) {
				t.Fatalf("once a finished: actions %v, want %v", got, tc.after)
			}
			if tc.after != nil && actions[0].Parameters["Dep"] != out {
				t.Fatalf("b's change set made again with Dep %q, want a's real output %q", actions[0].Parameters["Dep"], out)
			}
			if tc.after != nil {
				return
			}
			_, actions = Advance(r, []Observation{{Stack: "b", ChangeSetID: "arn:cs-b", ChangeSetStatus: "CREATE_COMPLETE", Changes: 1}}, t0.Add(6*time.Second), opts)
			if got := kinds(actions); !slices.Equal(got, []string{"ExecuteChangeSet b"}) {
				t.Fatalf("b's change set made early, ready: actions %v, want it executed", got)
			}
		})
	}
}
