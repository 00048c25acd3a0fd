package run_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/benchbundle"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/run"
)

// The makespan benchmark runs cairn's engine (run.Advance, run.Due and run.Wake, driven
// the way the deployer drives them) and two peers' schedulers over the same graphs and
// the same drawn CloudFormation timings, on a virtual clock: nothing sleeps, hours of
// CloudFormation pass in milliseconds.
//
// CloudFormation, as drawn: a change set takes 2-10 s to create and a stack operation
// 30-600 s, drawn per stack; each operation's end sends a stack status event delivered
// 0-2 s late, 1% of them lost. Every scheduler does the same work per stack: a change
// set, then its execution.
//
// The deployer, as modelled: each trigger (the heartbeat every 15 s, the delayed check a
// step queues, a stack event) makes one step; steps of a run do not overlap (triggers
// arriving during a step are merged into the next one, as an SQS batch is); a step spends
// 200 ms on S3 (the run document and the lock) and makes its looks, then its actions,
// changeset.Parallel at a time, 150 ms each, each waiting for the run's API budget
// (awsclient.DefaultBudget) on the virtual clock. The peers have no budget: they are
// modelled as if CloudFormation never throttled them.
//
// The peers (peers_test.go) look at CloudFormation on fixed schedules, as their code
// reads: level by level (Sceptre) and a thread per stack (Stacker).

const (
	simHeartbeat   = 15 * time.Second
	simStepS3      = 200 * time.Millisecond
	simCallLatency = 150 * time.Millisecond
)

// simPar is how many CloudFormation calls a step makes at once (changeset.Parallel).
var simPar = changeset.Parallel

var simEpoch = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// simGraph is a graph to schedule: stack names and, for each, the indexes it depends on.
type simGraph struct {
	name  string
	names []string
	deps  [][]int
}

func chainGraph(n int) simGraph {
	g := simGraph{name: fmt.Sprintf("chain-%d", n)}
	for i := range n {
		g.names = append(g.names, fmt.Sprintf("s%03d", i))
		if i == 0 {
			g.deps = append(g.deps, nil)
		} else {
			g.deps = append(g.deps, []int{i - 1})
		}
	}
	return g
}

func fanOutGraph(width int) simGraph {
	g := simGraph{name: fmt.Sprintf("fanout-%d", width), names: []string{"root"}, deps: [][]int{nil}}
	for i := range width {
		g.names = append(g.names, fmt.Sprintf("leaf%03d", i))
		g.deps = append(g.deps, []int{0})
	}
	return g
}

// generatedGraph is the graph of benchbundle's first n stacks: BenchmarkLoad10k's config
// cut to n stacks (each depends on 0 to 6 earlier ones, 3 on average).
func generatedGraph(name string, n int) simGraph {
	g := simGraph{name: name}
	for _, s := range benchbundle.Stacks(n) {
		g.names = append(g.names, s.Name)
		g.deps = append(g.deps, s.Deps())
	}
	return g
}

// timings are the drawn CloudFormation durations of each stack, and what cairn's graph
// remembers of its last run (hist; none on a first run).
type timings struct{ cs, op, histCS, histOp []time.Duration }

func draw(n int, seed uint64) timings {
	r := rand.New(rand.NewPCG(seed, 7))
	t := timings{}
	for range n {
		t.cs = append(t.cs, 2*time.Second+time.Duration(r.Int64N(int64(8*time.Second))))
		t.op = append(t.op, 30*time.Second+time.Duration(r.Int64N(int64(570*time.Second))))
	}
	return t
}

// criticalPath is the longest path through g weighted by each stack's CloudFormation time;
// work is the sum of those times.
func criticalPath(g simGraph, t timings) (cp, work time.Duration) {
	finish := make([]time.Duration, len(g.names))
	for i := range g.names { // deps always point to earlier stacks
		start := time.Duration(0)
		for _, d := range g.deps[i] {
			start = max(start, finish[d])
		}
		finish[i] = start + t.cs[i] + t.op[i]
		cp = max(cp, finish[i])
		work += t.cs[i] + t.op[i]
	}
	return cp, work
}

// earlyFloor is the least makespan of g with change sets made early (run.Stack.Early): a
// stack's change set made from the start, its operation begun once both it and the
// stacks it depends on are done. Every scheduler's makespan is at least this; those that
// make a stack's change set after its dependencies finished, at least criticalPath.
func earlyFloor(g simGraph, t timings) time.Duration {
	finish := make([]time.Duration, len(g.names))
	var floor time.Duration
	for i := range g.names {
		start := t.cs[i]
		for _, d := range g.deps[i] {
			start = max(start, finish[d])
		}
		finish[i] = start + t.op[i]
		floor = max(floor, finish[i])
	}
	return floor
}

// outcome is one scheduler's result on one graph.
type outcome struct {
	makespan  time.Duration // from the start to the last operation's end in CloudFormation
	calls     int           // CloudFormation calls (each attempt of a throttled one)
	throttled int           // calls CloudFormation throttled
	steps     int           // deployer steps (cairn only)
	status    run.Status    // how cairn's run ended
	// readyToExecute sums, over cairn's stacks, the time from a change set's readiness to
	// its execution.
	readyToExecute time.Duration
	// Of cairn's change sets: those made before every stack they depend on finished (early),
	// those made again (a stack's second and later), and those executed with parameters
	// other than its dependencies' outputs at the time (stale: never, if the engine is right).
	early, remade, staleExecuted int
	// startLag sums, over the change sets of stacks with dependencies made once those
	// finished (started of them), the time from the last one's end in CloudFormation to the
	// change set's creation.
	startLag time.Duration
	started  int
}

// BenchmarkMakespan schedules each graph at max_concurrency 5, 10 and 50 with cairn's
// engine and the two peers, over the same drawn timings, and reports each one's makespan
// divided by the critical path (the mean over several draws of the timings; the 1,000-stack
// graph is drawn once), and CloudFormation calls per stack. Goal: cairn within 1.05 of the
// critical path where concurrency is not the limit, ahead of both peers at every
// concurrency.
func BenchmarkMakespan(b *testing.B) {
	for _, sc := range []struct {
		g     simGraph
		draws int
	}{
		{chainGraph(10), 5}, {fanOutGraph(50), 5}, {generatedGraph("random-200", 200), 5}, {generatedGraph("config-1000", 1000), 1},
	} {
		g := sc.g
		for _, c := range []int{5, 10, 50} {
			b.Run(fmt.Sprintf("%s/c%d", g.name, c), func(b *testing.B) {
				var m makespans
				for b.Loop() {
					m = makespans{}
					for d := range sc.draws {
						t := draw(len(g.names), uint64(d+1))
						cp, work := criticalPath(g, t)
						m.add(cp, work/time.Duration(c), simulateCairn(g, t, c, uint64(d+1)), simulateLevelByLevel(g, t, c, sceptrePolls), simulateThreadPerStack(g, t, c, stackerPolls))
					}
				}
				n := float64(len(g.names) * sc.draws)
				b.ReportMetric(m.cairn/float64(sc.draws), "cairn/cp")
				b.ReportMetric(m.level/float64(sc.draws), "level/cp")
				b.ReportMetric(m.thread/float64(sc.draws), "thread/cp")
				b.ReportMetric(float64(m.calls[0])/n, "cairn-calls/stack")
				b.ReportMetric(float64(m.calls[1])/n, "level-calls/stack")
				b.ReportMetric(float64(m.calls[2])/n, "thread-calls/stack")
				bound := "the critical path"
				if m.work > m.cp {
					bound = fmt.Sprintf("concurrency (work/%d = %.2f x the critical path)", c, m.work.Seconds()/m.cp.Seconds())
				}
				b.Logf("%s at max_concurrency %d (%d draws), bound by %s:\n  cairn  %.3f (worst %.3f)  %5.1f calls/stack\n  level  %.3f  %5.1f calls/stack\n  thread %.3f  %5.1f calls/stack",
					g.name, c, sc.draws, bound, m.cairn/float64(sc.draws), m.worst, float64(m.calls[0])/n,
					m.level/float64(sc.draws), float64(m.calls[1])/n, m.thread/float64(sc.draws), float64(m.calls[2])/n)
			})
		}
	}
}

// makespans sums the ratios of several draws.
type makespans struct {
	cairn, level, thread, worst float64
	calls                       [3]int
	cp, work                    time.Duration
}

func (m *makespans) add(cp, work time.Duration, cairn, level, thread outcome) {
	m.cp += cp
	m.work += work
	m.cairn += ratio(cairn.makespan, cp)
	m.level += ratio(level.makespan, cp)
	m.thread += ratio(thread.makespan, cp)
	m.worst = max(m.worst, ratio(cairn.makespan, cp))
	m.calls[0] += cairn.calls
	m.calls[1] += level.calls
	m.calls[2] += thread.calls
}

func ratio(a, b time.Duration) float64 { return a.Seconds() / b.Seconds() }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// TestMakespanSchedulersFinish checks the simulations themselves, small: none beats the
// critical path (cairn, whose change sets are made early, the early floor), each makes
// at least the three calls a stack needs, and cairn's engine deploys every stack.
func TestMakespanSchedulersFinish(t *testing.T) {
	for _, g := range []simGraph{chainGraph(4), fanOutGraph(6), generatedGraph("random-30", 30)} {
		tm := draw(len(g.names), 3)
		cp, _ := criticalPath(g, tm)
		floor := earlyFloor(g, tm)
		for _, c := range []int{1, 3, 50} {
			for name, o := range map[string]outcome{
				"cairn":  simulateCairn(g, tm, c, 3),
				"level":  simulateLevelByLevel(g, tm, c, sceptrePolls),
				"thread": simulateThreadPerStack(g, tm, c, stackerPolls),
				"serial": simulateSerial(g, tm),
			} {
				least := cp
				if name == "cairn" {
					least = floor
				}
				if o.makespan < least || o.calls < 3*len(g.names) {
					t.Errorf("%s %s c=%d: makespan %v (at least %v), %d calls", name, g.name, c, o.makespan, least, o.calls)
				}
				if name == "cairn" && o.status != run.Succeeded {
					t.Errorf("cairn %s c=%d: run %s", g.name, c, o.status)
				}
			}
		}
	}
	if !strings.HasPrefix(generatedGraph("g", 3).names[0], "stack-") {
		t.Error("the generated graph is not benchbundle's")
	}
}
