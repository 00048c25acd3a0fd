package run_test

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/awsclient"
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
// The peers, as their code reads:
//   - level by level (Sceptre's plan executor): the graph cut into levels by depth, each
//     level's stacks on a pool of max_concurrency threads, the next level started when the
//     whole level returned; each stack describes itself, creates its change set, polls it
//     every 2 s, executes it, then polls the stack every 4 s (DescribeStacks and
//     DescribeStackEvents) and sleeps once more after the poll that sees it finished;
//   - thread per stack (Stacker's walker): a stack's thread starts when its dependencies'
//     threads finished, holds one of max_concurrency slots from its change set to the end
//     of its operation, polls the change set after 0.5, 1, 2, 3, 3 ... s and the stack
//     every 5 s.

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
	makespan time.Duration // from the start to the last operation's end in CloudFormation
	calls    int           // CloudFormation calls
	steps    int           // deployer steps (cairn only)
	status   run.Status    // how cairn's run ended
	// readyToExecute sums, over cairn's stacks, the time from a change set's readiness to
	// its execution.
	readyToExecute time.Duration
}

// --- cairn ---

type simTrigger struct {
	at        time.Time
	heartbeat bool
	check     bool
	stack     string    // a stack event's stack (CloudFormation name)
	lingering time.Time // a step the invocation that began then makes after waiting (run.Lingers)
}

// simMaxLinger bounds how long one invocation waits for looks (deploy's MaxLinger).
const simMaxLinger = 30 * time.Second

type triggerQueue []simTrigger

func (q triggerQueue) Len() int           { return len(q) }
func (q triggerQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q triggerQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *triggerQueue) Push(x any)        { *q = append(*q, x.(simTrigger)) }
func (q *triggerQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// simStack is CloudFormation's side of one stack.
type simStack struct {
	csReady, opEnd time.Time // zero until started
}

type cairnSim struct {
	g       simGraph
	t       timings
	r       *run.Run
	cfn     map[string]*simStack // by config name
	index   map[string]int
	budget  *rate.Limiter
	rng     *rand.Rand
	q       triggerQueue
	calls   int
	steps   int
	lastEnd time.Time
	lag     time.Duration // ready to execute, summed
}

func simulateCairn(g simGraph, t timings, concurrency int, seed uint64) outcome {
	return simulateCairnEarly(g, t, concurrency, seed, true)
}

// simulateCairnEarly is simulateCairn with change sets made early (run.Stack.Early) or,
// when early is false, only after their dependencies finished, as the peers make them.
func simulateCairnEarly(g simGraph, t timings, concurrency int, seed uint64, early bool) outcome {
	s := &cairnSim{g: g, t: t, cfn: map[string]*simStack{}, index: map[string]int{}, budget: awsclient.DefaultBudget(),
		rng: rand.New(rand.NewPCG(seed, 11))}
	s.r = &run.Run{ID: "sim", Mode: run.ModeDeploy, Status: run.Running, MaxConcurrency: concurrency, Stacks: map[string]*run.Stack{}, StartedAt: simEpoch}
	for i, name := range g.names {
		// Early: the simulated templates read nothing but their parameters (as
		// template.Tree.Outside finds of most), so change sets may be made early.
		st := &run.Stack{Name: name, StackName: "x-" + name, Intent: run.IntentDeploy, Phase: run.Pending, TemplateHash: "t", Early: early}
		if t.histCS != nil {
			st.History = run.Timing{ChangeSet: t.histCS[i], Operation: t.histOp[i]}
		}
		for _, d := range g.deps[i] {
			st.Requires = append(st.Requires, g.names[d])
		}
		s.r.Stacks[name] = st
		s.cfn[name] = &simStack{}
		s.index[name] = i
	}
	heap.Push(&s.q, simTrigger{at: simEpoch}) // the upload's first step
	heap.Push(&s.q, simTrigger{at: simEpoch.Add(simHeartbeat), heartbeat: true})
	busyUntil := simEpoch
	for s.q.Len() > 0 && s.r.Status == run.Running {
		tr := heap.Pop(&s.q).(simTrigger)
		if tr.at.Before(busyUntil) {
			tr.at = busyUntil // waits for the step in progress; merged with what else waits
			heap.Push(&s.q, tr)
			continue
		}
		merged := []simTrigger{tr}
		for s.q.Len() > 0 && !s.q[0].at.After(tr.at) {
			merged = append(merged, heap.Pop(&s.q).(simTrigger))
		}
		busyUntil = s.step(tr.at, merged)
	}
	return outcome{makespan: s.lastEnd.Sub(simEpoch), calls: s.calls, steps: s.steps, status: s.r.Status, readyToExecute: s.lag}
}

// calls are the CloudFormation calls of one part of a step (its looks, or its actions),
// made simPar at a time, each waiting for the run's API budget.
type calls struct {
	s     *cairnSim
	lanes []time.Time
}

func (s *cairnSim) batch(clock time.Time) *calls {
	c := &calls{s: s, lanes: make([]time.Time, simPar)}
	for i := range c.lanes {
		c.lanes[i] = clock
	}
	return c
}

// call makes one call: it returns when the call reaches CloudFormation.
func (c *calls) call() time.Time {
	c.s.calls++
	l := 0
	for i := range c.lanes {
		if c.lanes[i].Before(c.lanes[l]) {
			l = i
		}
	}
	r := c.s.budget.ReserveN(c.lanes[l], 1)
	at := c.lanes[l].Add(r.DelayFrom(c.lanes[l]))
	c.lanes[l] = at.Add(simCallLatency)
	return at
}

// done is when every call made is answered.
func (c *calls) done() time.Time {
	end := c.lanes[0]
	for _, l := range c.lanes {
		end = later(end, l)
	}
	return end
}

func (s *cairnSim) step(start time.Time, triggers []simTrigger) time.Time {
	s.steps++
	clock := start.Add(simStepS3 / 2) // load the run document, renew the lock
	var named []string
	heartbeat := false
	invoked := start // when the invocation making this step began
	for _, tr := range triggers {
		if tr.stack != "" {
			named = append(named, tr.stack)
		}
		heartbeat = heartbeat || tr.heartbeat
		if !tr.lingering.IsZero() && tr.lingering.Before(invoked) {
			invoked = tr.lingering
		}
	}
	changeSets, stacks := s.r.Due(clock, named...)
	var obs []run.Observation
	looks := s.batch(clock)
	for _, name := range changeSets {
		at := looks.call()
		o := run.Observation{Stack: name, ChangeSetStatus: "CREATE_IN_PROGRESS"}
		if !at.Before(s.cfn[name].csReady) {
			o.ChangeSetStatus, o.Changes = "CREATE_COMPLETE", 1
		}
		obs = append(obs, o)
	}
	for _, name := range stacks {
		at := looks.call()
		o := run.Observation{Stack: name, StackStatus: "UPDATE_IN_PROGRESS"}
		if end := s.cfn[name].opEnd; !end.IsZero() && !at.Before(end) {
			o.StackStatus, o.Outputs = "UPDATE_COMPLETE", map[string]string{"Out": name}
			looks.call() // the operation's events (DescribeStackEvents), read once it settled
		}
		obs = append(obs, o)
	}
	now := looks.done()
	prev := s.r
	next, actions := run.Advance(prev, obs, now, run.Options{Heartbeat: simHeartbeat})
	acts := s.batch(now)
	for _, a := range actions {
		at := acts.call()
		cs, i := s.cfn[a.Stack], s.index[a.Stack]
		switch a.Kind {
		case run.CreateChangeSet:
			cs.csReady = at.Add(s.t.cs[i])
		case run.ExecuteChangeSet:
			// From when it could run: its change set ready and its dependencies finished
			// (a change set made early waits for them).
			could := cs.csReady
			for _, d := range s.g.deps[i] {
				could = later(could, s.cfn[s.g.names[d]].opEnd)
			}
			s.lag += at.Sub(could)
			cs.opEnd = at.Add(s.t.op[i])
			if cs.opEnd.After(s.lastEnd) {
				s.lastEnd = cs.opEnd
			}
			if s.rng.IntN(100) > 0 { // 1% of events are lost
				late := time.Duration(s.rng.Int64N(int64(2 * time.Second)))
				heap.Push(&s.q, simTrigger{at: cs.opEnd.Add(late), stack: a.StackName})
			}
		}
	}
	s.r = next
	clock = acts.done().Add(simStepS3 / 2) // save the run document
	if delay, ok := run.Wake(prev, next, now); ok {
		heap.Push(&s.q, simTrigger{at: clock.Add(delay), check: true})
	}
	if wait, ok := run.Lingers(next, clock); ok {
		if clock.Add(wait).Sub(invoked) <= simMaxLinger {
			heap.Push(&s.q, simTrigger{at: clock.Add(wait), lingering: invoked})
		} else {
			heap.Push(&s.q, simTrigger{at: clock.Add(time.Second), check: true}) // a fresh invocation
		}
	}
	if heartbeat && next.Status == run.Running {
		heap.Push(&s.q, simTrigger{at: clock.Add(simHeartbeat), heartbeat: true})
	}
	return clock
}

// --- the peers ---

// stackerChangeSetPolls are the waits between looks at a change set in Stacker's
// wait_till_change_set_complete: 0.5 s, doubled each time, at most 3 s.
func stackerChangeSetPolls() func() time.Duration {
	d := 250 * time.Millisecond
	return func() time.Duration {
		d = min(2*d, 3*time.Second)
		return d
	}
}

// pollUntil returns the first look at or after ready, looking at start and then after each
// wait, and how many looks it took.
func pollUntil(start, ready time.Time, wait func() time.Duration) (time.Time, int) {
	at, looks := start, 1
	for at.Before(ready) {
		at = at.Add(wait())
		looks++
	}
	return at, looks
}

func every(d time.Duration) func() time.Duration { return func() time.Duration { return d } }

// polling is how a peer looks: at a change set (a new schedule per change set), and at a
// stack operation; the first operation look comes opFirst after the execution, and each
// operation look costs opCalls calls.
type polling struct {
	cs      func() func() time.Duration
	op      time.Duration
	opFirst time.Duration
	opCalls int
	after   time.Duration // a level-by-level worker sleeps this long once more after the last look
}

var (
	// stackerPolls: Stacker's walker as BenchmarkMakespan models it (change sets after 0.5,
	// 1, 2, 3, 3 ... s, stacks every 5 s).
	stackerPolls = polling{cs: stackerChangeSetPolls, op: 5 * time.Second, opFirst: 5 * time.Second, opCalls: 1}
	// sceptrePolls: Sceptre's executor (change sets every 2 s, stacks every 4 s with
	// DescribeStacks and DescribeStackEvents, one more sleep after the end).
	sceptrePolls = polling{cs: func() func() time.Duration { return every(2 * time.Second) }, op: 4 * time.Second, opCalls: 2, after: 4 * time.Second}
)

// pollingEvery looks at change sets and stacks every d, one call a look.
func pollingEvery(d time.Duration) polling {
	return polling{cs: func() func() time.Duration { return every(d) }, op: d, opFirst: d, opCalls: 1}
}

// simulateThreadPerStack is Stacker's scheduling: a thread per stack, started when its
// dependencies finished, holding a slot while it polls.
func simulateThreadPerStack(g simGraph, t timings, concurrency int, p polling) outcome {
	n := len(g.names)
	done := make([]time.Time, n)
	finished := make([]bool, n)
	ready := make([]time.Time, n)
	var slots []time.Time // when each held slot frees
	var out outcome
	start := func(i int, at time.Time) {
		out.calls += 2 // describe the stack, create its change set
		csAt, looks := pollUntil(at.Add(simCallLatency), at.Add(simCallLatency).Add(t.cs[i]), p.cs())
		out.calls += looks + 1 // the looks, then execute
		execAt := csAt.Add(simCallLatency)
		end := execAt.Add(t.op[i])
		seen, looks := pollUntil(execAt.Add(p.opFirst), end, every(p.op))
		out.calls += looks * p.opCalls
		out.makespan = max(out.makespan, end.Sub(simEpoch))
		done[i], finished[i] = seen, true
		slots = append(slots, seen)
	}
	for scheduled := 0; scheduled < n; {
		// The next thread to get a slot: the one ready first (then by name).
		best := -1
		for i := range n {
			if finished[i] {
				continue
			}
			ok, at := true, simEpoch
			for _, d := range g.deps[i] {
				if !finished[d] {
					ok = false
					break
				}
				at = later(at, done[d])
			}
			if ok && (best < 0 || at.Before(ready[best])) {
				best, ready[i] = i, at
			} else if ok {
				ready[i] = at
			}
		}
		at := ready[best]
		if len(slots) >= concurrency {
			slices.SortFunc(slots, func(a, b time.Time) int { return a.Compare(b) })
			at = later(at, slots[0])
			slots = slots[1:]
		}
		start(best, at)
		scheduled++
	}
	return out
}

// simulateLevelByLevel is Sceptre's scheduling: levels by depth, each on a pool of
// concurrency threads, the next level once the whole level returned.
func simulateLevelByLevel(g simGraph, t timings, concurrency int, p polling) outcome {
	n := len(g.names)
	depth := make([]int, n)
	levels := [][]int{}
	for i := range n {
		for _, d := range g.deps[i] {
			depth[i] = max(depth[i], depth[d]+1)
		}
		for len(levels) <= depth[i] {
			levels = append(levels, nil)
		}
		levels[depth[i]] = append(levels[depth[i]], i)
	}
	var out outcome
	levelStart := simEpoch
	for _, level := range levels {
		workers := make([]time.Time, min(concurrency, len(level)))
		for w := range workers {
			workers[w] = levelStart
		}
		levelEnd := levelStart
		for _, i := range level { // tasks in submission order, each to the first free worker
			w := 0
			for j := range workers {
				if workers[j].Before(workers[w]) {
					w = j
				}
			}
			at := workers[w]
			out.calls += 2 // describe the stack, create its change set
			csAt, looks := pollUntil(at.Add(simCallLatency), at.Add(simCallLatency).Add(t.cs[i]), p.cs())
			out.calls += looks + 1 // the looks, then execute
			execAt := csAt.Add(simCallLatency)
			end := execAt.Add(t.op[i])
			seen, looks := pollUntil(execAt.Add(p.opFirst), end, every(p.op))
			out.calls += p.opCalls * looks
			out.makespan = max(out.makespan, end.Sub(simEpoch))
			workers[w] = seen.Add(p.after)
			levelEnd = later(levelEnd, workers[w])
		}
		levelStart = levelEnd
	}
	return out
}

// simulateSerial deploys one stack at a time in dependency order, as `aws cloudformation
// deploy` run once per stack does: its change set looked at every 5 s, then the stack
// every 30 s (the AWS CLI's deploy waiters).
func simulateSerial(g simGraph, t timings) outcome {
	var out outcome
	at := simEpoch
	for i := range g.names { // deps always point to earlier stacks
		out.calls += 2
		csAt, looks := pollUntil(at.Add(simCallLatency).Add(5*time.Second), at.Add(simCallLatency).Add(t.cs[i]), every(5*time.Second))
		out.calls += looks + 1
		execAt := csAt.Add(simCallLatency)
		end := execAt.Add(t.op[i])
		seen, looks := pollUntil(execAt.Add(30*time.Second), end, every(30*time.Second))
		out.calls += looks
		out.makespan = max(out.makespan, end.Sub(simEpoch))
		at = seen
	}
	return out
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
