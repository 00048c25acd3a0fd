// Package statestore keeps cairn's persistent graph (package state) and its lock in S3,
// using S3 alone.
//
// Stacker's persistent graph locks with a tag on the state object, set and checked in two
// calls, read before locking, never expiring and written unconditionally: two runs can both
// win, a run can act on a stale graph and a crashed run locks everyone out. Here the lock is
// its own object, created with If-None-Match: *, renewed and taken over (once expired) with
// a compare-and-swap on its ETag, and released only while it is still ours. The graph is
// read only under the lock and written with If-Match on the ETag it was read with, after
// checking that the lock is still ours (fencing), so a writer whose lease was taken over
// fails before it writes, and a lost race is a typed error that never overwrites.
//
// The graph and its lock are the objects bucket.StateKey and bucket.LockKey name.
// Bucket versioning gives the graph's history; without it cairn warns loudly.
package statestore

import (
	"errors"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn/internal/clock"
)

// Sentinel errors; wrapped with the object and what to do.
var (
	// ErrNotFound: the state object (or the requested version of it) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrLockLost: the lock was taken over, released or force-unlocked since it was acquired.
	ErrLockLost = errors.New("lock lost")
	// ErrStepping: another invocation of the same run is in a step (Lock.StepUntil); wait
	// for it and Resume again (SteppingError says until when at most).
	ErrStepping = errors.New("another invocation of the run is in a step")
	// ErrLeaseExpired: the lock is (about to be) past its lease; Renew it before acting.
	ErrLeaseExpired = errors.New("lease expired")
	// ErrNotLocked: there is no lock to remove.
	ErrNotLocked = errors.New("not locked")
)

// LockedError reports that another run holds a live lock.
type LockedError struct {
	Holder *Lock
	// Now is when the lock was found held.
	Now time.Time
}

func (e *LockedError) Error() string {
	h := e.Holder
	return fmt.Sprintf("state %s/%s is locked by run %s (%s) since %s until %s: wait for that run to finish, or once the lease has expired run `cairn unlock %s %s`",
		h.Namespace, h.Key, orNone(h.RunID), h.Owner, clock.Stamp(h.AcquiredAt), clock.Stamp(h.ExpiresAt), h.Namespace, h.Key)
}

// ConflictError reports a state write that lost a race: the object changed since it was read
// (or appeared although it was missing). Nothing was overwritten.
type ConflictError struct {
	Namespace, Key string
	// ReadGeneration is the generation the writer read (0: the object was missing).
	ReadGeneration int64
	Err            error
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("state %s/%s: changed by another writer since generation %d was read, nothing written: re-read it under the lock and retry (%v)",
		e.Namespace, e.Key, e.ReadGeneration, e.Err)
}

func (e *ConflictError) Unwrap() error { return e.Err }

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
