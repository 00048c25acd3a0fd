package run

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// ResourceEvent is one of CloudFormation's events about a resource of a stack (its
// DescribeStackEvents entry, the stack's own events left out), as the run keeps it: the
// stack's section of the run page lists the resources and their events from these. Reason
// is scrubbed of the run's secrets before the run records it, as every text CloudFormation
// writes (the deployer's scrub.go).
type ResourceEvent struct {
	LogicalID  string    `json:"id"`
	Type       string    `json:"type,omitempty"`
	PhysicalID string    `json:"physical,omitempty"`
	Status     string    `json:"status"`
	Reason     string    `json:"reason,omitempty"`
	Time       time.Time `json:"time"`
}

// Failed reports whether the event is a failure (CREATE_FAILED, UPDATE_FAILED, ...).
func (e ResourceEvent) Failed() bool { return strings.HasSuffix(e.Status, "_FAILED") }

func (e ResourceEvent) same(o ResourceEvent) bool {
	return e.LogicalID == o.LogicalID && e.Status == o.Status && e.Time.Equal(o.Time) && e.Reason == o.Reason
}

// The bounds of the resource events a run keeps: the run document is read and written at
// every step, so it must not grow with a stack's history. A stack keeps at most
// MaxStackEvents of its events, the run at most MaxRunEvents over all its stacks (each
// stack then keeps as many as the others allow it: see boundEvents); what is left out is
// counted (Stack.EventsDropped). Failures are kept first: they say why a stack failed.
const (
	MaxStackEvents = 100
	MaxRunEvents   = 2000
)

// recordEvents adds what a look at stack s saw of its resources' events to those s keeps:
// an event seen again (an operation's events are read again once it settles again, after
// a ContinueUpdateRollback) is kept once; they stay in time order, at most limit of them.
func recordEvents(s *Stack, seen []ResourceEvent, limit int) {
	all := slices.Clone(s.Events)
	for _, e := range seen {
		if !slices.ContainsFunc(all, e.same) {
			all = append(all, e)
		}
	}
	slices.SortStableFunc(all, func(a, b ResourceEvent) int { return a.Time.Compare(b.Time) })
	var dropped int
	s.Events, dropped = keepEvents(all, limit)
	s.EventsDropped += dropped
}

// keepEvents keeps at most limit of events (in time order): the failures first, earliest
// first (the first is the cause, the later ones often cancelled siblings), then the
// latest others. It returns them in time order, and how many it left out.
func keepEvents(events []ResourceEvent, limit int) ([]ResourceEvent, int) {
	if len(events) <= limit {
		return events, 0
	}
	keep := make([]bool, len(events))
	n := 0
	for i, e := range events {
		if n < limit && e.Failed() {
			keep[i] = true
			n++
		}
	}
	for i := len(events) - 1; i >= 0 && n < limit; i-- {
		if !keep[i] {
			keep[i] = true
			n++
		}
	}
	kept := make([]ResourceEvent, 0, limit)
	for i, e := range events {
		if keep[i] {
			kept = append(kept, e)
		}
	}
	return kept, len(events) - len(kept)
}

// boundEvents keeps the run's events under total: when its stacks hold more, each keeps at
// most the largest share the total allows with the others' (a stack with few events
// keeps them all, the others are cut to the same length), chosen as keepEvents chooses.
func boundEvents(r *Run, total int) {
	var counts []int
	sum := 0
	for _, s := range r.Stacks {
		if len(s.Events) > 0 {
			counts = append(counts, len(s.Events))
			sum += len(s.Events)
		}
	}
	if sum <= total {
		return
	}
	share := eventShare(counts, total)
	for _, s := range r.Stacks {
		if len(s.Events) > share {
			var dropped int
			s.Events, dropped = keepEvents(s.Events, share)
			s.EventsDropped += dropped
		}
	}
}

// eventShare is the largest n such that the counts, each cut to n, sum to at most total.
func eventShare(counts []int, total int) int {
	slices.Sort(counts)
	left := total
	for i, c := range counts {
		rest := len(counts) - i // the stacks not yet served, all holding c or more
		if c*rest > left {
			return left / rest
		}
		left -= c
	}
	return counts[len(counts)-1]
}

// Resource is a resource of a stack as its events tell it: its latest status, and
// whether (and why) it failed in the run.
type Resource struct {
	LogicalID  string
	Type       string
	PhysicalID string
	// Status is its latest status, at Time.
	Status string
	Time   time.Time
	// Failure is the status of its first failure in the run ("" when it did not fail),
	// Reason that failure's reason, else its latest event's.
	Failure string
	Reason  string
	// first is when it first failed.
	first time.Time
}

// Resources are the resources that events (in time order) concern: the failed ones
// first, in the order they failed (the first is the cause), then the others by logical id.
func Resources(events []ResourceEvent) []Resource {
	idx := map[string]int{}
	var out []Resource
	for _, e := range events {
		i, ok := idx[e.LogicalID]
		if !ok {
			i = len(out)
			idx[e.LogicalID] = i
			out = append(out, Resource{LogicalID: e.LogicalID})
		}
		r := &out[i]
		r.Type, r.Status, r.Time = cmp.Or(e.Type, r.Type), e.Status, e.Time
		r.PhysicalID = cmp.Or(e.PhysicalID, r.PhysicalID)
		if r.Failure == "" {
			r.Reason = e.Reason
		}
		if e.Failed() && r.Failure == "" {
			r.Failure, r.Reason, r.first = e.Status, e.Reason, e.Time
		}
	}
	slices.SortStableFunc(out, func(a, b Resource) int {
		switch {
		case a.Failure != "" && b.Failure != "":
			return a.first.Compare(b.first)
		case a.Failure != "":
			return -1
		case b.Failure != "":
			return 1
		}
		return strings.Compare(a.LogicalID, b.LogicalID)
	})
	return out
}
