package run

import (
	"fmt"
	"testing"
)

// fanOutRun is a wide fan-out of n stacks at the step that finishes one: one root and n-1
// stacks requiring it (reversed: n-1 stacks and one requiring them all). The stack that
// finishes (the root, or the last of the n-1) is observed UPDATE_COMPLETE, and the step
// starts what that made ready: n-1 dependents, of which MaxConcurrency start, or the one.
// The names sort against the dependency order (a dependent's name sorts first).
func fanOutRun(n int, reversed bool) (*Run, []Observation) {
	r := &Run{ID: "f", Mode: ModeDeploy, Status: Running, MaxConcurrency: 10, Stacks: map[string]*Stack{}}
	name := func(i int) string { return fmt.Sprintf("s%05d", n-i) }
	add := func(i int, phase Phase, requires ...string) *Stack {
		s := &Stack{Name: name(i), StackName: "x-" + name(i), Intent: IntentDeploy, Phase: phase, TemplateHash: "t", Requires: requires}
		r.Stacks[s.Name] = s
		return s
	}
	var obs []Observation
	if !reversed {
		root := add(0, Executing)
		root.ChangeSetName = "cairn-f-0"
		obs = append(obs, Observation{Stack: root.Name, StackStatus: "UPDATE_COMPLETE"})
		for i := 1; i < n; i++ {
			add(i, Pending, root.Name)
		}
		return r, obs
	}
	var deps []string
	for i := range n - 1 {
		s := add(i, Done)
		if i == n-2 {
			s.Phase, s.ChangeSetName = Executing, "cairn-f-0"
			obs = append(obs, Observation{Stack: s.Name, StackStatus: "UPDATE_COMPLETE"})
		}
		deps = append(deps, s.Name)
	}
	add(n-1, Pending, deps...)
	return r, obs
}

// BenchmarkStepFanOut3000 is the step in which the root of 2,999 stacks finishes and its
// dependents become ready; BenchmarkStepFanOut3000Reversed the step in which the last of
// 2,999 stacks finishes and the one requiring them all becomes ready.
func BenchmarkStepFanOut3000(b *testing.B)         { benchmarkFanOut(b, false, 10) }
func BenchmarkStepFanOut3000Reversed(b *testing.B) { benchmarkFanOut(b, true, 1) }

func benchmarkFanOut(b *testing.B, reversed bool, started int) {
	r, obs := fanOutRun(3000, reversed)
	b.ReportAllocs()
	for b.Loop() {
		if next, actions := Advance(r, obs, t0, Options{}); next.Status != Running || len(actions) != started {
			b.Fatalf("status %s, %d actions", next.Status, len(actions))
		}
	}
}

// TestFanOutStepStartsWhatBecameReady: the step that finishes the root of a fan-out
// starts MaxConcurrency of its dependents, the first by name; the step that finishes the
// last dependency of a fan-in starts the one stack.
func TestFanOutStepStartsWhatBecameReady(t *testing.T) {
	r, obs := fanOutRun(300, false)
	next, actions := Advance(r, obs, t0, Options{})
	if len(actions) != 10 {
		t.Fatalf("%d actions, want 10", len(actions))
	}
	for i, a := range actions {
		if want := fmt.Sprintf("s%05d", i+1); a.Kind != CreateChangeSet || a.Stack != want {
			t.Fatalf("action %d: %s %s, want CreateChangeSet %s", i, a.Kind, a.Stack, want)
		}
	}
	if p := next.Stacks["s00300"].Phase; p != Done {
		t.Fatalf("root is %s", p)
	}
	r, obs = fanOutRun(300, true)
	if _, actions = Advance(r, obs, t0, Options{}); len(actions) != 1 || actions[0].Stack != "s00001" {
		t.Fatalf("actions %+v, want one for s00001", actions)
	}
}
