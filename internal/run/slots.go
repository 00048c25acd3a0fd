package run

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/graph"
)

// unknownTook is what a stack with no history is expected to take, change set and
// operation: what counts in ordering stacks by their chains is the number of stacks on
// them, where no stack says more.
const unknownTook = 10 * time.Second

// remainingChains is, for each stack of r, how long the longest chain of stacks from it
// to the end of the graph (itself and its dependents, theirs, and so on) is likely to
// take: each unfinished stack's history (its last change set and operation), else
// unknownTook. The run ends no earlier than that after the stack starts.
func remainingChains(r *Run, g *graph.Graph, names []string) map[string]time.Duration {
	chains := make(map[string]time.Duration, len(names))
	var chain func(name string) time.Duration
	chain = func(name string) time.Duration {
		if d, ok := chains[name]; ok {
			return d
		}
		var longest time.Duration
		for _, d := range g.Dependents(name) {
			longest = max(longest, chain(d))
		}
		s := r.Stacks[name]
		own := time.Duration(0)
		if s != nil && !s.Phase.Terminal() {
			own = s.History.ChangeSet + s.History.Operation
			if own <= 0 {
				own = unknownTook
			}
		}
		chains[name] = own + longest
		return chains[name]
	}
	for _, name := range names {
		chain(name)
	}
	return chains
}

// byLongestChain orders stacks that compete for the run's concurrency slots: the longest
// remaining chain first (remainingChains), as the critical path needs, then by name. Given
// in name order, the slots went to s10–s19 before s4–s9 whatever waited behind them.
func byLongestChain(stacks []string, chains map[string]time.Duration) []string {
	out := slices.Clone(stacks)
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(chains[b], chains[a]), strings.Compare(a, b)) })
	return out
}
