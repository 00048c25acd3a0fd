package graph

import "slices"

// Subgraph returns the induced subgraph on names: those nodes and every edge of g between
// two of them. Names that are not in g are ignored, so a caller can pass the stacks it
// wants to delete without first filtering them. Edges to nodes outside the set are
// dropped, which is what deleting a subset needs: only the order among the deleted
// stacks matters. It costs O(k + edges of the k nodes).
func (g *Graph) Subgraph(names []string) *Graph {
	sub := New()
	for _, name := range names {
		if g.Has(name) {
			sub.AddNode(name)
		}
	}
	for f, name := range sub.names {
		for _, t := range g.deps[g.index[name]] {
			if st, ok := sub.index[g.names[t]]; ok {
				sub.addEdge(int32(f), st)
			}
		}
	}
	return sub
}

// TransitiveReduction returns a copy of g without the edges implied by longer paths: if a
// depends on b and on c, and b depends on c, the edge a -> c goes. The deploy order is
// unchanged; the result is for display, where implied edges are noise.
//
// On an acyclic graph the reduction is unique. A graph with a cycle has no unique
// reduction, so it is returned unreduced (Validate reports the cycle).
//
// For each node it visits the direct dependencies latest-deployed first and marks
// everything reachable from each; a dependency already marked is implied by one visited
// before. That is O(V·(V+E)) time in the worst case and O(V) extra memory, chosen over
// reachability bitsets (O(V²) memory) because it only runs to draw a graph.
func (g *Graph) TransitiveReduction() *Graph {
	order, err := g.order()
	if err != nil {
		return g.clone()
	}
	pos := make([]int32, len(g.names))
	for p, i := range order {
		pos[i] = int32(p)
	}
	red := New()
	for _, name := range g.names {
		red.AddNode(name)
	}
	mark := make([]int32, len(g.names)) // mark[x] == u+1: x is reachable from u's visited deps
	var ds, stack []int32
	for u := range g.names {
		stamp := int32(u + 1)
		ds = append(ds[:0], g.deps[u]...)
		slices.SortFunc(ds, func(a, b int32) int { return int(pos[b] - pos[a]) })
		for _, v := range ds {
			if mark[v] == stamp {
				continue
			}
			red.addEdge(int32(u), v)
			mark[v] = stamp
			stack = append(stack[:0], v)
			for len(stack) > 0 {
				x := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				for _, y := range g.deps[x] {
					if mark[y] != stamp {
						mark[y] = stamp
						stack = append(stack, y)
					}
				}
			}
		}
	}
	return red
}
