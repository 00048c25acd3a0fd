package deployer_test

import (
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/run"
)

// TestReadinessIsNoticedBetweenHeartbeats deploys five stacks in a line, then removes the
// last one, with a ten-minute heartbeat: each change set's readiness, each stack
// operation's end and the deletion's end must be noticed by the delayed checks (and stack
// events) within seconds, not at the next heartbeat, with the looks at each stack bounded.
// Noticed only by heartbeats, the line alone would take five heartbeats.
func TestReadinessIsNoticedBetweenHeartbeats(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    worldOptions
	}{
		// The clock runs 50 times faster than the wall clock while the world works (not
		// the default 500): the deployer's own work, slowed by -race and make test's load,
		// would otherwise count for minutes of the run's virtual time.
		{"with stack events", worldOptions{Heartbeat: 10 * time.Minute, Speed: 50 * time.Millisecond}},
		{"checks alone", worldOptions{Heartbeat: 10 * time.Minute, NoStackEvents: true, Speed: 50 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.o)
			dir := copyBundle(t, line)
			doc := w.wait("line", w.push("line", dir))
			if doc.Run.Status != run.Succeeded {
				t.Fatalf("run %s: %s", doc.Run.Status, doc.Run.Reason)
			}
			// Each stack takes 2s for its change set and 5s for its one resource: 35s in
			// CloudFormation, plus the deployer's own calls on the virtual clock.
			took := doc.Run.FinishedAt.Sub(doc.Run.StartedAt)
			t.Logf("the line took %v of virtual time", took)
			if took > 5*time.Minute {
				t.Errorf("the line took %v, want well under a heartbeat (10m)", took)
			}
			looks := 0
			for action, n := range w.cfnCalls() {
				if action == "DescribeChangeSet" || action == "DescribeStacks" {
					looks += n
				}
			}
			// The first look at a change set is a second after its creation, then 2, 4, 8
			// seconds later; so is a stack's. The plan's one DescribeStacks comes on top.
			if looks > 5*8+1 {
				t.Errorf("%d looks at 5 stacks, want at most 8 each", looks)
			}

			edit(t, dir, "cairn.yaml", "  - name: s5\n    template_path: templates/parameter.yaml\n    parameters: {Value: \"${output s4::Name}\", Size: small}\n", "")
			doc = w.wait("line", w.push("line", dir))
			if doc.Run.Status != run.Succeeded || doc.Run.Stacks["s5"].Phase != run.Done || doc.Run.Stacks["s5"].Intent != run.IntentDelete {
				t.Fatalf("removal run %s (%s): s5 %+v", doc.Run.Status, doc.Run.Reason, doc.Run.Stacks["s5"])
			}
			if took := doc.Run.FinishedAt.Sub(doc.Run.StartedAt); took > 2*time.Minute {
				t.Errorf("the deletion took %v, want well under a heartbeat (10m)", took)
			}
		})
	}
}

// TestStackEventEndsTheWait: a stack whose operation takes ten minutes is looked at 1, 3,
// 7 ... 511 and 1,023 seconds into it, but the stack status event of its end advances the
// run at once.
func TestStackEventEndsTheWait(t *testing.T) {
	w := newWorld(t, worldOptions{Heartbeat: 15 * time.Minute, ResourceDelay: 10 * time.Minute})
	dir := copyBundle(t, line)
	for _, s := range []string{"s2", "s3", "s4", "s5"} {
		edit(t, dir, "cairn.yaml", "  - name: "+s+"\n", "  - name: "+s+"\n    enabled: false\n")
	}
	doc := w.waitRun("line", w.push("line", dir), 2*time.Minute)
	if doc.Run.Status != run.Succeeded || doc.Run.Stacks["s1"].Phase != run.Done {
		t.Fatalf("run %s (%s): %v", doc.Run.Status, doc.Run.Reason, phases(doc))
	}
	// 2s for the change set, 600s for its one resource, then the event.
	if took := doc.Run.FinishedAt.Sub(doc.Run.StartedAt); took > 14*time.Minute {
		t.Errorf("the run took %v: its end was noticed by a check (1,023s in), not by its stack event", took)
	}
}
