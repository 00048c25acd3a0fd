// Package clock lets the engine, the emulator and their tests share one notion of time.
//
// Production code takes a Clock and is given Real; tests give it a *Fake and move time
// forward explicitly, so a simulation of hours of CloudFormation activity runs in
// milliseconds and never depends on the machine's speed.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock is the time source used throughout cairn.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives the time once d has passed on this clock.
	After(d time.Duration) <-chan time.Time
}

// Real is the wall clock.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Fake is a manually advanced clock. The zero value is not usable; use NewFake.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	changed chan struct{} // closed and replaced whenever a waiter is added
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewFake returns a Fake clock set to start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the fake's current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After returns a channel that fires when the fake clock reaches now+d.
func (f *Fake) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	at := f.now.Add(d)
	if d <= 0 {
		ch <- f.now
		return ch
	}
	f.waiters = append(f.waiters, waiter{at: at, ch: ch})
	close(f.changed)
	f.changed = make(chan struct{})
	return ch
}

// Advance moves the clock forward by d and fires every waiter that became due, in time order.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	sort.SliceStable(f.waiters, func(i, j int) bool { return f.waiters[i].at.Before(f.waiters[j].at) })
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if !w.at.After(f.now) {
			w.ch <- f.now
			continue
		}
		kept = append(kept, w)
	}
	f.waiters = kept
}

// Set moves the clock to t (never backwards) and fires what became due.
func (f *Fake) Set(t time.Time) {
	if d := t.Sub(f.Now()); d > 0 {
		f.Advance(d)
	}
}

// Waiters reports how many After channels are pending; tests use it to know that a
// goroutine has started waiting before they advance the clock.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// WaitForWaiters blocks until at least n After calls are pending or timeout passes on the
// real clock; it reports whether the count was reached.
func (f *Fake) WaitForWaiters(n int, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		f.mu.Lock()
		if len(f.waiters) >= n {
			f.mu.Unlock()
			return true
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}

// Stamp is t as people read it in messages: RFC 3339 in UTC, "(unknown)" when zero.
func Stamp(t time.Time) string {
	if t.IsZero() {
		return "(unknown)"
	}
	return t.UTC().Format(time.RFC3339)
}

// Next reports the earliest time a pending After channel fires at; ok is false when none
// is pending.
func (f *Fake) Next() (at time.Time, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.waiters {
		if !ok || w.at.Before(at) {
			at, ok = w.at, true
		}
	}
	return at, ok
}

// Pace drives f as a simulated world's clock until stop is closed: every millisecond of
// wall time it moves step forward, and when idle has reported true for two milliseconds
// running (nothing in the world is working: no request served, no function running), it
// moves at once to the next pending After when that is further than step. So a world's
// work sees time pass as before, and its idle stretches (a heartbeat's wait, a lease, a
// long poll) cost no wall time. After a move fires an After, Pace skips nothing for
// PaceGrace of wall time: what that woke (a stack's status event on its way to a queue)
// works in process, where idle cannot see it. idle may be nil: then f only moves step a
// millisecond.
func (f *Fake) Pace(stop <-chan struct{}, step time.Duration, idle func() bool) {
	quiet, grace := 0, 0
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Millisecond):
		}
		d := step
		if idle != nil && idle() {
			quiet++
		} else {
			quiet = 0
		}
		if grace > 0 {
			grace--
		} else if quiet >= 2 {
			if at, ok := f.Next(); ok {
				if gap := at.Sub(f.Now()); gap > d {
					d = gap
				}
			}
		}
		if at, ok := f.Next(); ok && !at.After(f.Now().Add(d)) {
			grace = int(PaceGrace / time.Millisecond)
		}
		f.Advance(d)
	}
}

// PaceGrace is how long Pace skips nothing after it fired an After.
const PaceGrace = 50 * time.Millisecond
