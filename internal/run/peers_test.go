package run_test

import (
	"container/heap"
	"slices"
	"time"
)

// The peers of the makespan and readiness models: deployers that look at CloudFormation on
// fixed schedules, as their code reads.
//
//   - level by level (Sceptre's plan executor): the graph cut into levels by depth, each
//     level's stacks on a pool of max_concurrency threads, the next level started when the
//     whole level returned; each stack describes itself, creates its change set, polls it
//     every 2 s, executes it, then polls the stack every 4 s (DescribeStacks and
//     DescribeStackEvents) and sleeps once more after the poll that sees it finished;
//   - thread per stack (Stacker's walker): a stack's thread starts when its dependencies'
//     threads finished, holds one of max_concurrency slots from its change set to the end
//     of its operation, polls the change set after 0.5, 1, 2, 3, 3 ... s and the stack
//     every 5 s;
//   - serial: `aws cloudformation deploy`, one stack after the other.
//
// Both pooled peers are discrete-event simulations that make every call in time order, so
// that CloudFormation's throttle of the account (account, throttle_test.go) sees them as
// it would: a throttled call is retried as the SDK's standard retryer retries it
// (sdkRetryer), each attempt a call, and a look whose attempts all failed is made again
// after the peer's usual wait. Without an account they are never throttled.

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
// dependencies finished, holding a slot while it polls; never throttled.
func simulateThreadPerStack(g simGraph, t timings, concurrency int, p polling) outcome {
	return simulatePeer(g, t, concurrency, p, false, nil, nil)
}

// simulateLevelByLevel is Sceptre's scheduling: levels by depth, each on a pool of
// concurrency threads, the next level once the whole level returned; never throttled.
func simulateLevelByLevel(g simGraph, t timings, concurrency int, p polling) outcome {
	return simulatePeer(g, t, concurrency, p, true, nil, nil)
}

// peerStep is what a peer's thread does next.
type peerStep int

const (
	peerDescribe  peerStep = iota // describe its stack (DescribeStacks), then create its change set
	peerChangeSet                 // look at its change set (DescribeChangeSet)
	peerOperation                 // look at its operation: the call-th call of the look (DescribeStacks, DescribeStackEvents)
	peerDone                      // return, freeing its slot
)

type peerEvent struct {
	at      time.Time
	seq     int
	i       int // the stack
	step    peerStep
	call    int
	attempt int // of the SDK's operation, from 1
}

type peerQueue []peerEvent

func (q peerQueue) Len() int { return len(q) }
func (q peerQueue) Less(i, j int) bool {
	return q[i].at.Before(q[j].at) || q[i].at.Equal(q[j].at) && q[i].seq < q[j].seq
}
func (q peerQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *peerQueue) Push(x any)   { *q = append(*q, x.(peerEvent)) }
func (q *peerQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// peerSim is one pooled peer's deployment of a graph.
type peerSim struct {
	g    simGraph
	t    timings
	p    polling
	acct *account
	sdk  *sdkRetryer
	q    peerQueue
	seq  int
	out  outcome
	// Per stack: its change set's readiness and its operation's end in CloudFormation, the
	// waits between its change-set looks, what the look's first call saw, when it became
	// ready to start and whether its thread returned.
	csReady, end, readyAt []time.Time
	waits                 []func() time.Duration
	sawDone, done         []bool
	dependents            [][]int
	// The pool: free slots, the stacks ready for one in order, and (level by level) the
	// levels still to start and the stacks of the current one still working.
	free   int
	ready  []int
	byLev  bool
	levels [][]int
	left   int
	limit  int
}

// simulatePeer deploys g as a pooled peer does (level by level, or a thread per stack),
// looking as p says, its Describe* calls throttled by acct and retried by sdk.
func simulatePeer(g simGraph, t timings, concurrency int, p polling, byLevel bool, acct *account, sdk *sdkRetryer) outcome {
	n := len(g.names)
	s := &peerSim{g: g, t: t, p: p, acct: acct, sdk: sdk, byLev: byLevel, limit: concurrency,
		csReady: make([]time.Time, n), end: make([]time.Time, n), readyAt: make([]time.Time, n),
		waits: make([]func() time.Duration, n), sawDone: make([]bool, n), done: make([]bool, n), dependents: make([][]int, n)}
	for i, deps := range g.deps {
		for _, d := range deps {
			s.dependents[d] = append(s.dependents[d], i)
		}
	}
	if byLevel {
		s.levels = levelsOf(g)
		s.startLevel(simEpoch)
	} else {
		s.free = concurrency
		for i := range n {
			if len(g.deps[i]) == 0 {
				s.ready = append(s.ready, i)
			}
		}
		s.startReady(simEpoch)
	}
	for s.q.Len() > 0 {
		s.handle(heap.Pop(&s.q).(peerEvent))
	}
	if acct != nil {
		s.out.throttled = acct.throttled
	}
	return s.out
}

// levelsOf cuts g into levels by depth, each in index order.
func levelsOf(g simGraph) [][]int {
	depth := make([]int, len(g.names))
	var levels [][]int
	for i := range g.names {
		for _, d := range g.deps[i] {
			depth[i] = max(depth[i], depth[d]+1)
		}
		for len(levels) <= depth[i] {
			levels = append(levels, nil)
		}
		levels[depth[i]] = append(levels[depth[i]], i)
	}
	return levels
}

func (s *peerSim) push(e peerEvent) {
	e.seq = s.seq
	s.seq++
	heap.Push(&s.q, e)
}

func (s *peerSim) startLevel(at time.Time) {
	if len(s.levels) == 0 {
		return
	}
	level := s.levels[0]
	s.levels = s.levels[1:]
	s.ready = append([]int(nil), level...) // in submission order
	s.free, s.left = min(s.limit, len(level)), len(level)
	s.startReady(at)
}

// startReady gives each free slot to the stack ready first (then the lowest index).
func (s *peerSim) startReady(at time.Time) {
	if !s.byLev {
		slices.SortStableFunc(s.ready, func(a, b int) int {
			if c := s.readyAt[a].Compare(s.readyAt[b]); c != 0 {
				return c
			}
			return a - b
		})
	}
	for s.free > 0 && len(s.ready) > 0 {
		i := s.ready[0]
		s.ready = s.ready[1:]
		s.free--
		s.waits[i] = s.p.cs()
		s.push(peerEvent{at: at, i: i, step: peerDescribe, attempt: 1})
	}
}

// finish frees the slot of stack i's thread, returned at at, and starts what it let start.
func (s *peerSim) finish(i int, at time.Time) {
	s.done[i] = true
	s.free++
	if s.byLev {
		if s.left--; s.left == 0 {
			s.startLevel(at)
			return
		}
		s.startReady(at)
		return
	}
	for _, j := range s.dependents[i] {
		all := true
		for _, d := range s.g.deps[j] {
			all = all && s.done[d]
		}
		if all {
			s.readyAt[j] = at
			s.ready = append(s.ready, j)
		}
	}
	s.startReady(at)
}

// attempt makes e's call, of kind k: it counts; throttled with a retry left, the retry is
// queued (retried).
func (s *peerSim) attempt(e peerEvent, k api) (ok, retried bool) {
	s.out.calls++
	ok = s.acct.allow(k, e.at)
	wait, again := s.sdk.after(e.attempt, ok)
	if ok || !again {
		return ok, false
	}
	e.at, e.attempt = e.at.Add(simCallLatency).Add(wait), e.attempt+1
	s.push(e)
	return false, true
}

func (s *peerSim) handle(e peerEvent) {
	i, p := e.i, s.p
	next := func(at time.Time, step peerStep, call int) {
		s.push(peerEvent{at: at, i: i, step: step, call: call, attempt: 1})
	}
	switch e.step {
	case peerDescribe:
		ok, retried := s.attempt(e, describeStacks)
		switch {
		case retried:
		case !ok:
			next(e.at.Add(time.Second), peerDescribe, 0) // the peer tries again
		default:
			s.out.calls++ // create the change set
			s.csReady[i] = e.at.Add(simCallLatency).Add(s.t.cs[i])
			if deps := s.g.deps[i]; len(deps) > 0 {
				var finished time.Time
				for _, d := range deps {
					finished = later(finished, s.end[d])
				}
				s.out.startLag += e.at.Add(simCallLatency).Sub(finished)
				s.out.started++
			}
			next(e.at.Add(simCallLatency), peerChangeSet, 0)
		}
	case peerChangeSet:
		ok, retried := s.attempt(e, describeChangeSet)
		switch {
		case retried:
		case !ok || e.at.Before(s.csReady[i]):
			next(e.at.Add(s.waits[i]()), peerChangeSet, 0)
		default:
			s.out.calls++ // execute it
			exec := e.at.Add(simCallLatency)
			s.end[i] = exec.Add(s.t.op[i])
			s.out.makespan = max(s.out.makespan, s.end[i].Sub(simEpoch))
			next(exec.Add(p.opFirst), peerOperation, 0)
		}
	case peerOperation:
		k := describeStacks
		if e.call > 0 {
			k = describeStackEvents
		}
		ok, retried := s.attempt(e, k)
		switch {
		case retried:
		case !ok:
			next(e.at.Add(p.op), peerOperation, 0)
		default:
			if e.call == 0 {
				s.sawDone[i] = !e.at.Before(s.end[i])
			}
			switch {
			case e.call+1 < p.opCalls:
				next(e.at, peerOperation, e.call+1)
			case s.sawDone[i]:
				next(e.at.Add(p.after), peerDone, 0)
			default:
				next(e.at.Add(p.op), peerOperation, 0)
			}
		}
	case peerDone:
		s.finish(i, e.at)
	}
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
