package run

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// ev is an event of resource id at second sec of t0.
func ev(id, status string, sec int, reason ...string) ResourceEvent {
	e := ResourceEvent{LogicalID: id, Type: "AWS::SQS::Queue", Status: status, Time: t0.Add(time.Duration(sec) * time.Second)}
	if len(reason) > 0 {
		e.Reason = reason[0]
	}
	return e
}

// executing is a running run whose stacks (config names) execute their change sets.
func executing(names ...string) *Run {
	r := &Run{ID: "R1", Deployment: "shop", Mode: ModeDeploy, Status: Running, MaxConcurrency: 10, StartedAt: t0, Stacks: map[string]*Stack{}}
	for _, n := range names {
		r.Stacks[n] = &Stack{Name: n, StackName: "shop-" + n, Intent: IntentDeploy, Phase: Executing, ChangeSetName: "cairn-R1-1", StartedAt: t0, PhaseSince: t0}
	}
	return r
}

// TestAdvanceKeepsResourceEvents: what a look at a settled stack saw of its resources'
// events is kept in the run, per stack, in time order, once each, bounded; the stack's
// phase follows its status as before.
func TestAdvanceKeepsResourceEvents(t *testing.T) {
	many := func(n int) []ResourceEvent {
		var out []ResourceEvent
		for i := range n {
			out = append(out, ev(fmt.Sprintf("Q%03d", i), "CREATE_COMPLETE", i))
		}
		return out
	}
	failure := ev("Bucket", "UPDATE_FAILED", 1, "Resource handler returned message: bucket exists")
	for _, tc := range []struct {
		name    string
		had     []ResourceEvent
		status  string
		seen    []ResourceEvent
		phase   Phase
		want    []ResourceEvent
		dropped int
	}{
		{"a settled update keeps its events", nil, "UPDATE_COMPLETE",
			[]ResourceEvent{ev("Q", "UPDATE_IN_PROGRESS", 1), ev("Q", "UPDATE_COMPLETE", 2)}, Done,
			[]ResourceEvent{ev("Q", "UPDATE_IN_PROGRESS", 1), ev("Q", "UPDATE_COMPLETE", 2)}, 0},
		{"a failed update keeps its failure and rollback", nil, "UPDATE_ROLLBACK_COMPLETE",
			[]ResourceEvent{ev("Bucket", "UPDATE_IN_PROGRESS", 0), failure, ev("Bucket", "UPDATE_COMPLETE", 3)}, Failed,
			[]ResourceEvent{ev("Bucket", "UPDATE_IN_PROGRESS", 0), failure, ev("Bucket", "UPDATE_COMPLETE", 3)}, 0},
		{"events read again are kept once, in time order", []ResourceEvent{ev("Q", "UPDATE_IN_PROGRESS", 1), failure}, "UPDATE_ROLLBACK_COMPLETE",
			[]ResourceEvent{ev("Q", "UPDATE_IN_PROGRESS", 1), failure, ev("Q", "UPDATE_COMPLETE", 0), ev("Q", "UPDATE_COMPLETE", 5)}, Failed,
			[]ResourceEvent{ev("Q", "UPDATE_COMPLETE", 0), ev("Q", "UPDATE_IN_PROGRESS", 1), failure, ev("Q", "UPDATE_COMPLETE", 5)}, 0},
		{"a stack keeps its latest events", nil, "UPDATE_COMPLETE", many(MaxStackEvents + 5), Done, many(MaxStackEvents + 5)[5:], 5},
		{"and its failures, however early", nil, "UPDATE_ROLLBACK_COMPLETE", append([]ResourceEvent{ev("Bucket", "UPDATE_FAILED", -1, "first")}, many(MaxStackEvents+5)...), Failed,
			append([]ResourceEvent{ev("Bucket", "UPDATE_FAILED", -1, "first")}, many(MaxStackEvents + 5)[6:]...), 6},
		{"a stack still in progress keeps nothing new", nil, "UPDATE_IN_PROGRESS", nil, Executing, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := executing("app")
			r.Stacks["app"].Events = tc.had
			before := slices.Clone(tc.had)
			next, _ := Advance(r, []Observation{{Stack: "app", StackStatus: tc.status, Reason: "Bucket (AWS::S3::Bucket): failed", Events: tc.seen}}, t0.Add(time.Minute), Options{})
			s := next.Stacks["app"]
			if s.Phase != tc.phase {
				t.Errorf("phase %s, want %s", s.Phase, tc.phase)
			}
			if !slices.Equal(s.Events, tc.want) {
				t.Errorf("events\n got %v\nwant %v", s.Events, tc.want)
			}
			if s.EventsDropped != tc.dropped {
				t.Errorf("dropped %d, want %d", s.EventsDropped, tc.dropped)
			}
			if !slices.Equal(r.Stacks["app"].Events, before) {
				t.Error("Advance changed the events of its input")
			}
		})
	}
}

// TestRunEventsShare: over MaxRunEvents, every stack keeps the same share, except those
// with fewer, which keep them all.
func TestRunEventsShare(t *testing.T) {
	for _, tc := range []struct {
		counts []int
		total  int
		want   int
	}{
		{[]int{10, 10, 10}, 30, 10},
		{[]int{10, 10, 10}, 29, 9},
		{[]int{1, 100, 100}, 101, 50},
		{[]int{3, 5, 1000}, 100, 92},
		{[]int{100, 100, 100, 100}, 10, 2},
	} {
		if got := eventShare(slices.Clone(tc.counts), tc.total); got != tc.want {
			t.Errorf("eventShare(%v, %d) = %d, want %d", tc.counts, tc.total, got, tc.want)
		}
	}
}

// TestResourceEventBounds: whatever the looks of a run's stacks see, each stack keeps at
// most MaxStackEvents events and the run at most MaxRunEvents, in time order, each once;
// what is kept and what was dropped add up to what was seen; and a stack keeps all its
// failures while they fit in its share.
func TestResourceEventBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nStacks := rapid.IntRange(1, 24).Draw(t, "stacks")
		var names []string
		for i := range nStacks {
			names = append(names, fmt.Sprintf("s%02d", i))
		}
		r := executing(names...)
		seen := map[string]map[ResourceEvent]bool{}
		sec := 0
		for look := range rapid.IntRange(1, 4).Draw(t, "looks") {
			var obs []Observation
			for _, n := range names {
				var evs []ResourceEvent
				for range rapid.IntRange(0, 130).Draw(t, fmt.Sprintf("events %s %d", n, look)) {
					status := rapid.SampledFrom([]string{"CREATE_IN_PROGRESS", "CREATE_COMPLETE", "CREATE_FAILED", "UPDATE_FAILED"}).Draw(t, "status")
					sec += rapid.IntRange(0, 2).Draw(t, "gap")
					evs = append(evs, ev(fmt.Sprintf("R%d", rapid.IntRange(0, 9).Draw(t, "resource")), status, sec))
				}
				if len(evs) > 0 && rapid.Bool().Draw(t, "seen again") {
					evs = append(evs, evs[0]) // an event read twice
				}
				if seen[n] == nil {
					seen[n] = map[ResourceEvent]bool{}
				}
				for _, e := range evs {
					seen[n][e] = true
				}
				obs = append(obs, Observation{Stack: n, StackStatus: "UPDATE_IN_PROGRESS", Events: evs})
			}
			r, _ = Advance(r, obs, t0.Add(time.Duration(look)*time.Second), Options{})
		}
		total := 0
		for _, n := range names {
			s := r.Stacks[n]
			total += len(s.Events)
			if len(s.Events) > MaxStackEvents {
				t.Fatalf("%s keeps %d events", n, len(s.Events))
			}
			if !slices.IsSortedFunc(s.Events, func(a, b ResourceEvent) int { return a.Time.Compare(b.Time) }) {
				t.Fatalf("%s's events are not in time order", n)
			}
			kept := map[ResourceEvent]bool{}
			for _, e := range s.Events {
				if kept[e] || !seen[n][e] {
					t.Fatalf("%s keeps %v twice or never seen", n, e)
				}
				kept[e] = true
			}
			if len(kept)+s.EventsDropped != len(seen[n]) {
				t.Fatalf("%s keeps %d and dropped %d of %d events seen", n, len(kept), s.EventsDropped, len(seen[n]))
			}
			failures := 0
			for e := range seen[n] {
				if e.Failed() {
					failures++
				}
			}
			if failures <= len(s.Events) && s.EventsDropped > 0 {
				for e := range seen[n] {
					if e.Failed() && !kept[e] {
						t.Fatalf("%s dropped the failure %v while keeping %d events", n, e, len(s.Events))
					}
				}
			}
		}
		if total > MaxRunEvents {
			t.Fatalf("the run keeps %d events", total)
		}
	})
}

// TestResources: a stack's resources as their events tell, the failed first in the order
// they failed, each with its first failure's reason and its latest status.
func TestResources(t *testing.T) {
	events := []ResourceEvent{
		ev("Topic", "UPDATE_IN_PROGRESS", 0),
		ev("Queue", "UPDATE_IN_PROGRESS", 1),
		ev("Bucket", "UPDATE_IN_PROGRESS", 1),
		ev("Bucket", "UPDATE_FAILED", 2, "bucket exists"),
		ev("Queue", "UPDATE_FAILED", 3, "Resource update cancelled"),
		ev("Topic", "UPDATE_COMPLETE", 3),
		ev("Bucket", "UPDATE_COMPLETE", 5, "rolled back"),
		ev("Queue", "UPDATE_COMPLETE", 6),
	}
	got := Resources(events)
	var summary []string
	for _, r := range got {
		summary = append(summary, fmt.Sprintf("%s %s %s %q", r.LogicalID, r.Status, r.Failure, r.Reason))
	}
	want := []string{
		`Bucket UPDATE_COMPLETE UPDATE_FAILED "bucket exists"`,
		`Queue UPDATE_COMPLETE UPDATE_FAILED "Resource update cancelled"`,
		`Topic UPDATE_COMPLETE  ""`,
	}
	if !slices.Equal(summary, want) {
		t.Errorf("resources\n got %q\nwant %q", summary, want)
	}
}
