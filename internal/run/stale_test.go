package run

import (
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
			want: []string{"DeleteChangeSet b cs-early", "CreateChangeSet b"}, stale: []string{"cs-early"}},
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
// the stack settles (done, or unchanged), once, and not while it still works.
func TestStaleChangeSetsDeletedOnceSettled(t *testing.T) {
	for _, tc := range []struct {
		phase Phase
		want  []string
	}{
		{Executing, nil},
		{Done, []string{"DeleteChangeSet b cs-1", "DeleteChangeSet b cs-2"}},
		{Unchanged, []string{"DeleteChangeSet b cs-1", "DeleteChangeSet b cs-2"}},
	} {
		t.Run(string(tc.phase), func(t *testing.T) {
			r := chain("a", "b")
			now := t0.Add(time.Minute)
			r.Stacks["a"].Phase = Done
			b := r.Stacks["b"]
			b.Phase, b.PhaseSince, b.ChangeSetName, b.Stale = tc.phase, now, "cs-3", []string{"cs-1", "cs-2"}
			next, actions := Advance(r, nil, now, Options{Resolve: resolveOutputs})
			var got []string
			for _, a := range actions {
				got = append(got, string(a.Kind)+" "+a.Stack+" "+a.ChangeSetName)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("actions\n got %v\nwant %v", got, tc.want)
			}
			if tc.want != nil && next.Stacks["b"].Stale != nil {
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
