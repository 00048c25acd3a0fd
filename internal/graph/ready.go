package graph

import (
	"fmt"
	"slices"
	"sync"
)

// Ready returns the nodes that are not done and whose dependencies are all done, sorted:
// the stacks a run can start now. done is called exactly once per node, so it may be a
// map lookup or a query of persisted run state.
//
// Each call costs O(V+E) with one allocation besides the result, whatever done reports.
// That suits the run engine, which reloads its state on every trigger and asks once per
// step. A loop in one process that finishes one node per step pays that cost V times;
// such a loop should use Walk, which pays O(V+E) for the whole run.
//
// Ready does not require done to be consistent with the graph (a node may be done while
// its dependencies are not) and nodes on a cycle are never ready; call Validate first.
func (g *Graph) Ready(done func(string) bool) []string {
	return g.ready(done, g.deps)
}

// ReadyToDelete returns the nodes that are not done and whose dependents are all done,
// sorted: the stacks a deletion can remove now without breaking a stack that reads their
// outputs. It costs the same as Ready.
func (g *Graph) ReadyToDelete(done func(string) bool) []string {
	return g.ready(done, g.rdeps)
}

func (g *Graph) ready(done func(string) bool, before [][]int32) []string {
	byName, _ := g.sorted()
	isDone := make([]bool, len(g.names))
	for i, name := range g.names {
		isDone[i] = done(name)
	}
	var out []string
next:
	for _, i := range byName {
		if isDone[i] {
			continue
		}
		for _, j := range before[i] {
			if !isDone[j] {
				continue next
			}
		}
		out = append(out, g.names[i])
	}
	return out
}

// Walk follows a deployment or deletion through a graph incrementally: Done(name) updates
// only name's neighbours and returns those it made ready, so a whole run driven by Done's
// results costs O(V + E log d) for in-degree d, however the completions are interleaved. It gives the same answers as Graph.Ready
// (or ReadyToDelete) with done reporting the nodes passed to Done so far.
//
// A Walk is safe for concurrent use. The graph must not change while it is walked.
type Walk struct {
	names  []string
	index  map[string]int32
	before [][]int32 // what must be done before a node is ready
	after  [][]int32 // the nodes waiting on a node
	rank   []int32

	mu      sync.Mutex
	done    []bool
	waiting []int32 // per node, how many of before[node] are not done
	ready   map[int32]struct{}
	left    int
}

// Walk starts a deployment walk: a node is ready when its dependencies are done.
func (g *Graph) Walk() *Walk { return g.walk(g.deps, g.rdeps) }

// WalkReverse starts a deletion walk: a node is ready when its dependents are done.
func (g *Graph) WalkReverse() *Walk { return g.walk(g.rdeps, g.deps) }

func (g *Graph) walk(before, after [][]int32) *Walk {
	_, rank := g.sorted()
	w := &Walk{
		names: g.names, index: g.index, before: before, after: after, rank: rank,
		done:    make([]bool, len(g.names)),
		waiting: make([]int32, len(g.names)),
		ready:   map[int32]struct{}{},
		left:    len(g.names),
	}
	for i := range g.names {
		w.waiting[i] = int32(len(before[i]))
		if w.waiting[i] == 0 {
			w.ready[int32(i)] = struct{}{}
		}
	}
	return w
}

// Ready returns the nodes not done whose prerequisites are all done, sorted. It costs
// O(k log k) for k ready nodes; to follow a run, start with Ready and then use what Done
// returns rather than calling Ready after every completion.
func (w *Walk) Ready() []string {
	w.mu.Lock()
	ids := make([]int32, 0, len(w.ready))
	for i := range w.ready {
		ids = append(ids, i)
	}
	w.mu.Unlock()
	if out := w.sortedNames(ids); out != nil {
		return out
	}
	return []string{}
}

// Done marks name as finished (deployed, deleted, or skipped: the walk does not care
// why) and returns the nodes that became ready because of it, sorted, so a caller can
// start them without asking Ready again. Marking a node twice is a no-op. It costs
// O(d log d) for a node with d neighbours.
func (w *Walk) Done(name string) ([]string, error) {
	i, ok := w.index[name]
	if !ok {
		return nil, fmt.Errorf("mark %s done: %w %q: the walk covers only the graph's nodes", name, ErrUnknownStack, name)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done[i] {
		return nil, nil
	}
	w.done[i] = true
	w.left--
	delete(w.ready, i)
	var woke []int32
	for _, j := range w.after[i] {
		w.waiting[j]--
		if w.waiting[j] == 0 && !w.done[j] {
			w.ready[j] = struct{}{}
			woke = append(woke, j)
		}
	}
	return w.sortedNames(woke), nil
}

func (w *Walk) sortedNames(ids []int32) []string {
	if len(ids) == 0 {
		return nil
	}
	slices.SortFunc(ids, func(a, b int32) int { return int(w.rank[a] - w.rank[b]) })
	out := make([]string, len(ids))
	for k, i := range ids {
		out[k] = w.names[i]
	}
	return out
}

// Remaining returns how many nodes are not done yet.
func (w *Walk) Remaining() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.left
}
