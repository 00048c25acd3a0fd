package deployer

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// graphs writes what a step of a run changed (state.Record decides it) to the persistent
// graph, under the run's lock.
type graphs struct{ *base }

// record records in the persistent graph the stacks that finished (all of them when the
// run ended, with the bundle when it succeeded), and drops what the plan dropped.
func (gs graphs) record(ctx context.Context, lock *statestore.Lock, doc *rundoc.Document, finished []string) error {
	rec := state.Recording{Run: doc.Run, Finished: finished, Drop: doc.Drop, Statuses: doc.Statuses,
		Bundle: doc.Bundle.Ref(), Region: gs.cfg.Region, Now: gs.clk.Now().UTC(), Origins: doc.Origins}
	if rec.Idle() {
		return nil
	}
	// Start wrote any graph it rebuilt, so a missing graph is a first run's: rebuilding it
	// now would pick up the stacks this run is creating.
	g, err := gs.store.Read(ctx, lock)
	if errors.Is(err, statestore.ErrNotFound) {
		g, err = &state.Graph{Namespace: doc.Namespace, Key: doc.GraphKey, Stacks: map[string]*state.Stack{}}, nil
	}
	if err != nil {
		return err
	}
	next, changed := state.Record(g, rec)
	if !changed {
		return nil
	}
	doc.Drop = nil
	if err := gs.store.Write(ctx, lock, next); err != nil {
		return err
	}
	if doc.Run.Status == run.Succeeded && doc.Destroy && len(next.Stacks) == 0 {
		// Nothing is left to manage: the state object goes; its versions keep the history.
		key := bucket.StateKey(doc.Namespace, doc.GraphKey)
		if err := objects.Delete(ctx, gs.s3, gs.cfg.Bucket, key, ""); err != nil {
			return fmt.Errorf("remove the emptied graph: %w", err)
		}
		doc.Notes = append(doc.Notes, fmt.Sprintf("every stack is deleted: the emptied graph's state object %s was removed (its earlier versions keep the history)", bucket.URI(gs.cfg.Bucket, key)))
	}
	return nil
}
