package review

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/state"
)

// The reviewed plans of a merge are found by content: `cairn apply` uploads the merged
// bundle, and the deployer composes the entries of the open plans made for exactly the
// content of each stack it changes (plan.Compose). What a reader can tell before that is
// whether the content is applied already.

// AlreadyApplied reports whether the bundle of sha256 sum is what the persistent graph g
// says was last applied whole (a push, or an apply, that succeeded): applying it again
// has nothing to do. It is the decision `cairn apply` makes before it uploads anything, so
// a job retried after it succeeded ends at once, with success.
func AlreadyApplied(g *state.Graph, sum string) bool {
	return g != nil && sum != "" && g.Bundle.SHA256 == sum
}

// ForCommit returns the newest at most limit plans of deployment (all when limit <= 0)
// made from commit sha (the commit checked out or a pull request's head, abbreviated to 7
// hex digits or more), newest first.
func (r *Reader) ForCommit(ctx context.Context, deployment, sha string, limit int) ([]Entry, error) {
	if len(strings.TrimSpace(sha)) < 7 {
		return nil, fmt.Errorf("--commit %q: give at least 7 hex digits of the commit", sha)
	}
	return r.find(ctx, deployment, limit, func(p *plan.Document) bool {
		src := p.Bundle.Source
		if src.Commit == "" {
			src.Commit = p.Bundle.GitRef
		}
		return src.Matches(sha)
	})
}

// find reads deployment's plans newest first and returns the first at most limit (all
// when limit <= 0) that keep accepts, each with its status.
func (r *Reader) find(ctx context.Context, deployment string, limit int, keep func(*plan.Document) bool) ([]Entry, error) {
	ids, err := r.History.PlanIDs(ctx, deployment)
	if err != nil {
		return nil, err
	}
	var matched []*plan.Document
	for _, id := range ids {
		p, err := r.History.Plan(ctx, deployment, id)
		if errors.Is(err, history.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if keep(p) {
			matched = append(matched, p)
			if limit > 0 && len(matched) == limit {
				break
			}
		}
	}
	if len(matched) == 0 {
		return nil, nil
	}
	refused, err := r.refusedOf(ctx, deployment)
	if err != nil {
		return nil, err
	}
	o := r.observer()
	out := make([]Entry, 0, len(matched))
	for _, p := range matched {
		e, err := o.entry(ctx, p, refused[p.ID])
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
