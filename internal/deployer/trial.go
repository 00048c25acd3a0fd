package deployer

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// trialRun is the plan of an upload made before its lock is taken (starter.trial).
type trialRun struct {
	doc        *rundoc.Document
	decided    *decided
	generation int64 // of the graph it was made against
}

// trial plans a deploy upload without taking its lock, against the graph as it is: a run
// that changes nothing needs no lock (quiet), and one that does adopts the trial under
// its lock when the graph did not change meanwhile, so it looks at its stacks once. It is
// nil when that cannot hold: another run holds the lock, the graph is missing (a rebuild
// writes it), the bundle is a CDK assembly (its assets are published under the lock) or
// a destroy, or the plan fails or is refused (the run then plans again under its lock
// and records why). doc is not changed.
func (s starter) trial(ctx context.Context, doc *rundoc.Document, lb *rundoc.Loaded) *trialRun {
	cfg := lb.Config
	if doc.Run.Mode != run.ModeDeploy || lb.Destroy {
		return nil
	}
	for _, st := range cfg.Stacks {
		if st.Assembly != nil {
			return nil
		}
	}
	if _, err := s.store.CurrentLock(ctx, cfg.Namespace, cfg.PersistentGraphKey); !errors.Is(err, statestore.ErrNotLocked) {
		return nil
	}
	g, err := s.store.Show(ctx, cfg.Namespace, cfg.PersistentGraphKey, "")
	if err != nil {
		return nil
	}
	t := *doc
	t.Run = doc.Run.Clone()
	t.Warnings = slices.Clone(doc.Warnings)
	discard := slog.New(slog.DiscardHandler) // what it would log, the run logs as it plans again
	d, reason, err := s.plan(ctx, &t, lb, g, t.Run.Mode, discard)
	if err != nil || reason != "" || len(d.res.Busy) > 0 {
		return nil
	}
	return &trialRun{doc: &t, decided: d, generation: g.Generation}
}

// quiet reports whether the trial's run changes nothing: the plan drops no stack from the
// graph and changes no guard, and the run's first step (run.Advance, as step calls it, with no observation)
// finds every stack unchanged and ends it without an action. The trial's run is then
// that ended run.
func (s starter) quiet(ctx context.Context, t *trialRun) bool {
	if len(t.doc.Drop) > 0 || len(t.doc.Run.Stacks) == 0 || len(t.doc.Run.GuardChanges) > 0 {
		// A guard changed (tightened: a push refuses a relaxed one) is recorded in the graph.
		return false
	}
	opts, err := s.options(ctx, t.doc)
	if err != nil {
		return false
	}
	next, actions := run.Advance(t.doc.Run, nil, s.clk.Now().UTC(), opts)
	if len(actions) > 0 || next.Status != run.Succeeded {
		return false
	}
	for _, st := range next.Stacks {
		if st.Phase != run.Unchanged {
			return false
		}
	}
	t.doc.Run = next
	return true
}

// recordQuiet records a run that changes nothing in its run document alone, created
// ended (Quiet): it takes no lock and writes neither the graph (whose stacks, inputs and
// outputs stand), the index of open runs nor a report; its summary is published.
func (s starter) recordQuiet(ctx context.Context, doc *rundoc.Document, log *slog.Logger) error {
	doc.Quiet = true
	if _, err := s.runs.save(ctx, doc, ""); errors.Is(err, errRaceLost) {
		log.Info("deploy: run already recorded by a duplicate of this event")
		return nil
	} else if err != nil {
		return err
	}
	for _, name := range doc.Run.Names() {
		st := doc.Run.Stacks[name]
		log.Info("deploy: stack finished", "stack", name, "stack_name", st.StackName, "phase", string(st.Phase), "reason", st.Reason, "changes", st.Changes)
	}
	log.Info("deploy: run ended: nothing to change", "stacks", len(doc.Run.Stacks), "status", string(doc.Run.Status))
	s.notify(ctx, doc, log)
	return nil
}
