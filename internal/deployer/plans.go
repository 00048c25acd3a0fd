package deployer

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/drift"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/runpage"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// plans keeps the plan documents: what a plan run recorded and an approval applies.
type plans struct{ *base }

// read reads a plan document and its ETag.
func (ps plans) read(ctx context.Context, deployment, id string) (*plan.Document, string, error) {
	key := bucket.PlanKey(deployment, id)
	o, err := objects.Get(ctx, ps.s3, ps.cfg.Bucket, key, "", 0)
	if errors.Is(err, objects.ErrNotFound) {
		return nil, "", fmt.Errorf("plan %s of deployment %s: no document %s: %w", id, deployment, bucket.URI(ps.cfg.Bucket, key), errNoRun)
	}
	if err != nil {
		return nil, "", fmt.Errorf("plan %s: %w", id, err)
	}
	p, err := plan.Decode(o.Body)
	if err != nil {
		return nil, "", fmt.Errorf("plan %s: %s: %w", id, bucket.URI(ps.cfg.Bucket, key), err)
	}
	return p, o.ETag, nil
}

// write writes a plan document: created when etag is "", else only over etag.
func (ps plans) write(ctx context.Context, p *plan.Document, etag string) (string, error) {
	key, err := ps.key(ctx)
	if err != nil {
		return "", err
	}
	p.Sign(key)
	etag, err = objects.WriteJSON(ctx, ps.s3, ps.cfg.Bucket, bucket.PlanKey(p.Deployment, p.ID), p, objects.Write{Create: etag == "", IfMatch: etag})
	if errors.Is(err, objects.ErrConflict) {
		return "", fmt.Errorf("plan %s: %w: %w", p.ID, errRaceLost, err)
	}
	if err != nil {
		return "", fmt.Errorf("plan %s: %w", p.ID, err)
	}
	return etag, nil
}

// ids lists the plan ids of a deployment, oldest first.
func (ps plans) ids(ctx context.Context, deployment string) ([]string, error) {
	keys, err := objects.List(ctx, ps.s3, ps.cfg.Bucket, bucket.PlansOf(deployment))
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

// document builds the plan document of a plan run that ended, recording what an approval
// checks: the graph generation, each stack's status and LastUpdatedTime, and each change
// set with its resource changes.
func (ps plans) document(ctx context.Context, doc *rundoc.Document, lock *statestore.Lock, cs *changeset.Client) (*plan.Document, error) {
	p := &plan.Document{
		ID: doc.Run.ID, Deployment: doc.Run.Deployment, Namespace: doc.Namespace, GraphKey: doc.GraphKey,
		Status: plan.Planned, CreatedAt: doc.Run.StartedAt,
		Bundle:    doc.Bundle,
		Decisions: doc.Decisions, Refusals: doc.Refusals, Errors: doc.Errors, Warnings: doc.Warnings,
		Run: doc.Run, Lookups: doc.Lookups, SSM: doc.SSM, Drop: doc.Drop, Destroy: doc.Destroy,
	}
	if doc.Late != "" {
		p.Status, p.Reason = plan.Late, doc.Late
	} else if doc.Run.Status != run.Succeeded {
		p.Status, p.Reason = plan.PlanFailed, cmp.Or(doc.Run.Reason, "the plan run failed")
		for _, name := range doc.Run.Names() {
			if s := doc.Run.Stacks[name]; s.Phase == run.Failed {
				p.Refusals = append(p.Refusals, fmt.Sprintf("stack %s (%s): %s", name, s.StackName, s.Reason))
			}
		}
	}
	if lock != nil {
		g, err := ps.store.Read(ctx, lock)
		switch {
		case errors.Is(err, statestore.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			p.Generation = g.Generation
		}
	}
	var live map[string]plan.Live
	var g *state.Graph
	if len(doc.Run.Stacks) > 0 && lock != nil {
		var err error
		if live, err = liveOf(ctx, ps.base, cs, doc.Run); err != nil {
			return nil, err
		}
		if g, err = ps.store.Read(ctx, lock); err != nil && !errors.Is(err, statestore.ErrNotFound) {
			return nil, err
		}
	}
	key, err := ps.key(ctx)
	if err != nil {
		return nil, err
	}
	changing := map[string]bool{}
	for _, name := range doc.Run.Names() {
		if s := doc.Run.Stacks[name]; s.Intent != run.IntentDelete && (s.AtApply || s.Phase == run.Ready && s.ChangeSetID != "") {
			changing[name] = true
		}
	}
	for _, name := range doc.Run.Names() {
		s := doc.Run.Stacks[name]
		pst := plan.Stack{Name: name, StackName: s.StackName, StackID: s.StackID, Action: plan.ActionOf(s),
			TemplateHash: s.TemplateHash, ParametersHash: s.ParametersHash, Parameters: s.Parameters,
			InputsMayChange: s.InputsMayChange, CreatedAtApply: s.AtApply, Reason: s.Reason, CodeChanges: s.CodeChanges,
			Inputs: doc.Inputs[name], Consumed: plan.Consumed(doc.Run, doc.Lookups, doc.SSM, name, key)}
		if s.InputsMayChange {
			pst.KnownAfterApply = plan.KnownAfterApply(doc.Lookups[name], changing)
		}
		if s.Phase == run.Ready && s.ChangeSetID != "" {
			pst.ChangeSetName, pst.ChangeSetID = s.ChangeSetName, s.ChangeSetID
		}
		if l, ok := live[s.Key()]; ok {
			pst.Status, pst.LastUpdated, pst.StackID = l.Status, l.LastUpdated.UTC(), l.StackID
		}
		if s.Intent == run.IntentDelete {
			p.Deletions = append(p.Deletions, name)
		}
		if pst.Action == plan.Update {
			applied, now := live[s.Key()].Parameters, s.Parameters
			if g != nil && g.Stacks[name] != nil && g.Stacks[name].Parameters != nil {
				applied = g.Stacks[name].Parameters
			} else if len(applied) > 0 {
				// DescribeStacks lists the parameters left at their template's Default too.
				lb, err := ps.bundle(ctx, doc)
				if err != nil {
					return nil, err
				}
				if c := lb.Config; c != nil && c.Stack(name) != nil {
					now = plan.WithDefaults(now, c.Stack(name).Template)
				}
			}
			pst.ParameterChanges = plan.ParameterChanges(applied, now, s.NoEcho)
		}
		if pst.ChangeSetID != "" {
			st, err := cs.Describe(ctx, s.Target, pst.ChangeSetID)
			if err != nil {
				return nil, err
			}
			pst.Changes = st.Changes
		}
		if s.Phase == run.Failed && s.RefuseDrift && len(s.Drift) > 0 {
			pst.Outside = refusedDrift(ctx, cs, s, p)
		}
		if pst.Action == plan.Delete && pst.StackID != "" {
			if pst.Resources, err = cs.Resources(ctx, s.Target, pst.StackID); err != nil {
				return nil, err
			}
		}
		p.Stacks = append(p.Stacks, pst)
	}
	if err := ps.templateResources(ctx, doc, p); err != nil {
		return nil, err
	}
	if err := ps.outsideDrift(ctx, doc, p, cs); err != nil {
		return nil, err
	}
	return p, nil
}

// outsideDrift records in each live stack of p whose change set is not drift-aware (its
// on_drift is keep, or the plan does not update it) what changed outside cairn and what the
// plan does with each property (plan.Stack.SettleDrift): as the detection the plan run made
// found it (run.Stack.DetectDrift: its drifted resources are read now, masked), else as
// the deployment's newest drift report says, when it is at most drift.PlanMaxAge old. A
// stack whose drift the plan does not know says nothing of it, but a detection that gave
// no result is a warning of the plan; a drift-aware change set shows its own drift.
func (ps plans) outsideDrift(ctx context.Context, doc *rundoc.Document, p *plan.Document, cs *changeset.Client) error {
	var need []*plan.Stack
	for i := range p.Stacks {
		if s := &p.Stacks[i]; s.StackID != "" && (s.Action == plan.Update || s.Action == plan.None) {
			need = append(need, s)
		}
	}
	if len(need) == 0 {
		return nil
	}
	r, key, err := ps.newestDriftReport(ctx, p.Deployment, p.Namespace, p.GraphKey)
	if err != nil {
		return fmt.Errorf("plan %s: %w", p.ID, err)
	}
	lb, err := ps.bundle(ctx, doc)
	if err != nil {
		return err
	}
	for _, s := range need {
		if s.Action == plan.Update && driftAware(lb.Config, s.Name) {
			continue // its change set is drift-aware: Changes show its drift
		}
		if rs := doc.Run.Stacks[s.Name]; rs != nil && rs.StackDrift != "" {
			switch rs.StackDrift {
			case run.StackDrifted:
				found, err := cs.ResourceDrifts(ctx, rs.Target, rs.StackID)
				if err != nil {
					p.Warnings = append(p.Warnings, fmt.Sprintf("stack %s: its drift was detected (%s) but could not be read: %v; `cairn drift %s` shows it", s.Name, rs.DriftDetection, err, p.Deployment))
					continue
				}
				s.SettleDrift(drift.Detected(lb.Config, s.Name, s.StackName, found), fmt.Sprintf("drift detection %s made by this plan", rs.DriftDetection))
			case run.DriftUnknown:
				p.Warnings = append(p.Warnings, fmt.Sprintf("stack %s: what changed outside cairn is not known: %s; `cairn drift %s` detects it", s.Name, rs.DriftNote, p.Deployment))
			}
			continue
		}
		if found, from, ok := drift.ForPlan(r, bucket.URI(ps.cfg.Bucket, key), s.Name, s.StackName, ps.clk.Now(), drift.PlanMaxAge); ok {
			s.SettleDrift(found, from)
		}
	}
	return nil
}

// refusedDrift is what changed outside cairn in stack s, which on_drift refuse stopped, as
// its drift-aware change set (not executed) shows it, values masked (plan.RefusedDrift).
// When the change set cannot be read, the properties the refusal listed, without values,
// and a warning saying where the values are.
func refusedDrift(ctx context.Context, cs *changeset.Client, s *run.Stack, p *plan.Document) []plan.ResourceDrift {
	if s.ChangeSetID != "" {
		st, err := cs.Describe(ctx, s.Target, s.ChangeSetID)
		if err == nil {
			return plan.RefusedDrift(st.Changes)
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf("stack %s: its change set %s, which on_drift refuse stopped, could not be read (%v): the values changed outside cairn are not shown; `cairn drift %s` shows them", s.Name, s.ChangeSetName, err, p.Deployment))
	}
	var out []plan.ResourceDrift
	for _, d := range s.Drift {
		if !d.Revert {
			continue
		}
		if d.Property == "" {
			out = append(out, plan.ResourceDrift{LogicalID: d.LogicalID, Status: "DELETED", Does: plan.Refused})
			continue
		}
		if n := len(out); n == 0 || out[n-1].LogicalID != d.LogicalID {
			out = append(out, plan.ResourceDrift{LogicalID: d.LogicalID, Status: "MODIFIED"})
		}
		out[len(out)-1].Properties = append(out[len(out)-1].Properties, plan.PropertyDrift{Property: d.Property, Does: plan.Refused})
	}
	return out
}

// driftAware reports whether an update of stack name of cfg is a drift-aware change set
// (its on_drift is revert or refuse).
func driftAware(cfg *config.Config, name string) bool {
	if cfg == nil || cfg.Stack(name) == nil {
		return false
	}
	m := cfg.Stack(name).Options.OnDrift
	return m == config.DriftRevert || m == config.DriftRefuse
}

// newestDriftReport reads the newest drift report of the persistent graph
// namespace/graphKey, which the run of deployment holds, and its key; nil when there is
// none. The drift function files a graph's reports under its deployment's name, or under
// NAMESPACE.KEY when another graph has that name (drift.ReportName): the newest report of
// each folder is read (the gate lets a run of deployment list and read these two, nothing
// else of drift/), and one of another graph is never used.
func (b *base) newestDriftReport(ctx context.Context, deployment, namespace, graphKey string) (*drift.Report, string, error) {
	var best *drift.Report
	var bestKey string
	for _, name := range slices.Compact([]string{deployment, bucket.DriftReportName(namespace, graphKey)}) {
		keys, err := objects.List(ctx, b.s3, b.cfg.Bucket, bucket.DriftReportsOf(name))
		if err != nil {
			return nil, "", fmt.Errorf("the drift reports of %s: %w", name, err)
		}
		var newest string
		for _, k := range keys {
			if _, ok := bucket.DriftReportOf(name, k); ok && k > newest {
				newest = k
			}
		}
		if newest == "" {
			continue
		}
		var r drift.Report
		if _, err := objects.ReadJSON(ctx, b.s3, b.cfg.Bucket, newest, &r); err != nil {
			return nil, "", fmt.Errorf("drift report %s: %w", bucket.URI(b.cfg.Bucket, newest), err)
		}
		if r.Graph == nil || r.Graph.Namespace != namespace || r.Graph.Key != graphKey {
			continue // another graph's, which took the name
		}
		if best == nil || r.WrittenAt.After(best.WrittenAt) {
			best, bestKey = &r, newest
		}
	}
	return best, bestKey, nil
}

// detectDrift marks, in a plan run, the live stacks the plan updates whose change set is
// not drift-aware and whose drift no report recent enough tells (drift.ForPlan): the
// run detects their drift once their change sets are ready (run.Stack.DetectDrift).
func (b *base) detectDrift(ctx context.Context, doc *rundoc.Document, cfg *config.Config, log *slog.Logger) {
	r, key, err := b.newestDriftReport(ctx, doc.Run.Deployment, cfg.Namespace, cfg.PersistentGraphKey)
	if err != nil {
		log.Warn("deploy: cannot read the drift reports: the plan detects its stacks' drift", "err", err)
	}
	for _, name := range doc.Run.Names() {
		s := doc.Run.Stacks[name]
		if s.Intent != run.IntentDeploy || !s.Exists || s.StackID == "" || driftAware(cfg, name) {
			continue
		}
		if _, _, ok := drift.ForPlan(r, key, name, s.StackName, b.clk.Now(), drift.PlanMaxAge); !ok {
			s.DetectDrift = true
		}
	}
}

// pushDrift records, in a push's run, what changed outside cairn in each live stack it
// deploys whose change set is not drift-aware and that a push may change (not protected),
// as the deployment's newest drift report says when it is at most drift.PlanMaxAge old
// (run.Stack.Outside): the run settles what its change set does with each property, and
// its report and page say it. A push does not detect drift itself: a detection would hold
// every push's execution back by its minutes (docs/drift.md, "Drift in pushes").
func (b *base) pushDrift(ctx context.Context, doc *rundoc.Document, cfg *config.Config, log *slog.Logger) {
	var need []*run.Stack
	for _, name := range doc.Run.Names() {
		if s := doc.Run.Stacks[name]; s.Intent == run.IntentDeploy && s.Exists && s.StackID != "" && !s.PlanOnly && !driftAware(cfg, name) {
			need = append(need, s)
		}
	}
	if len(need) == 0 {
		return
	}
	r, key, err := b.newestDriftReport(ctx, doc.Run.Deployment, cfg.Namespace, cfg.PersistentGraphKey)
	if err != nil {
		log.Warn("deploy: cannot read the drift reports: the run's report says nothing of drift", "err", err)
		return
	}
	for _, s := range need {
		name := s.Name
		found, from, ok := drift.ForPlan(r, bucket.URI(b.cfg.Bucket, key), name, s.StackName, b.clk.Now(), drift.PlanMaxAge)
		if !ok {
			continue
		}
		for _, res := range found {
			if res.Status == "DELETED" {
				s.Outside = append(s.Outside, run.DriftedProperty{LogicalID: res.LogicalID, Does: run.DriftLeft})
			}
			for _, p := range res.Properties {
				s.Outside = append(s.Outside, run.DriftedProperty{LogicalID: res.LogicalID, Property: p.Property, Does: run.DriftLeft})
			}
		}
		if len(s.Outside) > 0 {
			s.DriftFrom = from
		}
	}
}

// templateResources reads from the planned bundle what the templates say: for each stack
// the plan creates at apply (no change set says what it adds yet), the resources its
// template declares; for each stack whose inputs are known only after apply, the
// resources those inputs feed (plan.Feeds).
func (ps plans) templateResources(ctx context.Context, doc *rundoc.Document, p *plan.Document) error {
	var need []*plan.Stack
	for i := range p.Stacks {
		if s := &p.Stacks[i]; s.CreatedAtApply && s.ChangeSetID == "" || len(s.KnownAfterApply) > 0 {
			need = append(need, s)
		}
	}
	if len(need) == 0 {
		return nil
	}
	lb, err := ps.bundle(ctx, doc)
	if err != nil {
		return err
	}
	if lb.Config == nil {
		return nil
	}
	for _, s := range need {
		cs := lb.Config.Stack(s.Name)
		if cs == nil || cs.Template == nil {
			continue
		}
		if len(s.KnownAfterApply) > 0 {
			s.Feeds = plan.Feeds(cs.Template, s.KnownAfterApply)
		}
		if s.CreatedAtApply && s.ChangeSetID == "" {
			for _, r := range cs.Template.Declared {
				s.Resources = append(s.Resources, plan.Resource{LogicalID: r.LogicalID, Type: r.Type})
			}
		}
	}
	return nil
}

// markdown writes the plan's pull-request comment, ready to post.
func (ps plans) markdown(ctx context.Context, p *plan.Document, log *slog.Logger) {
	var md bytes.Buffer
	if err := report.PlanMarkdown(&md, p); err != nil {
		return
	}
	key := bucket.PlanMarkdownKey(p.Deployment, p.ID)
	if _, err := objects.Put(ctx, ps.s3, ps.cfg.Bucket, key, md.Bytes(), objects.Write{ContentType: "text/markdown"}); err != nil {
		log.Warn("deploy: cannot write the plan's Markdown", "key", key, "err", err)
	}
	key = bucket.PlanPageKey(p.Deployment, p.ID)
	page, err := runpage.RenderPlan(runpage.Plan{Plan: p})
	if err == nil {
		_, err = objects.Put(ctx, ps.s3, ps.cfg.Bucket, key, page, objects.Write{ContentType: runpage.ContentType})
	}
	if err != nil {
		log.Warn("deploy: cannot write the plan's page", "key", key, "err", err)
	}
}

// markApplied records the outcome of an apply run in the plans all of whose changes it
// ran (rundoc.Document.Applies).
func (ps plans) markApplied(ctx context.Context, doc *rundoc.Document, log *slog.Logger) {
	for _, id := range doc.Applies {
		p, etag, err := ps.read(ctx, doc.Run.Deployment, id)
		if err != nil {
			log.Warn("deploy: cannot record the applied plan", "plan", id, "err", err)
			continue
		}
		if p.AppliedBy != doc.Run.ID || p.Status != plan.Applying {
			continue // another run's, or marked already
		}
		p.Status, p.Reason = plan.Applied, fmt.Sprintf("applied by run %s: %s", doc.Run.ID, doc.Run.Status)
		if doc.Run.Status != run.Succeeded {
			p.Status, p.Reason = plan.ApplyFailed, fmt.Sprintf("the apply run %s %s", doc.Run.ID, doc.Run.Status)
		}
		if doc.Run.Reason != "" {
			p.Reason += " (" + doc.Run.Reason + ")"
		}
		if _, err := ps.write(ctx, p, etag); err != nil {
			log.Warn("deploy: cannot record the applied plan", "plan", id, "err", err)
		}
	}
}
