package graph

import "slices"

// The walker: what a run engine asks of the graph at each step, given what has finished.
// Order and ReverseOrder say in what order to deploy and delete; Ready which nodes can
// start now; BlockedBy which nodes can no longer run because a node they depend on failed;
// Prerequisites which nodes must finish before some others; Walk visits nodes again only
// when one they depend on settled. Each is linear in the nodes and edges it looks at (a
// Walk sorts each pass), whatever order the names sort in, and answers in name order.

// Ready returns, in name order, the nodes that are not done and whose every dependency is
// done: those that can start once the nodes for which done returns true have finished.
// done is called once per node. O(V + E).
func (g *Graph) Ready(done func(name string) bool) []string {
	byName, _ := g.sorted()
	finished := make([]bool, len(g.names))
	for i, name := range g.names {
		finished[i] = done(name)
	}
	var out []string
	for _, i := range byName {
		if finished[i] {
			continue
		}
		ready := true
		for _, d := range g.deps[i] {
			if !finished[d] {
				ready = false
				break
			}
		}
		if ready {
			out = append(out, g.names[i])
		}
	}
	return out
}

// BlockedBy returns, in name order, the nodes that depend on one of failed, directly or
// through others: the nodes that can no longer run once those failed. A failed node is
// among them only if it depends on another. through, when not nil, limits the walk to
// the nodes for which it returns true (a node that already finished is not blocked, nor
// blocks what depends on it through it); it is called at most once per node. Names
// that are not nodes of g are ignored. O(V + E).
func (g *Graph) BlockedBy(failed []string, through func(name string) bool) []string {
	return g.closure(failed, g.rdeps, through)
}

// Prerequisites returns, in name order, the nodes that some of nodes depend on, directly
// or through others: those that must finish before them. A node of nodes is among them
// only if another of them (or itself, on a cycle) depends on it. through, when not nil,
// limits the walk as in BlockedBy. Names that are not nodes of g are ignored. O(V + E).
func (g *Graph) Prerequisites(nodes []string, through func(name string) bool) []string {
	return g.closure(nodes, g.deps, through)
}

// closure walks adj from the nodes named from, breadth first, into the nodes through
// admits, and returns the nodes reached in name order.
func (g *Graph) closure(from []string, adj [][]int32, through func(name string) bool) []string {
	const (
		unseen int8 = iota
		reached
		refused
	)
	state := make([]int8, len(g.names))
	// The nodes of from are walked from, but reached only when an edge leads to them;
	// queued says a node is (or was) in the queue.
	queued := make([]bool, len(g.names))
	var queue, found []int32
	for _, name := range from {
		if i, ok := g.index[name]; ok && !queued[i] {
			queued[i] = true
			queue = append(queue, i)
		}
	}
	for k := 0; k < len(queue); k++ {
		for _, w := range adj[queue[k]] {
			if state[w] != unseen {
				continue
			}
			if through != nil && !through(g.names[w]) {
				state[w] = refused
				continue
			}
			state[w] = reached
			found = append(found, w)
			if !queued[w] {
				queued[w] = true
				queue = append(queue, w)
			}
		}
	}
	return g.inNameOrder(found)
}

// inNameOrder returns the names of ids sorted: by rank, O(k log k), or by a scan of the
// name index when that is cheaper.
func (g *Graph) inNameOrder(ids []int32) []string {
	if len(ids) == 0 {
		return nil
	}
	byName, rank := g.sorted()
	if len(ids) > len(byName)/8 {
		in := make([]bool, len(g.names))
		for _, i := range ids {
			in[i] = true
		}
		out := make([]string, 0, len(ids))
		for _, i := range byName {
			if in[i] {
				out = append(out, g.names[i])
			}
		}
		return out
	}
	rs := make([]int32, len(ids))
	for k, i := range ids {
		rs[k] = rank[i]
	}
	slices.Sort(rs)
	out := make([]string, len(rs))
	for k, r := range rs {
		out[k] = g.names[byName[r]]
	}
	return out
}

// Walk visits the nodes of a graph in passes, as a run engine's step does: the first
// pass is every node, the next ones only the dependents of the nodes that settled (see
// Settled) in the pass before, since nothing changed for the others. Each pass is in name
// order and holds a node once. A node is visited again once per dependency that settled,
// so a walk visits at most V + E nodes whatever the names: a chain named against its
// order takes a pass per node, each of one node.
type Walk struct {
	g       *Graph
	started bool
	next    []int32 // the dependents of the nodes settled in this pass
	queued  []bool  // queued[i]: i is in next
}

// Walk starts a walk of g (see Walk).
func (g *Graph) Walk() *Walk { return &Walk{g: g, queued: make([]bool, len(g.names))} }

// Next returns the next pass in name order: every node the first time, then the
// dependents of the nodes settled since the pass before; nil when there are none.
func (w *Walk) Next() []string {
	if !w.started {
		w.started = true
		return w.g.Nodes()
	}
	pass := w.g.inNameOrder(w.next)
	for _, i := range w.next {
		w.queued[i] = false
	}
	w.next = w.next[:0]
	return pass
}

// Settled says that the node name settled in this pass: its dependents are in the next.
// Unknown names are ignored.
func (w *Walk) Settled(name string) {
	i, ok := w.g.index[name]
	if !ok {
		return
	}
	for _, d := range w.g.rdeps[i] {
		if !w.queued[d] {
			w.queued[d] = true
			w.next = append(w.next, d)
		}
	}
}
