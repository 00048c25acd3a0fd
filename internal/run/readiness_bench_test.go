package run_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/run"
)

// The readiness benchmark: cairn's engine and the peers' strategies side by side on the
// same graphs and the same drawn CloudFormation times, on the virtual clock of
// makespan_test.go (same deployer and API model), with change sets whose times vary as
// they do in AWS.
//
// CloudFormation, as drawn: each stack has a typical change set time, 2 to 12 s, and a
// typical operation time, 15 to 120 s (small stacks, whose change set is a large part of
// their time: where a late look costs most); each run takes each of them times 0.8 to
// 1.25. A first run knows nothing of its stacks; a later run has the graph's record of
// each stack's previous run (run.Stack.History), drawn the same way. Stack events arrive
// 0 to 2 s late and 1% are lost, as in BenchmarkMakespan.
//
// The strategies, all at max_concurrency 10:
//   - cairn: run.Advance, run.Due, run.Wake and run.Lingers driven as the deployer drives
//     them (a step lingers in its invocation for a look due within a second, up to 30 s),
//     its stacks' change sets made early (run.Stack.Early: the simulated templates read
//     nothing but their parameters);
//   - cairn-after-deps: the same with every change set made after the stack's
//     dependencies finished, as the peers make them: what its looks alone achieve;
//   - serial: one stack after the other, `aws cloudformation deploy` each (change set
//     looked at every 5 s, the stack every 30 s: the AWS CLI's deploy waiters);
//   - level by level at Sceptre's polling (change sets every 2 s, stacks every 4 s with
//     their events, one more sleep at the end) and at 0.25 s;
//   - thread per stack (Stacker's walker) polling change sets and stacks every 10 s, and
//     every 0.25 s.

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

// readinessStrategies are the side-by-side table's columns, each with its metric's name.
var readinessStrategies = []struct {
	name string
	sim  func(g simGraph, t timings, c int, seed uint64) outcome
}{
	{"cairn", simulateCairn},
	{"cairn-after-deps", func(g simGraph, t timings, c int, seed uint64) outcome {
		return simulateCairnEarly(g, t, c, seed, false)
	}},
	{"serial", func(g simGraph, t timings, _ int, _ uint64) outcome { return simulateSerial(g, t) }},
	{"sceptre", func(g simGraph, t timings, c int, _ uint64) outcome {
		return simulateLevelByLevel(g, t, c, sceptrePolls)
	}},
	{"level-0.25s", func(g simGraph, t timings, c int, _ uint64) outcome {
		return simulateLevelByLevel(g, t, c, pollingEvery(250*time.Millisecond))
	}},
	{"thread-10s", func(g simGraph, t timings, c int, _ uint64) outcome {
		return simulateThreadPerStack(g, t, c, pollingEvery(10*time.Second))
	}},
	{"thread-0.25s", func(g simGraph, t timings, c int, _ uint64) outcome {
		return simulateThreadPerStack(g, t, c, pollingEvery(250*time.Millisecond))
	}},
}

// BenchmarkReadiness reports, per graph and for a first and a later run, each strategy's
// makespan divided by the critical path (each stack's change set then its operation, after
// its dependencies: the mean over 20 draws; cairn's worst too) and its CloudFormation calls
// per stack, and cairn's mean time from when a stack could execute (its change set ready,
// its dependencies finished) to its execution. cairn, making change sets early, can end
// before the critical path; the least it could is earlyFloor. Goal: cairn within 1.05 of the critical path, ahead of the 0.25 s
// thread-per-stack poller, with at most a fifth of its calls.
func BenchmarkReadiness(b *testing.B) {
	const draws, concurrency = 20, 10
	for _, g := range []simGraph{chainGraph(5), irregularGraph(), generatedGraph("random-30", 30)} {
		for _, history := range []bool{false, true} {
			name := g.name + "/first-run"
			if history {
				name = g.name + "/later-run"
			}
			b.Run(name, func(b *testing.B) {
				ratio := make([]float64, len(readinessStrategies))
				calls := make([]int, len(readinessStrategies))
				var worst float64
				var lag time.Duration
				var executed int
				for b.Loop() {
					clear(ratio)
					clear(calls)
					worst, lag, executed = 0, 0, 0
					for d := range draws {
						t := drawVaried(len(g.names), uint64(d+1), 2, history)
						cp, _ := criticalPath(g, t)
						for i, st := range readinessStrategies {
							o := st.sim(g, t, concurrency, uint64(d+1))
							if i == 0 && o.status != run.Succeeded {
								b.Fatalf("cairn's run %s", o.status)
							}
							ratio[i] += ratio2(o.makespan, cp) / draws
							calls[i] += o.calls
							if i == 0 {
								worst = max(worst, ratio2(o.makespan, cp))
								lag += o.readyToExecute
								executed += len(g.names)
							}
						}
					}
				}
				n := float64(len(g.names) * draws)
				line := fmt.Sprintf("%s, %d draws, max_concurrency %d (makespan / critical path, calls per stack):", name, draws, concurrency)
				for i, st := range readinessStrategies {
					b.ReportMetric(ratio[i], st.name+"/cp")
					b.ReportMetric(float64(calls[i])/n, st.name+"-calls/stack")
					line += fmt.Sprintf("\n  %-16s %.3f  %6.1f", st.name, ratio[i], float64(calls[i])/n)
				}
				b.ReportMetric(worst, "cairn-worst/cp")
				b.ReportMetric(float64((lag / time.Duration(executed)).Milliseconds()), "cairn-ready-to-exec-ms")
				b.Logf("%s\n  cairn worst %.3f, a stack executed %v after it could (its change set ready, its dependencies finished; mean)", line, worst, (lag / time.Duration(executed)).Round(time.Millisecond))
			})
		}
	}
}

func ratio2(a, b time.Duration) float64 { return a.Seconds() / b.Seconds() }

// TestReadinessStrategiesFinish checks the side-by-side simulation itself on a small draw:
// every strategy deploys every stack no sooner than the critical path allows and makes at
// least the three calls a stack needs, cairn's run succeeds, and the polls of the 0.25 s
// poller are many more than those of the 10 s one.
func TestReadinessStrategiesFinish(t *testing.T) {
	for _, g := range []simGraph{chainGraph(3), irregularGraph()} {
		for _, history := range []bool{false, true} {
			tm := drawVaried(len(g.names), 5, 2, history)
			cp, _ := criticalPath(g, tm)
			floor := earlyFloor(g, tm)
			outs := map[string]outcome{}
			for _, st := range readinessStrategies {
				o := st.sim(g, tm, 10, 5)
				outs[st.name] = o
				least := cp
				if st.name == "cairn" {
					least = floor // its change sets are made early
				}
				if o.makespan < least || o.calls < 3*len(g.names) {
					t.Errorf("%s %s (history %v): makespan %v (at least %v), %d calls", st.name, g.name, history, o.makespan, least, o.calls)
				}
			}
			if outs["cairn"].status != run.Succeeded {
				t.Errorf("cairn %s: %s", g.name, outs["cairn"].status)
			}
			if outs["thread-0.25s"].calls < 10*outs["thread-10s"].calls/2 {
				t.Errorf("%s: the 0.25 s poller made %d calls, the 10 s one %d", g.name, outs["thread-0.25s"].calls, outs["thread-10s"].calls)
			}
		}
	}
}
