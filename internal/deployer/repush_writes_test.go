package deployer_test

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/run"
)

// TestUnchangedRepushWrites pushes the chain again unchanged and counts what the deployer
// writes to S3 for it: the upload is the pusher's, and the run that finds nothing to do
// records itself in at most one object (its run document), nothing else.
func TestUnchangedRepushWrites(t *testing.T) {
	calls := &callCounter{}
	w := newWorld(t, worldOptions{Calls: calls})
	dir, _ := deployChain(t, w)
	w.quiet(calls)
	calls.take()
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("re-push run: %s (%s)", doc.Run.Status, doc.Run.Reason)
	}
	w.quiet(calls)
	var writes []string
	for op, n := range calls.take() {
		if !strings.Contains(op, " ") {
			continue
		}
		for _, w := range []string{"S3.PutObject ", "S3.DeleteObject ", "S3.CopyObject "} {
			if strings.HasPrefix(op, w) {
				writes = append(writes, op+" x"+strings.Repeat("I", n))
			}
		}
	}
	sort.Strings(writes)
	if len(writes) > 1 || len(writes) == 1 && !strings.HasPrefix(writes[0], "S3.PutObject runs/shop/") || len(writes) == 1 && strings.HasSuffix(writes[0], "II") {
		t.Errorf("an unchanged re-push wrote %d objects, want at most the run document once:\n  %s", len(writes), strings.Join(writes, "\n  "))
	}
}

// quiet waits until no run is open and the deployer has made no call for half a second
// of wall time: what a run does after its document says it finished is counted too.
func (w *world) quiet(calls *callCounter) {
	w.t.Helper()
	w.waitFor("no open run", func() bool { return len(w.openRuns()) == 0 })
	last, still := -1, time.Now()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		calls.mu.Lock()
		n := 0
		for _, c := range calls.n {
			n += c
		}
		calls.mu.Unlock()
		if n != last {
			last, still = n, time.Now()
		} else if time.Since(still) > 500*time.Millisecond {
			return
		}
	}
	w.t.Fatal("the deployer kept calling AWS for 30 s")
}
