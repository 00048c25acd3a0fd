package statestore

import (
	"fmt"
	"time"

	"github.com/cairn-dev/cairn/internal/clock"
)

// Owner identifies the process holding a lock: in Lambda, the function name and the
// request id of the invocation, so logs lead straight to it.
type Owner struct {
	Function  string `json:"function"`
	RequestID string `json:"request_id"`
}

func (o Owner) String() string {
	return fmt.Sprintf("function %s, request %s", orNone(o.Function), orNone(o.RequestID))
}

// Lock is a held (or observed) lock on one persistent graph. It is also the content of the
// lock object. A Lock returned by Acquire carries the ETag of the lock object it wrote and
// the ETag of the state it read; it is used by one goroutine at a time.
type Lock struct {
	Namespace  string    `json:"namespace"`
	Key        string    `json:"key"`
	RunID      string    `json:"run_id"`
	Owner      Owner     `json:"owner"`
	Token      string    `json:"token"`
	AcquiredAt time.Time `json:"acquired_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	// Generation counts the holders of the lock object since it was last created: 1 for a
	// fresh lock, one more for each takeover.
	Generation int64 `json:"generation"`
	// Renewals counts renewals by this holder (it also keeps every write's ETag distinct).
	Renewals int64 `json:"renewals"`
	// TakenOverFrom is the expired lock this one replaced, if any.
	TakenOverFrom *Lock `json:"taken_over_from,omitempty"`
	// StepUntil, while in the future, says the Owner (an invocation of the run) is in a
	// step: Resume by another invocation of the same run waits for it (ErrStepping)
	// instead of taking the lock from under it; EndStep clears it. A holder that died
	// mid-step holds it no longer than Store.StepClaim.
	StepUntil time.Time `json:"step_until,omitzero"`

	etag      string // of the lock object as this holder last wrote it
	stateRead bool   // Read was called under this lock
	stateETag string // ETag of the state as read or last written; "" when it was missing
	stateGen  int64  // generation of the state as read or last written
}

func (l *Lock) String() string {
	return fmt.Sprintf("run %s (%s, token %s) since %s until %s", orNone(l.RunID), l.Owner, l.Token, clock.Stamp(l.AcquiredAt), clock.Stamp(l.ExpiresAt))
}
