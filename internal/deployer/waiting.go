package deployer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// DefaultSettleBudget is how long a run waits, holding its lock, for stacks another hand
// is changing (a cleanup after a replacement, an update outside cairn) to settle before it
// decides anything: past it, the run is refused, naming the command to use again.
const DefaultSettleBudget = 15 * time.Minute

// wait records a run that cannot decide yet: stacks it would change are busy (busy, by
// key, with their statuses). It holds its lock, is indexed by those stacks, so their next
// status event steps it, and a delayed check (1, 2, 4 s ... apart, never more than a
// heartbeat) looks again should no event come; its heartbeat chain keeps it alive. Once
// they settle, the start is made again from the bundle (resume); past the settle budget,
// the run is refused and nothing is changed.
func (s starter) wait(ctx context.Context, doc *rundoc.Document, lock *statestore.Lock, busy map[string]string, log *slog.Logger) error {
	now := s.clk.Now().UTC()
	if doc.WaitingSince.IsZero() {
		doc.WaitingSince = now
	}
	waited := now.Sub(doc.WaitingSince)
	if waited > s.cfg.SettleBudget {
		doc.Refusals = []string{plan.BusyReason(busy, command(doc), doc.Run.Deployment, doc.Plan, waited)}
		log.Warn("deploy: stacks stayed busy; nothing is changed", "busy", fmt.Sprint(busy))
		return s.fail(ctx, doc, lock, "refused: stacks stayed busy; nothing was changed", log)
	}
	first := doc.ETag == ""
	doc.Waiting = busy
	delay := min(run.FirstCheck<<min(doc.Steps, 10), s.cfg.Heartbeat)
	doc.Steps++
	log.Info("deploy: stacks another hand is changing are busy: the run waits for them to settle", "busy", fmt.Sprint(busy), "waited", waited.String())
	etag, err := s.runs.save(ctx, doc, doc.ETag)
	if errors.Is(err, errRaceLost) && first {
		log.Info("deploy: run already started by a duplicate of this event")
		return nil
	}
	if err != nil {
		if first {
			s.release(ctx, lock, log)
		}
		return err
	}
	doc.ETag = etag
	s.runs.index(ctx, doc, log)
	if first {
		if err := s.heartbeat(ctx, doc.Run.Deployment, doc.Run.ID, doc.Beat); err != nil {
			log.Error("deploy: cannot enqueue the first heartbeat of a waiting run", "err", err)
		}
	}
	s.check(ctx, doc, delay, log)
	return nil
}

// resume makes the start of a run that waited for busy stacks again, under its lock: its
// bundle loaded again (or kept by this process), its decisions made anew.
func (s starter) resume(ctx context.Context, doc *rundoc.Document, etag string, lock *statestore.Lock, log *slog.Logger) error {
	doc.ETag = etag
	lb, err := s.bundle(ctx, doc)
	if err != nil {
		return err
	}
	switch {
	case doc.Content || doc.Plan != "":
		return s.applyLocked(ctx, doc, lock, lb, log)
	}
	return s.locked(ctx, doc, lock, lb, nil, log)
}

// command is what the user ran to start doc's run: plan, push, apply or approve.
func command(doc *rundoc.Document) string {
	switch {
	case doc.Run.Mode == run.ModePlan:
		return "plan"
	case doc.Content:
		return "apply"
	case doc.Plan != "":
		return "approve"
	}
	return "push"
}

// waitingKeys are the stacks a waiting run waits for, as its index names them.
func waitingKeys(doc *rundoc.Document) []string { return slices.Sorted(maps.Keys(doc.Waiting)) }
