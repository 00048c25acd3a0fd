package run

import (
	"slices"
	"testing"
	"time"
)

// TestSlotsGoToTheLongestChainFirst: when more stacks may start than the run has
// concurrency slots, the slots go to the stacks with the longest remaining chain behind
// them (their own expected time plus their dependents'), then by name; given in name
// order, s10–s19 took them before s4–s9 whatever waited behind those.
func TestSlotsGoToTheLongestChainFirst(t *testing.T) {
	type st struct {
		requires []string
		history  Timing
	}
	for _, tc := range []struct {
		name   string
		limit  int
		stacks map[string]st
		want   []string // the stacks whose change sets the first step makes
	}{
		{
			name:  "a chain behind s9 goes before s10 and s11",
			limit: 2,
			stacks: map[string]st{
				"s10": {}, "s11": {}, "s9": {},
				"s12": {requires: []string{"s9"}}, "s13": {requires: []string{"s12"}},
			},
			want: []string{"s10", "s9"},
		},
		{
			name:  "longer history first, where chains are as long in stacks",
			limit: 1,
			stacks: map[string]st{
				"a": {history: Timing{ChangeSet: 2 * time.Second, Operation: 5 * time.Second}},
				"b": {history: Timing{ChangeSet: 2 * time.Second, Operation: 50 * time.Second}},
			},
			want: []string{"b"},
		},
		{
			name:  "a slot for each: all start",
			limit: 10,
			stacks: map[string]st{
				"s10": {}, "s9": {}, "s12": {requires: []string{"s9"}},
			},
			want: []string{"s10", "s9"},
		},
		{
			name:  "equal chains keep name order",
			limit: 2,
			stacks: map[string]st{
				"c": {}, "a": {}, "b": {},
			},
			want: []string{"a", "b"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Run{ID: "r", Mode: ModeDeploy, Status: Running, MaxConcurrency: tc.limit, Stacks: map[string]*Stack{}}
			for name, s := range tc.stacks {
				r.Stacks[name] = &Stack{Name: name, StackName: "x-" + name, Intent: IntentDeploy, Phase: Pending, TemplateHash: "t",
					Requires: s.requires, History: s.history}
			}
			_, actions := Advance(r, nil, t0, Options{})
			var got []string
			for _, a := range actions {
				if a.Kind == CreateChangeSet {
					got = append(got, a.Stack)
				}
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("change sets made for %v, want %v", got, want)
			}
		})
	}
}

// TestOperationsLearnedPerPlace: once the run saw updates end in a place, an update with
// no history of its own is looked at from when the slowest of them would have ended (its
// stack event, normally first, is then late), not only as the fallback that backs off
// from a second; creates teach nothing of updates.
func TestOperationsLearnedPerPlace(t *testing.T) {
	for _, tc := range []struct {
		name       string
		seenType   string // the change set type of the operation that ended first
		wantWindow bool
	}{
		{name: "after an update", seenType: "UPDATE", wantWindow: true},
		{name: "after a create", seenType: "CREATE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Run{ID: "r", Mode: ModeDeploy, Status: Running, Stacks: map[string]*Stack{}}
			done := &Stack{Name: "a", Phase: Executing, ChangeSetType: tc.seenType, PhaseSince: t0}
			learn(r, done, t0.Add(4*time.Second))
			other := &Stack{Name: "b", Phase: Executing, ChangeSetType: "UPDATE", PhaseSince: t0}
			lo, hi := window(other, r.Learned)
			if got := hi > 0; got != tc.wantWindow {
				t.Fatalf("window %s..%s, want one: %v", lo, hi, tc.wantWindow)
			}
			if tc.wantWindow && (lo != 4*time.Second || hi != 7*time.Second) {
				t.Errorf("window %s..%s, want 4s..7s (the slowest seen .. 1.5 × it + 1 s: the event normally comes first)", lo, hi)
			}
		})
	}
}
