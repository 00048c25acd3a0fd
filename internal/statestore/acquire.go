package statestore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/objects"
)

const maxAcquireAttempts = 5

// errNotCairnLock: the lock object exists but cannot be read as a lock.
var errNotCairnLock = errors.New("not a cairn lock")

// Acquire takes the lock on namespace/key for runID, taking over an expired one (logged
// and recorded in TakenOverFrom). A live lock held by someone else gives *LockedError.
func (s *Store) Acquire(ctx context.Context, namespace, key, runID string, owner Owner) (*Lock, error) {
	if err := checkNames(namespace, key); err != nil {
		return nil, err
	}
	lockKey := bucket.LockKey(namespace, key)
	var lastErr error
	for range maxAcquireAttempts {
		now := s.clock().Now().UTC()
		l := &Lock{
			Namespace: namespace, Key: key, RunID: runID, Owner: owner,
			Token: newToken(), AcquiredAt: now, ExpiresAt: now.Add(s.lease()), Generation: 1,
		}
		etag, err := s.putLock(ctx, l, "", true)
		if err == nil {
			l.etag = etag
			return l, nil
		}
		if !errors.Is(err, objects.ErrConflict) {
			return nil, fmt.Errorf("lock: create: %w", err)
		}
		// Someone holds it (or held it): look at who, and whether the lease is over.
		held, err := s.getLock(ctx, namespace, key)
		if errors.Is(err, ErrNotLocked) {
			lastErr = fmt.Errorf("lock s3://%s/%s was released while acquiring it", s.Bucket, lockKey)
			continue // released meanwhile: try to create it again
		}
		if err != nil {
			return nil, err
		}
		now = s.clock().Now().UTC()
		if now.Before(held.ExpiresAt.Add(s.skew())) {
			return nil, &LockedError{Holder: held, Now: now}
		}
		prev := *held
		prev.TakenOverFrom = nil
		l.AcquiredAt, l.ExpiresAt = now, now.Add(s.lease())
		l.Generation = held.Generation + 1
		l.TakenOverFrom = &prev
		etag, err = s.putLock(ctx, l, held.etag, false)
		if err == nil {
			l.etag = etag
			s.logger().Warn("state: took over an expired lock",
				"namespace", namespace, "key", key, "run", runID, "owner", owner.String(),
				"previous_run", held.RunID, "previous_owner", held.Owner.String(),
				"previous_token", held.Token, "expired_at", held.ExpiresAt)
			return l, nil
		}
		if !errors.Is(err, objects.ErrConflict) {
			return nil, fmt.Errorf("lock: take over expired lock of run %s: %w", held.RunID, err)
		}
		lastErr = fmt.Errorf("lock s3://%s/%s changed while taking it over: %w", s.Bucket, lockKey, err)
	}
	return nil, fmt.Errorf("%w; gave up after %d attempts: retry later", lastErr, maxAcquireAttempts)
}

// Resume re-attaches a later trigger of run runID (a stack event, a heartbeat) to the lock
// that run acquired in an earlier invocation: with a compare-and-swap on the lock's ETag it
// records owner as the holder and renews the lease, so any other invocation still holding
// the old Lock fails its next Check. A lock that is missing, or held by another run, gives
// ErrLockLost: the run must stop.
func (s *Store) Resume(ctx context.Context, namespace, key, runID string, owner Owner) (*Lock, error) {
	if err := checkNames(namespace, key); err != nil {
		return nil, err
	}
	lockKey := bucket.LockKey(namespace, key)
	var lastErr error
	for range maxAcquireAttempts {
		held, err := s.getLock(ctx, namespace, key)
		if errors.Is(err, ErrNotLocked) {
			return nil, fmt.Errorf("resume run %s on state %s/%s: its lock was removed (released or force-unlocked): stop the run: %w", orNone(runID), namespace, key, ErrLockLost)
		}
		if err != nil {
			return nil, err
		}
		if held.RunID != runID || runID == "" {
			return nil, fmt.Errorf("resume run %s on state %s/%s: the lock is now held by %s: stop the run: %w", orNone(runID), namespace, key, held, ErrLockLost)
		}
		now := s.clock().Now().UTC()
		if held.Owner != owner && now.Before(held.StepUntil) {
			return nil, &SteppingError{Holder: held.Owner, Until: held.StepUntil}
		}
		next := *held
		next.Owner, next.ExpiresAt, next.Renewals = owner, now.Add(s.lease()), held.Renewals+1
		next.StepUntil = now.Add(s.stepClaim())
		etag, err := s.putLock(ctx, &next, held.etag, false)
		if err == nil {
			next.etag = etag
			if !now.Before(held.ExpiresAt) {
				s.logger().Info("state: resumed a run whose lease had expired (nobody took it over)",
					"namespace", namespace, "key", key, "run", runID, "expired_at", held.ExpiresAt)
			}
			return &next, nil
		}
		if !errors.Is(err, objects.ErrConflict) {
			return nil, fmt.Errorf("lock: resume run %s: %w", runID, err)
		}
		lastErr = fmt.Errorf("lock s3://%s/%s changed while resuming run %s: %w", s.Bucket, lockKey, runID, err)
	}
	return nil, fmt.Errorf("%w; gave up after %d attempts: retry later", lastErr, maxAcquireAttempts)
}

// SteppingError is Resume's answer while another invocation of the same run is in a step:
// Holder, until it calls EndStep, or Until at the latest.
type SteppingError struct {
	Holder Owner
	Until  time.Time
}

func (e *SteppingError) Error() string {
	return fmt.Sprintf("%s is in a step of the run until %s at the latest: wait for it", e.Holder, clock.Stamp(e.Until))
}

func (e *SteppingError) Unwrap() error { return ErrStepping }

// EndStep says the step Resume began with l is over: another invocation of the run may
// Resume it now. A lock that changed since (taken over, or resumed past a claim that ran
// out) is left as it is, with ErrLockLost.
func (s *Store) EndStep(ctx context.Context, l *Lock) error {
	if err := usable(l); err != nil {
		return err
	}
	if l.StepUntil.IsZero() {
		return nil
	}
	next := *l
	next.StepUntil = time.Time{}
	etag, err := s.putLock(ctx, &next, l.etag, false)
	if errors.Is(err, objects.ErrConflict) {
		return s.lost(ctx, l, "end step")
	}
	if err != nil {
		return fmt.Errorf("lock: end step: %w", err)
	}
	l.StepUntil, l.etag = time.Time{}, etag
	return nil
}

// Renew extends the lease of l from now, only while the lock object is still the one l
// wrote (If-Match). It fails with ErrLockLost when the lock was taken over or removed.
func (s *Store) Renew(ctx context.Context, l *Lock) error {
	if err := usable(l); err != nil {
		return err
	}
	next := *l
	now := s.clock().Now().UTC()
	next.ExpiresAt = now.Add(s.lease())
	next.Renewals++
	etag, err := s.putLock(ctx, &next, l.etag, false)
	if errors.Is(err, objects.ErrConflict) {
		return s.lost(ctx, l, "renew")
	}
	if err != nil {
		return fmt.Errorf("lock: renew: %w", err)
	}
	l.ExpiresAt, l.Renewals, l.etag = next.ExpiresAt, next.Renewals, etag
	return nil
}

// Release deletes the lock only while it is still ours; otherwise it returns ErrLockLost
// and leaves the lock of whoever holds it now untouched.
func (s *Store) Release(ctx context.Context, l *Lock) error {
	// The HEAD makes a lost lock an error even against an S3 that deletes a missing key
	// happily; the conditional delete closes the window after it.
	if err := s.headLock(ctx, l); err != nil {
		return err
	}
	err := objects.Delete(ctx, s.S3, s.Bucket, bucket.LockKey(l.Namespace, l.Key), l.etag)
	if errors.Is(err, objects.ErrConflict) {
		return s.lost(ctx, l, "release")
	}
	if err != nil {
		return fmt.Errorf("lock: release: %w", err)
	}
	return nil
}

// Check verifies that l is still held and its lease has not (nearly) run out. Call it
// before every CloudFormation mutation; Write calls it before every state write.
func (s *Store) Check(ctx context.Context, l *Lock) error {
	if err := usable(l); err != nil {
		return err
	}
	now := s.clock().Now()
	if !now.Before(l.ExpiresAt.Add(-s.skew())) {
		return fmt.Errorf("lock on state %s/%s of run %s: lease ends %s (now %s, margin %s): renew the lock before acting: %w",
			l.Namespace, l.Key, orNone(l.RunID), clock.Stamp(l.ExpiresAt), clock.Stamp(now), s.skew(), ErrLeaseExpired)
	}
	return s.headLock(ctx, l)
}

// headLock confirms with a conditional HEAD that the lock object is still the one l wrote.
func (s *Store) headLock(ctx context.Context, l *Lock) error {
	if err := usable(l); err != nil {
		return err
	}
	lockKey := bucket.LockKey(l.Namespace, l.Key)
	_, err := s.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.Bucket, Key: &lockKey, IfMatch: aws.String(l.etag)})
	if err == nil {
		return nil
	}
	if awserr.PreconditionFailed(err) || awserr.NotFound(err) {
		return s.lost(ctx, l, "check")
	}
	return fmt.Errorf("lock s3://%s/%s: check: %w", s.Bucket, lockKey, err)
}

// usable refuses a Lock that did not come from Acquire or Resume (one decoded from JSON, say):
// without the ETag it wrote, no operation could be made conditional on it.
func usable(l *Lock) error {
	if l == nil {
		return fmt.Errorf("state: no lock given: %w", ErrLockLost)
	}
	if l.etag == "" {
		return fmt.Errorf("lock on state %s/%s of run %s was not obtained from Acquire or Resume in this process: call Resume: %w",
			l.Namespace, l.Key, orNone(l.RunID), ErrLockLost)
	}
	return nil
}

// lost builds the ErrLockLost error for l, naming the current holder when there is one.
func (s *Store) lost(ctx context.Context, l *Lock, op string) error {
	now, err := s.getLock(ctx, l.Namespace, l.Key)
	switch {
	case err == nil:
		return fmt.Errorf("%s lock on state %s/%s of run %s (token %s): now held by %s; stop and let that run continue: %w",
			op, l.Namespace, l.Key, orNone(l.RunID), l.Token, now, ErrLockLost)
	case errors.Is(err, ErrNotLocked):
		return fmt.Errorf("%s lock on state %s/%s of run %s (token %s): the lock was removed (released or force-unlocked): stop; a new run must acquire it: %w",
			op, l.Namespace, l.Key, orNone(l.RunID), l.Token, ErrLockLost)
	default:
		return fmt.Errorf("%s lock on state %s/%s of run %s (token %s): no longer ours (%v): %w", op, l.Namespace, l.Key, orNone(l.RunID), l.Token, err, ErrLockLost)
	}
}

// ForceUnlock removes the lock on namespace/key. An expired lock is removed freely; a live
// one only with force. It returns the lock it removed (to say who held it); a live lock
// without force gives *LockedError, no lock gives ErrNotLocked.
func (s *Store) ForceUnlock(ctx context.Context, namespace, key string, force bool) (*Lock, error) {
	if err := checkNames(namespace, key); err != nil {
		return nil, err
	}
	held, err := s.getLock(ctx, namespace, key)
	if errors.Is(err, errNotCairnLock) && force {
		err = nil // remove it all the same: that is what the message asks for
	}
	if err != nil {
		return nil, err
	}
	now := s.clock().Now().UTC()
	live := now.Before(held.ExpiresAt)
	if live && !force {
		return held, &LockedError{Holder: held, Now: now}
	}
	err = objects.Delete(ctx, s.S3, s.Bucket, bucket.LockKey(namespace, key), held.etag)
	if errors.Is(err, objects.ErrConflict) {
		return nil, fmt.Errorf("unlock state %s/%s: the lock changed while removing it (renewed or taken over): look again with `cairn unlock %s %s`", namespace, key, namespace, key)
	}
	if err != nil {
		return nil, fmt.Errorf("unlock state %s/%s: %w", namespace, key, err)
	}
	s.logger().Warn("state: removed lock by hand", "namespace", namespace, "key", key, "live", live,
		"run", held.RunID, "owner", held.Owner.String(), "token", held.Token, "expires_at", held.ExpiresAt)
	return held, nil
}

// CurrentLock returns the lock on namespace/key as stored, or ErrNotLocked.
func (s *Store) CurrentLock(ctx context.Context, namespace, key string) (*Lock, error) {
	if err := checkNames(namespace, key); err != nil {
		return nil, err
	}
	l, err := s.getLock(ctx, namespace, key)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (s *Store) getLock(ctx context.Context, namespace, key string) (*Lock, error) {
	lockKey := bucket.LockKey(namespace, key)
	o, err := objects.Get(ctx, s.S3, s.Bucket, lockKey, "", 0)
	if errors.Is(err, objects.ErrNotFound) {
		return nil, fmt.Errorf("state %s/%s: no lock at %s: %w", namespace, key, bucket.URI(s.Bucket, lockKey), ErrNotLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	var l Lock
	if err := json.Unmarshal(o.Body, &l); err != nil || l.Token == "" {
		if err == nil {
			err = errors.New("no token")
		}
		// The ETag still lets ForceUnlock remove exactly this object.
		bad := &Lock{Namespace: namespace, Key: key, etag: o.ETag}
		return bad, fmt.Errorf("lock s3://%s/%s is not a cairn lock (%v): inspect it, then remove it with `cairn unlock %s %s --force`: %w",
			s.Bucket, lockKey, err, namespace, key, errNotCairnLock)
	}
	l.etag = o.ETag
	return &l, nil
}

// putLock writes l as the lock object, created (create) or replacing ifMatch.
func (s *Store) putLock(ctx context.Context, l *Lock, ifMatch string, create bool) (string, error) {
	lockKey := bucket.LockKey(l.Namespace, l.Key)
	if !create && ifMatch == "" {
		return "", fmt.Errorf("lock %s: refusing an unconditional write", bucket.URI(s.Bucket, lockKey))
	}
	return objects.WriteJSON(ctx, s.S3, s.Bucket, lockKey, l, objects.Write{Create: create, IfMatch: ifMatch})
}

func newToken() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b)
}
