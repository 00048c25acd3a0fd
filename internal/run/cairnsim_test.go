package run_test

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/run"
)

// cairn in the simulations: run.Advance, run.Due, run.Wake and run.Lingers driven as the
// deployer drives them (see makespan_test.go), against a simulated CloudFormation.

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

// simWorld is what a simulated run's world holds besides the drawn times. Its zero value
// is the makespan model's: stacks with no parameters whose outputs never change (so every
// change set may be made early, creates included), events 0 to 2 s late, 1% lost, and no
// throttling.
type simWorld struct {
	// reads: each stack's parameters are its dependencies' outputs (P<i>: stack i's Out).
	reads bool
	// create: a first run, the stacks do not exist (their outputs come with their creation);
	// else each exists, its template changed, and its outputs are those of its last run
	// until its update ends, which gives them new values where changed says so.
	create  bool
	changed []bool
	// late draws each stack event's lateness (nil: flatLateness).
	late func(*rand.Rand) (time.Duration, bool)
	// throttled: the account throttles Describe* calls (account), and the SDK retries them
	// (sdkRetryer, cairn's awsclient.MaxAttempts attempts).
	throttled bool
}

// output is stack i's output Out in CloudFormation at t.
func (w simWorld) output(s *simStack, i int, name string, t time.Time) (string, bool) {
	done := !s.opEnd.IsZero() && !t.Before(s.opEnd)
	switch {
	case w.create && !done:
		return "", false
	case !w.create && done && w.changed != nil && w.changed[i]:
		return name + "#2", true
	}
	return name + "#1", true
}

// simStack is CloudFormation's side of one stack.
type simStack struct {
	csReady, opEnd time.Time         // of its latest change set and its execution: zero until started
	params         map[string]string // its latest change set's parameters
	made           int               // change sets made
}

type cairnSim struct {
	g       simGraph
	t       timings
	w       simWorld
	r       *run.Run
	cfn     map[string]*simStack // by config name
	index   map[string]int
	budget  *rate.Limiter
	acct    *account
	sdk     *sdkRetryer
	rng     *rand.Rand
	q       triggerQueue
	out     outcome
	lastEnd time.Time
}

func simulateCairn(g simGraph, t timings, concurrency int, seed uint64) outcome {
	return simulateCairnEarly(g, t, concurrency, seed, true)
}

// simulateCairnEarly is simulateCairn with change sets made early (run.Stack.Early) or,
// when early is false, only after their dependencies finished, as the peers make them.
func simulateCairnEarly(g simGraph, t timings, concurrency int, seed uint64, early bool) outcome {
	return simulateCairnIn(simWorld{}, g, t, concurrency, seed, early)
}

// simulateCairnIn runs cairn in world w.
func simulateCairnIn(w simWorld, g simGraph, t timings, concurrency int, seed uint64, early bool) outcome {
	s := &cairnSim{g: g, t: t, w: w, cfn: map[string]*simStack{}, index: map[string]int{}, budget: awsclient.DefaultBudget(),
		rng: rand.New(rand.NewPCG(seed, 11))}
	if w.throttled {
		s.acct, s.sdk = newAccount(), newRetryer(awsclient.MaxAttempts, seed)
	}
	if s.w.late == nil {
		s.w.late = flatLateness
	}
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
			if w.reads {
				if st.RawParameters == nil {
					st.RawParameters = map[string]string{}
				}
				st.RawParameters[fmt.Sprintf("P%d", d)] = "out:" + g.names[d]
			}
		}
		s.cfn[name] = &simStack{}
		if w.reads && !w.create {
			out, _ := w.output(s.cfn[name], i, name, simEpoch)
			st.Exists, st.Outputs, st.PrevTemplateHash = true, map[string]string{"Out": out}, "t0"
		}
		s.r.Stacks[name] = st
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
	s.out.makespan, s.out.status = s.lastEnd.Sub(simEpoch), s.r.Status
	if s.acct != nil {
		s.out.throttled = s.acct.throttled
	}
	return s.out
}

// simResolve resolves "out:STACK" to STACK's output Out, as cairn's lookups resolve
// ${output STACK::Out}: an error when the stack has no such output (yet).
func simResolve(_ string, raw map[string]string, out func(string, string) (string, bool)) (map[string]string, error) {
	res := make(map[string]string, len(raw))
	for k, v := range raw {
		if dep, ok := strings.CutPrefix(v, "out:"); ok {
			val, found := out(dep, "Out")
			if !found {
				return nil, fmt.Errorf("output %s::Out not found", dep)
			}
			v = val
		}
		res[k] = v
	}
	return res, nil
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

// call makes one call of kind k: it returns when the call reached CloudFormation (its
// answered attempt, if throttled) and whether it was answered.
func (c *calls) call(k api) (time.Time, bool) {
	l := 0
	for i := range c.lanes {
		if c.lanes[i].Before(c.lanes[l]) {
			l = i
		}
	}
	r := c.s.budget.ReserveN(c.lanes[l], 1)
	at := c.lanes[l].Add(r.DelayFrom(c.lanes[l]))
	at, attempts, ok := describe(c.s.acct, c.s.sdk, k, at)
	c.s.out.calls += attempts
	c.lanes[l] = at.Add(simCallLatency)
	return at, ok
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
	s.out.steps++
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
	obs, now := s.look(clock, named)
	prev := s.r
	next, actions := run.Advance(prev, obs, now, run.Options{Heartbeat: simHeartbeat, Resolve: simResolve})
	acts := s.batch(now)
	for _, a := range actions {
		at, _ := acts.call(notThrottled)
		s.act(a, at)
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

// look makes a step's looks at the stacks due (and those its stack events named): what it
// observed, and when the looks are answered. A look whose attempts were all throttled
// observes nothing.
func (s *cairnSim) look(clock time.Time, named []string) ([]run.Observation, time.Time) {
	changeSets, stacks := s.r.Due(clock, named...)
	var obs []run.Observation
	looks := s.batch(clock)
	for _, name := range changeSets {
		at, ok := looks.call(describeChangeSet)
		if !ok {
			continue
		}
		o := run.Observation{Stack: name, ChangeSetStatus: "CREATE_IN_PROGRESS"}
		if !at.Before(s.cfn[name].csReady) {
			o.ChangeSetStatus, o.Changes = "CREATE_COMPLETE", 1
		}
		obs = append(obs, o)
	}
	verb := "UPDATE"
	if s.w.create {
		verb = "CREATE"
	}
	for _, name := range stacks {
		at, ok := looks.call(describeStacks)
		if !ok {
			continue
		}
		o := run.Observation{Stack: name, StackStatus: verb + "_IN_PROGRESS"}
		cs, i := s.cfn[name], s.index[name]
		if end := cs.opEnd; !end.IsZero() && !at.Before(end) {
			out, _ := s.w.output(cs, i, name, at)
			o.StackStatus, o.Outputs = verb+"_COMPLETE", map[string]string{"Out": out}
			looks.call(describeStackEvents) // the operation's events, read once it settled
		}
		obs = append(obs, o)
	}
	return obs, looks.done()
}

// act is CloudFormation doing action a, which reached it at at.
func (s *cairnSim) act(a run.Action, at time.Time) {
	cs, i := s.cfn[a.Stack], s.index[a.Stack]
	switch a.Kind {
	case run.CreateChangeSet:
		cs.csReady, cs.params = at.Add(s.t.cs[i]), a.Parameters
		if cs.made++; cs.made > 1 {
			s.out.remade++
		}
		var finished time.Time // when the last of its dependencies finished
		for _, d := range s.g.deps[i] {
			end := s.cfn[s.g.names[d]].opEnd
			if end.IsZero() || at.Before(end) {
				s.out.early++ // made before d finished
				return
			}
			finished = later(finished, end)
		}
		if !finished.IsZero() {
			s.out.startLag += at.Sub(finished)
			s.out.started++
		}
	case run.ExecuteChangeSet:
		// From when it could run: its change set ready and its dependencies finished
		// (a change set made early waits for them).
		could := cs.csReady
		for _, d := range s.g.deps[i] {
			dep := s.g.names[d]
			could = later(could, s.cfn[dep].opEnd)
			if want, _ := s.w.output(s.cfn[dep], d, dep, at); s.w.reads && cs.params[fmt.Sprintf("P%d", d)] != want {
				s.out.staleExecuted++
			}
		}
		s.out.readyToExecute += at.Sub(could)
		cs.opEnd = at.Add(s.t.op[i])
		if cs.opEnd.After(s.lastEnd) {
			s.lastEnd = cs.opEnd
		}
		if late, ok := s.w.late(s.rng); ok {
			heap.Push(&s.q, simTrigger{at: cs.opEnd.Add(late), stack: a.StackName})
		}
	}
}
