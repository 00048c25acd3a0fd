package run_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/run"
)

// TestReadinessStrategiesFinish checks the side-by-side simulation itself on a small draw,
// in every phase: every strategy deploys every stack no sooner than the critical path
// allows (cairn, whose change sets may be made early in an update, no sooner than the
// early floor) and makes at least the three calls a stack needs, cairn's run succeeds and
// never executes a stale change set, and the 0.25 s poller makes many more calls than the
// 10 s one.
func TestReadinessStrategiesFinish(t *testing.T) {
	for _, g := range []simGraph{chainGraph(3), irregularGraph(), dagGraph(8)} {
		for _, ph := range readinessPhases {
			tm, w := ph.timings(len(g.names), 5), ph.world(len(g.names), 5)
			cp, _ := criticalPath(g, tm)
			floor := earlyFloor(g, tm)
			outs := map[string]outcome{}
			for _, st := range readinessStrategies {
				o := st.sim(w, g, tm, 10, 5)
				outs[st.name] = o
				least := cp
				if st.name == "cairn" && !ph.create {
					least = floor
				}
				if o.makespan < least || o.calls < 3*len(g.names) {
					t.Errorf("%s %s %s: makespan %v (at least %v), %d calls", st.name, g.name, ph.name, o.makespan, least, o.calls)
				}
			}
			if c := outs["cairn"]; c.status != run.Succeeded || c.staleExecuted > 0 {
				t.Errorf("cairn %s %s: %s, %d stale change sets executed", g.name, ph.name, c.status, c.staleExecuted)
			}
			if outs["thread-0.25s"].calls < 10*outs["thread-10s"].calls/2 {
				t.Errorf("%s %s: the 0.25 s poller made %d calls, the 10 s one %d", g.name, ph.name, outs["thread-0.25s"].calls, outs["thread-10s"].calls)
			}
		}
	}
}

// TestReadinessModelCorrections checks what issue 42 corrected in the model, as behaviour:
// a create makes no change set before the stacks it depends on finished; an update whose
// outputs stay makes change sets early and none again; one whose outputs all change makes
// the early ones again and executes none of them stale; the 0.25 s poller of a wide graph is
// throttled and ends no sooner than the unthrottled one, and the 10 s poller is throttled
// seldom (only when many stacks start at once).
func TestReadinessModelCorrections(t *testing.T) {
	g := irregularGraph()
	byName := map[string]readinessPhase{}
	for _, ph := range readinessPhases {
		byName[ph.name] = ph
	}
	cairn := func(ph readinessPhase, early bool) outcome {
		tm, w := ph.timings(len(g.names), 3), ph.world(len(g.names), 3)
		return simulateCairnIn(w, g, tm, 10, 3, early)
	}
	if o := cairn(byName["create"], true); o.early != 0 || o.remade != 0 || o.status != run.Succeeded {
		t.Errorf("create: %d change sets made early, %d made again, run %s; want none, none, succeeded", o.early, o.remade, o.status)
	}
	if o := cairn(byName["update-outputs-0"], true); o.early == 0 || o.remade != 0 {
		t.Errorf("update, outputs unchanged: %d change sets made early, %d made again; want some, none", o.early, o.remade)
	}
	o := cairn(byName["update-outputs-100"], true)
	if o.early == 0 || o.remade == 0 || o.staleExecuted != 0 || o.status != run.Succeeded {
		t.Errorf("update, outputs changed: %d made early, %d made again, %d stale executed, run %s; want some, some, none, succeeded",
			o.early, o.remade, o.staleExecuted, o.status)
	}
	if o := cairn(byName["update-outputs-100"], false); o.early != 0 || o.remade != 0 {
		t.Errorf("cairn-after-deps: %d change sets made early, %d made again; want none", o.early, o.remade)
	}

	tm := byName["update-outputs-30"].timings(len(g.names), 3)
	poll := pollingEvery(250 * time.Millisecond)
	throttled := simulatePeer(g, tm, 10, poll, false, newAccount(), newRetryer(3, 3))
	free := simulatePeer(g, tm, 10, poll, false, nil, nil)
	if throttled.throttled == 0 || free.throttled != 0 {
		t.Errorf("the 0.25 s poller of %s: %d calls throttled, %d unthrottled; want some, none", g.name, throttled.throttled, free.throttled)
	}
	if throttled.makespan < free.makespan {
		t.Errorf("the throttled poller (%v) ended before the free one (%v)", throttled.makespan, free.makespan)
	}
	slow := simulatePeer(g, tm, 10, pollingEvery(10*time.Second), false, newAccount(), newRetryer(3, 3))
	if slow.throttled*20 > throttled.throttled {
		t.Errorf("the 10 s poller of %s was throttled %d times, the 0.25 s one %d", g.name, slow.throttled, throttled.throttled)
	}
}

// TestEventLatenessHasATail: of the stack events, about 1% are lost, most of the others
// arrive within 2 s, and a tail of about 9% arrives later, up to a minute.
func TestEventLatenessHasATail(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 100000
	var lost, tail, far int
	var latest time.Duration
	for range n {
		late, ok := eventLateness(r)
		switch {
		case !ok:
			lost++
		case late > 2*time.Second:
			tail++
			if late > 30*time.Second {
				far++
			}
		}
		latest = max(latest, late)
	}
	if lost < n*8/1000 || lost > n*12/1000 || tail < n*8/100 || tail > n*10/100 || far == 0 || latest > time.Minute {
		t.Errorf("lost %d, beyond 2 s %d, beyond 30 s %d, latest %v of %d events", lost, tail, far, latest, n)
	}
}

// TestSDKRetryerBacksOff: a throttled operation is retried with the standard retryer's
// backoff, each retry under min(2^i s, 20 s), until its attempts run out.
func TestSDKRetryerBacksOff(t *testing.T) {
	a := newAccount()
	at := simEpoch
	for range int(describeBurst) {
		if !a.allow(describeStacks, at) {
			t.Fatal("throttled within the burst")
		}
	}
	end, attempts, ok := describe(a, newRetryer(3, 1), describeStacks, at)
	if !ok && attempts != 3 || attempts < 2 {
		t.Errorf("after the burst: %d attempts, answered %v; want a retry, at most 3 attempts", attempts, ok)
	}
	if most := time.Duration(attempts-1)*simCallLatency + 3*time.Second; end.Sub(at) > most {
		t.Errorf("the retries took %v, more than %v", end.Sub(at), most)
	}
	if !a.allow(describeChangeSet, at) {
		t.Error("DescribeChangeSet throttled by DescribeStacks' bucket")
	}
}
