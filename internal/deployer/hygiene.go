package deployer

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"

	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/rundoc"
)

// hygiene retires the plans that can no longer apply: their change sets go, and so do
// the stacks created only for them. Failures are logged: hygiene never fails a run.
type hygiene struct {
	*base
	plans plans
}

// sweepWindow bounds how many of a deployment's newest plans a sweep reads: every sweep
// retires all older open plans, so at most the few newest can still be open.
const sweepWindow = 20

// afterPlan retires, once plan keep is recorded, the open plans it supersedes (those of
// the same change: plan.Document.Retirement) and any that outlived the plan TTL: their
// change sets are deleted, and so are stacks that exist only for them (REVIEW_IN_PROGRESS,
// never executed) unless a plan that stays open uses them. Plans of other changes stay
// open. Failures are logged: hygiene never fails a run.
func (h hygiene) afterPlan(ctx context.Context, keep *plan.Document, cs *changeset.Client, log *slog.Logger) {
	reason := func(old *plan.Document) string {
		return fmt.Sprintf("%s was planned again as plan %s", cmp.Or(keep.Change(), "this checkout"), keep.ID)
	}
	h.sweep(ctx, keep.Deployment, keep, reason, cs, log)
}

// sweep retires the open plans of deployment as plan.Document.Retirement decides, by
// the newest plan made (by; nil: none), with the reason given for a superseded one.
func (h hygiene) sweep(ctx context.Context, deployment string, by *plan.Document, reason func(*plan.Document) string, cs *changeset.Client, log *slog.Logger) {
	ids, err := h.plans.ids(ctx, deployment)
	if err != nil {
		log.Warn("deploy: cannot list plans to clean up", "err", err)
		return
	}
	if len(ids) > sweepWindow {
		ids = ids[len(ids)-sweepWindow:]
	}
	now := h.clk.Now().UTC()
	type retiring struct {
		p      *plan.Document
		etag   string
		status plan.Status
	}
	var retire []retiring
	used := map[string]bool{}
	for _, id := range ids {
		p, etag, err := h.plans.read(ctx, deployment, id)
		if err != nil {
			continue
		}
		status, ok := p.Retirement(by, now, h.cfg.PlanTTL)
		if ok {
			retire = append(retire, retiring{p, etag, status})
			continue
		}
		if p.Status == plan.Planned {
			for _, s := range p.Stacks {
				if s.StackID != "" {
					used[s.StackID] = true
				}
			}
		}
	}
	for _, r := range retire {
		why := reason(r.p)
		if r.status == plan.Expired {
			why = fmt.Sprintf("expired after %s", h.cfg.PlanTTL)
		}
		h.retire(ctx, r.p, r.etag, r.status, why, used, cs, log)
	}
}

// afterApply expires, once a deploy or apply run ended, the open plans that outlived the
// plan TTL. The others stay open: an entry of theirs is stale only if the run changed its
// stack or an output it consumes, which an apply finds out per entry.
func (h hygiene) afterApply(ctx context.Context, doc *rundoc.Document, log *slog.Logger) {
	h.sweep(ctx, doc.Run.Deployment, nil, func(*plan.Document) string { return "" }, h.changesets(doc.Run.ID, log), log)
}

// retire deletes a plan's change sets and the stacks created only for it, and records why.
// A stack goes only when plan.Document.MadeOnlyFor says it is the plan's own and it holds
// no change set but the plan's: anything else is someone else's.
func (h hygiene) retire(ctx context.Context, p *plan.Document, etag string, status plan.Status, reason string, keepStacks map[string]bool, cs *changeset.Client, log *slog.Logger) {
	live, err := liveOf(ctx, h.base, cs, p.Run)
	if err != nil {
		log.Warn("deploy: cannot describe stacks to clean up a plan", "plan", p.ID, "err", err)
		return
	}
	leftovers := p.Leftovers()
	if key, err := h.key(ctx); err != nil || !p.Signed(key) {
		// An edited document may name anyone's change sets: nothing it names is deleted.
		log.Warn("deploy: a plan document fails its seal: its change sets are left alone", "plan", p.ID, "err", err)
		leftovers = nil
	}
	for _, lo := range leftovers {
		s := lo.Stack
		t := p.ChangeSetTarget(lo.ChangeSetID)
		if rs := p.Run.Stacks[s.Name]; rs != nil {
			t = rs.Target
		}
		l, ok := live[p.Key(s)]
		if p.MadeOnlyFor(lo, l, ok, keepStacks) {
			others, err := cs.OtherChangeSets(ctx, t, l.StackID, lo.ChangeSetID)
			switch {
			case err != nil:
				log.Warn("deploy: cannot list the change sets of a stack created for a plan; only the plan's change set is deleted", "plan", p.ID, "stack", s.StackName, "err", err)
			case len(others) > 0:
				log.Info("deploy: keeping a REVIEW_IN_PROGRESS stack that holds change sets the plan did not make", "plan", p.ID, "stack", s.StackName, "change_sets", others)
			default:
				if err := cs.DeleteStack(ctx, t, l.StackID); err != nil {
					log.Warn("deploy: cannot delete a stack created only for a plan", "plan", p.ID, "stack", s.StackName, "err", err)
				}
				continue
			}
		}
		if err := cs.DeleteChangeSet(ctx, t, lo.ChangeSetID); err != nil {
			log.Warn("deploy: cannot delete a change set of a retired plan", "plan", p.ID, "change_set", lo.ChangeSetID, "err", err)
		}
	}
	if p.Status == plan.PlanFailed {
		reason += "; the plan had failed: " + p.Reason
	}
	p.Status, p.Reason = status, reason
	if _, err := h.plans.write(ctx, p, etag); err != nil {
		log.Warn("deploy: cannot record a retired plan", "plan", p.ID, "err", err)
		return
	}
	log.Info("deploy: plan retired", "plan", p.ID, "status", string(status), "reason", reason)
}
