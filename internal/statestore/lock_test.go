package statestore_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/statestore"
)

var (
	ownerA = statestore.Owner{Function: "cairn-deployer", RequestID: "req-a"}
	ownerB = statestore.Owner{Function: "cairn-deployer", RequestID: "req-b"}
)

func TestAcquireWritesLockObjectAndRefusesSecondHolder(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(nil)

	a, err := s.Acquire(ctx, "shop", "main", "run-a", ownerA)
	if err != nil {
		t.Fatal(err)
	}
	var stored statestore.Lock
	if err := json.Unmarshal([]byte(e.getObject(t, "locks/shop/main.lock")), &stored); err != nil {
		t.Fatalf("lock object is not JSON: %v", err)
	}
	if stored.Token != a.Token || stored.RunID != "run-a" || stored.Owner != ownerA ||
		!stored.AcquiredAt.Equal(t0) || !stored.ExpiresAt.Equal(t0.Add(10*time.Minute)) {
		t.Errorf("lock object = %+v, want token %s, run-a, %v, acquired %v, expiring %v", stored, a.Token, ownerA, t0, t0.Add(10*time.Minute))
	}

	_, err = s.Acquire(ctx, "shop", "main", "run-b", ownerB)
	var locked *statestore.LockedError
	if !errors.As(err, &locked) {
		t.Fatalf("second Acquire: err = %v, want *LockedError", err)
	}
	for _, want := range []string{"shop/main", "run-a", "cairn-deployer", "req-a", "2026-11-30T08:00:00Z", "2026-11-30T08:10:00Z", "cairn unlock shop main"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("LockedError message %q lacks %q", err, want)
		}
	}
	// Another key is independent.
	if _, err := s.Acquire(ctx, "shop", "other", "run-b", ownerB); err != nil {
		t.Errorf("Acquire of another key: %v", err)
	}
}

func TestTakeoverAfterExpiry(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(nil)
	a, err := s.Acquire(ctx, "shop", "main", "run-a", ownerA)
	if err != nil {
		t.Fatal(err)
	}

	// At the lease's end, but within the skew allowance, it is still A's.
	e.clock.Advance(10 * time.Minute)
	var locked *statestore.LockedError
	if _, err := s.Acquire(ctx, "shop", "main", "run-b", ownerB); !errors.As(err, &locked) {
		t.Fatalf("Acquire at expiry within skew: err = %v, want *LockedError", err)
	}

	e.clock.Advance(statestore.DefaultSkew + time.Second)
	b, err := s.Acquire(ctx, "shop", "main", "run-b", ownerB)
	if err != nil {
		t.Fatalf("Acquire after expiry: %v", err)
	}
	if b.TakenOverFrom == nil || b.TakenOverFrom.Token != a.Token || b.TakenOverFrom.RunID != "run-a" {
		t.Fatalf("TakenOverFrom = %+v, want run-a's lock (token %s)", b.TakenOverFrom, a.Token)
	}
	if b.Token == a.Token || b.Generation != 2 || !b.AcquiredAt.Equal(e.clock.Now()) {
		t.Errorf("new lock = %+v, want a fresh token, generation 2, acquired now", b)
	}
	var stored statestore.Lock
	if err := json.Unmarshal([]byte(e.getObject(t, "locks/shop/main.lock")), &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Token != b.Token || stored.TakenOverFrom == nil || stored.TakenOverFrom.Token != a.Token {
		t.Errorf("stored lock = %+v: takeover not recorded", stored)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "took over an expired lock") || !strings.Contains(logs, "previous_run=run-a") {
		t.Errorf("takeover not logged: %s", logs)
	}
	if err := s.Check(ctx, b); err != nil {
		t.Errorf("Check of the new holder: %v", err)
	}
	if err := s.Check(ctx, a); err == nil {
		t.Error("Check of the old holder succeeded")
	}
}

func TestRenewExtendsLease(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(nil)
	a, err := s.Acquire(ctx, "shop", "main", "run-a", ownerA)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(8 * time.Minute)
	if err := s.Renew(ctx, a); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if want := t0.Add(18 * time.Minute); !a.ExpiresAt.Equal(want) {
		t.Errorf("ExpiresAt after renew = %v, want %v", a.ExpiresAt, want)
	}
	// Past the original lease, the renewed lock holds others off and still checks out.
	e.clock.Advance(9 * time.Minute)
	_, err = s.Acquire(ctx, "shop", "main", "run-b", ownerB)
	var locked *statestore.LockedError
	if !errors.As(err, &locked) || !locked.Holder.ExpiresAt.Equal(t0.Add(18*time.Minute)) {
		t.Fatalf("Acquire after the original lease: err = %v, want *LockedError until 08:18", err)
	}
	if err := s.Check(ctx, a); err != nil {
		t.Errorf("Check after renew: %v", err)
	}
	// Without another renewal the holder itself stops trusting the lock before it ends.
	e.clock.Advance(time.Minute - statestore.DefaultSkew)
	if err := s.Check(ctx, a); !errors.Is(err, statestore.ErrLeaseExpired) {
		t.Errorf("Check within the skew margin: err = %v, want ErrLeaseExpired", err)
	}
	if err := s.Renew(ctx, a); err != nil {
		t.Fatalf("second Renew: %v", err)
	}
	if err := s.Check(ctx, a); err != nil {
		t.Errorf("Check after the second renew: %v", err)
	}
}

// lostLock builds situations in which a's lock is no longer a's.
var lostLock = []struct {
	name string
	lose func(t *testing.T, e *env, s *statestore.Store, a *statestore.Lock) (current *statestore.Lock)
}{
	{"taken over after expiry", func(t *testing.T, e *env, s *statestore.Store, a *statestore.Lock) *statestore.Lock {
		e.clock.Advance(11*time.Minute + statestore.DefaultSkew)
		b, err := s.Acquire(context.Background(), a.Namespace, a.Key, "run-b", ownerB)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}},
	{"force-unlocked and acquired by another", func(t *testing.T, e *env, s *statestore.Store, a *statestore.Lock) *statestore.Lock {
		if _, err := s.ForceUnlock(context.Background(), a.Namespace, a.Key, true); err != nil {
			t.Fatal(err)
		}
		b, err := s.Acquire(context.Background(), a.Namespace, a.Key, "run-b", ownerB)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}},
	{"force-unlocked", func(t *testing.T, e *env, s *statestore.Store, a *statestore.Lock) *statestore.Lock {
		if _, err := s.ForceUnlock(context.Background(), a.Namespace, a.Key, true); err != nil {
			t.Fatal(err)
		}
		return nil
	}},
	{"already released", func(t *testing.T, e *env, s *statestore.Store, a *statestore.Lock) *statestore.Lock {
		if err := s.Release(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		return nil
	}},
}

func TestReleaseOfLockNoLongerOursFailsCleanly(t *testing.T) {
	for _, tc := range lostLock {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			s := e.store(nil)
			a, err := s.Acquire(ctx, "shop", "main", "run-a", ownerA)
			if err != nil {
				t.Fatal(err)
			}
			current := tc.lose(t, e, s, a)

			err = s.Release(ctx, a)
			if !errors.Is(err, statestore.ErrLockLost) {
				t.Fatalf("Release: err = %v, want ErrLockLost", err)
			}
			if !strings.Contains(err.Error(), "run-a") {
				t.Errorf("error %q does not name the run that lost the lock", err)
			}
			if err := s.Renew(ctx, a); !errors.Is(err, statestore.ErrLockLost) {
				t.Errorf("Renew: err = %v, want ErrLockLost", err)
			}
			if current != nil {
				if !strings.Contains(err.Error(), "run-b") {
					t.Errorf("error %q does not name the current holder", err)
				}
				if err := s.Check(ctx, current); err != nil {
					t.Errorf("the current holder's lock was disturbed: %v", err)
				}
			} else if e.objectExists(t, "locks/shop/main.lock") {
				t.Error("a lock object appeared")
			}
		})
	}
}

func TestFencedWriterCannotWrite(t *testing.T) {
	for _, tc := range lostLock {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			// The fenced writer's own clock stands still, as if it were far behind: only
			// the lock object can stop it.
			stale := e.store(nil)
			stale.Clock = clock.NewFake(t0)
			s := e.store(nil)

			a, err := stale.Acquire(ctx, "shop", "main", "run-a", ownerA)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := stale.Read(ctx, a); !errors.Is(err, statestore.ErrNotFound) {
				t.Fatalf("first Read: err = %v, want ErrNotFound", err)
			}
			g := twoStacks()
			if err := stale.Write(ctx, a, g); err != nil {
				t.Fatal(err)
			}
			before := e.getObject(t, "state/shop/main.json")

			tc.lose(t, e, s, a)
			g.Stacks["vpc"].Status = "UPDATE_COMPLETE"
			err = stale.Write(ctx, a, g)
			if !errors.Is(err, statestore.ErrLockLost) {
				t.Fatalf("fenced Write: err = %v, want ErrLockLost", err)
			}
			if after := e.getObject(t, "state/shop/main.json"); after != before {
				t.Errorf("fenced writer changed the state:\nbefore %s\nafter %s", before, after)
			}
			if err := stale.Check(ctx, a); !errors.Is(err, statestore.ErrLockLost) {
				t.Errorf("Check: err = %v, want ErrLockLost", err)
			}
		})
	}
}

func TestWriteRefusedOnceLeaseRunsOut(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(nil)
	a, err := s.Acquire(ctx, "shop", "main", "run-a", ownerA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, a); !errors.Is(err, statestore.ErrNotFound) {
		t.Fatal(err)
	}
	e.clock.Advance(10 * time.Minute)
	if err := s.Write(ctx, a, twoStacks()); !errors.Is(err, statestore.ErrLeaseExpired) {
		t.Fatalf("Write after the lease: err = %v, want ErrLeaseExpired", err)
	}
	if e.objectExists(t, "state/shop/main.json") {
		t.Error("state written after the lease ran out")
	}
}

func TestGraphIsReadOnlyUnderTheLock(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	rec := &recorder{S3API: e.s3}
	s := e.store(rec)
	const stateObj = "state/shop/main.json"

	a, err := s.Acquire(ctx, "shop", "main", "run-a", ownerA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, a); !errors.Is(err, statestore.ErrNotFound) {
		t.Fatal(err)
	}
	if err := s.Write(ctx, a, twoStacks()); err != nil {
		t.Fatal(err)
	}
	want := []string{"PUT locks/shop/main.lock ok", "HEAD locks/shop/main.lock ok", "GET " + stateObj + " err"}
	if got := rec.Calls()[:3]; !slices.Equal(got, want) {
		t.Errorf("first calls = %q, want %q", got, want)
	}

	// A run that does not get the lock never touches the graph.
	start := len(rec.Calls())
	if _, err := s.Acquire(ctx, "shop", "main", "run-b", ownerB); err == nil {
		t.Fatal("second Acquire succeeded")
	}
	for _, c := range rec.Calls()[start:] {
		if strings.Contains(c, stateObj) {
			t.Errorf("a run without the lock touched the graph: %s", c)
		}
	}

	// A holder that lost its lock cannot read it either.
	if _, err := s.ForceUnlock(ctx, "shop", "main", true); err != nil {
		t.Fatal(err)
	}
	start = len(rec.Calls())
	if _, err := s.Read(ctx, a); !errors.Is(err, statestore.ErrLockLost) {
		t.Fatalf("Read without the lock: err = %v, want ErrLockLost", err)
	}
	for _, c := range rec.Calls()[start:] {
		if strings.Contains(c, stateObj) {
			t.Errorf("Read without the lock touched the graph: %s", c)
		}
	}
}

func TestForceUnlock(t *testing.T) {
	tests := []struct {
		name     string
		lock     bool
		advance  time.Duration
		force    bool
		wantErr  error
		wantGone bool
	}{
		{name: "no lock", wantErr: statestore.ErrNotLocked},
		{name: "expired lock without force", lock: true, advance: 11 * time.Minute, wantGone: true},
		{name: "live lock without force", lock: true, advance: time.Minute},
		{name: "live lock with force", lock: true, advance: time.Minute, force: true, wantGone: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			s := e.store(nil)
			if tc.lock {
				if _, err := s.Acquire(ctx, "shop", "main", "run-a", ownerA); err != nil {
					t.Fatal(err)
				}
			}
			e.clock.Advance(tc.advance)
			held, err := s.ForceUnlock(ctx, "shop", "main", tc.force)
			var locked *statestore.LockedError
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
			case tc.wantGone:
				if err != nil {
					t.Fatal(err)
				}
				if held == nil || held.RunID != "run-a" || held.Owner != ownerA {
					t.Errorf("returned lock = %+v, want run-a's", held)
				}
			default:
				if !errors.As(err, &locked) || locked.Holder.RunID != "run-a" {
					t.Fatalf("err = %v, want *LockedError naming run-a", err)
				}
			}
			if gone := !e.objectExists(t, "locks/shop/main.lock"); gone != (tc.wantGone || !tc.lock) {
				t.Errorf("lock removed = %v, want %v", gone, tc.wantGone || !tc.lock)
			}
		})
	}
}

func TestAcquireRefusesNonCairnLock(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if _, err := e.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("locks/shop/main.lock"),
		Body: strings.NewReader("locked by hand")}); err != nil {
		t.Fatal(err)
	}
	s := e.store(nil)
	_, err := s.Acquire(ctx, "shop", "main", "run-a", ownerA)
	if err == nil || !strings.Contains(err.Error(), "not a cairn lock") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("err = %v, want a clear 'not a cairn lock' error", err)
	}
	if _, err := s.ForceUnlock(ctx, "shop", "main", false); err == nil || !strings.Contains(err.Error(), "not a cairn lock") {
		t.Fatalf("ForceUnlock without force: err = %v, want the same refusal", err)
	}
	if _, err := s.ForceUnlock(ctx, "shop", "main", true); err != nil {
		t.Fatalf("ForceUnlock with force: %v", err)
	}
	if _, err := s.Acquire(ctx, "shop", "main", "run-a", ownerA); err != nil {
		t.Fatalf("Acquire after removing the foreign lock: %v", err)
	}
}

func TestInvalidNamesRefused(t *testing.T) {
	s := newEnv(t).store(nil)
	for _, ns := range []string{"", "a/b", "..", " x"} {
		if _, err := s.Acquire(context.Background(), ns, "main", "run", ownerA); err == nil {
			t.Errorf("Acquire(%q) succeeded", ns)
		}
	}
}

func TestResumeByALaterTriggerOfTheSameRun(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(nil)
	first, err := s.Acquire(ctx, "shop", "main", "run-7", ownerA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, first); !errors.Is(err, statestore.ErrNotFound) {
		t.Fatal(err)
	}
	if err := s.Write(ctx, first, twoStacks()); err != nil {
		t.Fatal(err)
	}

	// A heartbeat ten minutes later, after the lease ran out but before anyone took over.
	e.clock.Advance(10 * time.Minute)
	later, err := s.Resume(ctx, "shop", "main", "run-7", ownerB)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if later.Owner != ownerB || later.Token != first.Token || !later.ExpiresAt.Equal(e.clock.Now().Add(10*time.Minute)) {
		t.Errorf("resumed lock = %+v, want owner %v, the run's token, a fresh lease", later, ownerB)
	}
	// The earlier invocation, if it is still around, is fenced off even if its own clock
	// says its lease is fine.
	behind := e.store(nil)
	behind.Clock = clock.NewFake(t0)
	if err := behind.Check(ctx, first); !errors.Is(err, statestore.ErrLockLost) {
		t.Errorf("Check of the earlier invocation: err = %v, want ErrLockLost", err)
	}
	if err := behind.Write(ctx, first, twoStacks()); !errors.Is(err, statestore.ErrLockLost) {
		t.Errorf("Write of the earlier invocation: err = %v, want ErrLockLost", err)
	}
	g, err := s.Read(ctx, later)
	if err != nil || g.Generation != 1 {
		t.Fatalf("Read after Resume: %v, %v", g, err)
	}
	if err := s.Write(ctx, later, g); err != nil {
		t.Fatalf("Write after Resume: %v", err)
	}

	// Another run cannot resume it, and a released lock cannot be resumed.
	if _, err := s.Resume(ctx, "shop", "main", "run-8", ownerB); !errors.Is(err, statestore.ErrLockLost) || !strings.Contains(err.Error(), "run-7") {
		t.Errorf("Resume by another run: err = %v, want ErrLockLost naming run-7", err)
	}
	if err := s.Release(ctx, later); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resume(ctx, "shop", "main", "run-7", ownerB); !errors.Is(err, statestore.ErrLockLost) {
		t.Errorf("Resume after release: err = %v, want ErrLockLost", err)
	}
}

func TestLockWithoutETagIsRefused(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(nil)
	a, err := s.Acquire(ctx, "shop", "main", "run-a", ownerA)
	if err != nil {
		t.Fatal(err)
	}
	// A lock rebuilt from its JSON (say, persisted in a run record) carries no ETag.
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var decoded statestore.Lock
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"Check":   func() error { return s.Check(ctx, &decoded) },
		"Renew":   func() error { return s.Renew(ctx, &decoded) },
		"Release": func() error { return s.Release(ctx, &decoded) },
		"Read":    func() error { _, err := s.Read(ctx, &decoded); return err },
	} {
		if err := op(); !errors.Is(err, statestore.ErrLockLost) || !strings.Contains(err.Error(), "call Resume") {
			t.Errorf("%s: err = %v, want ErrLockLost saying to Resume", name, err)
		}
	}
	if err := s.Check(ctx, a); err != nil {
		t.Errorf("the real lock was disturbed: %v", err)
	}
}

// TestResumeWaitsForAnotherInvocationsStep: two invocations of one run (a stack event and
// a heartbeat at once) step it one after the other. Resume claims a step; another
// invocation's Resume meanwhile gets ErrStepping (and until when), not the lock, until
// the first calls EndStep or its claim runs out (an invocation that died mid-step).
func TestResumeWaitsForAnotherInvocationsStep(t *testing.T) {
	ownerC := statestore.Owner{Function: "cairn-deployer", RequestID: "req-c"}
	for _, tc := range []struct {
		name string
		// between the first invocation's Resume and the second's
		end     bool          // the first ends its step
		advance time.Duration // the clock moves on
		want    error         // the second's Resume: nil or ErrStepping
	}{
		{name: "mid-step", want: statestore.ErrStepping},
		{name: "just before the claim runs out", advance: statestore.DefaultStepClaim - time.Second, want: statestore.ErrStepping},
		{name: "step ended", end: true},
		{name: "claim ran out", advance: statestore.DefaultStepClaim},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			s := e.store(nil)
			s.Lease = time.Hour
			if _, err := s.Acquire(ctx, "shop", "main", "run-7", ownerA); err != nil {
				t.Fatal(err)
			}
			first, err := s.Resume(ctx, "shop", "main", "run-7", ownerB)
			if err != nil {
				t.Fatal(err)
			}
			if !first.StepUntil.Equal(e.clock.Now().Add(statestore.DefaultStepClaim)) {
				t.Errorf("StepUntil = %s, want now + %s", first.StepUntil, statestore.DefaultStepClaim)
			}
			// The same invocation steps again (a look it lingered for) without waiting.
			if first, err = s.Resume(ctx, "shop", "main", "run-7", ownerB); err != nil {
				t.Fatalf("Resume by the invocation in the step: %v", err)
			}
			if tc.end {
				if err := s.EndStep(ctx, first); err != nil {
					t.Fatal(err)
				}
			}
			e.clock.Advance(tc.advance)
			second, err := s.Resume(ctx, "shop", "main", "run-7", ownerC)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Resume by another invocation: err = %v, want %v", err, tc.want)
			}
			if tc.want != nil {
				var busy *statestore.SteppingError
				if !errors.As(err, &busy) || busy.Holder != ownerB || !busy.Until.Equal(first.StepUntil) || !strings.Contains(err.Error(), "req-b") {
					t.Errorf("err = %#v, want a SteppingError naming req-b until %s", err, first.StepUntil)
				}
				// The step goes on undisturbed: its lock checks pass.
				if err := s.Check(ctx, first); err != nil {
					t.Errorf("Check of the invocation in the step: %v", err)
				}
				return
			}
			if second.Owner != ownerC {
				t.Errorf("resumed by %v, want %v", second.Owner, ownerC)
			}
			// The first invocation is fenced off now, and its EndStep changes nothing.
			if err := s.Check(ctx, first); !errors.Is(err, statestore.ErrLockLost) {
				t.Errorf("Check of the first invocation: err = %v, want ErrLockLost", err)
			}
			if err := s.EndStep(ctx, first); !tc.end && !errors.Is(err, statestore.ErrLockLost) {
				t.Errorf("EndStep of the first invocation after the second resumed: err = %v, want ErrLockLost", err)
			}
			if err := s.Check(ctx, second); err != nil {
				t.Errorf("Check of the second invocation: %v", err)
			}
		})
	}
}
