package clock

import (
	"testing"
	"time"
)

func TestFakeFiresInOrderOnlyWhenDue(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	late := f.After(10 * time.Second)
	early := f.After(5 * time.Second)
	if f.Waiters() != 2 {
		t.Fatalf("waiters = %d, want 2", f.Waiters())
	}
	f.Advance(4 * time.Second)
	select {
	case <-early:
		t.Fatal("fired before due")
	default:
	}
	f.Advance(1 * time.Second)
	if got := <-early; !got.Equal(start.Add(5 * time.Second)) {
		t.Fatalf("early fired at %v", got)
	}
	select {
	case <-late:
		t.Fatal("late fired early")
	default:
	}
	f.Set(start.Add(time.Minute))
	if got := <-late; !got.Equal(start.Add(time.Minute)) {
		t.Fatalf("late fired at %v", got)
	}
	if f.Waiters() != 0 {
		t.Fatalf("waiters left: %d", f.Waiters())
	}
}

func TestFakeWaitForWaiters(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	done := make(chan struct{})
	go func() {
		<-f.After(time.Second)
		close(done)
	}()
	if !f.WaitForWaiters(1, 5*time.Second) {
		t.Fatal("goroutine never waited")
	}
	f.Advance(time.Second)
	<-done
	if f.WaitForWaiters(1, 10*time.Millisecond) {
		t.Fatal("no waiter expected")
	}
}

func TestStamp(t *testing.T) {
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{time.Time{}, "(unknown)"},
		{time.Date(2026, 11, 30, 9, 3, 0, 0, time.FixedZone("CET", 3600)), "2026-11-30T08:03:00Z"},
	} {
		if got := Stamp(tc.t); got != tc.want {
			t.Errorf("Stamp(%v) = %q, want %q", tc.t, got, tc.want)
		}
	}
}
