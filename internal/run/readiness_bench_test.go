package run_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/awsclient"
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
// 1.25. A create knows nothing of its stacks; an update has the graph's record of each
// stack's previous run (run.Stack.History), drawn the same way.
//
// The world (corrected for issue 42; simWorld, throttle_test.go):
//   - each stack's parameters are its dependencies' outputs, so a change set made early,
//     before a dependency finished, is stale when that dependency's outputs changed, and
//     cairn makes it again (run.remakeStale, run.settleEarly);
//   - a create's dependents cannot go early: their parameters do not exist until their
//     dependencies are created;
//   - an update changes a stack's outputs with a probability drawn per stack and run: 0,
//     30% or 100% (the phases);
//   - stack events arrive 0 to 2 s late (90%), in a tail to 60 s (9%), or never (1%);
//   - CloudFormation throttles each Describe* action of the account at 5 calls a second
//     (bursts of 10), every strategy's calls alike, and the SDK's standard retryer
//     answers the throttling (cairn with its 8 attempts, the peers with the default 3);
//     cairn's calls also wait for its run's API budget (awsclient.DefaultBudget).
//
// The strategies, all at max_concurrency 10:
//   - cairn: run.Advance, run.Due, run.Wake and run.Lingers driven as the deployer drives
//     them (a step lingers in its invocation for a look due within a second, up to 30 s),
//     its stacks' change sets made early where the engine may (run.Stack.Early: the
//     simulated templates read nothing but their parameters);
//   - cairn-after-deps: the same with every change set made after the stack's
//     dependencies finished, as the peers make them: what its looks alone achieve;
//   - serial: one stack after the other, `aws cloudformation deploy` each (change set
//     looked at every 5 s, the stack every 30 s: the AWS CLI's deploy waiters; too slow
//     to be throttled, so not simulated against the throttle);
//   - level by level at Sceptre's polling (change sets every 2 s, stacks every 4 s with
//     their events, one more sleep at the end) and at 0.25 s;
//   - thread per stack (Stacker's walker) polling change sets and stacks every 10 s, and
//     every 0.25 s; and the 0.25 s one never throttled (thread-0.25s-free), as the
//     emulator treats it in the side-by-side benchmark.

// readinessStrategy is a column of the side-by-side table.
type readinessStrategy struct {
	name string
	sim  func(w simWorld, g simGraph, t timings, c int, seed uint64) outcome
}

// peerIn is a pooled peer in w: throttled, its SDK retrying with the default 3 attempts,
// when w throttles and free is false.
func peerIn(p polling, byLevel, free bool) func(simWorld, simGraph, timings, int, uint64) outcome {
	return func(w simWorld, g simGraph, t timings, c int, seed uint64) outcome {
		if !w.throttled || free {
			return simulatePeer(g, t, c, p, byLevel, nil, nil)
		}
		return simulatePeer(g, t, c, p, byLevel, newAccount(), newRetryer(3, seed))
	}
}

var readinessStrategies = []readinessStrategy{
	{"cairn", func(w simWorld, g simGraph, t timings, c int, seed uint64) outcome {
		return simulateCairnIn(w, g, t, c, seed, true)
	}},
	{"cairn-after-deps", func(w simWorld, g simGraph, t timings, c int, seed uint64) outcome {
		return simulateCairnIn(w, g, t, c, seed, false)
	}},
	{"serial", func(_ simWorld, g simGraph, t timings, _ int, _ uint64) outcome { return simulateSerial(g, t) }},
	{"sceptre", peerIn(sceptrePolls, true, false)},
	{"level-0.25s", peerIn(pollingEvery(250*time.Millisecond), true, false)},
	{"thread-10s", peerIn(pollingEvery(10*time.Second), false, false)},
	{"thread-0.25s", peerIn(pollingEvery(250*time.Millisecond), false, false)},
	{"thread-0.25s-free", peerIn(pollingEvery(250*time.Millisecond), false, true)},
}

// readinessGraphs are the benchmark's graphs.
func readinessGraphs() []simGraph {
	return []simGraph{chainGraph(5), irregularGraph(), generatedGraph("random-30", 30), dagGraph(20)}
}

// readinessSums add up one graph and phase's draws.
type readinessSums struct {
	cp, best                                 []float64 // per strategy: makespan / critical path, / best schedule
	calls, throttled, started                []int
	startLag                                 []time.Duration
	bestCP, worst                            float64
	lag                                      time.Duration
	early, remade, stacks, draws, boundDraws int
}

// BenchmarkReadiness reports, per graph and phase, each strategy's makespan divided by the
// critical path (each stack's change set then its operation, after its dependencies: the
// mean over 20 draws; cairn's worst too), its CloudFormation calls per stack and how many
// of them were throttled, and cairn's change sets made early and made again per stack and
// its mean time from when a stack could execute (its change set ready, its dependencies
// finished) to its execution. Where max_concurrency makes the critical path out of reach
// (bestSchedule above it), each makespan over the best schedule's too. cairn, making change
// sets early, can end before the critical path; the least it could is earlyFloor.
// Goal: cairn within 1.05 of the critical path, ahead of the 0.25 s thread-per-stack
// poller, with at most a fifth of its calls.
func BenchmarkReadiness(b *testing.B) {
	const draws, concurrency = 20, 10
	for _, g := range readinessGraphs() {
		for _, ph := range readinessPhases {
			name := g.name + "/" + ph.name
			b.Run(name, func(b *testing.B) {
				var m readinessSums
				for b.Loop() {
					m = measureReadiness(b, g, ph, draws, concurrency)
				}
				reportReadiness(b, name, m, concurrency)
			})
		}
	}
}

func measureReadiness(b *testing.B, g simGraph, ph readinessPhase, draws, concurrency int) readinessSums {
	k := len(readinessStrategies)
	m := readinessSums{cp: make([]float64, k), best: make([]float64, k), calls: make([]int, k), throttled: make([]int, k),
		started: make([]int, k), startLag: make([]time.Duration, k), draws: draws}
	for d := range draws {
		seed := uint64(d + 1)
		t, w := ph.timings(len(g.names), seed), ph.world(len(g.names), seed)
		cp, _ := criticalPath(g, t)
		best := bestSchedule(g, t, concurrency)
		m.bestCP += ratio2(best, cp) / float64(draws)
		if best > cp {
			m.boundDraws++
		}
		for i, st := range readinessStrategies {
			o := st.sim(w, g, t, concurrency, seed)
			if i == 0 && (o.status != run.Succeeded || o.staleExecuted > 0) {
				b.Fatalf("cairn's run %s, %d stale change sets executed", o.status, o.staleExecuted)
			}
			m.cp[i] += ratio2(o.makespan, cp) / float64(draws)
			m.best[i] += ratio2(o.makespan, best) / float64(draws)
			m.calls[i] += o.calls
			m.throttled[i] += o.throttled
			m.startLag[i] += o.startLag
			m.started[i] += o.started
			if i == 0 {
				m.worst = max(m.worst, ratio2(o.makespan, cp))
				m.lag += o.readyToExecute
				m.early += o.early
				m.remade += o.remade
				m.stacks += len(g.names)
			}
		}
	}
	return m
}

func reportReadiness(b *testing.B, name string, m readinessSums, concurrency int) {
	n := float64(m.stacks)
	bound := m.bestCP > 1.001
	var line strings.Builder
	fmt.Fprintf(&line, "%s, %d draws, max_concurrency %d (makespan / critical path, calls per stack, of them throttled, seconds from a dependency's end to a change set made after it", name, m.draws, concurrency)
	if bound {
		fmt.Fprintf(&line, ", makespan / best schedule: %d of %d draws above the critical path at this concurrency, best / critical path %.3f", m.boundDraws, m.draws, m.bestCP)
	}
	line.WriteString("):")
	for i, st := range readinessStrategies {
		b.ReportMetric(m.cp[i], st.name+"/cp")
		b.ReportMetric(float64(m.calls[i])/n, st.name+"-calls/stack")
		b.ReportMetric(float64(m.throttled[i])/n, st.name+"-throttled/stack")
		lag := 0.0
		if m.started[i] > 0 {
			lag = (m.startLag[i] / time.Duration(m.started[i])).Seconds()
			b.ReportMetric(lag, st.name+"-start-lag-s")
		}
		fmt.Fprintf(&line, "\n  %-17s %.3f  %6.1f  %5.1f  %5.2f", st.name, m.cp[i], float64(m.calls[i])/n, float64(m.throttled[i])/n, lag)
		if bound {
			b.ReportMetric(m.best[i], st.name+"/best")
			fmt.Fprintf(&line, "  %.3f", m.best[i])
		}
	}
	b.ReportMetric(m.bestCP, "best/cp")
	b.ReportMetric(m.worst, "cairn-worst/cp")
	b.ReportMetric(float64(m.early)/n, "cairn-early/stack")
	b.ReportMetric(float64(m.remade)/n, "cairn-remade/stack")
	lag := m.lag / time.Duration(m.stacks)
	b.ReportMetric(float64(lag.Milliseconds()), "cairn-ready-to-exec-ms")
	b.Logf("%s\n  cairn worst %.3f; change sets made early %.2f, made again %.2f a stack; a stack executed %v after it could (its change set ready, its dependencies finished; mean); SDK attempts: cairn %d, peers 3",
		line.String(), m.worst, float64(m.early)/n, float64(m.remade)/n, lag.Round(time.Millisecond), awsclient.MaxAttempts)
}

func ratio2(a, b time.Duration) float64 { return a.Seconds() / b.Seconds() }
