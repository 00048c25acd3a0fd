package graph

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// The checks below use only the public API and brute-force references (reachability by
// DFS from every node, topological order by repeated linear scans), so they test the
// fast algorithms against definitions rather than against themselves.

type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

// genDAG draws a random DAG: distinct names, a hidden topological order (the order the
// names were drawn), each node depending on up to four earlier ones, and the nodes
// inserted in an unrelated order so that name, insertion and dependency order all differ.
func genDAG(t *rapid.T, maxNodes int) *Graph { return genDAGSized(t, 0, maxNodes) }

func genDAGSized(t *rapid.T, minNodes, maxNodes int) *Graph {
	names := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z][a-z0-9-]{0,4}`), minNodes, maxNodes, rapid.ID[string]).Draw(t, "names")
	g := New()
	for _, n := range rapid.Permutation(names).Draw(t, "insertion") {
		g.AddNode(n)
	}
	for i := 1; i < len(names); i++ {
		k := rapid.IntRange(0, min(i, 4)).Draw(t, fmt.Sprintf("deps of %s", names[i]))
		for range k {
			j := rapid.IntRange(0, i-1).Draw(t, "dep")
			if err := g.AddEdge(names[i], names[j]); err != nil {
				t.Fatalf("AddEdge: %v", err)
			}
		}
	}
	return g
}

// reach returns, for each node, the set of nodes reachable from it along dependencies
// (excluding itself unless it lies on a cycle).
func reach(g *Graph) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, s := range g.Nodes() {
		seen := map[string]bool{}
		stack := slices.Clone(g.Dependencies(s))
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[x] {
				continue
			}
			seen[x] = true
			stack = append(stack, g.Dependencies(x)...)
		}
		out[s] = seen
	}
	return out
}

// referenceOrder is the definition of Order: repeatedly take the smallest-named node
// whose dependencies are all placed. O(V²·deg); fine for test sizes.
func referenceOrder(g *Graph) []string {
	placed := map[string]bool{}
	out := []string{}
	for len(out) < g.Len() {
		progress := false
		for _, n := range g.Nodes() {
			if placed[n] {
				continue
			}
			ok := true
			for _, d := range g.Dependencies(n) {
				ok = ok && placed[d]
			}
			if ok {
				placed[n] = true
				out = append(out, n)
				progress = true
				break
			}
		}
		if !progress {
			return nil
		}
	}
	return out
}

// checkGraph checks every invariant that holds for any graph, cyclic or not.
func checkGraph(t tb, g *Graph) {
	t.Helper()
	r := reach(g)
	var onCycle []string
	for _, n := range g.Nodes() {
		if r[n][n] {
			onCycle = append(onCycle, n)
		}
	}
	err := g.Validate()
	if len(onCycle) > 0 {
		checkCycle(t, g, err, onCycle[0])
		if _, oerr := g.Order(); oerr == nil || oerr.Error() != err.Error() {
			t.Fatalf("Order() error %v, Validate() error %v", oerr, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("acyclic graph: Validate() = %v", err)
	}
	order, err := g.Order()
	if err != nil {
		t.Fatalf("Order(): %v", err)
	}
	if want := referenceOrder(g); !slices.Equal(order, want) {
		t.Fatalf("Order() = %q, want lexicographically smallest topological order %q", order, want)
	}
	checkRespects(t, g, order)
	rev, err := g.ReverseOrder()
	if err != nil {
		t.Fatalf("ReverseOrder(): %v", err)
	}
	slices.Reverse(rev)
	if !slices.Equal(rev, order) {
		t.Fatalf("ReverseOrder() is not the reverse of Order()")
	}
	checkReduction(t, g, r)
}

// checkRespects checks that order is a permutation of g's nodes with every node after its
// dependencies.
func checkRespects(t tb, g *Graph, order []string) {
	t.Helper()
	pos := map[string]int{}
	for i, n := range order {
		if _, dup := pos[n]; dup {
			t.Fatalf("order %q lists %q twice", order, n)
		}
		pos[n] = i
	}
	if len(order) != g.Len() {
		t.Fatalf("order has %d nodes, graph %d", len(order), g.Len())
	}
	for _, n := range g.Nodes() {
		for _, d := range g.Dependencies(n) {
			if pos[d] >= pos[n] {
				t.Fatalf("order %q places %q before its dependency %q", order, n, d)
			}
		}
	}
}

func checkCycle(t tb, g *Graph, err error, smallest string) {
	t.Helper()
	var ce *CycleError
	if !errors.As(err, &ce) {
		t.Fatalf("cyclic graph: Validate() = %v, want *CycleError", err)
	}
	c := ce.Cycle
	if len(c) < 2 || c[0] != c[len(c)-1] {
		t.Fatalf("cycle %q is not closed", c)
	}
	if c[0] != smallest {
		t.Fatalf("cycle %q starts at %q, want the smallest node on any cycle, %q", c, c[0], smallest)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(c); i++ {
		if seen[c[i]] {
			t.Fatalf("cycle %q repeats %q", c, c[i])
		}
		seen[c[i]] = true
		if !slices.Contains(g.Dependencies(c[i]), c[i+1]) {
			t.Fatalf("cycle %q: %q does not depend on %q", c, c[i], c[i+1])
		}
	}
	// Shortest: breadth-first distance from the start back to itself.
	dist := map[string]int{c[0]: 0}
	queue := []string{c[0]}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, y := range g.Dependencies(x) {
			if y == c[0] {
				if want := dist[x] + 1; len(c)-1 != want {
					t.Fatalf("cycle %q has %d edges, the shortest through %q has %d", c, len(c)-1, c[0], want)
				}
				return
			}
			if _, ok := dist[y]; !ok {
				dist[y] = dist[x] + 1
				queue = append(queue, y)
			}
		}
	}
}

func checkReduction(t tb, g *Graph, r map[string]map[string]bool) {
	t.Helper()
	red := g.TransitiveReduction()
	if !slices.Equal(red.Nodes(), g.Nodes()) {
		t.Fatalf("reduction nodes %q, want %q", red.Nodes(), g.Nodes())
	}
	rr := reach(red)
	for _, n := range g.Nodes() {
		if len(rr[n]) != len(r[n]) {
			t.Fatalf("reduction changes what %q reaches: %v, want %v", n, rr[n], r[n])
		}
		for x := range r[n] {
			if !rr[n][x] {
				t.Fatalf("reduction loses %q -> ... -> %q", n, x)
			}
		}
		for _, d := range red.Dependencies(n) {
			if !slices.Contains(g.Dependencies(n), d) {
				t.Fatalf("reduction adds edge %q -> %q", n, d)
			}
			// Minimal: d is not reachable from another remaining dependency of n.
			for _, o := range red.Dependencies(n) {
				if o != d && rr[o][d] {
					t.Fatalf("reduction keeps %q -> %q, implied by %q", n, d, o)
				}
			}
		}
	}
	order, _ := g.Order()
	if redOrder, err := red.Order(); err != nil || !slices.Equal(redOrder, order) {
		t.Fatalf("reduction Order() = %q, %v; want %q", redOrder, err, order)
	}
}

func TestPropertyDAG(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		checkGraph(t, genDAG(t, 30))
	})
}

// TestPropertyReductionInBands reduces graphs larger than one band of the reachability
// bitsets (the budget cut to one word a node: bands of 64 nodes), as a graph of a million
// stacks would be.
func TestPropertyReductionInBands(t *testing.T) {
	defer func(b int) { reachBudget = b }(reachBudget)
	reachBudget = 1
	rapid.Check(t, func(t *rapid.T) {
		g := genDAGSized(t, 65, 300)
		checkReduction(t, g, reach(g))
	})
}

func TestPropertyCycles(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := genDAG(t, 20)
		nodes := g.Nodes()
		if len(nodes) == 0 {
			return
		}
		// Extra edges in any direction, self-edges included, usually closing cycles.
		for range rapid.IntRange(1, 3).Draw(t, "extra edges") {
			from := rapid.SampledFrom(nodes).Draw(t, "from")
			to := rapid.SampledFrom(nodes).Draw(t, "to")
			if err := g.AddEdge(from, to); err != nil {
				t.Fatalf("AddEdge: %v", err)
			}
		}
		checkGraph(t, g)
	})
}

func TestPropertySubgraph(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := genDAG(t, 20)
		pick := rapid.SliceOf(rapid.SampledFrom(append(g.Nodes(), "ghost"))).Draw(t, "names")
		sub := g.Subgraph(pick)
		in := map[string]bool{}
		for _, n := range pick {
			in[n] = g.Has(n)
		}
		for _, n := range g.Nodes() {
			if sub.Has(n) != in[n] {
				t.Fatalf("Subgraph has %q = %v, want %v", n, sub.Has(n), in[n])
			}
			if !in[n] {
				continue
			}
			var want []string
			for _, d := range g.Dependencies(n) {
				if in[d] {
					want = append(want, d)
				}
			}
			if got := sub.Dependencies(n); !slices.Equal(got, want) && len(got)+len(want) > 0 {
				t.Fatalf("Subgraph Dependencies(%q) = %q, want %q", n, got, want)
			}
		}
		if sub.Has("ghost") {
			t.Fatalf("Subgraph added an unknown name")
		}
		checkGraph(t, sub)
	})
}

// FuzzGraph builds a graph of up to 12 nodes from arbitrary bytes (the first byte picks
// the node count, each following pair an edge) and checks every invariant, cycles
// included. Seeds live in testdata/fuzz/FuzzGraph.
func FuzzGraph(f *testing.F) {
	f.Add([]byte{3, 0, 1, 1, 2})
	f.Add([]byte{3, 0, 1, 1, 2, 2, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		n := int(data[0]%12) + 1
		names := make([]string, n)
		g := New()
		for i := range names {
			// Names deliberately out of step with their numbers.
			names[i] = fmt.Sprintf("s%c", 'a'+byte((i*7)%n))
			g.AddNode(names[i])
		}
		data = data[1:]
		for i := 0; i+1 < len(data) && i < 200; i += 2 {
			if err := g.AddEdge(names[int(data[i])%n], names[int(data[i+1])%n]); err != nil {
				t.Fatalf("AddEdge: %v", err)
			}
		}
		checkGraph(t, g)
	})
}
