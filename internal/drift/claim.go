package drift

import "time"

// DefaultLease is how long a step's claim on a sweep lasts when its invocation has no
// deadline of its own: longer than any one pass takes.
const DefaultLease = 2 * time.Minute

// Trigger is what asks for a step of a sweep, or several of these at once (one SQS batch):
// Seq is the number of a continuation message (Sweep.Continuation), -1 when none asked;
// Event says something else asked — the schedule, a drift status change, the CLI.
type Trigger struct {
	Seq   int
	Event bool
}

// Verdict is what a trigger may do with a sweep.
type Verdict string

const (
	// Drive: claim the sweep and make one pass.
	Drive Verdict = "drive"
	// Stale: a continuation of an older chain, which the sweep moved past, and nothing
	// else: it is dropped, not sent on (one chain per sweep).
	Stale Verdict = "stale"
	// Wait: a live invocation holds the sweep, and the trigger leaves it to the holder.
	Wait Verdict = "wait"
)

// Admit decides what trigger t may do with sw at now, and which continuation to send
// again (resend, -1: none): the sweep's live continuation, when it finds the sweep held —
// to look later, when the holder has handed off (it is stale by then) or died (its claim
// has expired, and the sweep is taken over). One chain of continuations per sweep, never
// lost, never doubled.
func Admit(sw *Sweep, t Trigger, now time.Time) (v Verdict, resend int) {
	live := t.Seq >= sw.Continuation
	switch {
	case !live && !t.Event:
		return Stale, -1
	case sw.Holder != "" && now.Before(sw.HeldUntil):
		if live {
			return Wait, t.Seq
		}
		return Wait, -1
	}
	return Drive, -1
}

// Claim returns sw claimed for one more invocation (token) at now: until the invocation's
// deadline (zero: it has none) or lease from now, whichever comes first. Every save of the
// sweep is conditional on the document as read, so a claim that expired mid-pass loses to
// whoever took the sweep over.
func Claim(sw *Sweep, token string, now, deadline time.Time, lease time.Duration) *Sweep {
	next := sw.Clone()
	next.Holder, next.HeldUntil = token, now.Add(lease)
	if !deadline.IsZero() && deadline.Before(next.HeldUntil) {
		next.HeldUntil = deadline
	}
	next.Invocations++
	return next
}

// HandOff returns sw released after a pass that did not finish it, with the number of the
// one continuation that may resume it: the caller sends that continuation before it saves,
// so a save that fails still leaves the sweep continued. A finished sweep (Done) is not
// handed off but removed.
func HandOff(sw *Sweep) (*Sweep, int) {
	next := sw.Clone()
	next.Continuation++
	next.Holder, next.HeldUntil = "", time.Time{}
	return next, next.Continuation
}
