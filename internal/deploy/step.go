package deploy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
)

// Heartbeat is the message that advances a run when no stack event does, and, with Cairn
// "check", the delayed check of stacks that wait for CloudFormation.
type Heartbeat struct {
	Cairn      string `json:"cairn"` // "heartbeat" or "check"
	Deployment string `json:"deployment"`
	Run        string `json:"run"`
	// Beat numbers the run's heartbeat chain (Document.Beat): a heartbeat of an older chain
	// still makes a step but is not sent on, so a run has one chain however often it was
	// resumed. 0 (absent) is the chain a run starts with.
	Beat int `json:"beat,omitempty"`
}

// Trigger is what asks for a step of a run: its heartbeat, a delayed check, stack status
// events (Stacks: the keys their stacks may have, run.Stack.Key), or several of them when
// one batch of messages carries them.
type Trigger struct {
	// Beats are the chains (Heartbeat.Beat) of the heartbeats that asked; none when no
	// heartbeat did.
	Beats  []int
	Check  bool
	Stacks []string
	// restart: the run's heartbeat chain is lost (or never started); the step starts a
	// new one.
	restart bool
}

// stepper advances runs: load, observe, decide (run.Advance), act, save.
type stepper struct {
	*base
	runs    runs
	plans   plans
	hygiene hygiene
	graphs  graphs
}

func (st stepper) heartbeat(ctx context.Context, deployment, runID string, beat int) error {
	return st.send(ctx, Heartbeat{Cairn: "heartbeat", Deployment: deployment, Run: runID, Beat: beat}, st.cfg.Heartbeat)
}

// check queues the delayed check run.Advance asked for.
func (st stepper) check(ctx context.Context, doc *Document, delay time.Duration, log *slog.Logger) {
	if err := st.send(ctx, Heartbeat{Cairn: "check", Deployment: doc.Run.Deployment, Run: doc.Run.ID}, delay); err != nil {
		log.Warn("deploy: cannot queue the delayed check; the heartbeat looks instead", "err", err)
	}
}

func (st stepper) send(ctx context.Context, m Heartbeat, delay time.Duration) error {
	body, _ := json.Marshal(m)
	_, err := st.sqs.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(st.cfg.QueueURL), MessageBody: aws.String(string(body)), DelaySeconds: seconds(delay),
	})
	if err != nil {
		return fmt.Errorf("run %s: enqueue %s: %w", m.Run, m.Cairn, err)
	}
	return nil
}

// trigger is one step of run runID, asked for by stack events, a delayed check, a
// heartbeat or a restart. A finished run only gets the clean-up its last step may not
// have finished (finishEnded).
func (st stepper) trigger(ctx context.Context, deployment, runID string, t Trigger) error {
	log := st.runLogger(deployment, runID)
	doc, etag, err := st.runs.load(ctx, deployment, runID)
	if errors.Is(err, errNoRun) {
		log.Info("deploy: trigger for an unknown run ignored", "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	if doc.Run.Status != run.Running {
		return st.finishEnded(ctx, doc, log)
	}
	if t.restart {
		doc.Beat++
		log.Warn("deploy: the run's heartbeat was lost: a new heartbeat chain resumes it", "beat", doc.Beat, "steps", doc.Steps)
	}
	chained := t.restart || slices.Contains(t.Beats, doc.Beat)
	lock, err := st.resumeLock(ctx, doc.Namespace, doc.GraphKey, doc.Run.ID, doc.LockToken)
	if errors.Is(err, state.ErrLockLost) {
		return st.lost(ctx, doc, etag, err, log)
	}
	if err != nil {
		return err
	}
	err = st.step(ctx, doc, etag, lock, log, t.Stacks...)
	// After a lost race the run may have ended meanwhile; the next heartbeat then finds
	// it finished and stops the chain. A restart whose new chain number was not saved
	// sends nothing: the run is found stalled again.
	if chained && doc.Run.Status == run.Running && (err == nil || errors.Is(err, errRaceLost) && !t.restart) {
		if herr := st.heartbeat(ctx, deployment, runID, doc.Beat); herr != nil {
			return herr // delivered again, so the chain is not lost
		}
		// The index object's time says when the chain last beat (runs.stalled).
		st.runs.index(ctx, doc, log)
	}
	if errors.Is(err, errRaceLost) {
		log.Info("deploy: another step advanced the run first; this one ends", "err", err)
		return nil
	}
	return err
}

// lost deals with a lock check that failed (cause). While the lock still holds this run's
// token, another invocation of the same run resumed it since (a stack event and a
// heartbeat at once, or a restart): that one carries on, and this step ends without a
// trace. Otherwise the run was fenced and is abandoned.
func (st stepper) lost(ctx context.Context, doc *Document, etag string, cause error, log *slog.Logger) error {
	if errors.Is(cause, state.ErrLockLost) {
		l, err := st.store.CurrentLock(ctx, doc.Namespace, doc.GraphKey)
		if err == nil && l.RunID == doc.Run.ID && l.Token == doc.LockToken {
			log.Info("deploy: another invocation of this run holds its lock now; this step ends", "err", cause)
			return nil
		}
	}
	return st.abandon(ctx, doc, etag, cause, log)
}

// abandon ends a run whose lock was taken over or removed: it must not change anything
// more, and the lock is not its own to release. It is closed as abandoned, the change sets
// it made and did not execute are deleted, and it leaves the index of open runs.
func (st stepper) abandon(ctx context.Context, doc *Document, etag string, cause error, log *slog.Logger) error {
	log.Error("deploy: run lost its lock and stops", "err", cause)
	next, actions := run.Abandon(doc.Run, cause.Error(), st.clk.Now().UTC())
	doc.Run = next
	cs := st.changesets(doc.Run.ID, log)
	for _, a := range actions {
		if o := cs.Perform(ctx, a, nil); o.Err != "" {
			log.Info("deploy: a change set of the abandoned run was not deleted (it was executed, or is still being made)", "stack", a.Stack, "change_set", a.ChangeSetName, "err", o.Err)
			continue
		}
		doc.Notes = append(doc.Notes, fmt.Sprintf("stack %s: change set %s deleted (the run was abandoned)", a.Stack, a.ChangeSetName))
	}
	if doc.Plan != "" {
		st.plans.markApplied(ctx, doc, log) // the plan was consumed: it applies at most once
	}
	st.runs.report(ctx, doc, log)
	if _, err := st.runs.save(ctx, doc, etag); err != nil {
		if errors.Is(err, errRaceLost) {
			return nil
		}
		return err
	}
	st.forget(doc.Run.ID)
	st.runs.unindex(ctx, doc.Run.ID, log)
	st.notify(ctx, doc, log)
	return nil
}

// finishEnded finishes the clean-up of a run that ended, which its last step may not have
// finished (killed after saving it): while the lock still holds the run's token, nothing
// ran since, so all of it (finish); otherwise only its own entry in the index of open
// runs, which nobody else removes.
func (st stepper) finishEnded(ctx context.Context, doc *Document, log *slog.Logger) error {
	if doc.LockToken == "" {
		log.Debug("deploy: trigger for a run that ended without a lock ignored", "status", string(doc.Run.Status))
		return nil
	}
	l, err := st.store.CurrentLock(ctx, doc.Namespace, doc.GraphKey)
	switch {
	case err == nil && l.RunID == doc.Run.ID && l.Token == doc.LockToken:
		lock, err := st.resumeLock(ctx, doc.Namespace, doc.GraphKey, doc.Run.ID, doc.LockToken)
		if errors.Is(err, state.ErrLockLost) {
			break // gone meanwhile: someone else's now
		}
		if err != nil {
			return err
		}
		log.Info("deploy: finishing the clean-up of a run that ended", "status", string(doc.Run.Status))
		st.finish(ctx, doc, lock, log)
		return nil
	case err != nil && !errors.Is(err, state.ErrNotLocked):
		return err
	}
	log.Debug("deploy: trigger for a finished run", "status", string(doc.Run.Status))
	st.runs.unindex(ctx, doc.Run.ID, log)
	return nil
}

// finish is what follows the save of a run that ended, under its lock: the applied plan
// is marked (again: step marks it before the save), open plans it outdated are retired,
// the run leaves the index of open runs, the lock is released and the summary published.
// Each part may run again (finishEnded).
func (st stepper) finish(ctx context.Context, doc *Document, lock *state.Lock, log *slog.Logger) {
	if doc.Plan != "" {
		st.plans.markApplied(ctx, doc, log)
	}
	if doc.Run.Mode == run.ModeDeploy {
		st.hygiene.afterApply(ctx, doc, log)
	}
	st.forget(doc.Run.ID)
	st.runs.unindex(ctx, doc.Run.ID, log)
	st.release(ctx, lock, log)
	st.notify(ctx, doc, log)
}

// step observes, advances, acts and records, under lock. It looks at the stacks whose
// check is due and at those named (run.Stack.Key of the stacks an event was about).
func (st stepper) step(ctx context.Context, doc *Document, etag string, lock *state.Lock, log *slog.Logger, named ...string) error {
	if doc.Statuses == nil {
		doc.Statuses = map[string]string{}
	}
	cs := st.changesets(doc.Run.ID, log)
	seen := cs.Observe(ctx, doc.Run, doc.Pending, st.clk.Now().UTC(), named...)
	for _, o := range seen {
		if o.StackStatus != "" {
			doc.Statuses[o.Stack] = o.StackStatus
		}
		if o.StackGone {
			doc.Statuses[o.Stack] = "DELETE_COMPLETE"
		}
	}
	opts := st.cfg.Run
	opts.Resolve = plan.Resolver(doc.Run, doc.Lookups, doc.SSM)
	opts.Seal = plan.Seal
	opts.Heartbeat = st.cfg.Heartbeat
	prev := doc.Run
	now := st.clk.Now().UTC()
	next, actions := run.Advance(prev, seen, now, opts)
	pending, lockErr := st.act(ctx, doc, next, actions, lock, cs, log)
	doc.Run, doc.Pending = next, pending
	doc.Steps++
	if lockErr != nil {
		return st.lost(ctx, doc, etag, lockErr, log)
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
		if err := st.graphs.record(ctx, lock, doc, finished); err != nil {
			if errors.Is(err, state.ErrLockLost) || errors.Is(err, state.ErrLeaseExpired) {
				return st.lost(ctx, doc, etag, err, log)
			}
			return err
		}
	}
	if ended && next.Mode == run.ModePlan {
		// The plan document is what an approval applies: it is recorded under the lock,
		// before the run is seen to end.
		if err := st.recordPlan(ctx, doc, lock, log); err != nil {
			return err
		}
	}
	if ended {
		if doc.Plan != "" {
			// Whoever sees the apply run ended finds its plan marked applied.
			st.plans.markApplied(ctx, doc, log)
		}
		st.runs.report(ctx, doc, log)
	}
	if _, err := st.runs.save(ctx, doc, etag); err != nil {
		return err
	}
	delay, wake := run.Wake(prev, next, now)
	if wake {
		st.check(ctx, doc, delay, log)
	}
	log.Debug("deploy: step", "looked_at", len(seen), "named", strings.Join(named, ","), "actions", len(actions), "check_in", delay.String())
	if !ended {
		return nil
	}
	log.Info("deploy: run ended", "status", string(next.Status), "reason", next.Reason, "steps", doc.Steps)
	st.finish(ctx, doc, lock, log)
	return nil
}

// act performs the actions Advance decided, changeset.Parallel stacks at a time (a
// stack's own actions in order), checking the lock before each, and returns their
// results for the next step. Once a lock check fails, no further action starts.
func (st stepper) act(ctx context.Context, doc *Document, next *run.Run, actions []run.Action, lock *state.Lock, cs *changeset.Client, log *slog.Logger) (map[string]run.Observation, error) {
	var order []string
	byStack := map[string][]run.Action{}
	for _, a := range actions {
		if byStack[a.Stack] == nil {
			order = append(order, a.Stack)
		}
		byStack[a.Stack] = append(byStack[a.Stack], a)
	}
	bundle := sync.OnceValues(func() (*Loaded, error) { return Download(ctx, st.s3, doc.Bundle, st.loadOptions(doc.Run.Deployment)) })
	type result struct {
		obs      *run.Observation
		warnings []string
	}
	results := make([]result, len(order))
	var lockErr error
	var mu sync.Mutex
	changeset.Concurrently(len(order), func(i int) {
		for _, a := range byStack[order[i]] {
			mu.Lock()
			stop := lockErr != nil
			mu.Unlock()
			if stop {
				return
			}
			if err := st.store.Check(ctx, lock); err != nil {
				mu.Lock()
				lockErr = cmp.Or(lockErr, err)
				mu.Unlock()
				return
			}
			o, keep, warning := st.perform(ctx, doc, next, a, bundle, cs, log)
			if keep {
				results[i].obs = &o
			}
			if warning != "" {
				results[i].warnings = append(results[i].warnings, warning)
			}
		}
	})
	pending := map[string]run.Observation{}
	for i, r := range results {
		if r.obs != nil {
			pending[order[i]] = *r.obs
		}
		doc.Warnings = append(doc.Warnings, r.warnings...)
	}
	return pending, lockErr
}

// perform makes one action: its result for the next step (keep says whether the next
// step needs it), or a warning of the report.
func (st stepper) perform(ctx context.Context, doc *Document, next *run.Run, a run.Action, bundle func() (*Loaded, error), cs *changeset.Client, log *slog.Logger) (o run.Observation, keep bool, warning string) {
	switch a.Kind {
	case run.SetTerminationProtection:
		// The stack is done either way; a failure is a warning of the report.
		if o := cs.Perform(ctx, a, nil); o.Err != "" {
			return o, false, o.Err
		}
		return o, false, ""
	case run.CreateChangeSet:
		loaded, err := bundle()
		var in *changeset.Inputs
		var plain map[string]string
		var secret []string
		var stack *config.Stack
		if err == nil {
			stack, err = bundleStack(doc, loaded, a)
		}
		if err == nil {
			plain, secret, err = st.unseal(ctx, a.Parameters, stack)
		}
		if err == nil {
			in, err = inputs(doc, next, loaded, a, plain, secret, st.cfg.ServiceRole)
		}
		if err != nil {
			log.Warn("deploy: cannot prepare the change set", "stack", a.Stack, "err", err)
			return run.Failure(a.Stack, err), true, ""
		}
		a.Parameters = plain // for this call only: the run keeps SecureStrings sealed
		return cs.Perform(ctx, a, in), true, ""
	case run.ExecuteChangeSet:
		loaded, err := bundle()
		var in *changeset.Inputs
		if err == nil {
			in, err = executeInputs(loaded, next, a)
		}
		if err != nil {
			log.Warn("deploy: cannot prepare the execution", "stack", a.Stack, "err", err)
			return run.Failure(a.Stack, err), true, ""
		}
		return cs.Perform(ctx, a, in), true, ""
	case run.DeleteChangeSet:
		cs.Perform(ctx, a, nil) // the stack is done either way; a leftover change set is harmless
		return o, false, ""
	default:
		return cs.Perform(ctx, a, nil), true, ""
	}
}

// recordPlan records the plan of a plan run that ended and, under the lock, retires
// the older plans it supersedes.
func (st stepper) recordPlan(ctx context.Context, doc *Document, lock *state.Lock, log *slog.Logger) error {
	cs := st.changesets(doc.Run.ID, log)
	p, err := st.plans.document(ctx, doc, lock, cs)
	if err != nil {
		return err
	}
	if _, err := st.plans.write(ctx, p, ""); err != nil && !errors.Is(err, errRaceLost) {
		return err
	}
	st.plans.markdown(ctx, p, log)
	log.Info("deploy: plan recorded", "plan", p.ID, "status", string(p.Status), "key", bucket.PlanKey(p.Deployment, p.ID))
	if lock != nil {
		st.hygiene.afterPlan(ctx, p, cs, log)
	}
	return nil
}

func finishedNow(prev, next *run.Run, name string) bool {
	n := next.Stacks[name]
	p := prev.Stacks[name]
	return n.Phase.Terminal() && (p == nil || !p.Phase.Terminal())
}

// inputs gathers what CreateChangeSet needs from the loaded bundle: plain are a's
// parameters with their SecureStrings unsealed (those of the parameters named in secret).
// A bundle that no longer loads fails the stack at once (run.Permanent); one that changed
// is retried.
func inputs(doc *Document, r *run.Run, lb *Loaded, a run.Action, plain map[string]string, secret []string, serviceRole string) (*changeset.Inputs, error) {
	cs, err := bundleStack(doc, lb, a)
	if err != nil {
		return nil, err
	}
	if err := config.CheckResolved(cs, plain, secret...); err != nil {
		return nil, run.Permanent(err) // a value the template refuses: retrying cannot help
	}
	own, err := config.ResolveTags(cs, plan.Values(r, cs.Name, doc.SSM, plan.Outputs(r)))
	if err != nil {
		return nil, run.Permanent(err)
	}
	rs := r.Stacks[a.Stack]
	ref := doc.Bundle.Ref()
	tags := plan.Tags(lb.Config, cs, own, ref)
	maps.Copy(tags, state.StackTags(lb.Config.Namespace, lb.Config.PersistentGraphKey, ref, &state.Stack{
		Name: cs.Name, TemplateHash: rs.TemplateHash, ParametersHash: rs.ParametersHash, Requires: rs.Requires,
	}))
	in := &changeset.Inputs{TemplateBody: cs.TemplateBody, TemplateURL: cs.TemplateURL, Tree: cs.Tree,
		IncludeNested: cs.Template != nil && cs.Template.HasNestedStacks(), Capabilities: cs.Capabilities, Tags: tags,
		NotificationARNs: cs.Options.NotificationARNs, ServiceRole: cs.Target.ServiceRole}
	if in.ServiceRole == "" && cs.Target.RoleARN == "" {
		in.ServiceRole = serviceRole // cairn's own, for stacks of its account
	}
	if a.ChangeSetType == "UPDATE" {
		// What the config no longer names is cleared, so the stack keeps in sync: an empty
		// list of triggers removes the stack's, where none at all would keep them.
		in.NotificationARNs = append([]string{}, in.NotificationARNs...)
		in.Rollback = &cfntypes.RollbackConfiguration{RollbackTriggers: []cfntypes.RollbackTrigger{}}
	}
	if rb := cs.Options.Rollback; rb != nil {
		in.Rollback = &cfntypes.RollbackConfiguration{MonitoringTimeInMinutes: aws.Int32(int32(rb.MonitoringTimeInMinutes)),
			RollbackTriggers: []cfntypes.RollbackTrigger{}}
		for _, t := range rb.Triggers {
			in.Rollback.RollbackTriggers = append(in.Rollback.RollbackTriggers, cfntypes.RollbackTrigger{Arn: aws.String(t.ARN), Type: aws.String(t.Type)})
		}
	}
	return in, nil
}

// bundleStack is the stack of action a in the bundle the run deploys, as downloaded again.
// A bundle that no longer loads fails the stack at once (run.Permanent); one that changed
// is retried.
func bundleStack(doc *Document, lb *Loaded, a run.Action) (*config.Stack, error) {
	if lb.Config == nil {
		return nil, run.Permanent(fmt.Errorf("bundle %s no longer loads: %s", doc.Bundle, strings.Join(lb.Errors, "; ")))
	}
	if lb.Bundle.SHA256 != doc.Bundle.SHA256 {
		return nil, fmt.Errorf("bundle %s changed since the run started (sha256 %s, was %s): push again", doc.Bundle, lb.Bundle.SHA256, doc.Bundle.SHA256)
	}
	cs := lb.Config.Stack(a.Stack)
	if cs == nil {
		return nil, fmt.Errorf("stack %s is not in the bundle's config", a.Stack)
	}
	return cs, nil
}

// executeInputs gathers what ExecuteChangeSet needs from the loaded bundle: the stack
// policy, and DisableRollback for a create.
func executeInputs(lb *Loaded, r *run.Run, a run.Action) (*changeset.Inputs, error) {
	if lb.Config == nil {
		return nil, run.Permanent(fmt.Errorf("bundle no longer loads: %s", strings.Join(lb.Errors, "; ")))
	}
	cs := lb.Config.Stack(a.Stack)
	if cs == nil {
		return nil, fmt.Errorf("stack %s is not in the bundle's config", a.Stack)
	}
	rs := r.Stacks[a.Stack]
	return &changeset.Inputs{StackPolicy: string(cs.Options.StackPolicy),
		DisableRollback: cs.Options.DisableRollback && rs != nil && rs.ChangeSetType == "CREATE"}, nil
}
