package deploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
)

// approval begins the apply run of an approved plan (up is what the approval's key names): under the lock, the plan must be
// fresh (plan.Document.Lapsed and StaleReasons decide it from what is observed here),
// and then it is marked applied before anything runs.
func (s starter) approval(ctx context.Context, u Upload, up bucket.Upload) error {
	if !s.ownBucket(u) {
		return nil
	}
	deployment, planID := up.Deployment, up.PlanID
	if up.Kind != bucket.ApprovalUpload {
		s.log.Info("deploy: ignoring an object that is not an approval", "key", u.Key, "want", bucket.ApprovalKey("NAME", "PLAN_ID"))
		return nil
	}
	if err := errors.Join(bucket.CheckDeployment(deployment), bucket.CheckPlanID(planID)); err != nil {
		s.log.Error("deploy: approval refused; nothing is recorded or changed", "key", u.Key, "err", err)
		return nil
	}
	doc, log, err := s.begin(ctx, &u, deployment, run.ModeDeploy)
	if doc == nil {
		return err
	}
	log = log.With("plan", planID)
	doc.Plan = planID
	p, _, err := s.plans.read(ctx, deployment, planID)
	if errors.Is(err, errNoRun) {
		doc.Refusals = []string{fmt.Sprintf("plan %s of deployment %s does not exist (no %s): check the plan id printed by `cairn plan`", planID, deployment, bucket.PlanKey(deployment, planID))}
		return s.fail(ctx, doc, nil, "refused: no such plan; nothing was executed", log)
	}
	if err != nil {
		return err
	}
	doc.Bundle = p.Bundle
	doc.Namespace, doc.GraphKey = p.Namespace, p.GraphKey
	doc.Decisions, doc.Lookups, doc.SSM, doc.Drop, doc.Destroy = p.Decisions, p.Lookups, p.SSM, p.Drop, p.Destroy
	if p.Namespace == "" {
		doc.Refusals = []string{fmt.Sprintf("plan %s failed before it planned anything (%s): nothing to apply; fix the bundle and re-plan", planID, p.Reason)}
		return s.fail(ctx, doc, nil, "refused: the plan failed; nothing was executed", log)
	}
	if outside := p.Outside(s.cfg.Namespaces); len(outside) > 0 {
		doc.Refusals = outside
		log.Warn("deploy: approved plan refused: outside the allowed namespaces; nothing is executed", "reasons", strings.Join(outside, "; "))
		return s.fail(ctx, doc, nil, fmt.Sprintf("refused: plan %s is outside the namespaces this cairn may manage; nothing was executed", planID), log)
	}
	lock, err := s.acquire(ctx, u, "approval", doc, p.Namespace, p.GraphKey, log)
	if lock == nil {
		return err
	}
	// Re-read under the lock: an approval that ran meanwhile may have applied it.
	p, etag, err := s.plans.read(ctx, deployment, planID)
	if err != nil {
		s.release(ctx, lock, log)
		return err
	}
	now := doc.Run.StartedAt
	cs := s.changesets(doc.Run.ID, log)
	reasons, final := p.Lapsed(now, s.cfg.PlanTTL)
	var live map[string]plan.Live
	if !final {
		o, err := s.observe(ctx, p, lock, cs)
		if err != nil {
			s.release(ctx, lock, log)
			return err
		}
		key, err := s.key(ctx)
		if err != nil {
			s.release(ctx, lock, log)
			return err
		}
		o.Live = plan.SealLive(p.Run, o.Live, key) // as the run stores them
		live = o.Live
		reasons = append(reasons, p.SealedWithoutKey(key)...)
		bad := p.Integrity(deployment, planID, s.cfg.Bucket, *o)
		if !p.Signed(key) {
			bad = append([]string{fmt.Sprintf("plan %s of deployment %s: its seal is not the deployer's of the document as it is now: the document was edited since the plan run wrote it (or written by a cairn before plans were sealed); nothing was executed: re-plan", planID, deployment)}, bad...)
		}
		if len(bad) > 0 {
			log.Error("deploy: the plan document fails its integrity checks; nothing is executed", "reasons", strings.Join(bad, "; "))
			reasons = append(reasons, bad...)
		} else {
			reasons = append(reasons, p.StaleReasons(*o)...)
		}
	}
	if status, ok := p.Retirement("", now, s.cfg.PlanTTL); ok && status == plan.Expired {
		// Its change sets, and stacks that exist only for it, go now.
		s.hygiene.retire(ctx, p, etag, plan.Expired, fmt.Sprintf("expired after %s", s.cfg.PlanTTL), nil, cs, log)
	}
	if len(reasons) > 0 {
		doc.Refusals = reasons
		log.Warn("deploy: approved plan refused; nothing is executed", "reasons", strings.Join(reasons, "; "))
		return s.fail(ctx, doc, lock, fmt.Sprintf("refused: plan %s cannot be applied; nothing was executed", planID), log)
	}
	// A plan applies at most once: record this run as its only apply before any change.
	p.Status, p.AppliedBy, p.AppliedAt = plan.Applying, doc.Run.ID, now
	if _, err := s.plans.write(ctx, p, etag); err != nil {
		s.release(ctx, lock, log)
		if errors.Is(err, errRaceLost) {
			return nil // another approval got there first; its event is dealt with by that run
		}
		return err
	}
	doc.Run = p.ApplyRun(doc.Run.ID, live, now)
	doc.Statuses = map[string]string{}
	for name, rs := range doc.Run.Stacks {
		if l, ok := live[rs.Key()]; ok {
			doc.Statuses[name] = l.Status
		}
	}
	return s.launch(ctx, doc, lock, log, "apply run")
}

// observe gathers what an approval compares with its plan: the graph's generation, the
// newest version of the planned upload, every stack, and the reviewed change sets.
func (s starter) observe(ctx context.Context, p *plan.Document, lock *state.Lock, cs *changeset.Client) (*plan.Observed, error) {
	o := &plan.Observed{ChangeSets: map[string]plan.ChangeSet{}}
	g, err := s.store.Read(ctx, lock)
	switch {
	case errors.Is(err, state.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		o.Generation, o.GraphRunID, o.Graph = g.Generation, g.RunID, g
	}
	if p.Versioned() {
		if o.LatestVersion, err = s.latestVersion(ctx, p.Bundle.Bucket, p.Bundle.Key); err != nil {
			return nil, err
		}
	}
	if o.Live, err = liveOf(ctx, s.base, cs, p.Run); err != nil {
		return nil, err
	}
	describe := p.ChangeSetsToDescribe()
	for _, id := range p.ChangeSetsToCheck(o.Live) {
		if _, ok := describe[id]; !ok {
			describe[id] = p.ChangeSetTarget(id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(describe)) {
		if o.ChangeSets[id], err = cs.Describe(ctx, describe[id], id); err != nil {
			return nil, err
		}
	}
	return o, nil
}
