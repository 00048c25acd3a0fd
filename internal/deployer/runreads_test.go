package deployer_test

import (
	"strings"
	"testing"

	layout "github.com/cairn-dev/cairn/internal/bucket"
)

// TestStepDecodesTheRunOnce: a step needs, before it claims its run, only the run's
// status, graph, lock token and step count, which the run document carries in its
// metadata as well: it reads those (HeadObject), claims the step, and only then reads the
// document whole, so a step decodes the run document (the bulk of a step's CPU at 500
// stacks) once, where it decoded it twice, and a trigger that does not get the claim (it
// hands its stacks on) decodes nothing. That a document another step saved in between is
// the one read is TestConcurrentInvocationsStepOneAtATime's. The document a reader finds
// once the run ended is indented, as before; while it runs it is written compact.
func TestStepDecodesTheRunOnce(t *testing.T) {
	calls := &callCounter{}
	w := newWorld(t, worldOptions{Calls: calls})
	_, doc := deployChain(t, w)
	w.quiet(calls)
	n := calls.take()
	key := layout.RunKey(doc.Run.Deployment, doc.Run.ID)
	heads, whole := n["S3.HeadObject "+key], n["S3.GetObject "+key]-n["S3.GetObject if-changed "+key]
	if heads < doc.Steps {
		t.Errorf("%d reads of the run document's header in %d steps; want one a step at least", heads, doc.Steps)
	}
	if whole >= 2*doc.Steps {
		t.Errorf("the run document was read whole %d times in %d steps; want about once a step (it was twice)", whole, doc.Steps)
	}
	t.Logf("%d steps: %d reads of the header, %d of the whole run document", doc.Steps, heads, whole)
	if body := w.object(key); !strings.HasPrefix(body, "{\n  \"run\": {\n") {
		t.Errorf("the ended run's document is not indented as before: %.60q", body)
	}
}
