package graph

import (
	"slices"
	"strings"
)

// CycleError reports a dependency cycle. Cycle lists the cycle's nodes in dependency
// direction, starting and ending at the same node: [app db cache app] means app depends
// on db, db on cache and cache on app.
//
// When a graph has several cycles, the reported one is chosen so the message is the same
// on every run: it starts at the lexicographically smallest node that lies on any cycle,
// and it is the shortest cycle through that node, following dependencies in name order
// when several are equally short.
type CycleError struct {
	Cycle []string
	// Unordered are, in name order, every node no order can place: those on a cycle and
	// those that depend on one.
	Unordered []string
}

func (e *CycleError) Error() string {
	return "dependency cycle: " + strings.Join(e.Cycle, " -> ")
}

// Validate returns nil if g is acyclic and a *CycleError naming a whole cycle otherwise.
// It costs O((V+E) log V).
func (g *Graph) Validate() error {
	_, err := g.order()
	return err
}

// Order returns the deploy order: every node after all of its dependencies. Among the
// nodes that could come next, the smallest name comes first, so the order is the
// lexicographically smallest topological order and identical on every run. On a cycle it
// returns a *CycleError. It costs O((V+E) log V): Kahn's algorithm with a heap of ready
// nodes keyed by name rank.
func (g *Graph) Order() ([]string, error) {
	ids, err := g.order()
	if err != nil {
		return nil, err
	}
	return g.namesOf(ids), nil
}

// ReverseOrder returns the deletion order, the exact reverse of Order: every node before
// its dependencies, so a stack is deleted only after every stack that reads its outputs.
func (g *Graph) ReverseOrder() ([]string, error) {
	order, err := g.Order()
	if err != nil {
		return nil, err
	}
	slices.Reverse(order)
	return order, nil
}

// order returns the deploy order as node numbers, or the *CycleError, computed once per
// state of the graph (callers must not modify the slice).
func (g *Graph) order() ([]int32, error) {
	at := [2]int{len(g.names), g.nedges}
	g.mu.Lock()
	if g.orderedAt == at && (g.ordered != nil || g.orderErr != nil) {
		defer g.mu.Unlock()
		return g.ordered, g.orderErr
	}
	g.mu.Unlock()
	ids, err := g.kahn()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ordered, g.orderErr, g.orderedAt = ids, err, at
	return ids, err
}

// kahn is Kahn's algorithm over node numbers. On a cycle it returns the *CycleError.
func (g *Graph) kahn() ([]int32, error) {
	byName, rank := g.sorted()
	n := len(g.names)
	waiting := make([]int32, n) // dependencies not yet placed
	h := make(rankHeap, 0, n)
	for i := range n {
		waiting[i] = int32(len(g.deps[i]))
		if waiting[i] == 0 {
			h.push(rank[i])
		}
	}
	out := make([]int32, 0, n)
	for len(h) > 0 {
		i := byName[h.pop()]
		out = append(out, i)
		for _, j := range g.rdeps[i] {
			waiting[j]--
			if waiting[j] == 0 {
				h.push(rank[j])
			}
		}
	}
	if len(out) == n {
		return out, nil
	}
	// The nodes still waiting are on a cycle or depend on one.
	var unordered []string
	for _, i := range byName {
		if waiting[i] > 0 {
			unordered = append(unordered, g.names[i])
		}
	}
	return nil, &CycleError{Cycle: g.namesOf(g.findCycle(waiting, rank)), Unordered: unordered}
}

// findCycle returns a cycle among the nodes with waiting > 0, as described on CycleError.
// It finds the strongly connected components of those nodes (Tarjan, iteratively so that
// a long chain cannot exhaust the stack), takes the smallest-named node that lies in a
// component with a cycle, and searches breadth-first from it, within its component, for
// the shortest way back. O(V + E log E).
func (g *Graph) findCycle(waiting, rank []int32) []int32 {
	n := len(g.names)
	const unvisited = -1
	index := make([]int32, n)
	low := make([]int32, n)
	comp := make([]int32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i], comp[i] = unvisited, unvisited
	}
	var stack []int32
	type frame struct {
		v    int32
		next int // next edge of v to explore
	}
	var calls []frame
	var counter, comps int32
	best := int32(unvisited) // smallest-ranked node on a cycle
	for root := range n {
		if waiting[root] == 0 || index[root] != unvisited {
			continue
		}
		index[root], low[root] = counter, counter
		counter++
		stack = append(stack, int32(root))
		onStack[root] = true
		calls = append(calls, frame{v: int32(root)})
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			v := f.v
			if f.next < len(g.deps[v]) {
				w := g.deps[v][f.next]
				f.next++
				switch {
				case waiting[w] == 0:
					// Already placed in order: not on a cycle.
				case index[w] == unvisited:
					index[w], low[w] = counter, counter
					counter++
					stack = append(stack, w)
					onStack[w] = true
					calls = append(calls, frame{v: w})
				case onStack[w]:
					low[v] = min(low[v], index[w])
				}
				continue
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				u := calls[len(calls)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] != index[v] {
				continue
			}
			// v is the root of a component: pop it.
			start := len(stack) - 1
			for stack[start] != v {
				start--
			}
			members := stack[start:]
			cyclic := len(members) > 1 || slices.Contains(g.deps[v], v)
			for _, m := range members {
				onStack[m] = false
				comp[m] = comps
				if cyclic && (best == unvisited || rank[m] < rank[best]) {
					best = m
				}
			}
			stack = stack[:start]
			comps++
		}
	}
	if best == unvisited {
		// Unreachable: Kahn's algorithm leaves nodes behind only when there is a cycle.
		panic("graph: nodes left unordered but no cycle found")
	}
	return g.shortestCycle(best, comp, rank)
}

// shortestCycle searches breadth-first from s along dependencies, staying inside s's
// component and visiting dependencies in name order, and returns the first path back to
// s, closed: [s ... s].
func (g *Graph) shortestCycle(s int32, comp, rank []int32) []int32 {
	prev := make([]int32, len(g.names))
	for i := range prev {
		prev[i] = -1
	}
	queue := []int32{s}
	prev[s] = s
	var next []int32
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		next = append(next[:0], g.deps[v]...)
		slices.SortFunc(next, func(a, b int32) int { return int(rank[a] - rank[b]) })
		for _, w := range next {
			if comp[w] != comp[s] {
				continue
			}
			if w == s {
				var cycle []int32
				for x := v; x != s; x = prev[x] {
					cycle = append(cycle, x)
				}
				cycle = append(cycle, s)
				slices.Reverse(cycle)
				return append(cycle, s)
			}
			if prev[w] == -1 {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	panic("graph: node on a cycle has no path back to itself")
}

// rankHeap is a binary min-heap of name ranks. It is hand-written rather than
// container/heap because Order runs on every plan and the interface calls would dominate.
type rankHeap []int32

func (h *rankHeap) push(r int32) {
	*h = append(*h, r)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p] <= s[i] {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *rankHeap) pop() int32 {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(s) && s[l] < s[m] {
			m = l
		}
		if r := l + 1; r < len(s) && s[r] < s[m] {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
