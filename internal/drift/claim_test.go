package drift

import (
	"testing"
	"time"
)

func TestAdmit(t *testing.T) {
	now := swept.Add(time.Hour)
	held := now.Add(time.Minute)
	continuation := func(seq int) Trigger { return Trigger{Seq: seq} }
	event := Trigger{Seq: -1, Event: true}
	for _, tc := range []struct {
		name      string
		holder    string
		heldUntil time.Time
		t         Trigger
		want      Verdict
		resend    int
	}{
		{name: "the live continuation of a free sweep", t: continuation(3), want: Drive, resend: -1},
		{name: "a newer one (sent before its save failed)", t: continuation(4), want: Drive, resend: -1},
		{name: "an older continuation", t: continuation(2), want: Stale, resend: -1},
		{name: "an older continuation of a held sweep", t: continuation(2), holder: "inv-1", heldUntil: held, want: Stale, resend: -1},
		{name: "the live continuation, sweep held: sent again", t: continuation(3), holder: "inv-1", heldUntil: held, want: Wait, resend: 3},
		{name: "a status change, sweep held", t: event, holder: "inv-1", heldUntil: now.Add(time.Second), want: Wait, resend: -1},
		{name: "a status change, sweep free", t: event, want: Drive, resend: -1},
		{name: "a status change and an older continuation in one batch", t: Trigger{Seq: 2, Event: true}, want: Drive, resend: -1},
		{name: "the same, sweep held: the old continuation is not sent on", t: Trigger{Seq: 2, Event: true}, holder: "inv-1", heldUntil: held, want: Wait, resend: -1},
		{name: "a claim that expired (its holder died)", t: continuation(3), holder: "inv-1", heldUntil: now, want: Drive, resend: -1},
		{name: "the CLI, claim expired", t: event, holder: "inv-1", heldUntil: now.Add(-time.Minute), want: Drive, resend: -1},
	} {
		sw := &Sweep{Continuation: 3, Holder: tc.holder, HeldUntil: tc.heldUntil}
		if got, resend := Admit(sw, tc.t, now); got != tc.want || resend != tc.resend {
			t.Errorf("%s: Admit = %s, resend %d; want %s, %d", tc.name, got, resend, tc.want, tc.resend)
		}
	}
}

func TestClaimAndHandOff(t *testing.T) {
	now := swept.Add(time.Hour)
	sw := &Sweep{ID: "S1", Continuation: 2, Invocations: 4}
	for _, tc := range []struct {
		name     string
		deadline time.Time
		until    time.Time
	}{
		{"no deadline: the lease", time.Time{}, now.Add(DefaultLease)},
		{"a deadline sooner than the lease", now.Add(40 * time.Second), now.Add(40 * time.Second)},
		{"a deadline later than the lease", now.Add(15 * time.Minute), now.Add(DefaultLease)},
	} {
		c := Claim(sw, "inv-2", now, tc.deadline, DefaultLease)
		if c.Holder != "inv-2" || !c.HeldUntil.Equal(tc.until) || c.Invocations != 5 || c.Continuation != 2 {
			t.Errorf("%s: claimed %+v, want held by inv-2 until %s, invocation 5", tc.name, c, tc.until)
		}
		if v, _ := Admit(c, Trigger{Seq: 2}, now); v != Wait {
			t.Errorf("%s: the claim does not hold before %s", tc.name, tc.until)
		}
		if v, _ := Admit(c, Trigger{Seq: 2}, tc.until); v != Drive {
			t.Errorf("%s: the claim does not hold until %s, and no longer", tc.name, tc.until)
		}
	}
	if sw.Holder != "" || sw.Invocations != 4 {
		t.Error("Claim changed its input")
	}
	h, seq := HandOff(Claim(sw, "inv-2", now, time.Time{}, DefaultLease))
	if seq != 3 || h.Continuation != 3 || h.Holder != "" || !h.HeldUntil.IsZero() {
		t.Errorf("handed off: continuation %d (seq %d), holder %q until %s; want 3, released", h.Continuation, seq, h.Holder, h.HeldUntil)
	}
	if v, _ := Admit(h, Trigger{Seq: 2}, now); v != Stale {
		t.Error("after a hand-off the older continuation is not stale")
	}
	if v, _ := Admit(h, Trigger{Seq: 3}, now); v != Drive {
		t.Error("after a hand-off the new continuation cannot drive")
	}
}
