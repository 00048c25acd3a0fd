package deployer_test

import (
	"strings"
	"testing"
	"time"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/run"
)

// TestRunPageFollowsTheRun: as soon as a run starts stacks, its page is beside where its
// report will be, saying it runs and reloading itself; once it ended, the page says how,
// and no longer reloads.
func TestRunPageFollowsTheRun(t *testing.T) {
	w := newWorld(t, worldOptions{Speed: 50 * time.Millisecond}) // slow enough to see the run while it runs
	version := w.push("line", copyBundle(t, line))
	var live string
	for deadline := time.Now().Add(30 * time.Second); live == ""; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no page of the running run appeared")
		}
		docs := w.runs("line")
		if len(docs) == 0 || docs[len(docs)-1].PageAt.IsZero() {
			continue
		}
		d := docs[len(docs)-1]
		if d.Run.Status != run.Running {
			t.Fatalf("the run ended (%s) before its page was seen while it ran", d.Run.Status)
		}
		live = w.object(layout.RunPageKey("line", d.Run.ID))
	}
	if !strings.Contains(live, `<meta http-equiv="refresh" content="30">`) || !strings.Contains(live, `id="run-status">running</span>`) {
		t.Errorf("the page of the running run does not say it runs, or does not reload itself:\n%.2000s", live)
	}
	doc := w.wait("line", version)
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("run %s: %s", doc.Run.Status, doc.Run.Reason)
	}
	final := w.object(layout.RunPageKey("line", doc.Run.ID))
	if strings.Contains(final, `http-equiv="refresh"`) || !strings.Contains(final, `id="run-status">succeeded</span>`) {
		t.Errorf("the page of the ended run reloads itself, or does not say it succeeded:\n%.2000s", final)
	}
}
