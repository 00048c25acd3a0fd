package run

import (
	"time"
)

// The schedule of looks at a stack that waits for CloudFormation: a pure function of when
// the wait began, what is expected of it, and when the last look was.
//
// No event says when a change set is ready, so it must be looked at, and every look that
// comes too early is a wasted call while every look that comes late delays the stack and
// all that depends on it. A wait is expected to end within a window after it began: for a
// change set, from the stack's own history (the graph keeps how long its last change set
// took), else from the fastest and slowest change sets the run saw in the same account and
// region (Run.Learned), else from what CloudFormation takes (ChangeSetPrior). The first
// look comes when the window opens; within it the looks come a short step apart
// (ShortStep, longer when many stacks are in their windows at once, so the run's API
// budget holds); past it they back off, each as far after the last as the window's end
// is behind, up to the heartbeat. A stack operation, whose end a stack event announces, is
// looked at in the window its history gives (so a late or lost event costs little), else
// in the window of the updates the run saw end in the same place, else only as a
// fallback, backing off from a second.

// Timing is how long a stack's waits took: its change set's creation and its operation
// (the execution of its change set). The graph keeps each stack's last (state.Stack.Took),
// and the next run expects as much (Stack.History).
type Timing struct {
	ChangeSet time.Duration `json:"change_set,omitempty"`
	Operation time.Duration `json:"operation,omitempty"`
}

// Place is what a run learned of the change sets of one account and region: the fastest
// and the slowest it saw created.
type Place struct {
	Fastest time.Duration `json:"fastest,omitempty"`
	Slowest time.Duration `json:"slowest,omitempty"`
	Seen    int           `json:"seen,omitempty"`
	// Operations are the stack operations (executions) it saw end, as Fastest, Slowest and
	// Seen are of change sets: a stack with no history of its own is looked at in their
	// window rather than only when its stack event comes, which may come late.
	Operations Span `json:"operations,omitzero"`
}

// Span is the fastest and slowest of the waits seen, and how many.
type Span struct {
	Fastest time.Duration `json:"fastest,omitempty"`
	Slowest time.Duration `json:"slowest,omitempty"`
	Seen    int           `json:"seen,omitempty"`
}

// ChangeSetPrior is when a change set of a stack with no history, in a place the run has
// seen none made, is likely ready: CloudFormation takes from about 2 to 12 seconds, a
// small one less. The window opens at 1 s: what a run learns of a place is when its looks
// found change sets ready, so a first look later than the fastest would teach the run
// that later time, and every stack of the run would pay the difference (the emulator's
// 1 s change sets were seen at 2 s).
var ChangeSetPrior = struct{ From, To time.Duration }{1 * time.Second, 12 * time.Second}

const (
	// ShortStep is the gap between looks while a wait is likely to end. A look finds a
	// change set made ShortStep/2 late on average, for (its time - its window's start) /
	// ShortStep looks: at 0.25 s (a 0.25 s poller's lateness) a stack on the critical path
	// cost 10 DescribeChangeSet calls on the emulator's 1 to 4 s change sets, at 0.4 s 7,
	// 0.075 s later.
	ShortStep = 400 * time.Millisecond
	// lookCost is the share of the run's API budget (awsclient.DefaultBudget: 25 calls a
	// second) one look in a short step may take: with n stacks in their windows at once,
	// the steps are n*lookCost apart, at most half the budget.
	lookCost = 80 * time.Millisecond
	// Piggyback: a step looks, besides the stacks due, at those due this soon, which it
	// would otherwise leave to another step a moment later.
	Piggyback = ShortStep / 2
	// OperationFirstLook is when an operation with no window (no history of the stack,
	// none of its place) is first looked at, in case its stack event is lost: an
	// operation rarely ends sooner, and its event normally comes first.
	OperationFirstLook = 5 * time.Second
	// Linger is how close a look must be for the driver to wait for it in the step's own
	// invocation rather than queue a delayed check: SQS delays messages by whole seconds.
	Linger = time.Second
)

// placeKey names the account and region of a stack, the unit of learning.
func placeKey(s *Stack) string { return s.At.Account + "/" + s.At.Region }

// window is when the wait of s (in its phase, begun at s.PhaseSince) is likely over, lo to
// hi after it began; 0, 0 when nothing is expected of it.
func window(s *Stack, learned map[string]Place) (lo, hi time.Duration) {
	switch s.Phase {
	case CreatingChangeSet:
		if h := s.History.ChangeSet; h > 0 {
			return h * 6 / 10, h*16/10 + time.Second
		}
		lo, hi = ChangeSetPrior.From, ChangeSetPrior.To
		if p := learned[placeKey(s)]; p.Seen > 0 {
			lo = min(p.Fastest*9/10, lo)
			hi = max(hi, p.Slowest*3/2)
		}
		return lo, hi
	case Executing:
		if h := s.History.Operation; h > 0 {
			return h * 6 / 10, h*16/10 + 2*time.Second
		}
		if p := learned[placeKey(s)].Operations; p.Seen > 0 {
			// Its stack event normally says when it ends: the looks only stand in for an
			// event that is late, from when the slowest update seen would have ended
			// (from the fastest, each stack took about 1.5 more looks than the poller's).
			return p.Slowest, p.Slowest*3/2 + time.Second
		}
	case DetectingDrift:
		return DriftDetectionPrior.From, DriftDetectionPrior.To
	}
	return 0, 0
}

// nextLook is when to look at s next, after a look at now (or when its wait began, at
// now == s.PhaseSince); step is the short step of this moment (shortStep).
//
// An operation's end is announced by its stack event, which names the stack and has it
// looked at at once: its first look is only the backstop for an event that is late or
// lost, when its window closes (else OperationFirstLook after it began), and from there
// the looks back off. Looking within the window as at a change set, or from a second
// after it began, cost about two DescribeStacks a stack that the event made useless.
func nextLook(s *Stack, learned map[string]Place, now time.Time, step, heartbeat time.Duration) time.Time {
	lo, hi := window(s, learned)
	elapsed := now.Sub(s.PhaseSince)
	if s.Phase == Executing {
		if hi <= 0 && elapsed == 0 {
			hi = OperationFirstLook
		}
		if elapsed < hi {
			return now.Add(min(hi-elapsed, heartbeat))
		}
	}
	var d time.Duration
	switch {
	case elapsed < lo:
		d = lo - elapsed
	case elapsed < hi:
		d = max(step, (hi-lo)/40)
	default:
		d = max(FirstCheck, elapsed-hi)
	}
	return now.Add(min(d, heartbeat))
}

// shortStep is the gap between looks in a window while hot stacks are in their windows.
func shortStep(hot int) time.Duration { return max(ShortStep, time.Duration(hot)*lookCost) }

// hot counts the stacks of r that wait within their window at now.
func hot(r *Run, now time.Time) int {
	n := 0
	for _, s := range r.Stacks {
		if !s.Phase.Waits() || s.Held || s.Phase == Executing {
			continue // not looked at in a window: held, or left to its stack event
		}
		if lo, hi := window(s, r.Learned); hi > 0 && now.Sub(s.PhaseSince) >= lo-ShortStep && now.Sub(s.PhaseSince) < hi {
			n++
		}
	}
	return n
}

// learn records what a wait of s that ended at now took: the stack's own timing, kept in
// the graph for its next run, and its place's, for the other stacks of this run.
func learn(r *Run, s *Stack, now time.Time) {
	took := now.Sub(s.PhaseSince)
	switch s.Phase {
	case CreatingChangeSet:
		s.Took.ChangeSet = took
		if r.Learned == nil {
			r.Learned = map[string]Place{}
		}
		p := r.Learned[placeKey(s)]
		if p.Seen == 0 || took < p.Fastest {
			p.Fastest = took
		}
		p.Slowest = max(p.Slowest, took)
		p.Seen++
		r.Learned[placeKey(s)] = p
	case Executing:
		s.Took.Operation = took
		if s.ChangeSetType == "CREATE" {
			return // a create makes every resource: it says little of the updates beside it
		}
		if r.Learned == nil {
			r.Learned = map[string]Place{}
		}
		p := r.Learned[placeKey(s)]
		o := &p.Operations
		if o.Seen == 0 || took < o.Fastest {
			o.Fastest = took
		}
		o.Slowest = max(o.Slowest, took)
		o.Seen++
		r.Learned[placeKey(s)] = p
	}
}

// schedule sets the next look of each waiting stack of r that was just looked at (looked)
// or just began to wait (no check yet): a pure function of its window and now.
//
// A change set made early is not needed before its dependencies finished, so it is held:
// while one of them is still in flight it is looked at once when it is likely made (its
// history's window closing, else the slowest change set of its place the run saw, else
// the prior's end: heldLook), so that, made, it waits Ready and frees its concurrency
// slot; then, still in progress, a quarter of that later. Once they finished, it is looked
// at from when its window opens, or at once if it has opened. Looked at from the window's
// start in short steps, it cost as many looks as a change set on the critical path.
func schedule(r *Run, looked map[string]bool, now time.Time, heartbeat time.Duration) {
	step := shortStep(hot(r, now))
	for name, s := range r.Stacks {
		if !s.Phase.Waits() {
			s.CheckAt, s.Held = time.Time{}, false
			continue
		}
		early := s.Phase == CreatingChangeSet && s.MadeEarly
		switch {
		case early && depsInFlight(r, s):
			likely := heldLook(s, r.Learned)
			switch {
			case looked[name]:
				s.CheckAt = now.Add(min(max(step, likely/4), heartbeat))
			case s.CheckAt.IsZero() || !s.Held:
				s.CheckAt = s.PhaseSince.Add(min(likely, heartbeat))
			}
			s.Held = true
			continue
		case s.Held && !looked[name]:
			lo, _ := window(s, r.Learned)
			s.CheckAt, s.Held = maxTime(now, s.PhaseSince.Add(lo)), false
			continue
		}
		s.Held = false
		if s.CheckAt.IsZero() || looked[name] {
			s.CheckAt = nextLook(s, r.Learned, now, step, heartbeat)
		}
	}
}

// heldLook is how long after it was asked for a held change set (made early) is likely
// made: its own history's window's end, else the slowest change set the run saw made in
// its place, else the end of ChangeSetPrior.
func heldLook(s *Stack, learned map[string]Place) time.Duration {
	if s.History.ChangeSet > 0 {
		_, hi := window(s, learned)
		return hi
	}
	if p := learned[placeKey(s)]; p.Seen > 0 {
		return p.Slowest
	}
	return ChangeSetPrior.To
}

// depsInFlight reports whether a stack s waits for (Requires, After) is still in flight.
func depsInFlight(r *Run, s *Stack) bool {
	for _, list := range [][]string{s.Requires, s.After} {
		for _, dep := range list {
			if d := r.Stacks[dep]; d != nil && d.Phase.InFlight() && !settled(r, d) {
				return true
			}
		}
	}
	return false
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Lingers reports whether the driver should wait in its invocation for the next look at
// r after a step at now, and how long: when it is due within Linger, which a delayed SQS
// message cannot express.
func Lingers(r *Run, now time.Time) (time.Duration, bool) {
	due, ok := nextDue(r)
	if !ok || r.Status != Running || due.Sub(now) >= Linger {
		return 0, false
	}
	return max(due.Sub(now), 0), true
}

// nextDue is the earliest next look at a waiting stack of r.
func nextDue(r *Run) (time.Time, bool) {
	var due time.Time
	for _, s := range r.Stacks {
		if s.Phase.Waits() && (due.IsZero() || s.CheckAt.Before(due)) {
			due = s.CheckAt
		}
	}
	return due, !due.IsZero()
}
