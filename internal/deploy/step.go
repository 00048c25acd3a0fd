package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
)

// Heartbeat is the message that advances a run when no stack event does.
type Heartbeat struct {
	Cairn      string `json:"cairn"` // always "heartbeat"
	Deployment string `json:"deployment"`
	Run        string `json:"run"`
}

func (d *Driver) heartbeat(ctx context.Context, deployment, runID string) error {
	body, _ := json.Marshal(Heartbeat{Cairn: "heartbeat", Deployment: deployment, Run: runID})
	_, err := d.sqs.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(d.cfg.QueueURL), MessageBody: aws.String(string(body)), DelaySeconds: seconds(d.cfg.Heartbeat),
	})
	if err != nil {
		return fmt.Errorf("run %s: enqueue heartbeat: %w", runID, err)
	}
	return nil
}

// Step advances run runID of deployment by one step. A heartbeat step re-enqueues the
// heartbeat while the run stays open; a stack event step does not (one chain of
// heartbeats per run, no fan-out). It returns nil when the trigger is dealt with,
// including when another step won the race to write the run document.
func (d *Driver) Step(ctx context.Context, deployment, runID string, heartbeat bool) error {
	log := d.runLogger(deployment, runID)
	doc, etag, err := d.loadDocument(ctx, deployment, runID)
	if errors.Is(err, errNoRun) {
		log.Info("deploy: trigger for an unknown run ignored", "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	if doc.Run.Status != run.Running {
		log.Debug("deploy: trigger for a finished run ignored", "status", string(doc.Run.Status))
		return nil
	}
	lock, err := d.resumeLock(ctx, doc.Namespace, doc.GraphKey, doc.Run.ID, doc.LockToken)
	if errors.Is(err, state.ErrLockLost) {
		return d.abandon(ctx, doc, etag, err, log)
	}
	if err != nil {
		return err
	}
	err = d.step(ctx, doc, etag, lock, log)
	if heartbeat && (err == nil || errors.Is(err, errRaceLost)) && doc.Run.Status == run.Running {
		// After a lost race the run may have ended meanwhile; the next heartbeat then
		// finds it finished and stops the chain.
		if herr := d.heartbeat(ctx, deployment, runID); herr != nil {
			return herr // delivered again, so the chain is not lost
		}
	}
	if errors.Is(err, errRaceLost) {
		log.Info("deploy: another step advanced the run first; this one ends", "err", err)
		return nil
	}
	return err
}

// abandon ends a run whose lock was taken over or removed: it must not change anything
// more, and the lock is not its own to release.
func (d *Driver) abandon(ctx context.Context, doc *Document, etag string, cause error, log *slog.Logger) error {
	now := d.clk.Now().UTC()
	log.Error("deploy: run lost its lock and stops", "err", cause)
	doc.Run.Status, doc.Run.FinishedAt, doc.Run.UpdatedAt = run.RunFailed, now, now
	doc.Run.Reason = "stopped: " + cause.Error()
	d.report(ctx, doc, log)
	if _, err := d.saveDocument(ctx, doc, etag); err != nil {
		if errors.Is(err, errRaceLost) {
			return nil
		}
		return err
	}
	if err := d.deleteIndex(ctx, doc.Run.ID); err != nil {
		log.Warn("deploy: cannot remove the open-run index", "err", err)
	}
	d.notify(ctx, doc, log)
	return nil
}

// step observes, advances, acts and records, under lock.
func (d *Driver) step(ctx context.Context, doc *Document, etag string, lock *state.Lock, log *slog.Logger) error {
	if doc.Statuses == nil {
		doc.Statuses = map[string]string{}
	}
	if doc.LiveProtection == nil {
		doc.LiveProtection = map[string]bool{}
	}
	cs := d.changesets(doc.Run.ID, log)
	seen := cs.Observe(ctx, doc.Run, doc.Pending)
	for _, o := range seen.Observations {
		if o.StackStatus != "" {
			doc.Statuses[o.Stack] = o.StackStatus
		}
		if o.StackGone {
			doc.Statuses[o.Stack] = "DELETE_COMPLETE"
		}
	}
	for name, p := range seen.Protection {
		doc.LiveProtection[name] = p
	}
	prev := doc.Run
	next, actions := run.Advance(prev, seen.Observations, d.clk.Now().UTC(), d.runOptions(doc))
	pending := map[string]run.Observation{}
	var bundleCache *Loaded
	lockErr := error(nil)
	for _, a := range actions {
		alog := log.With("stack", a.Stack)
		if err := d.store.Check(ctx, lock); err != nil {
			lockErr = err
			break
		}
		var in *changeset.Inputs
		if a.Kind == run.CreateChangeSet {
			var err error
			if bundleCache == nil {
				bundleCache, err = Download(ctx, d.s3, doc.Bundle, doc.Run.Deployment)
			}
			if err == nil {
				in, err = d.inputs(doc, next, bundleCache, a)
			}
			if err != nil {
				alog.Warn("deploy: cannot prepare the change set", "err", err)
				pending[a.Stack] = run.Observation{Stack: a.Stack, Err: err.Error(), Permanent: bundleCache != nil && bundleCache.Config == nil}
				continue
			}
		}
		o := cs.Perform(ctx, a, in)
		if a.Kind == run.DeleteChangeSet {
			continue // the stack is done either way; a leftover change set is harmless
		}
		pending[a.Stack] = o
	}
	for _, name := range next.Names() {
		s := next.Stacks[name]
		if lockErr == nil && finishedNow(prev, next, name) && s.Intent != run.IntentDelete && s.Intent != run.IntentRead &&
			(s.Phase == run.Done || s.Phase == run.Unchanged) {
			if want := doc.Protection[name]; want != doc.LiveProtection[name] {
				if err := d.store.Check(ctx, lock); err != nil {
					lockErr = err
					break
				}
				if err := cs.SetTerminationProtection(ctx, s.StackName, want); err != nil {
					log.Warn("deploy: cannot set termination protection", "stack", name, "err", err)
					doc.Warnings = append(doc.Warnings, err.Error())
				} else {
					doc.LiveProtection[name] = want
				}
			}
		}
	}
	doc.Run, doc.Pending = next, pending
	doc.Steps++
	if lockErr != nil {
		return d.abandon(ctx, doc, etag, lockErr, log)
	}
	var finished []string
	for _, name := range next.Names() {
		if finishedNow(prev, next, name) {
			finished = append(finished, name)
			s := next.Stacks[name]
			log.Info("deploy: stack finished", "stack", name, "stack_name", s.StackName, "phase", string(s.Phase), "reason", s.Reason, "changes", s.Changes)
		}
	}
	ended := next.Status != run.Running
	if len(finished) > 0 || ended {
		if err := d.writeGraph(ctx, lock, doc, finished, ended); err != nil {
			if errors.Is(err, state.ErrLockLost) || errors.Is(err, state.ErrLeaseExpired) {
				return d.abandon(ctx, doc, etag, err, log)
			}
			return err
		}
	}
	if ended && next.Mode == run.ModePlan {
		// The plan document is what an approval applies: it is recorded under the lock,
		// before the run is seen to end.
		if err := d.finishPlan(ctx, doc, lock, log); err != nil {
			return err
		}
	}
	if ended {
		d.report(ctx, doc, log)
	}
	if _, err := d.saveDocument(ctx, doc, etag); err != nil {
		return err
	}
	if ended && doc.Plan != "" {
		d.markApplied(ctx, doc, log)
	}
	if !ended {
		return nil
	}
	log.Info("deploy: run ended", "status", string(next.Status), "reason", next.Reason, "steps", doc.Steps)
	if next.Mode == run.ModeDeploy {
		d.retireOpenPlans(ctx, doc, log)
	}
	d.budgets.Delete(next.ID)
	if err := d.deleteIndex(ctx, next.ID); err != nil {
		log.Warn("deploy: cannot remove the open-run index", "err", err)
	}
	d.release(ctx, lock, log)
	d.notify(ctx, doc, log)
	return nil
}

func finishedNow(prev, next *run.Run, name string) bool {
	n := next.Stacks[name]
	p := prev.Stacks[name]
	return n.Phase.Terminal() && (p == nil || !p.Phase.Terminal())
}

// runOptions resolves parameters from the lookups recorded at Start.
func (d *Driver) runOptions(doc *Document) run.Options {
	opts := d.cfg.Run
	byStackName := map[string]string{}
	for name, s := range doc.Run.Stacks {
		byStackName[s.StackName] = name
	}
	opts.Resolve = func(stack string, raw map[string]string, outputs func(stack, output string) (string, bool)) (map[string]string, error) {
		cs := &config.Stack{Name: stack, Parameters: raw, Lookups: doc.Lookups[stack]}
		return config.ResolveParameters(cs, func(stackName, output string) (string, bool) {
			if name, ok := byStackName[stackName]; ok {
				return outputs(name, output)
			}
			for _, l := range doc.Lookups[stack] {
				if l.StackName == stackName && l.Kind == "output" {
					return outputs(l.Stack, output) // a disabled stack: its outputs are External
				}
			}
			return outputs(stackName, output)
		})
	}
	return opts
}

// inputs gathers what CreateChangeSet needs from the loaded bundle.
func (d *Driver) inputs(doc *Document, r *run.Run, lb *Loaded, a run.Action) (*changeset.Inputs, error) {
	if lb.Config == nil {
		return nil, fmt.Errorf("bundle %s no longer loads: %s", doc.Bundle, strings.Join(lb.Errors, "; "))
	}
	if lb.Bundle.SHA256 != doc.Bundle.SHA256 {
		return nil, fmt.Errorf("bundle %s changed since the run started (sha256 %s, was %s): push again", doc.Bundle, lb.Bundle.SHA256, doc.Bundle.SHA256)
	}
	cs := lb.Config.Stack(a.Stack)
	if cs == nil {
		return nil, fmt.Errorf("stack %s is not in the bundle's config", a.Stack)
	}
	rs := r.Stacks[a.Stack]
	ref := doc.Bundle.Ref()
	tags := plan.Tags(lb.Config, cs, ref)
	maps.Copy(tags, state.StackTags(lb.Config.Namespace, lb.Config.PersistentGraphKey, ref, &state.Stack{
		Name: cs.Name, TemplateHash: rs.TemplateHash, ParametersHash: run.HashParameters(a.Parameters), Requires: rs.Requires,
	}))
	return &changeset.Inputs{TemplateBody: cs.TemplateBody, TemplateURL: cs.TemplateURL, Capabilities: cs.Capabilities, Tags: tags}, nil
}

// writeGraph records in the persistent graph the stacks that finished (all of them when
// the run ended, with the bundle when it succeeded), and drops what the plan dropped.
func (d *Driver) writeGraph(ctx context.Context, lock *state.Lock, doc *Document, finished []string, ended bool) error {
	if doc.Run.Mode == run.ModePlan {
		return nil // a plan changes nothing, so the graph it was made against stays as it is
	}
	if len(finished) == 0 && !ended && len(doc.Drop) == 0 {
		return nil
	}
	// Start wrote any graph it rebuilt, so a missing graph is a first run's: rebuilding it
	// now would pick up the stacks this run is creating.
	g, err := d.store.Read(ctx, lock)
	if errors.Is(err, state.ErrNotFound) {
		g, err = &state.Graph{Namespace: doc.Namespace, Key: doc.GraphKey, Stacks: map[string]*state.Stack{}}, nil
	}
	if err != nil {
		return err
	}
	now := d.clk.Now().UTC()
	names := finished
	if ended {
		names = doc.Run.Names()
	}
	changed := false
	for _, name := range doc.Drop {
		if _, ok := g.Stacks[name]; ok {
			remove(g, name)
			changed = true
		}
	}
	for _, name := range names {
		s := doc.Run.Stacks[name]
		old := g.Stacks[name]
		switch {
		case s.Intent == run.IntentDelete && s.Phase == run.Done:
			if old != nil {
				remove(g, name)
				changed = true
			}
		case s.Intent == run.IntentDelete || s.Phase == run.Blocked:
		case s.Phase == run.Failed:
			if old != nil {
				old.Status = doc.Statuses[name]
				old.UpdatedAt = now
				changed = true
			}
		case s.Intent == run.IntentRead:
			if old != nil {
				old.Outputs = s.Outputs
				old.Requires = s.Requires
				changed = true
			}
		case s.Phase == run.Done || s.Phase == run.Unchanged:
			st := &state.Stack{Name: name, StackName: s.StackName, StackID: s.StackID, Requires: slices.Clone(s.Requires),
				TemplateHash: s.TemplateHash, ParametersHash: s.ParametersHash, Status: doc.Statuses[name], Outputs: s.Outputs, UpdatedAt: now,
				Region: d.cfg.Region}
			if old != nil {
				st.Tags = old.Tags
				if st.StackID == "" {
					st.StackID = old.StackID
				}
			}
			g.Stacks[name] = st
			changed = true
		}
	}
	// Dependencies on stacks the graph does not hold (disabled, never deployed) cannot be
	// honoured by a later deletion and would make the graph invalid.
	for _, st := range g.Stacks {
		st.Requires = slices.DeleteFunc(st.Requires, func(r string) bool { _, ok := g.Stacks[r]; return !ok })
	}
	if ended && doc.Run.Status == run.Succeeded {
		g.Bundle = doc.Bundle.Ref()
		changed = true
	}
	if !changed {
		return nil
	}
	doc.Drop = nil
	if err := d.store.Write(ctx, lock, g); err != nil {
		return err
	}
	if ended && doc.Run.Status == run.Succeeded && doc.Destroy && len(g.Stacks) == 0 {
		// Nothing is left to manage: the state object goes; its versions keep the history.
		key := bucket.StateKey(doc.Namespace, doc.GraphKey)
		if err := bucket.Delete(ctx, d.s3, d.cfg.Bucket, key, ""); err != nil {
			return fmt.Errorf("remove the emptied graph: %w", err)
		}
		doc.Notes = append(doc.Notes, fmt.Sprintf("every stack is deleted: the emptied graph's state object s3://%s/%s was removed (its earlier versions keep the history)", d.cfg.Bucket, key))
	}
	return nil
}

func remove(g *state.Graph, name string) {
	delete(g.Stacks, name)
	for _, st := range g.Stacks {
		st.Requires = slices.DeleteFunc(st.Requires, func(r string) bool { return r == name })
	}
}
