package deployer_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/run"
)

// TestConcurrentInvocationsStepOneAtATime: Lambda invokes the deployer with up to five
// batches at once (the deploy queue's mapping, MaxConcurrency 5, as the world's), so a
// stack event and a look of the same run meet. Before steps waited for each other, each
// invocation resumed the lock from under the other's step, every step but the last ended
// unsaved, and with five at once the 20-stack DAG's create barely advanced (two stacks
// pending for 300 virtual seconds, or no end at all); a step decided on a document read
// before another's save executed change sets that one had deleted as stale, failing the
// stacks. Now every stack's change set is made and executed once, and the runs succeed.
// It deploys 20 stacks twice on the world's usual clock (about 10 s of wall time,
// longer under load): fewer stacks rarely overlap steps.
func TestConcurrentInvocationsStepOneAtATime(t *testing.T) {
	calls := &callCounter{}
	w := newWorld(t, worldOptions{Calls: calls, Heartbeat: sideWorldHeartbeat,
		ChangeSetDelay: sideChangeSetDelay, ChangeSetDelayMax: sideChangeSetDelayMax,
		ResourceDelay: sideResourceDelay, ResourceDelayMax: sideResourceDelayMax, DelaySeed: 7})
	g := dagGraph(20)
	for _, p := range []sidePhase{sidePhases[0], sidePhases[2]} {
		doc := w.waitRun("side", w.push("side", sideBundle(t, g, p)), 2*time.Minute)
		if doc.Run.Status != run.Succeeded {
			t.Fatalf("%s: run %s: %s", p.name, doc.Run.Status, doc.Run.Reason)
		}
		n := calls.take()
		if got := n["CloudFormation.ExecuteChangeSet"]; got != len(g.deps) {
			t.Errorf("%s: %d ExecuteChangeSet calls, want one per stack (%d)", p.name, got, len(g.deps))
		}
		if got := n["CloudFormation.CreateChangeSet"]; p.isCreation && got != len(g.deps) {
			t.Errorf("%s: %d CreateChangeSet calls, want one per stack (%d)", p.name, got, len(g.deps))
		}
	}
	// The test is only worth its time if steps of the run did meet.
	if !strings.Contains(w.logs.String(), "waiting for another invocation's step of the run") {
		t.Error("no invocation ever waited for another's step: the run's steps never overlapped, so this proves nothing")
	}
}
