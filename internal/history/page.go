package history

import (
	"context"
	"errors"
	"fmt"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/run"
)

// Page is where the page of a run or a plan is (package runpage): its key, and why it is
// not in the bucket yet when it is not.
type Page struct {
	Deployment, ID string
	// Key is the page's key: a plan's page when id names a plan (a plan's id is its plan
	// run's too), else the run's.
	Key  string
	Plan bool
	// Unwritten says why the bucket holds no page yet ("": it does): a run that started no
	// stack yet (its page is written as stacks start and finish, and at its end), or one
	// that changed nothing (quiet: it writes no report). A local cairn renders every page
	// as it is asked for, so it has them all.
	Unwritten string
}

// Page finds the page of run or plan id of deployment; with id "", of its newest run.
func (s *Store) Page(ctx context.Context, deployment, id string) (Page, error) {
	if id == "" {
		ids, err := s.RunIDs(ctx, deployment)
		if err != nil {
			return Page{}, err
		}
		if len(ids) == 0 {
			return Page{}, fmt.Errorf("deployment %s has no runs in s3://%s: push a bundle with `cairn push PATH --deployment %s`: %w", deployment, s.Bucket, deployment, ErrNothingDeployed)
		}
		id = ids[0]
	}
	p := Page{Deployment: deployment, ID: id}
	_, err := s.Plan(ctx, deployment, id)
	switch {
	case err == nil:
		p.Key, p.Plan = layout.PlanPageKey(deployment, id), true
		return p, nil
	case !errors.Is(err, ErrNotFound):
		return Page{}, err
	}
	doc, err := s.Run(ctx, deployment, id)
	if errors.Is(err, ErrNotFound) {
		return Page{}, fmt.Errorf("deployment %s has no run or plan %s in s3://%s: see its runs with `cairn status %s`, its plans with `cairn plans %s`: %w", deployment, id, s.Bucket, deployment, deployment, err)
	}
	if err != nil {
		return Page{}, err
	}
	p.Key = layout.RunPageKey(deployment, id)
	switch {
	case doc.Quiet:
		p.Unwritten = fmt.Sprintf("run %s found nothing to change: it wrote no report and no page (`cairn status %s` shows it)", id, deployment)
	case doc.Run.Status == run.Running && doc.PageAt.IsZero():
		p.Unwritten = fmt.Sprintf("run %s has started no stack yet: its page is written once it does; follow it meanwhile with `cairn follow %s`", id, deployment)
	}
	return p, nil
}
