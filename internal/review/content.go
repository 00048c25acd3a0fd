package review

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/plan"
)

// The reviewed plan of a merge is found by the content it was made for: a bundle zipped
// deterministically has the same sha256 in the pull request's checkout and in the merge's,
// and the plan records the sha256 of the upload it was made from. Nothing passes between
// the two CI jobs but the bucket.

// NoPlanError says no plan of the deployment was made for a bundle's content.
type NoPlanError struct {
	Deployment, SHA256 string
}

func (e *NoPlanError) Error() string {
	return fmt.Sprintf("no reviewed plan for this content (bundle sha256 %s): plan it on the pull request first (`cairn plan PATH --deployment %s`)", e.SHA256, e.Deployment)
}

// ForContent returns the newest plan of deployment made for the bundle of sha256 sum, with
// its status; a *NoPlanError when there is none.
func (r *Reader) ForContent(ctx context.Context, deployment, sum string) (Entry, error) {
	entries, err := r.find(ctx, deployment, 1, func(p *plan.Document) bool { return p.Bundle.SHA256 == sum })
	if err != nil {
		return Entry{}, err
	}
	if len(entries) == 0 {
		return Entry{}, &NoPlanError{Deployment: deployment, SHA256: sum}
	}
	return entries[0], nil
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

// Applicable returns nil when e, the plan found for a bundle's content, can be applied;
// else why not and what to do, as `cairn apply` says it.
func (e Entry) Applicable() error {
	p := e.Plan
	what := fmt.Sprintf("the reviewed plan for this content (bundle sha256 %s), %s", p.Bundle.SHA256, p.ID)
	if src := p.Bundle.Source.String(); src != "" {
		what += " (" + src + ")"
	}
	replan := fmt.Sprintf("re-plan this content (`cairn plan PATH --deployment %s`), review it, then apply", p.Deployment)
	switch e.Status {
	case Planned:
		return nil
	case Applied:
		return fmt.Errorf("%s, was already %s: a plan applies at most once; nothing to apply", what, e.Why)
	case Failed:
		return fmt.Errorf("%s, failed (%s): there is nothing to apply; fix the bundle and plan it on the pull request", what, e.Why)
	}
	return fmt.Errorf("%s, is %s (%s): %s", what, e.Status, e.Why, replan)
}
