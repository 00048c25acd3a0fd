package deploy

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
)

// DefaultPlanTTL is how long an unapplied plan stays approvable; after it, the plan
// expires and its change sets are deleted.
const DefaultPlanTTL = 7 * 24 * time.Hour

// planAction names what a plan does to a stack.
func planAction(s *run.Stack) string {
	switch {
	case s.Intent == run.IntentDelete:
		return "delete"
	case s.Intent == run.IntentRecreate:
		return "recreate"
	case s.Intent == run.IntentRead || s.Phase == run.Unchanged:
		return "none"
	case s.ChangeSetType == "CREATE" || !s.Exists:
		return "create"
	default:
		return "update"
	}
}

// readPlan reads a plan document and its ETag.
func (d *Driver) readPlan(ctx context.Context, deployment, id string) (*plan.Document, string, error) {
	key := bucket.PlanKey(deployment, id)
	o, err := bucket.Get(ctx, d.s3, d.cfg.Bucket, key, "", 0)
	if errors.Is(err, bucket.ErrNotFound) {
		return nil, "", fmt.Errorf("plan %s of deployment %s: no document %s: %w", id, deployment, bucket.URI(d.cfg.Bucket, key), errNoRun)
	}
	if err != nil {
		return nil, "", fmt.Errorf("plan %s: %w", id, err)
	}
	p, err := plan.Decode(o.Body)
	if err != nil {
		return nil, "", fmt.Errorf("plan %s: %s: %w", id, bucket.URI(d.cfg.Bucket, key), err)
	}
	return p, o.ETag, nil
}

// writePlan writes a plan document: created when etag is "", else only over etag.
func (d *Driver) writePlan(ctx context.Context, p *plan.Document, etag string) (string, error) {
	etag, err := bucket.WriteJSON(ctx, d.s3, d.cfg.Bucket, bucket.PlanKey(p.Deployment, p.ID), p, bucket.Write{Create: etag == "", IfMatch: etag})
	if errors.Is(err, bucket.ErrConflict) {
		return "", fmt.Errorf("plan %s: %w: %w", p.ID, errRaceLost, err)
	}
	if err != nil {
		return "", fmt.Errorf("plan %s: %w", p.ID, err)
	}
	return etag, nil
}

// planDocument builds the plan document of a plan run that ended, recording what an
// approval checks: the graph generation, each stack's status and LastUpdatedTime, and each
// change set with its resource changes.
func (d *Driver) planDocument(ctx context.Context, doc *Document, lock *state.Lock, cs *changeset.Client) (*plan.Document, error) {
	p := &plan.Document{
		ID: doc.Run.ID, Deployment: doc.Run.Deployment, Namespace: doc.Namespace, GraphKey: doc.GraphKey,
		Status: plan.Planned, CreatedAt: doc.Run.StartedAt,
		Bundle: plan.BundleVersion{Bucket: doc.Bundle.Bucket, Key: doc.Bundle.Key, VersionID: doc.Bundle.VersionID,
			SHA256: doc.Bundle.SHA256, GitRef: doc.Bundle.GitRef, GitRemote: doc.Bundle.GitRemote},
		Decisions: doc.Decisions, Refusals: doc.Refusals, Errors: doc.Errors, Warnings: doc.Warnings,
		Run: doc.Run, Lookups: doc.Lookups, Protection: doc.Protection, Drop: doc.Drop, Destroy: doc.Destroy,
	}
	if doc.Run.Status != run.Succeeded {
		p.Status, p.Reason = plan.PlanFailed, cmp.Or(doc.Run.Reason, "the plan run failed")
		for _, name := range doc.Run.Names() {
			if s := doc.Run.Stacks[name]; s.Phase == run.Failed {
				p.Refusals = append(p.Refusals, fmt.Sprintf("stack %s (%s): %s", name, s.StackName, s.Reason))
			}
		}
	}
	if lock != nil {
		g, err := d.store.Read(ctx, lock)
		switch {
		case errors.Is(err, state.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			p.Generation = g.Generation
		}
	}
	var live map[string]plan.Live
	if len(doc.Run.Stacks) > 0 && lock != nil {
		var err error
		if live, err = cs.Live(ctx); err != nil {
			return nil, err
		}
	}
	for _, name := range doc.Run.Names() {
		s := doc.Run.Stacks[name]
		ps := plan.Stack{Name: name, StackName: s.StackName, StackID: s.StackID, Action: planAction(s),
			TemplateHash: s.TemplateHash, ParametersHash: s.ParametersHash, Parameters: s.Parameters,
			InputsMayChange: s.InputsMayChange, CreatedAtApply: s.AtApply, Reason: s.Reason}
		if s.Phase == run.Ready && s.ChangeSetID != "" {
			ps.ChangeSetName, ps.ChangeSetID = s.ChangeSetName, s.ChangeSetID
		}
		if l, ok := live[s.StackName]; ok {
			ps.Status, ps.LastUpdated, ps.StackID = l.Status, l.LastUpdated.UTC(), l.StackID
		}
		if s.Intent == run.IntentDelete {
			p.Deletions = append(p.Deletions, name)
		}
		if ps.ChangeSetID != "" {
			st, err := cs.Describe(ctx, ps.ChangeSetID)
			if err != nil {
				return nil, err
			}
			ps.Changes = st.Changes
		}
		p.Stacks = append(p.Stacks, ps)
	}
	return p, nil
}

// finishPlan records the plan of a plan run that ended and supersedes older plans.
func (d *Driver) finishPlan(ctx context.Context, doc *Document, lock *state.Lock, log *slog.Logger) error {
	cs := d.changesets(doc.Run.ID, log)
	p, err := d.planDocument(ctx, doc, lock, cs)
	if err != nil {
		return err
	}
	if _, err := d.writePlan(ctx, p, ""); err != nil && !errors.Is(err, errRaceLost) {
		return err
	}
	// The pull-request comment, ready to post (plans/NAME/PLAN_ID.md).
	var md bytes.Buffer
	if err := report.PlanMarkdown(&md, p); err == nil {
		key := bucket.PlanMarkdownKey(p.Deployment, p.ID)
		if _, err := bucket.Put(ctx, d.s3, d.cfg.Bucket, key, md.Bytes(), bucket.Write{ContentType: "text/markdown"}); err != nil {
			log.Warn("deploy: cannot write the plan's Markdown", "key", key, "err", err)
		}
	}
	log.Info("deploy: plan recorded", "plan", p.ID, "status", string(p.Status), "key", bucket.PlanKey(p.Deployment, p.ID))
	if lock != nil {
		d.sweepPlans(ctx, p, cs, log)
	}
	return nil
}

// sweepWindow bounds how many of a deployment's newest plans a sweep reads: every sweep
// retires all older open plans, so at most the few newest can still be open.
const sweepWindow = 20

// sweepPlans supersedes every older unapplied plan of the deployment, and expires any that
// outlived the plan TTL: their change sets are deleted, and so are stacks that exist only
// for them (REVIEW_IN_PROGRESS, never executed) unless keep (the newest plan) uses them.
// Failures are logged: hygiene never fails a run.
func (d *Driver) sweepPlans(ctx context.Context, keep *plan.Document, cs *changeset.Client, log *slog.Logger) {
	used := map[string]bool{}
	for _, s := range keep.Stacks {
		if s.StackID != "" {
			used[s.StackID] = true
		}
	}
	reason := func(old *plan.Document) string {
		return fmt.Sprintf("a newer bundle was uploaded to s3://%s/%s (version %s; this plan is of version %s) and planned as plan %s",
			keep.Bundle.Bucket, keep.Bundle.Key, keep.Bundle.VersionID, old.Bundle.VersionID, keep.ID)
	}
	d.sweep(ctx, keep.Deployment, keep.ID, used, reason, cs, log)
}

// sweep retires the open plans of deployment other than keepID: those older than keepID
// as superseded (with the reason given), newer ones only once expired.
func (d *Driver) sweep(ctx context.Context, deployment, keepID string, used map[string]bool, reason func(*plan.Document) string, cs *changeset.Client, log *slog.Logger) {
	ids, err := d.planIDs(ctx, deployment)
	if err != nil {
		log.Warn("deploy: cannot list plans to clean up", "err", err)
		return
	}
	if len(ids) > sweepWindow {
		ids = ids[len(ids)-sweepWindow:]
	}
	now := d.clk.Now().UTC()
	for _, id := range ids {
		if id == keepID {
			continue
		}
		old, etag, err := d.readPlan(ctx, deployment, id)
		if err != nil || !retirable(old) {
			continue
		}
		status, why := plan.Superseded, reason(old)
		if id > keepID {
			if now.Sub(old.CreatedAt) <= d.planTTL() {
				continue // newer than what supersedes: still open
			}
			status, why = plan.Expired, fmt.Sprintf("expired after %s", d.planTTL())
		}
		d.retire(ctx, old, etag, status, why, used, cs, log)
	}
}

// retireOpenPlans supersedes the open plans of a deployment once a deploy or apply run
// changed its graph: they were made against the graph as it was, so they can never apply.
func (d *Driver) retireOpenPlans(ctx context.Context, doc *Document, log *slog.Logger) {
	used := map[string]bool{}
	for _, s := range doc.Run.Stacks {
		if s.StackID != "" {
			used[s.StackID] = true
		}
	}
	reason := func(*plan.Document) string {
		return fmt.Sprintf("the persistent graph %s/%s changed since the plan: run %s (%s) applied in between", doc.Namespace, doc.GraphKey, doc.Run.ID, doc.Run.Status)
	}
	// Every id sorts before "~", so every open plan but expired newer ones is superseded.
	d.sweep(ctx, doc.Run.Deployment, "~", used, reason, d.changesets(doc.Run.ID, log), log)
}

// retirable reports whether a plan still has something to retire: it waits for approval, or it
// failed after making change sets (which may have created REVIEW_IN_PROGRESS stacks).
func retirable(p *plan.Document) bool {
	return p.Status == plan.Planned || (p.Status == plan.PlanFailed && len(leftovers(p)) > 0)
}

// leftover is a change set a plan made, on the stack it was made for.
type leftover struct {
	stack       plan.Stack
	changeSetID string
}

// leftovers lists the change sets a plan made: the reviewed ones and, in a plan that
// failed, those of stacks that did not get as far as review (a CREATE change set that
// failed still made its REVIEW_IN_PROGRESS stack). "No changes" change sets are deleted
// by the plan run itself.
func leftovers(p *plan.Document) []leftover {
	var out []leftover
	for _, s := range p.Stacks {
		id := s.ChangeSetID
		if rs := p.Run.Stacks[s.Name]; id == "" && rs != nil && rs.Phase != run.Unchanged {
			id = rs.ChangeSetID
		}
		if id != "" {
			out = append(out, leftover{stack: s, changeSetID: id})
		}
	}
	return out
}

// retire deletes a plan's change sets and the stacks created only for it, and records why.
// A stack goes only when it is still the REVIEW_IN_PROGRESS stack the plan's CREATE change
// set made (same id), its cairn:* tags name the plan's graph and stack, keepStacks does not
// hold it, and it has no change set but the plan's: anything else is someone else's.
func (d *Driver) retire(ctx context.Context, p *plan.Document, etag string, status plan.Status, reason string, keepStacks map[string]bool, cs *changeset.Client, log *slog.Logger) {
	live, err := cs.Live(ctx)
	if err != nil {
		log.Warn("deploy: cannot describe stacks to clean up a plan", "plan", p.ID, "err", err)
		return
	}
	for _, lo := range leftovers(p) {
		s := lo.stack
		l, ok := live[s.StackName]
		if ok && s.Action == "create" && l.Status == "REVIEW_IN_PROGRESS" && l.StackID == s.StackID && !keepStacks[l.StackID] && l.OwnedBy(p.Namespace, p.GraphKey, s.Name) {
			others, err := d.otherChangeSets(ctx, l.StackID, lo.changeSetID)
			switch {
			case err != nil:
				log.Warn("deploy: cannot list the change sets of a stack created for a plan; only the plan's change set is deleted", "plan", p.ID, "stack", s.StackName, "err", err)
			case len(others) > 0:
				log.Info("deploy: keeping a REVIEW_IN_PROGRESS stack that holds change sets the plan did not make", "plan", p.ID, "stack", s.StackName, "change_sets", others)
			default:
				if err := cs.DeleteStack(ctx, l.StackID); err != nil {
					log.Warn("deploy: cannot delete a stack created only for a plan", "plan", p.ID, "stack", s.StackName, "err", err)
				}
				continue
			}
		}
		if err := cs.DeleteChangeSet(ctx, lo.changeSetID); err != nil {
			log.Warn("deploy: cannot delete a change set of a retired plan", "plan", p.ID, "change_set", lo.changeSetID, "err", err)
		}
	}
	if p.Status == plan.PlanFailed {
		reason += "; the plan had failed: " + p.Reason
	}
	p.Status, p.Reason = status, reason
	if _, err := d.writePlan(ctx, p, etag); err != nil {
		log.Warn("deploy: cannot record a retired plan", "plan", p.ID, "err", err)
		return
	}
	log.Info("deploy: plan retired", "plan", p.ID, "status", string(status), "reason", reason)
}

// otherChangeSets lists the change sets of a stack other than own.
func (d *Driver) otherChangeSets(ctx context.Context, stackID, own string) ([]string, error) {
	in := &cloudformation.ListChangeSetsInput{StackName: aws.String(stackID)}
	var others []string
	for {
		out, err := d.cfn.ListChangeSets(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list change sets of stack %s: %w", stackID, err)
		}
		for _, c := range out.Summaries {
			if aws.ToString(c.ChangeSetId) != own {
				others = append(others, aws.ToString(c.ChangeSetName))
			}
		}
		if aws.ToString(out.NextToken) == "" {
			return others, nil
		}
		in.NextToken = out.NextToken
	}
}

func (d *Driver) planTTL() time.Duration {
	if d.cfg.PlanTTL > 0 {
		return d.cfg.PlanTTL
	}
	return DefaultPlanTTL
}

// planIDs lists the plan ids of a deployment, oldest first.
func (d *Driver) planIDs(ctx context.Context, deployment string) ([]string, error) {
	keys, err := bucket.List(ctx, d.s3, d.cfg.Bucket, bucket.PlansOf(deployment))
	if err != nil {
		return nil, fmt.Errorf("plans of deployment %s: %w", deployment, err)
	}
	var ids []string
	for _, k := range keys {
		if id, ok := bucket.PlanIDOf(deployment, k); ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// Approve starts the apply run of an approved plan (an object created at
// approvals/NAME/PLAN_ID). Under the lock it checks the plan is fresh; a stale plan
// executes nothing and its run report names each stack and reason, ending with
// "re-plan". A fresh plan is marked applied (a plan applies at most once) and its exact
// change sets are executed in dependency order; only stacks marked "created at apply" get
// new change sets.
func (d *Driver) Approve(ctx context.Context, u Upload) error {
	deployment, planID := u.Approval()
	if deployment == "" {
		d.log.Info("deploy: ignoring an object that is not an approval", "key", u.Key, "want", bucket.ApprovalKey("NAME", "PLAN_ID"))
		return nil
	}
	if err := bucket.CheckDeployment(deployment); err != nil {
		d.log.Error("deploy: approval refused; nothing is recorded or changed", "key", u.Key, "err", err)
		return nil
	}
	if u.Bucket == "" {
		u.Bucket = d.cfg.Bucket
	}
	if u.Time.IsZero() {
		u.Time = d.clk.Now()
	}
	runID := u.RunID()
	log := d.runLogger(deployment, runID).With("plan", planID)
	if _, _, err := d.loadDocument(ctx, deployment, runID); err == nil {
		log.Info("deploy: apply run already started for this approval; event redelivered")
		return nil
	} else if !errors.Is(err, errNoRun) {
		return err
	}
	now := d.clk.Now().UTC()
	doc := &Document{
		Run:  &run.Run{ID: runID, Deployment: deployment, Mode: run.ModeDeploy, Status: run.Running, Stacks: map[string]*run.Stack{}, StartedAt: now, UpdatedAt: now},
		Plan: planID,
	}
	p, etag, err := d.readPlan(ctx, deployment, planID)
	if errors.Is(err, errNoRun) {
		doc.Refusals = []string{fmt.Sprintf("plan %s of deployment %s does not exist (no %s): check the plan id printed by `cairn plan`", planID, deployment, bucket.PlanKey(deployment, planID))}
		return d.failBeforeStart(ctx, doc, nil, "refused: no such plan; nothing was executed", log)
	}
	if err != nil {
		return err
	}
	doc.Bundle = Bundle{Bucket: p.Bundle.Bucket, Key: p.Bundle.Key, VersionID: p.Bundle.VersionID, SHA256: p.Bundle.SHA256, GitRef: p.Bundle.GitRef, GitRemote: p.Bundle.GitRemote}
	doc.Namespace, doc.GraphKey = p.Namespace, p.GraphKey
	doc.Decisions, doc.Lookups, doc.Protection, doc.Drop, doc.Destroy = p.Decisions, p.Lookups, p.Protection, p.Drop, p.Destroy
	if p.Namespace == "" {
		doc.Refusals = []string{fmt.Sprintf("plan %s failed before it planned anything (%s): nothing to apply; fix the bundle and re-plan", planID, p.Reason)}
		return d.failBeforeStart(ctx, doc, nil, "refused: the plan failed; nothing was executed", log)
	}
	lock, err := d.store.Acquire(ctx, p.Namespace, p.GraphKey, runID, owner(ctx))
	var held *state.ErrLocked
	switch {
	case errors.As(err, &held) && held.Holder.RunID == runID:
		lock, err = d.resumeLock(ctx, p.Namespace, p.GraphKey, runID, held.Holder.Token)
		if err != nil {
			return err
		}
	case errors.As(err, &held):
		log.Info("deploy: another run holds the lock; the approval waits", "holder_run", held.Holder.RunID)
		return d.requeue(ctx, u)
	case err != nil:
		return err
	}
	doc.LockToken = lock.Token
	// Re-read under the lock: an approval that ran meanwhile may have applied it.
	if p, etag, err = d.readPlan(ctx, deployment, planID); err != nil {
		d.release(ctx, lock, log)
		return err
	}
	cs := d.changesets(runID, log)
	reasons, live, err := d.freshness(ctx, p, lock, cs, now)
	if err != nil {
		d.release(ctx, lock, log)
		return err
	}
	if retirable(p) && now.Sub(p.CreatedAt) > d.planTTL() {
		// Its change sets, and stacks that exist only for it, go now.
		d.retire(ctx, p, etag, plan.Expired, fmt.Sprintf("expired after %s", d.planTTL()), nil, cs, log)
	}
	if len(reasons) > 0 {
		doc.Refusals = reasons
		log.Warn("deploy: approved plan refused; nothing is executed", "reasons", strings.Join(reasons, "; "))
		return d.failBeforeStart(ctx, doc, lock, fmt.Sprintf("refused: plan %s cannot be applied; nothing was executed", planID), log)
	}
	// A plan applies at most once: record this run as its only apply before any change.
	p.Status, p.AppliedBy, p.AppliedAt = plan.Applying, runID, now
	if _, err := d.writePlan(ctx, p, etag); err != nil {
		d.release(ctx, lock, log)
		if errors.Is(err, errRaceLost) {
			return nil // another approval got there first; its event is dealt with by that run
		}
		return err
	}
	doc.Run = applyRun(p, runID, live, now)
	doc.Statuses, doc.LiveProtection = map[string]string{}, map[string]bool{}
	for name, s := range doc.Run.Stacks {
		if l, ok := live[s.StackName]; ok {
			doc.Statuses[name], doc.LiveProtection[name] = l.Status, l.TerminationProtection
		}
	}
	if err := d.writeGraph(ctx, lock, doc, nil, false); err != nil {
		d.release(ctx, lock, log)
		return err
	}
	etagDoc, err := d.saveDocument(ctx, doc, "")
	if errors.Is(err, errRaceLost) {
		return nil
	}
	if err != nil {
		d.release(ctx, lock, log)
		return err
	}
	if err := d.writeIndex(ctx, doc); err != nil {
		log.Warn("deploy: cannot index the open run; it advances by heartbeats only", "err", err)
	}
	log.Info("deploy: apply run started", "stacks", len(doc.Run.Stacks))
	if err := d.heartbeat(ctx, deployment, runID); err != nil {
		log.Error("deploy: cannot enqueue the first heartbeat", "err", err)
	}
	if err := d.step(ctx, doc, etagDoc, lock, log); err != nil {
		log.Warn("deploy: first step failed; the heartbeat retries it", "err", err)
	}
	return nil
}

// freshness lists why plan p cannot be applied now, each reason ending in "re-plan", and
// returns the live stacks it saw.
func (d *Driver) freshness(ctx context.Context, p *plan.Document, lock *state.Lock, cs *changeset.Client, now time.Time) ([]string, map[string]plan.Live, error) {
	var reasons []string
	switch p.Status {
	case plan.Planned:
	case plan.Applying, plan.Applied:
		return []string{fmt.Sprintf("plan %s was already applied by run %s at %s: a plan applies at most once; re-plan", p.ID, p.AppliedBy, p.AppliedAt.UTC().Format(time.RFC3339))}, nil, nil
	case plan.PlanFailed:
		return []string{fmt.Sprintf("plan %s failed (%s): nothing to apply; re-plan", p.ID, p.Reason)}, nil, nil
	default:
		// Superseded or expired: say so, and what else changed since.
		reasons = append(reasons, fmt.Sprintf("plan %s is %s (%s): re-plan", p.ID, p.Status, p.Reason))
	}
	if age := now.Sub(p.CreatedAt); age > d.planTTL() {
		return append(reasons, fmt.Sprintf("plan %s expired: made %s ago, plans stay approvable for %s; re-plan", p.ID, age.Round(time.Minute), d.planTTL())), nil, nil
	}
	g, err := d.store.Read(ctx, lock)
	gen := int64(0)
	switch {
	case errors.Is(err, state.ErrNotFound):
	case err != nil:
		return nil, nil, err
	default:
		gen = g.Generation
	}
	if gen != p.Generation {
		by := ""
		if g != nil && g.RunID != "" {
			by = " by run " + g.RunID
		}
		reasons = append(reasons, fmt.Sprintf("the persistent graph %s/%s changed since the plan (generation %d, planned at %d): another run applied%s in between: re-plan", p.Namespace, p.GraphKey, gen, p.Generation, by))
	}
	if p.Bundle.VersionID != "" && p.Bundle.VersionID != "null" {
		latest, err := d.latestVersion(ctx, Upload{Bucket: p.Bundle.Bucket, Key: p.Bundle.Key})
		if err != nil {
			return nil, nil, err
		}
		if latest != p.Bundle.VersionID {
			reasons = append(reasons, fmt.Sprintf("a newer bundle was uploaded to s3://%s/%s (version %s; the plan is of version %s): re-plan", p.Bundle.Bucket, p.Bundle.Key, cmp.Or(latest, "none"), p.Bundle.VersionID))
		}
	}
	live, err := cs.Live(ctx)
	if err != nil {
		return nil, nil, err
	}
	planAt := p.CreatedAt.UTC().Format("15:04:05")
	for _, s := range p.Stacks {
		if s.Action == "none" && !s.InputsMayChange {
			continue
		}
		what := "the plan"
		if s.ChangeSetName != "" {
			what = "change set " + s.ChangeSetName
		}
		l, exists := live[s.StackName]
		switch {
		case s.Status == "" && exists:
			reasons = append(reasons, fmt.Sprintf("stack %s: %s is stale (stack created at %s after plan %s): re-plan", s.StackName, what, l.LastUpdated.UTC().Format("15:04:05"), planAt))
			continue
		case s.Status != "" && !exists:
			reasons = append(reasons, fmt.Sprintf("stack %s: %s is stale (stack deleted after plan %s): re-plan", s.StackName, what, planAt))
			continue
		case exists && (l.Status != s.Status || !l.LastUpdated.Equal(s.LastUpdated)):
			reasons = append(reasons, fmt.Sprintf("stack %s: %s is stale (stack updated %s after plan %s; now %s, was %s): re-plan", s.StackName, what, l.LastUpdated.UTC().Format("15:04:05"), planAt, l.Status, s.Status))
			continue
		}
		if s.ChangeSetID != "" {
			st, err := cs.Describe(ctx, s.ChangeSetID)
			if err != nil {
				return nil, nil, err
			}
			switch {
			case !st.Found:
				reasons = append(reasons, fmt.Sprintf("stack %s: change set %s no longer exists (deleted after plan %s): re-plan", s.StackName, s.ChangeSetName, planAt))
				continue
			case st.Status != "CREATE_COMPLETE" || st.ExecutionStatus != "AVAILABLE":
				reasons = append(reasons, fmt.Sprintf("stack %s: change set %s is %s/%s, not CREATE_COMPLETE/AVAILABLE: re-plan", s.StackName, s.ChangeSetName, st.Status, st.ExecutionStatus))
				continue
			}
		}
		if s.InputsMayChange || s.CreatedAtApply || s.ParametersHash == "" {
			continue // re-checked by the apply run once the stacks it consumes are applied
		}
		if diff := d.consumedChanged(p, s, live); diff != "" {
			reasons = append(reasons, fmt.Sprintf("stack %s: %s is stale (the outputs it consumes changed since the plan: %s): re-plan", s.StackName, what, diff))
		}
	}
	return reasons, live, nil
}

// consumedChanged resolves the parameters of a planned stack against the outputs live
// now, and describes how they differ from the planned ones ("" when they do not).
func (d *Driver) consumedChanged(p *plan.Document, s plan.Stack, live map[string]plan.Live) string {
	rs := p.Run.Stacks[s.Name]
	if rs == nil {
		return ""
	}
	doc := &Document{Run: p.Run, Lookups: p.Lookups}
	opts := d.runOptions(doc)
	params, err := opts.Resolve(s.Name, rs.RawParameters, func(stack, output string) (string, bool) {
		if other := p.Run.Stacks[stack]; other != nil {
			v, ok := live[other.StackName].Outputs[output]
			return v, ok
		}
		if l, ok := live[stack]; ok {
			v, ok := l.Outputs[output]
			return v, ok
		}
		v, ok := p.Run.External[stack+"::"+output]
		return v, ok
	})
	if err != nil {
		return "its parameters no longer resolve: " + err.Error()
	}
	if run.HashParameters(params) == s.ParametersHash {
		return ""
	}
	return run.DescribeParameters(s.Parameters, params)
}

// applyRun turns the plan run into the apply run: reviewed change sets wait to be executed
// in dependency order, stacks without changes are re-checked, and "created at apply" ones
// get their change sets made once what they depend on exists.
func applyRun(p *plan.Document, runID string, live map[string]plan.Live, now time.Time) *run.Run {
	r := p.Run.Clone()
	r.ID, r.Mode, r.Status, r.Reason = runID, run.ModeDeploy, run.Running, ""
	r.StartedAt, r.UpdatedAt, r.FinishedAt, r.Seq = now, now, time.Time{}, 0
	for _, s := range r.Stacks {
		s.StartedAt, s.FinishedAt, s.PhaseSince, s.Attempts, s.Reason = time.Time{}, time.Time{}, now, 0, ""
		l, exists := live[s.StackName]
		if exists && l.Status != "REVIEW_IN_PROGRESS" {
			s.Outputs = l.Outputs
		}
		switch {
		case s.Intent == run.IntentDelete || s.Intent == run.IntentRead:
			s.Phase = run.Pending
		case s.Phase == run.Failed || s.Phase == run.Blocked:
			// A plan that failed is never applied; kept as is for the report.
		case s.AtApply:
			s.Phase, s.ChangeSetName, s.ChangeSetID, s.ChangeSetType = run.Pending, "", "", ""
			s.Exists = exists && l.Status != "REVIEW_IN_PROGRESS"
			if exists {
				s.StackID = l.StackID
			}
		default:
			// Ready with a reviewed change set, or Unchanged: resolved parameters must
			// match the plan's before anything is executed.
			s.PlannedParametersHash = s.ParametersHash
			if s.Phase == run.Unchanged {
				s.ChangeSetName, s.ChangeSetID = "", ""
			}
			s.Phase = run.Pending
		}
	}
	return r
}

// markApplied records the outcome of an apply run in its plan document.
func (d *Driver) markApplied(ctx context.Context, doc *Document, log *slog.Logger) {
	p, etag, err := d.readPlan(ctx, doc.Run.Deployment, doc.Plan)
	if err != nil {
		log.Warn("deploy: cannot record the applied plan", "plan", doc.Plan, "err", err)
		return
	}
	if p.AppliedBy != doc.Run.ID {
		return
	}
	p.Status, p.Reason = plan.Applied, fmt.Sprintf("applied by run %s: %s", doc.Run.ID, doc.Run.Status)
	if doc.Run.Reason != "" {
		p.Reason += " (" + doc.Run.Reason + ")"
	}
	if _, err := d.writePlan(ctx, p, etag); err != nil {
		log.Warn("deploy: cannot record the applied plan", "plan", doc.Plan, "err", err)
	}
}

// lookupsOf keeps each stack's output lookups, so parameters resolve without the bundle.
func lookupsOf(cfg *config.Config) map[string][]config.Lookup {
	out := map[string][]config.Lookup{}
	for _, s := range cfg.Stacks {
		if len(s.Lookups) > 0 {
			out[s.Name] = s.Lookups
		}
	}
	return out
}
