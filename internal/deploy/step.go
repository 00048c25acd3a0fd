package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"

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

// Heartbeat is the message that advances a run when no stack event does.
type Heartbeat struct {
	Cairn      string `json:"cairn"` // always "heartbeat"
	Deployment string `json:"deployment"`
	Run        string `json:"run"`
}

// stepper advances runs: load, observe, decide (run.Advance), act, save.
type stepper struct {
	*base
	runs    runs
	plans   plans
	hygiene hygiene
	graphs  graphs
}

func (st stepper) heartbeat(ctx context.Context, deployment, runID string) error {
	body, _ := json.Marshal(Heartbeat{Cairn: "heartbeat", Deployment: deployment, Run: runID})
	_, err := st.sqs.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(st.cfg.QueueURL), MessageBody: aws.String(string(body)), DelaySeconds: seconds(st.cfg.Heartbeat),
	})
	if err != nil {
		return fmt.Errorf("run %s: enqueue heartbeat: %w", runID, err)
	}
	return nil
}

// trigger is one step of run runID, asked for by a stack event or a heartbeat.
func (st stepper) trigger(ctx context.Context, deployment, runID string, heartbeat bool) error {
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
		log.Debug("deploy: trigger for a finished run ignored", "status", string(doc.Run.Status))
		return nil
	}
	lock, err := st.resumeLock(ctx, doc.Namespace, doc.GraphKey, doc.Run.ID, doc.LockToken)
	if errors.Is(err, state.ErrLockLost) {
		return st.abandon(ctx, doc, etag, err, log)
	}
	if err != nil {
		return err
	}
	err = st.step(ctx, doc, etag, lock, log)
	if heartbeat && (err == nil || errors.Is(err, errRaceLost)) && doc.Run.Status == run.Running {
		// After a lost race the run may have ended meanwhile; the next heartbeat then
		// finds it finished and stops the chain.
		if herr := st.heartbeat(ctx, deployment, runID); herr != nil {
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
func (st stepper) abandon(ctx context.Context, doc *Document, etag string, cause error, log *slog.Logger) error {
	log.Error("deploy: run lost its lock and stops", "err", cause)
	doc.Run = run.Abandon(doc.Run, cause.Error(), st.clk.Now().UTC())
	st.runs.report(ctx, doc, log)
	if _, err := st.runs.save(ctx, doc, etag); err != nil {
		if errors.Is(err, errRaceLost) {
			return nil
		}
		return err
	}
	st.runs.unindex(ctx, doc.Run.ID, log)
	st.notify(ctx, doc, log)
	return nil
}

// step observes, advances, acts and records, under lock.
func (st stepper) step(ctx context.Context, doc *Document, etag string, lock *state.Lock, log *slog.Logger) error {
	if doc.Statuses == nil {
		doc.Statuses = map[string]string{}
	}
	cs := st.changesets(doc.Run.ID, log)
	seen := cs.Observe(ctx, doc.Run, doc.Pending)
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
	prev := doc.Run
	next, actions := run.Advance(prev, seen, st.clk.Now().UTC(), opts)
	pending, lockErr := st.act(ctx, doc, next, actions, lock, cs, log)
	doc.Run, doc.Pending = next, pending
	doc.Steps++
	if lockErr != nil {
		return st.abandon(ctx, doc, etag, lockErr, log)
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
				return st.abandon(ctx, doc, etag, err, log)
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
		st.runs.report(ctx, doc, log)
	}
	if _, err := st.runs.save(ctx, doc, etag); err != nil {
		return err
	}
	if !ended {
		return nil
	}
	if doc.Plan != "" {
		st.plans.markApplied(ctx, doc, log)
	}
	log.Info("deploy: run ended", "status", string(next.Status), "reason", next.Reason, "steps", doc.Steps)
	if next.Mode == run.ModeDeploy {
		st.hygiene.afterApply(ctx, doc, log)
	}
	st.forget(next.ID)
	st.runs.unindex(ctx, next.ID, log)
	st.release(ctx, lock, log)
	st.notify(ctx, doc, log)
	return nil
}

// act performs the actions Advance decided, checking the lock before each, and returns
// their results for the next step. It stops at the first lock check that fails.
func (st stepper) act(ctx context.Context, doc *Document, next *run.Run, actions []run.Action, lock *state.Lock, cs *changeset.Client, log *slog.Logger) (map[string]run.Observation, error) {
	pending := map[string]run.Observation{}
	var loaded *Loaded
	for _, a := range actions {
		if err := st.store.Check(ctx, lock); err != nil {
			return pending, err
		}
		switch a.Kind {
		case run.SetTerminationProtection:
			// The stack is done either way; a failure is a warning of the report.
			if o := cs.Perform(ctx, a, nil); o.Err != "" {
				doc.Warnings = append(doc.Warnings, o.Err)
			}
		case run.CreateChangeSet:
			var err error
			if loaded == nil {
				loaded, err = Download(ctx, st.s3, doc.Bundle, doc.Run.Deployment)
			}
			var in *changeset.Inputs
			var plain map[string]string
			var secret []string
			if err == nil {
				plain, secret, err = st.unseal(ctx, a.Parameters)
			}
			if err == nil {
				in, err = inputs(doc, next, loaded, a, plain, secret, st.cfg.ServiceRole)
			}
			if err != nil {
				log.Warn("deploy: cannot prepare the change set", "stack", a.Stack, "err", err)
				pending[a.Stack] = run.Failure(a.Stack, err)
				continue
			}
			a.Parameters = plain // for this call only: the run keeps SecureStrings sealed
			pending[a.Stack] = cs.Perform(ctx, a, in)
		case run.ExecuteChangeSet:
			var err error
			if loaded == nil {
				loaded, err = Download(ctx, st.s3, doc.Bundle, doc.Run.Deployment)
			}
			var in *changeset.Inputs
			if err == nil {
				in, err = executeInputs(loaded, next, a)
			}
			if err != nil {
				log.Warn("deploy: cannot prepare the execution", "stack", a.Stack, "err", err)
				pending[a.Stack] = run.Failure(a.Stack, err)
				continue
			}
			pending[a.Stack] = cs.Perform(ctx, a, in)
		case run.DeleteChangeSet:
			cs.Perform(ctx, a, nil) // the stack is done either way; a leftover change set is harmless
		default:
			pending[a.Stack] = cs.Perform(ctx, a, nil)
		}
	}
	return pending, nil
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
		Name: cs.Name, TemplateHash: rs.TemplateHash, ParametersHash: run.HashParameters(a.Parameters), Requires: rs.Requires,
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
