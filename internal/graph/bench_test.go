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

// The order is kept once computed (order), so the benchmarks of Order and Validate run
// the computation itself, kahn, as a graph's first Order or Validate does.

func BenchmarkOrder10k(b *testing.B) {
	g := bigGraph(b, 10_000)
	g.Nodes() // the name index is built once per graph; measure Order itself
	b.ReportAllocs()
	for b.Loop() {
		ids, err := g.kahn()
		if err != nil {
			b.Fatal(err)
		}
		g.namesOf(ids)
	}
}

func BenchmarkValidate10k(b *testing.B) {
	g := bigGraph(b, 10_000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.kahn(); err != nil {
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
		if _, err := g.kahn(); err == nil {
			b.Fatal("no cycle found")
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

// The walker on the same graph: what a run's step asks of it.

// BenchmarkBlockedBy10k: everything that depends on the first tenth of the order fails.
func BenchmarkBlockedBy10k(b *testing.B) {
	g := bigGraph(b, 10_000)
	order, _ := g.Order()
	failed := order[:1000]
	b.ReportAllocs()
	for b.Loop() {
		if len(g.BlockedBy(failed, nil)) == 0 {
			b.Fatal("nothing blocked")
		}
	}
}

// BenchmarkReady10k: half the order is done.
func BenchmarkReady10k(b *testing.B) {
	g := bigGraph(b, 10_000)
	order, _ := g.Order()
	done := map[string]bool{}
	for _, n := range order[:5000] {
		done[n] = true
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(g.Ready(func(n string) bool { return done[n] })) == 0 {
			b.Fatal("nothing ready")
		}
	}
}

// BenchmarkWalk10k: a walk in which every node settles once its dependencies have, as
// an unchanged run's step does.
func BenchmarkWalk10k(b *testing.B) {
	g := bigGraph(b, 10_000)
	deps := map[string][]string{}
	for _, n := range g.Nodes() {
		deps[n] = g.Dependencies(n)
	}
	b.ReportAllocs()
	for b.Loop() {
		settled := make(map[string]bool, g.Len())
		w := g.Walk()
		for pass := w.Next(); pass != nil; pass = w.Next() {
			for _, n := range pass {
				if settled[n] {
					continue
				}
				ok := true
				for _, d := range deps[n] {
					ok = ok && settled[d]
				}
				if ok {
					settled[n] = true
					w.Settled(n)
				}
			}
		}
		if len(settled) != g.Len() {
			b.Fatalf("%d of %d settled", len(settled), g.Len())
		}
	}
}
