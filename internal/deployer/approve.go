package deployer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// An apply makes some content of a deployment applied: an approval of plan P applies P's
// own bundle from exactly P's entries; an upload to approvals/NAME.zip (cairn apply)
// applies that bundle's content from the entries of any open plan. Either way, under the
// lock, the content is decided against the stacks now (plan.Make), every stack it changes
// must be covered by a reviewed entry made for exactly that stack's content from a base
// that is still current (plan.Compose), and every plan an entry comes from must pass its
// seal and integrity checks; then exactly those change sets run, or nothing does.

// approval begins the apply run of an approved plan (up is what the approval's key names).
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
	doc.Decisions, doc.Destroy = p.Decisions, p.Destroy
	if p.Namespace == "" {
		doc.Refusals = []string{fmt.Sprintf("plan %s failed before it planned anything (%s): nothing to apply; fix the bundle and re-plan", planID, p.Reason)}
		return s.fail(ctx, doc, nil, "refused: the plan failed; nothing was executed", log)
	}
	if outside := p.Outside(s.cfg.Namespaces); len(outside) > 0 {
		doc.Refusals = outside
		log.Warn("deploy: approved plan refused: outside the allowed namespaces; nothing is executed", "reasons", strings.Join(outside, "; "))
		return s.fail(ctx, doc, nil, fmt.Sprintf("refused: plan %s is outside the namespaces this cairn may manage; nothing was executed", planID), log)
	}
	lb, err := s.bundle(ctx, doc)
	if err != nil {
		return err
	}
	if lb.Bundle.SHA256 != p.Bundle.SHA256 || lb.Config == nil {
		doc.Refusals = []string{fmt.Sprintf("plan %s: its bundle %s is not the content planned (sha256 %s, planned %s): nothing was executed: re-plan", planID, p.Bundle, lb.Bundle.SHA256, p.Bundle.SHA256)}
		doc.Errors = lb.Errors
		return s.fail(ctx, doc, nil, fmt.Sprintf("refused: plan %s cannot be applied; nothing was executed", planID), log)
	}
	lock, err := s.acquire(ctx, u, "approval", doc, p.Namespace, p.GraphKey, log)
	if lock == nil {
		return err
	}
	return s.applyLocked(ctx, doc, lock, lb, log)
}

// content begins the apply run of a bundle's content (up is what the key of an upload to
// approvals/NAME.zip names).
func (s starter) content(ctx context.Context, u Upload, up bucket.Upload) error {
	if !s.ownBucket(u) {
		return nil
	}
	if err := bucket.CheckDeployment(up.Deployment); err != nil {
		s.log.Error("deploy: apply refused; nothing is recorded or changed", "key", u.Key, "err", err)
		return nil
	}
	doc, log, err := s.begin(ctx, &u, up.Deployment, run.ModeDeploy)
	if doc == nil {
		return err
	}
	log = log.With("version", u.VersionID)
	doc.Content = true
	doc.Bundle = rundoc.Bundle{Bucket: u.Bucket, Key: u.Key, VersionID: u.VersionID, Sequencer: u.Sequencer}
	// A newer content (a later merge) includes what this one brings.
	if sup, err := s.superseded(ctx, u); err != nil {
		return err
	} else if sup {
		return s.supersede(ctx, doc, log)
	}
	lb, err := rundoc.Download(ctx, s.s3, doc.Bundle, s.loadOptions(up.Deployment))
	if err != nil {
		return err
	}
	s.bundles.put(up.Deployment, lb)
	doc.Bundle = lb.Bundle
	if len(lb.Errors) > 0 {
		doc.Errors = lb.Errors
		return s.fail(ctx, doc, nil, fmt.Sprintf("invalid bundle: %d error(s); nothing was changed", len(lb.Errors)), log)
	}
	doc.Namespace, doc.GraphKey = lb.Config.Namespace, lb.Config.PersistentGraphKey
	lock, err := s.acquire(ctx, u, "apply", doc, doc.Namespace, doc.GraphKey, log)
	if lock == nil {
		return err
	}
	if sup, err := s.superseded(ctx, u); err != nil || sup {
		s.release(ctx, lock, log)
		if err != nil {
			return err
		}
		return s.supersede(ctx, doc, log)
	}
	return s.applyLocked(ctx, doc, lock, lb, log)
}

// applyLocked is the rest of the start of an apply run, under its lock: the content
// decided, the entries that cover it composed and checked, the plans all of whose changes
// run marked as applying (a plan applies at most once), and the run launched; or a refusal
// that names each stack not covered, and why, with nothing executed.
func (s starter) applyLocked(ctx context.Context, doc *rundoc.Document, lock *statestore.Lock, lb *rundoc.Loaded, log *slog.Logger) error {
	deployment := doc.Run.Deployment
	var only *plan.Document
	if doc.Plan != "" {
		// Read again under the lock: an approval that ran meanwhile may have applied it.
		p, etag, err := s.plans.read(ctx, deployment, doc.Plan)
		if err != nil {
			s.release(ctx, lock, log)
			return err
		}
		if reasons, _ := p.Lapsed(doc.Run.StartedAt, s.cfg.PlanTTL); len(reasons) > 0 {
			doc.Refusals = reasons
			if status, ok := p.Retirement(nil, doc.Run.StartedAt, s.cfg.PlanTTL); ok && status == plan.Expired {
				// Its change sets, and stacks that exist only for it, go now.
				s.hygiene.retire(ctx, p, etag, plan.Expired, fmt.Sprintf("expired after %s", s.cfg.PlanTTL), nil, s.changesets(doc.Run.ID, log), log)
			}
			return s.fail(ctx, doc, lock, fmt.Sprintf("refused: plan %s cannot be applied; nothing was executed", p.ID), log)
		}
		only = p
	}
	decisions := doc.Decisions
	d, failed, err := s.decide(ctx, doc, lock, lb, run.ModePlan, nil, log)
	if failed || err != nil {
		if !failed {
			s.release(ctx, lock, log)
		}
		return err
	}
	if len(d.res.Busy) > 0 {
		doc.Decisions = decisions
		return s.wait(ctx, doc, lock, d.res.Busy, log)
	}
	candidates, err := s.openPlans(ctx, doc, only)
	if err != nil {
		s.release(ctx, lock, log)
		return err
	}
	cs := s.changesets(doc.Run.ID, log)
	live := plan.SealLive(doc.Run, d.live, d.key)
	content := plan.Content{SHA256: doc.Bundle.SHA256, Run: doc.Run, Decisions: doc.Decisions, Inputs: doc.Inputs, Consumed: map[string]map[string]string{}}
	for _, name := range doc.Run.Names() {
		content.Consumed[name] = plan.Consumed(doc.Run, doc.Lookups, doc.SSM, name, d.key)
	}
	if only == nil {
		candidates = content.Relevant(candidates)
	}
	unsound, described, err := s.soundness(ctx, deployment, candidates, d, live, cs)
	if err != nil {
		s.release(ctx, lock, log)
		return err
	}
	now := doc.Run.StartedAt
	if only != nil && len(unsound[only.ID]) > 0 {
		// An approval names exactly this plan: it must pass its checks even where the
		// content needs none of its entries.
		doc.Refusals = slices.Clone(unsound[only.ID])
		log.Error("deploy: the approved plan's document fails its checks; nothing is executed", "reasons", strings.Join(doc.Refusals, "; "))
		return s.fail(ctx, doc, lock, fmt.Sprintf("refused: plan %s cannot be applied; nothing was executed", only.ID), log)
	}
	comp := plan.Compose(plan.ComposeInput{Deployment: deployment, Content: content, Plans: candidates, Only: doc.Plan, Live: live,
		ChangeSets: described, Unsound: unsound, Changed: changedBy(d.graph), Applied: appliedParameters(d.graph), Now: now, TTL: s.cfg.PlanTTL})
	if !comp.Covered() {
		for _, u := range comp.Uncovered {
			doc.Refusals = append(doc.Refusals, u.String())
		}
		for id, bad := range unsound {
			log.Error("deploy: a plan document fails its integrity checks; it covers nothing", "plan_checked", id, "reasons", strings.Join(bad, "; "))
		}
		log.Warn("deploy: apply refused: stacks it changes are not covered by a reviewed plan; nothing is executed", "reasons", strings.Join(doc.Refusals, "; "))
		return s.fail(ctx, doc, lock, fmt.Sprintf("refused: %d stack(s) not covered by a reviewed plan; nothing was executed", len(comp.Uncovered)), log)
	}
	// A plan with a policy denial no override lifts executes nothing (the CLI refuses to
	// approve it; an approval written by hand meets this).
	if refusals, err := s.policyChecked(ctx, doc, candidates, comp.Plans); err != nil || len(refusals) > 0 {
		if err != nil {
			s.release(ctx, lock, log)
			return err
		}
		doc.Refusals = refusals
		log.Warn("deploy: apply refused: denied by policy; nothing is executed", "reasons", strings.Join(refusals, "; "))
		return s.fail(ctx, doc, lock, "refused: denied by policy; nothing was executed", log)
	}
	// A plan applies at most once: each plan all of whose changes run is marked as
	// applied by this run before anything runs.
	for _, id := range comp.Whole {
		p, etag, err := s.plans.read(ctx, deployment, id)
		if err == nil && p.Status != plan.Planned {
			err = fmt.Errorf("plan %s: %w: it is %s now", id, errRaceLost, p.Status)
		}
		if err == nil {
			p.Status, p.AppliedBy, p.AppliedAt = plan.Applying, doc.Run.ID, now
			_, err = s.plans.write(ctx, p, etag)
		}
		if err != nil {
			s.release(ctx, lock, log)
			if errors.Is(err, errRaceLost) {
				return nil // another apply got there first; this event is dealt with by that run
			}
			return err
		}
	}
	doc.Plans, doc.Applies = comp.Plans, comp.Whole
	doc.Origins = map[string]string{}
	for name, pk := range comp.Picks {
		doc.Origins[name] = "plan " + pk.Plan.ID
		if c := pk.Plan.Change(); c != "" {
			doc.Origins[name] = c + ", plan " + pk.Plan.ID
		}
	}
	doc.Run = comp.Run(content, doc.Run.ID, d.live, now)
	doc.Statuses = map[string]string{}
	for name, rs := range doc.Run.Stacks {
		if l, ok := d.live[rs.Key()]; ok {
			doc.Statuses[name] = l.Status
		}
	}
	log.Info("deploy: apply composed", "plans", strings.Join(comp.Plans, ","), "applied", strings.Join(comp.Whole, ","), "stacks", strings.Join(slices.Sorted(maps.Keys(comp.Picks)), ","))
	return s.launch(ctx, doc, lock, log, "apply run")
}

// openPlans are the plans whose entries may cover doc's content: only, for an approval
// of it; else the deployment's newest open plans of the same graph, but those of merged
// content (plan.Document.AfterMerge), which only an approval of exactly them applies.
func (s starter) openPlans(ctx context.Context, doc *rundoc.Document, only *plan.Document) ([]*plan.Document, error) {
	if only != nil {
		return []*plan.Document{only}, nil
	}
	ids, err := s.plans.ids(ctx, doc.Run.Deployment)
	if err != nil {
		return nil, err
	}
	if len(ids) > sweepWindow {
		ids = ids[len(ids)-sweepWindow:]
	}
	var out []*plan.Document
	for _, id := range ids {
		p, _, err := s.plans.read(ctx, doc.Run.Deployment, id)
		if err != nil {
			continue // unreadable: it covers nothing
		}
		if p.Composable() && p.Namespace == doc.Namespace && p.GraphKey == doc.GraphKey {
			out = append(out, p)
		}
	}
	return out, nil
}

// soundness checks each candidate plan as an approval of it would, before any entry of
// it is trusted: its seal (the deployer's MAC of the document), its secrets sealed with
// the key in use, and what it names (plan.Document.Integrity: each change set it would
// execute is its plan run's, described by id, each stack it deletes the graph's). It
// returns, by plan id, why a plan cannot be trusted, and every change set described.
func (s starter) soundness(ctx context.Context, deployment string, candidates []*plan.Document, d *decided, live map[string]plan.Live, cs *changeset.Client) (map[string][]string, map[string]plan.ChangeSet, error) {
	unsound := map[string][]string{}
	described := map[string]plan.ChangeSet{}
	for _, p := range candidates {
		var bad []string
		if !p.Signed(d.key) {
			bad = append(bad, fmt.Sprintf("plan %s of deployment %s: its seal is not the deployer's of the document as it is now: the document was edited since the plan run wrote it (or written by a cairn before plans were sealed); nothing was executed", p.ID, deployment))
		}
		bad = append(bad, p.SealedWithoutKey(d.key)...)
		o := plan.Observed{Graph: d.graph, Live: live, ChangeSets: map[string]plan.ChangeSet{}}
		targets := p.ChangeSetsToDescribe()
		for _, e := range p.Stacks {
			if e.ChangeSetID != "" {
				targets[e.ChangeSetID] = p.ChangeSetTarget(e.ChangeSetID)
			}
		}
		for _, id := range slices.Sorted(maps.Keys(targets)) {
			c, ok := described[id]
			if !ok {
				var err error
				if c, err = cs.Describe(ctx, targets[id], id); err != nil {
					return nil, nil, err
				}
				described[id] = c
			}
			o.ChangeSets[id] = c
		}
		bad = append(bad, p.Integrity(deployment, p.ID, s.cfg.Bucket, o)...)
		if len(bad) > 0 {
			unsound[p.ID] = bad
		}
	}
	return unsound, described, nil
}

// changedBy says, by stack, what last changed it and when, as the graph recorded it.
func changedBy(g *state.Graph) map[string]plan.LastChange {
	out := map[string]plan.LastChange{}
	if g == nil {
		return out
	}
	for name, st := range g.Stacks {
		if st.ChangedBy != "" {
			out[name] = plan.LastChange{By: st.ChangedBy, At: st.ChangedAt}
		}
	}
	return out
}

// appliedParameters are, by stack, the parameters last applied as the graph stored them.
func appliedParameters(g *state.Graph) map[string]map[string]string {
	out := map[string]map[string]string{}
	if g == nil {
		return out
	}
	for name, st := range g.Stacks {
		if st.Parameters != nil {
			out[name] = st.Parameters
		}
	}
	return out
}

// late says why a plan of src would be late (plan.LateFor), judged against the apply
// runs among the deployment's newest runs; "" when it is not.
func (s starter) late(ctx context.Context, deployment string, src provenance.Source, now time.Time) (string, error) {
	if src.PullRequest <= 0 || src.Merged {
		return "", nil
	}
	keys, err := objects.List(ctx, s.s3, s.cfg.Bucket, bucket.RunsOf(deployment))
	if err != nil {
		return "", err
	}
	var ids []string
	for _, k := range keys {
		if id, ok := bucket.RunIDOf(deployment, k); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if len(ids) > lateWindow {
		ids = ids[len(ids)-lateWindow:]
	}
	var merges []plan.Merge
	for _, id := range ids {
		doc, _, err := s.runs.load(ctx, deployment, id)
		if err != nil || !doc.Content || doc.Bundle.Source.PullRequest <= 0 {
			continue
		}
		merges = append(merges, plan.Merge{PullRequest: doc.Bundle.Source.PullRequest, Run: doc.Run.ID, At: doc.Run.StartedAt})
	}
	return plan.LateFor(src, merges, now), nil
}

// lateWindow is how many of a deployment's newest runs are searched for the merge of a
// pull request whose plan is being made.
const lateWindow = 20
