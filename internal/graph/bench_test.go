package graph

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// bigGraph builds a 10,000-stack graph shaped like a large bundle: every stack depends on
// three earlier ones on average (0 to 6, uniformly), and names are numbered in a shuffled
// order so that name order says nothing about dependency order. The seed is fixed so
// figures are comparable between runs.
func bigGraph(b *testing.B, n int) *Graph {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	names := make([]string, n)
	for i, p := range rng.Perm(n) {
		names[i] = fmt.Sprintf("stack-%05d", p)
	}
	g := New()
	for _, name := range names {
		g.AddNode(name)
	}
	for i := 1; i < n; i++ {
		for range rng.IntN(7) {
			if err := g.AddEdge(names[i], names[rng.IntN(i)]); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := g.Validate(); err != nil {
		b.Fatal(err)
	}
	return g
}

func BenchmarkBuild10k(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		bigGraph(b, 10_000)
	}
}

func BenchmarkOrder10k(b *testing.B) {
	g := bigGraph(b, 10_000)
	g.Nodes() // the name index is built once per graph; measure Order itself
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Order(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate10k(b *testing.B) {
	g := bigGraph(b, 10_000)
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCycle10k measures the error path: a 10,000-node graph with one long cycle.
func BenchmarkCycle10k(b *testing.B) {
	g := bigGraph(b, 10_000)
	// Follow dependencies from the last stack down to a root, then make the root depend
	// on the last stack: one cycle through a long chain.
	last, _ := g.Order()
	top := last[len(last)-1]
	root := top
	for deps := g.Dependencies(root); len(deps) > 0; deps = g.Dependencies(root) {
		root = deps[0]
	}
	if err := g.AddEdge(root, top); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if g.Validate() == nil {
			b.Fatal("no cycle found")
		}
	}
}

// BenchmarkReady10k is one call, as the run engine makes on each trigger, with half the
// stacks done.
func BenchmarkReady10k(b *testing.B) {
	g := bigGraph(b, 10_000)
	order, _ := g.Order()
	done := map[string]bool{}
	for _, n := range order[:len(order)/2] {
		done[n] = true
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(g.Ready(func(n string) bool { return done[n] })) == 0 {
			b.Fatal("nothing ready")
		}
	}
}

// BenchmarkReadyLoop10k deploys the whole graph as the run engine does with unlimited
// concurrency: ask Ready, finish everything it returned, repeat until all are done. Its
// cost is (number of waves) × O(V+E); the waves metric reports how many calls that was.
func BenchmarkReadyLoop10k(b *testing.B) {
	g := bigGraph(b, 10_000)
	b.ReportAllocs()
	waves := 0
	for b.Loop() {
		done := make(map[string]bool, g.Len())
		waves = 0
		for len(done) < g.Len() {
			ready := g.Ready(func(n string) bool { return done[n] })
			if len(ready) == 0 {
				b.Fatal("stalled")
			}
			for _, n := range ready {
				done[n] = true
			}
			waves++
		}
	}
	b.ReportMetric(float64(waves), "waves")
}

// BenchmarkWalk10k deploys the whole graph one stack at a time through a Walk, starting
// what each Done reports as newly ready: the O(V+E)-per-run alternative to calling Ready
// after every single completion.
func BenchmarkWalk10k(b *testing.B) {
	g := bigGraph(b, 10_000)
	b.ReportAllocs()
	for b.Loop() {
		w := g.Walk()
		queue := w.Ready()
		for len(queue) > 0 {
			n := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			woke, err := w.Done(n)
			if err != nil {
				b.Fatal(err)
			}
			queue = append(queue, woke...)
		}
		if w.Remaining() != 0 {
			b.Fatal("stalled")
		}
	}
}

func BenchmarkTransitiveReduction10k(b *testing.B) {
	g := bigGraph(b, 10_000)
	b.ReportAllocs()
	for b.Loop() {
		g.TransitiveReduction()
	}
}

func BenchmarkDOT10k(b *testing.B) {
	g := bigGraph(b, 10_000)
	b.ReportAllocs()
	for b.Loop() {
		g.DOT()
	}
}
