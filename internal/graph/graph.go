// Package graph is the dependency graph of the stacks in a cairn bundle: which stack must
// be deployed before which, in what order to deploy and delete them, and which stacks can
// start now given the ones that have finished.
//
// It is plain data plus pure functions, in the style of Terraform's internal/dag, so the
// config loader, the planner, the run engine, the CLI and the emulator's CloudFormation
// (whose nodes are a template's resources) all share one definition of "dependency order"
// and test it without AWS. Nodes are stack (config) names; an edge from a to b means "a
// depends on b", so b is deployed first and deleted last. The walker (walk.go) answers
// what a run asks at each step: which nodes are ready, which are blocked by a failure,
// and which to look at again once one settled. It imports no other cairn package.
//
// Every result that lists nodes is sorted or otherwise deterministic, so plans, logs and
// golden files do not change from one run to the next. Every operation that the run
// engine calls per step is linear or better in the size of the graph; see each method for
// its cost.
//
// A Graph is safe for concurrent use by readers once it is built. AddNode and AddEdge must
// not run concurrently with anything else, as with a map.
package graph

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// ErrUnknownStack is wrapped by AddEdge when an end of the edge was never added, so a
// caller can tell a programming error in graph construction from a cycle.
var ErrUnknownStack = errors.New("unknown stack")

// Graph is a directed graph keyed by stack (config) name. AddEdge(a, b) means "a depends
// on b" (b deploys first). It is meant to be acyclic; Validate reports the first cycle.
//
// Nodes are numbered in insertion order and adjacency is kept as slices of those numbers,
// which keeps a 10,000-stack graph compact and its traversals free of map lookups.
type Graph struct {
	index map[string]int32
	names []string
	deps  [][]int32 // deps[i]: the nodes i depends on, in insertion order
	rdeps [][]int32 // rdeps[i]: the nodes that depend on i, in insertion order
	// edges indexes the edges of nodes with more than manyDeps dependencies, for
	// AddEdge's duplicate check; a node with fewer is checked by a scan of its deps,
	// which spares a 10,000-stack graph a map entry per edge.
	edges map[edge]struct{}

	nedges int // edges added, which with len(names) tells when ordered is stale

	// mu guards the name-sorted index and the order below, which readers build lazily
	// and share.
	mu     sync.Mutex
	byName []int32 // node numbers in name order
	rank   []int32 // rank[i]: position of node i in byName
	// ordered is the result of order for the graph of orderedAt nodes and edges: the
	// config loader validates the graph and its callers then ask for the order.
	ordered   []int32
	orderErr  error
	orderedAt [2]int
}

type edge struct{ from, to int32 }

// manyDeps is the number of dependencies from which a node's edges are indexed in a map.
const manyDeps = 16

// New returns an empty graph.
func New() *Graph { return NewSized(0) }

// NewSized returns an empty graph with room for nodes nodes, for a caller that knows how
// many it will add (a config of 10,000 stacks).
func NewSized(nodes int) *Graph {
	return &Graph{
		index: make(map[string]int32, nodes),
		names: make([]string, 0, nodes),
		deps:  make([][]int32, 0, nodes),
		rdeps: make([][]int32, 0, nodes),
	}
}

// AddNode adds a stack. Adding a name twice is a no-op, so callers can add every stack
// they see without tracking which ones they have added.
func (g *Graph) AddNode(name string) {
	if _, ok := g.index[name]; ok {
		return
	}
	g.index[name] = int32(len(g.names))
	g.names = append(g.names, name)
	g.deps = append(g.deps, nil)
	g.rdeps = append(g.rdeps, nil)
}

// AddEdge records that from depends on to. Both must have been added with AddNode; the
// error wraps ErrUnknownStack otherwise. Adding the same edge again is a no-op, because
// `requires` and an output lookup often name the same dependency. A self-edge is accepted
// here and reported by Validate as a cycle, so that every cycle is reported the same way.
func (g *Graph) AddEdge(from, to string) error {
	f, ok := g.index[from]
	if !ok {
		return fmt.Errorf("dependency %s -> %s: %w %q: add it as a node first", from, to, ErrUnknownStack, from)
	}
	t, ok := g.index[to]
	if !ok {
		return fmt.Errorf("dependency %s -> %s: %w %q: add it as a node first", from, to, ErrUnknownStack, to)
	}
	g.addEdge(f, t)
	return nil
}

func (g *Graph) addEdge(f, t int32) {
	switch ds := g.deps[f]; {
	case len(ds) < manyDeps:
		if slices.Contains(ds, t) {
			return
		}
	case len(ds) == manyDeps:
		if slices.Contains(ds, t) {
			return
		}
		if g.edges == nil {
			g.edges = map[edge]struct{}{}
		}
		for _, d := range ds {
			g.edges[edge{f, d}] = struct{}{}
		}
		g.edges[edge{f, t}] = struct{}{}
	default:
		e := edge{f, t}
		if _, dup := g.edges[e]; dup {
			return
		}
		g.edges[e] = struct{}{}
	}
	g.deps[f] = append(g.deps[f], t)
	g.rdeps[t] = append(g.rdeps[t], f)
	g.nedges++
}

// Has reports whether name is a node of g.
func (g *Graph) Has(name string) bool {
	_, ok := g.index[name]
	return ok
}

// Len returns the number of nodes.
func (g *Graph) Len() int { return len(g.names) }

// Nodes returns every node, sorted by name.
func (g *Graph) Nodes() []string {
	byName, _ := g.sorted()
	return g.namesOf(byName)
}

// Dependencies returns the nodes name directly depends on, sorted; nil if name is unknown.
func (g *Graph) Dependencies(name string) []string {
	i, ok := g.index[name]
	if !ok {
		return nil
	}
	return g.sortedNames(g.deps[i])
}

// Dependents returns the nodes that directly depend on name, sorted; nil if name is
// unknown.
func (g *Graph) Dependents(name string) []string {
	i, ok := g.index[name]
	if !ok {
		return nil
	}
	return g.sortedNames(g.rdeps[i])
}

// sorted returns the node numbers in name order and each node's position in it. It is
// computed once, O(V log V), and reused until a node is added, because Order and the
// formatters all need it.
func (g *Graph) sorted() (byName, rank []int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	// Nodes are never removed, so a length change is the only way the index goes stale.
	if len(g.byName) == len(g.names) && g.byName != nil {
		return g.byName, g.rank
	}
	byName = make([]int32, len(g.names))
	for i := range byName {
		byName[i] = int32(i)
	}
	slices.SortFunc(byName, func(a, b int32) int { return strings.Compare(g.names[a], g.names[b]) })
	rank = make([]int32, len(g.names))
	for r, i := range byName {
		rank[i] = int32(r)
	}
	g.byName, g.rank = byName, rank
	return byName, rank
}

func (g *Graph) namesOf(ids []int32) []string {
	out := make([]string, len(ids))
	for k, i := range ids {
		out[k] = g.names[i]
	}
	return out
}

func (g *Graph) sortedNames(ids []int32) []string {
	if len(ids) == 0 {
		return []string{}
	}
	out := g.namesOf(ids)
	slices.Sort(out)
	return out
}

// clone returns a deep copy of g with the same node numbering.
func (g *Graph) clone() *Graph {
	c := NewSized(len(g.names))
	for _, name := range g.names {
		c.AddNode(name)
	}
	for f, ds := range g.deps {
		for _, t := range ds {
			c.addEdge(int32(f), t)
		}
	}
	return c
}

// Build returns the graph of names with an edge from each node to each name deps gives it
// (through depend) that is a node: an edge to a name outside the graph is left out, as
// a stack's dependency on one outside a run is, and an edge given twice is kept once.
// Names given twice are one node. It is AddNode and AddEdge with the adjacency allocated
// in one piece and, when names come sorted, no sort of its own: for a caller that builds
// a graph at every step (the run engine). O(V + E).
func Build(names []string, deps func(name string, depend func(on string))) *Graph {
	g := NewSized(len(names))
	for _, name := range names {
		g.AddNode(name)
	}
	n := len(g.names)
	start := make([]int32, n+1)
	stamp := make([]int32, n) // stamp[t] == f+1: the edge f -> t is in
	var flat []int32
	var f int32
	depend := func(on string) {
		if t, ok := g.index[on]; ok && stamp[t] != f+1 {
			stamp[t] = f + 1
			flat = append(flat, t)
		}
	}
	for f = 0; int(f) < n; f++ {
		start[f] = int32(len(flat))
		deps(g.names[f], depend)
	}
	start[n] = int32(len(flat))
	rstart := make([]int32, n+1)
	for _, t := range flat {
		rstart[t+1]++
	}
	for i := range n {
		rstart[i+1] += rstart[i]
	}
	rflat := make([]int32, len(flat))
	fill := slices.Clone(rstart[:n])
	for from := range n {
		lo, hi := start[from], start[from+1]
		g.deps[from] = flat[lo:hi:hi]
		for _, t := range g.deps[from] {
			rflat[fill[t]] = int32(from)
			fill[t]++
		}
		if hi-lo > manyDeps {
			if g.edges == nil {
				g.edges = map[edge]struct{}{}
			}
			for _, t := range g.deps[from] {
				g.edges[edge{int32(from), t}] = struct{}{}
			}
		}
	}
	for t := range n {
		lo, hi := rstart[t], rstart[t+1]
		g.rdeps[t] = rflat[lo:hi:hi]
	}
	g.nedges = len(flat)
	if n == len(names) && slices.IsSorted(names) {
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(i)
		}
		g.byName, g.rank = ids, ids
	}
	return g
}
