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

// TestPaceSkipsIdleStretches: a world that reports itself idle reaches a waiter an hour
// away within a few milliseconds of wall time, and one that is busy sees only step per
// millisecond, so its waiter an hour away has not fired after a while.
func TestPaceSkipsIdleStretches(t *testing.T) {
	for _, tc := range []struct {
		name  string
		idle  func() bool
		fires bool
	}{
		{"idle", func() bool { return true }, true},
		{"busy", func() bool { return false }, false},
		{"no idle report", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
			f := NewFake(start)
			due := f.After(time.Hour)
			if at, ok := f.Next(); !ok || !at.Equal(start.Add(time.Hour)) {
				t.Fatalf("Next = %v %v, want %v", at, ok, start.Add(time.Hour))
			}
			stop, done := make(chan struct{}), make(chan struct{})
			go func() { defer close(done); f.Pace(stop, time.Millisecond, tc.idle) }()
			defer func() { close(stop); <-done }()
			select {
			case at := <-due:
				if !tc.fires {
					t.Fatalf("the waiter an hour away fired at %v, though the world was never idle", at)
				}
				if !at.Equal(start.Add(time.Hour)) {
					t.Errorf("fired at %v, want exactly %v: a skip lands on the waiter", at, start.Add(time.Hour))
				}
			case <-time.After(200 * time.Millisecond):
				if tc.fires {
					t.Fatalf("an idle world's waiter an hour away has not fired after 200ms (clock at %v)", f.Now())
				}
			}
		})
	}
}
