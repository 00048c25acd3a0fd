package deploy_test

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
		{"with stack events", worldOptions{Heartbeat: 10 * time.Minute}},
		{"checks alone", worldOptions{Heartbeat: 10 * time.Minute, NoStackEvents: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.o)
			dir := copyBundle(t, line)
			doc := w.wait("line", w.push("line", dir))
			if doc.Run.Status != run.Succeeded {
				t.Fatalf("run %s: %s", doc.Run.Status, doc.Run.Reason)
			}
			// Each stack takes 2s for its change set and 5s for its one resource: 35s in
			// CloudFormation, plus the deployer's own calls on a virtual clock that runs
			// 500 times faster than the wall clock.
			if took := doc.Run.FinishedAt.Sub(doc.Run.StartedAt); took > 5*time.Minute {
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
