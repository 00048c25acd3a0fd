// Package state keeps cairn's persistent graph and its lock in S3, using S3 alone.
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
package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/clock"
)

// DefaultLease is how long a lock is held without renewal: a deployer trigger renews it,
// and a crashed run frees it for takeover once it passes.
const DefaultLease = 15 * time.Minute

// DefaultSkew is the clock difference between machines the lease tolerates: a holder stops
// trusting its lock Skew before it expires, and others take it over only Skew after, so two
// clocks that differ by less than Skew never both believe they hold it.
const DefaultSkew = 30 * time.Second

// S3API is the part of *s3.Client the store uses.
type S3API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	ListObjectVersions(ctx context.Context, in *s3.ListObjectVersionsInput, optFns ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error)
	GetBucketVersioning(ctx context.Context, in *s3.GetBucketVersioningInput, optFns ...func(*s3.Options)) (*s3.GetBucketVersioningOutput, error)
}

// Store reads and writes persistent graphs and their locks in one bucket.
type Store struct {
	S3     S3API
	Bucket string
	// Clock is the time source for leases (default clock.Real).
	Clock clock.Clock
	// Logger receives takeovers, forced unlocks, rebuilds and the versioning warning
	// (default slog.Default()).
	Logger *slog.Logger
	// Lease is how long Acquire and Renew hold the lock (default DefaultLease).
	Lease time.Duration
	// Skew is the tolerated clock difference between machines (default DefaultSkew;
	// negative for none).
	Skew time.Duration
}

// Sentinel errors; wrapped with the object and what to do.
var (
	// ErrNotFound: the state object (or the requested version of it) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrLockLost: the lock was taken over, released or force-unlocked since it was acquired.
	ErrLockLost = errors.New("lock lost")
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

func (s *Store) clock() clock.Clock {
	if s.Clock == nil {
		return clock.Real
	}
	return s.Clock
}

func (s *Store) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

func (s *Store) lease() time.Duration {
	if s.Lease <= 0 {
		return DefaultLease
	}
	return s.Lease
}

func (s *Store) skew() time.Duration {
	if s.Skew < 0 {
		return 0
	}
	if s.Skew == 0 {
		return DefaultSkew
	}
	return s.Skew
}

// checkNames refuses names that would escape their prefix or make ambiguous keys.
func checkNames(namespace, key string) error {
	for _, v := range []struct{ what, s string }{{"namespace", namespace}, {"graph key", key}} {
		if v.s == "" || strings.ContainsAny(v.s, "/\\") || v.s == "." || v.s == ".." || strings.TrimSpace(v.s) != v.s {
			return fmt.Errorf("state: invalid %s %q: use a non-empty name without slashes or surrounding spaces", v.what, v.s)
		}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
