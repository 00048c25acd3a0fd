package run

import (
	"fmt"
	"testing"
)

// BenchmarkAdvance10k is one step of a 10,000-stack run, as a trigger makes it: half the
// stacks done, a chain of dependencies, a hundred in flight observed finished.
func BenchmarkAdvance10k(b *testing.B) {
	const n = 10_000
	r := &Run{ID: "b", Mode: ModeDeploy, Status: Running, MaxConcurrency: 100, Stacks: map[string]*Stack{}}
	var obs []Observation
	for i := range n {
		name := fmt.Sprintf("s%05d", i)
		s := &Stack{Name: name, StackName: "x-" + name, Intent: IntentDeploy, Phase: Pending, TemplateHash: "t"}
		if i > 0 {
			s.Requires = []string{fmt.Sprintf("s%05d", (i-1)/2)}
		}
		switch {
		case i < n/2:
			s.Phase = Done
		case i < n/2+100:
			s.Phase, s.ChangeSetName = Executing, "cairn-b-"+name
			obs = append(obs, Observation{Stack: name, StackStatus: "UPDATE_COMPLETE"})
		}
		r.Stacks[name] = s
	}
	b.ReportAllocs()
	for b.Loop() {
		if next, actions := Advance(r, obs, t0, Options{}); next.Status != Running || len(actions) == 0 {
			b.Fatalf("status %s, %d actions", next.Status, len(actions))
		}
	}
}
