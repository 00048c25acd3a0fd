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
// A dependency v of u is implied when another dependency of u reaches v. What each node
// reaches is computed in deploy order as bitsets, dependencies first, one band of target
// nodes at a time so that the bitsets never take more than reachBudget words whatever the
// size of the graph: O(V·E/64) word operations per band instead of a walk of every
// node's ancestors from every node.
func (g *Graph) TransitiveReduction() *Graph {
	order, err := g.order()
	if err != nil {
		return g.clone()
	}
	n := len(g.names)
	pos := make([]int32, n)
	for p, i := range order {
		pos[i] = int32(p)
	}
	first := make([]int, n+1) // implied[first[u]+k]: u's k-th dependency is implied by another
	for u := range n {
		first[u+1] = first[u] + len(g.deps[u])
	}
	implied := make([]bool, first[n])
	words := min((n+63)/64, max(1, reachBudget/max(n, 1)))
	reach := make([]uint64, n*words) // reach[u*words+w]: nodes of the band u reaches
	for lo := 0; lo < n; lo += words * 64 {
		clear(reach)
		hi := min(lo+words*64, n)
		for _, u := range order { // dependencies first: their rows are complete
			row := reach[int(u)*words : int(u+1)*words]
			for _, d := range g.deps[u] {
				dr := reach[int(d)*words : int(d+1)*words]
				for w := range row {
					row[w] |= dr[w]
				}
				if int(d) >= lo && int(d) < hi {
					row[(int(d)-lo)/64] |= 1 << ((int(d) - lo) % 64)
				}
			}
			for k, v := range g.deps[u] {
				if int(v) < lo || int(v) >= hi || implied[first[u]+k] {
					continue
				}
				bit, word := uint64(1)<<((int(v)-lo)%64), (int(v)-lo)/64
				for _, o := range g.deps[u] {
					if o != v && reach[int(o)*words+word]&bit != 0 {
						implied[first[u]+k] = true
						break
					}
				}
			}
		}
	}
	red := New()
	for _, name := range g.names {
		red.AddNode(name)
	}
	var ds []int32
	for u := range n {
		ds = ds[:0]
		for k, v := range g.deps[u] {
			if !implied[first[u]+k] {
				ds = append(ds, v)
			}
		}
		slices.SortFunc(ds, func(a, b int32) int { return int(pos[b] - pos[a]) }) // latest-deployed first
		for _, v := range ds {
			red.addEdge(int32(u), v)
		}
	}
	return red
}

// reachBudget bounds the reachability bitsets of TransitiveReduction: 4 MiB of words.
var reachBudget = 1 << 19
