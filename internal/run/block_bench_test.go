package run

import (
	"fmt"
	"testing"
)

// blockRun is a run of n pending stacks waiting on one that failed: a chain (each stack
// requires the one before it) or a wide fan-out (each requires the root). In the chain the
// names sort against the dependency order (a dependent's name sorts first), the order a
// pass in name order handles worst.
func blockRun(n int, chain bool) *Run {
	r := &Run{ID: "b", Mode: ModeDeploy, Status: Running, MaxConcurrency: 10, Stacks: map[string]*Stack{}}
	name := func(i int) string { return fmt.Sprintf("s%05d", n-i) }
	for i := range n + 1 {
		s := &Stack{Name: name(i), StackName: "x-" + name(i), Intent: IntentDeploy, Phase: Pending, TemplateHash: "t"}
		switch {
		case i == 0:
			s.Phase, s.Reason = Failed, "failed"
		case chain:
			s.Requires = []string{name(i - 1)}
		default:
			s.Requires = []string{name(0)}
		}
		r.Stacks[s.Name] = s
	}
	return r
}

// BenchmarkBlockChain3000 and BenchmarkBlockFanOut3000 are the step that blocks the
// dependents of a failed stack: 3,000 in a chain, or 3,000 beside each other.
func BenchmarkBlockChain3000(b *testing.B)  { benchmarkBlock(b, true) }
func BenchmarkBlockFanOut3000(b *testing.B) { benchmarkBlock(b, false) }

func benchmarkBlock(b *testing.B, chain bool) {
	const n = 3000
	r := blockRun(n, chain)
	b.ReportAllocs()
	for b.Loop() {
		next, _ := Advance(r, nil, t0, Options{})
		if next.Status == Running {
			b.Fatalf("the run did not end: %d stacks", len(next.Stacks))
		}
	}
}

// TestBlockReachesEveryDependent: one step blocks every stack waiting on a failed one,
// however their names sort.
func TestBlockReachesEveryDependent(t *testing.T) {
	for _, chain := range []bool{true, false} {
		next, _ := Advance(blockRun(300, chain), nil, t0, Options{})
		for _, s := range next.Stacks {
			if s.Phase != Blocked && s.Phase != Failed {
				t.Fatalf("chain %v: %s is %s after the step", chain, s.Name, s.Phase)
			}
		}
		if next.Status == Running {
			t.Fatalf("chain %v: the run is still running", chain)
		}
	}
}

// unchangedChain is a chain of n existing stacks none of whose inputs changed, named
// against their order: each settles, unchanged, as it starts, which lets the next start
// in the same step.
func unchangedChain(n int) *Run {
	r := &Run{ID: "b", Mode: ModeDeploy, Status: Running, MaxConcurrency: 10, Stacks: map[string]*Stack{}}
	name := func(i int) string { return fmt.Sprintf("s%05d", n-i) }
	h := HashParameters(map[string]string{})
	for i := range n {
		s := &Stack{Name: name(i), StackName: "x-" + name(i), Intent: IntentDeploy, Phase: Pending, Exists: true,
			TemplateHash: "t", PrevTemplateHash: "t", PrevParametersHash: h}
		if i > 0 {
			s.Requires = []string{name(i - 1)}
		}
		r.Stacks[s.Name] = s
	}
	return r
}

// BenchmarkUnchangedChain3000 is the one step of a 3,000-stack chain pushed unchanged.
func BenchmarkUnchangedChain3000(b *testing.B) {
	r := unchangedChain(3000)
	b.ReportAllocs()
	for b.Loop() {
		if next, actions := Advance(r, nil, t0, Options{}); next.Status != Succeeded || len(actions) != 0 {
			b.Fatalf("status %s, %d actions", next.Status, len(actions))
		}
	}
}

// TestUnchangedChainSettlesInOneStepWhateverTheNames: every stack of an unchanged chain
// settles in the step that starts the first, with no call.
func TestUnchangedChainSettlesInOneStepWhateverTheNames(t *testing.T) {
	next, actions := Advance(unchangedChain(200), nil, t0, Options{})
	if next.Status != Succeeded || len(actions) != 0 {
		t.Fatalf("status %s, %d actions", next.Status, len(actions))
	}
	for _, s := range next.Stacks {
		if s.Phase != Unchanged {
			t.Fatalf("%s is %s", s.Name, s.Phase)
		}
	}
}

// TestBlockedReasonWhateverTheNames: a stack blocked by two stopped dependencies names the
// first it requires, however the names sort (it was the first stopped when a pass in name
// order reached it).
func TestBlockedReasonWhateverTheNames(t *testing.T) {
	for _, name := range []string{"a", "z"} {
		r := &Run{ID: "b", Mode: ModeDeploy, Status: Running, MaxConcurrency: 10, Stacks: map[string]*Stack{
			"q":  {Name: "q", StackName: "x-q", Intent: IntentDeploy, Phase: Failed, Reason: "failed"},
			"p":  {Name: "p", StackName: "x-p", Intent: IntentDeploy, Phase: Pending, Requires: []string{"q"}},
			name: {Name: name, StackName: "x-" + name, Intent: IntentDeploy, Phase: Pending, Requires: []string{"p", "q"}},
		}}
		next, _ := Advance(r, nil, t0, Options{})
		if s := next.Stacks[name]; s.Phase != Blocked || s.Reason != "dependency p blocked" {
			t.Errorf("%s: %s, %q; want blocked, dependency p blocked", name, s.Phase, s.Reason)
		}
	}
}
