package deployer_test

import (
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/run"
)

// TestOneInvocationLingersForARun deploys the side-by-side benchmark's chain of five new
// stacks on its world (change sets of 1 to 4 s, a clock that never skips, the mapping's
// concurrent invocations): each change set is looked at no more often than its schedule
// says, from a second after it was asked for, a short step apart, and twice more at most.
// Two invocations of the run lingered for its looks at once (the one a stack event started
// and the one a check started), each looking at the stacks due: 46 looks where the
// schedule allows 39.
func TestOneInvocationLingersForARun(t *testing.T) {
	w := newWorld(t, worldOptions{Speed: sideSpeed, NoSkip: true, Heartbeat: sideWorldHeartbeat,
		ChangeSetDelay: sideChangeSetDelay, ChangeSetDelayMax: sideChangeSetDelayMax,
		ResourceDelay: sideResourceDelay, ResourceDelayMax: sideResourceDelayMax, DelaySeed: 7})
	before := w.cfnCalls()
	doc := w.waitRun("side", w.push("side", sideBundle(t, chainGraph(5), sidePhases[0])), 10*time.Minute)
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("run %s: %s", doc.Run.Status, doc.Run.Reason)
	}
	looks := w.cfnCalls()["DescribeChangeSet"] - before["DescribeChangeSet"]
	allowed := 0
	for _, m := range w.cfn.MadeChangeSets() {
		allowed += int((m.ReadyAt.Sub(m.Created)-run.ChangeSetPrior.From+run.ShortStep-1)/run.ShortStep) + 2
	}
	if looks > allowed {
		t.Errorf("%d looks at %d change sets, want at most %d (from a second, a short step apart, twice more)", looks, len(w.cfn.MadeChangeSets()), allowed)
	}
}
