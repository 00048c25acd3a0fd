package run_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// The readiness model's graphs, phases and bound (BenchmarkReadiness).

// irregularGraph is a root with eleven dependents whose change sets are made together,
// and four stacks joining some of them unevenly.
func irregularGraph() simGraph {
	g := simGraph{name: "irregular-16", names: []string{"root"}, deps: [][]int{nil}}
	for i := range 11 {
		g.names = append(g.names, fmt.Sprintf("mid%02d", i+1))
		g.deps = append(g.deps, []int{0})
	}
	g.names = append(g.names, "x", "y", "z", "w")
	g.deps = append(g.deps, []int{1, 2}, []int{5}, []int{12, 13, 9}, []int{11})
	return g
}

// dagGraph is the side-by-side benchmark's DAG (internal/deployer, dagGraph): n stacks, the
// first three roots, every other reading one or two of the stacks before it.
func dagGraph(n int) simGraph {
	g := simGraph{name: fmt.Sprintf("dag-%d", n)}
	for i := range n {
		g.names = append(g.names, fmt.Sprintf("s%02d", i))
		var deps []int
		if i >= 3 {
			a, b := (i*7+3)%i, (i*5+1)%i
			deps = []int{a}
			if b != a {
				deps = append(deps, b)
			}
			slices.Sort(deps)
		}
		g.deps = append(g.deps, deps)
	}
	return g
}

// drawVaried draws a graph's stacks' times for one run: typical times per stack (from
// seed), each run's times scattered around them (from run); with history, the previous
// run's times too.
func drawVaried(n int, seed, runSeed uint64, history bool) timings {
	typical := rand.New(rand.NewPCG(seed, 17))
	scatter := rand.New(rand.NewPCG(seed, runSeed))
	jitter := func(d time.Duration) time.Duration {
		return time.Duration(float64(d) * (0.8 + 0.45*scatter.Float64()))
	}
	var t timings
	for range n {
		cs := 2*time.Second + time.Duration(typical.Int64N(int64(10*time.Second)))
		op := 15*time.Second + time.Duration(typical.Int64N(int64(105*time.Second)))
		t.cs = append(t.cs, jitter(cs))
		t.op = append(t.op, jitter(op))
		if history {
			t.histCS = append(t.histCS, jitter(cs))
			t.histOp = append(t.histOp, jitter(op))
		}
	}
	return t
}

// readinessPhase is a run of the model: a create (a first run), or an update of every
// stack (a later run, with the graph's record of each stack's last times) in which each
// stack's outputs change with probability share, drawn per stack and run.
type readinessPhase struct {
	name   string
	create bool
	share  float64
}

var readinessPhases = []readinessPhase{
	{name: "create", create: true},
	{name: "update-outputs-0"},
	{name: "update-outputs-30", share: 0.3},
	{name: "update-outputs-100", share: 1},
}

// world is the phase's world for draw seed: stacks reading their dependencies' outputs,
// events with a tail of lateness, Describe* calls throttled.
func (p readinessPhase) world(n int, seed uint64) simWorld {
	w := simWorld{reads: true, create: p.create, late: eventLateness, throttled: true}
	if !p.create {
		r := rand.New(rand.NewPCG(seed, 23))
		for range n {
			w.changed = append(w.changed, r.Float64() < p.share)
		}
	}
	return w
}

// timings draws the phase's times for draw seed.
func (p readinessPhase) timings(n int, seed uint64) timings {
	return drawVaried(n, seed, 2, !p.create)
}

// bestSchedule is the makespan of list scheduling the drawn times at concurrency c with
// no overhead: each stack's change set and operation one job, started once the stacks it
// depends on finished, a free slot going to the ready stack with the longest chain still
// behind it (then the lowest index). Where more than c stacks are ready at once the
// critical path may be out of reach; this is the bound then.
func bestSchedule(g simGraph, t timings, c int) time.Duration {
	n := len(g.names)
	dur := make([]time.Duration, n)
	chain := make([]time.Duration, n)
	dependents := make([][]int, n)
	for i := range n {
		dur[i] = t.cs[i] + t.op[i]
		for _, d := range g.deps[i] {
			dependents[d] = append(dependents[d], i)
		}
	}
	for i := n - 1; i >= 0; i-- { // dependents come after
		chain[i] = dur[i]
		for _, j := range dependents[i] {
			chain[i] = max(chain[i], dur[i]+chain[j])
		}
	}
	waiting := make([]int, n) // dependencies not finished
	var ready []int
	for i := range n {
		if waiting[i] = len(g.deps[i]); waiting[i] == 0 {
			ready = append(ready, i)
		}
	}
	type job struct {
		i   int
		end time.Duration
	}
	var running []job
	var now time.Duration
	for len(ready) > 0 || len(running) > 0 {
		slices.SortFunc(ready, func(a, b int) int {
			if chain[a] != chain[b] {
				return cmp.Compare(chain[b], chain[a])
			}
			return a - b
		})
		for len(running) < c && len(ready) > 0 {
			running = append(running, job{ready[0], now + dur[ready[0]]})
			ready = ready[1:]
		}
		slices.SortFunc(running, func(a, b job) int { return cmp.Compare(a.end, b.end) })
		j := running[0]
		running, now = running[1:], j.end
		for _, d := range dependents[j.i] {
			if waiting[d]--; waiting[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	return now
}
