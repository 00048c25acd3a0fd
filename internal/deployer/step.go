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
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/seal"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// Heartbeat is the message that advances a run when no stack event does, and, with Cairn
// "check", the delayed check of stacks that wait for CloudFormation.
type Heartbeat struct {
	Cairn      string `json:"cairn"` // "heartbeat" or "check"
	Deployment string `json:"deployment"`
	Run        string `json:"run"`
	// Beat numbers the run's heartbeat chain (rundoc.Document.Beat): a heartbeat of an older chain
	// still makes a step but is not sent on, so a run has one chain however often it was
	// resumed. 0 (absent) is the chain a run starts with.
	Beat int `json:"beat,omitempty"`
	// Stacks, in a check, are the stacks (run.Stack.Key) stack events named to a step that
	// could not be made (another invocation's step held the run too long): handed on, so
	// the next step looks at them.
	Stacks []string `json:"stacks,omitempty"`
}

// stepper advances runs: load, observe, decide (run.Advance), act, save.
type stepper struct {
	*base
	runs    runs
	plans   plans
	hygiene hygiene
	graphs  graphs
	pol     policies
}

func (st stepper) heartbeat(ctx context.Context, deployment, runID string, beat int) error {
	return st.send(ctx, Heartbeat{Cairn: "heartbeat", Deployment: deployment, Run: runID, Beat: beat}, st.cfg.Heartbeat)
}

// check queues the delayed check run.Advance asked for.
func (st stepper) check(ctx context.Context, doc *rundoc.Document, delay time.Duration, log *slog.Logger) {
	if err := st.send(ctx, Heartbeat{Cairn: "check", Deployment: doc.Run.Deployment, Run: doc.Run.ID}, delay); err != nil {
		log.Warn("deploy: cannot queue the delayed check; the heartbeat looks instead", "err", err)
	}
}

func (st stepper) send(ctx context.Context, m Heartbeat, delay time.Duration) error {
	if err := st.queue.Send(ctx, m, delay); err != nil {
		return fmt.Errorf("run %s: enqueue %s: %w", m.Run, m.Cairn, err)
	}
	return nil
}

// MaxLinger bounds how long one invocation waits for the looks run.Lingers asks for
// (those due within a second, which a delayed SQS message cannot express); past it, or
// near the Lambda deadline, a delayed check of a second carries the run on.
const MaxLinger = 30 * time.Second

// trigger is one step of run runID, asked for by stack events, a delayed check, a
// heartbeat or a restart, and the steps of the looks it lingers for (run.Lingers). A
// finished run only gets the clean-up its last step may not have finished (finishEnded).
//
// A lingering invocation stands down when another invocation stepped the run since its
// own step (Trigger.lingered): that step's end decided the next look (it lingers for it,
// or queued a check), and two invocations lingering for the same run each looked at the
// stacks due, the second within Piggyback of the first's next look: half again as many
// DescribeChangeSet calls.
func (st stepper) trigger(ctx context.Context, deployment, runID string, t Trigger) error {
	began := st.clk.Now()
	for {
		wait, steps, err := st.stepOnce(ctx, deployment, runID, t)
		if err != nil || wait < 0 {
			return err
		}
		deadline, ok := ctx.Deadline()
		if st.clk.Now().Add(wait).Sub(began) > MaxLinger || ok && time.Until(deadline) < wait+10*time.Second {
			st.check(ctx, &rundoc.Document{Run: &run.Run{Deployment: deployment, ID: runID}}, time.Second, st.runLogger(deployment, runID))
			return nil
		}
		select {
		case <-st.clk.After(wait):
		case <-ctx.Done():
			return nil // the heartbeat carries the run on
		}
		t = Trigger{lingered: steps} // a look, as a delayed check asks for
	}
}

// stepOnce is one step; it returns how long to wait for the next look run.Lingers asks
// for, or -1, and the run's steps as it saved them.
func (st stepper) stepOnce(ctx context.Context, deployment, runID string, t Trigger) (time.Duration, int, error) {
	log := st.runLogger(deployment, runID)
	doc, etag, partial, err := st.runs.peek(ctx, deployment, runID)
	if errors.Is(err, errNoRun) {
		log.Info("deploy: trigger for an unknown run ignored", "err", err)
		return -1, 0, nil
	}
	if err != nil {
		return -1, 0, err
	}
	hold(ctx, doc.Namespace, doc.GraphKey)
	if doc.Run.Status != run.Running {
		return -1, 0, st.finishEnded(ctx, doc, log)
	}
	if t.restart {
		log.Warn("deploy: the run's heartbeat was lost: a new heartbeat chain resumes it", "beat", doc.Beat+1, "steps", doc.Steps)
	}
	lock, err := st.resumeLock(ctx, doc.Namespace, doc.GraphKey, doc.Run.ID, doc.LockToken)
	abandoned := false
	if errors.Is(err, statestore.ErrLockLost) {
		// Another invocation's step may have ended the run (and released its lock) since
		// it was read: that is no fencing, and abandoning it from the document read before
		// would delete the change sets it kept (a plan's, for review).
		now, nowTag, lerr := st.runs.load(ctx, deployment, runID)
		if lerr == nil && now.Run.Status != run.Running {
			log.Info("deploy: the run ended while this step waited; it ends", "status", string(now.Run.Status))
			return -1, 0, nil
		}
		if partial { // lost needs the whole document: the one just read
			if lerr != nil {
				return -1, 0, lerr
			}
			doc, etag = now, nowTag
		}
		err = st.lost(ctx, doc, etag, err, log)
		abandoned = true // doc may have changed: it is read again whole below
	}
	if errors.Is(err, errRaceLost) {
		log.Info("deploy: another invocation of this run holds its lock now; this step ends", "err", err)
		return -1, 0, st.handOn(ctx, deployment, runID, t)
	}
	if errors.Is(err, statestore.ErrStepping) {
		log.Info("deploy: another invocation's step of this run outlasts this one; its trigger is handed on", "err", err)
		return -1, 0, st.handOn(ctx, deployment, runID, t)
	}
	if err != nil {
		return -1, 0, err
	}
	// Read again under the step's claim: another invocation's step may have saved the run
	// since it was read, and a step decided on an older document acts on what that one
	// changed (it executed change sets the other had deleted as stale). Read whole above
	// and unchanged, the document is kept rather than decoded again.
	if abandoned || partial {
		doc, etag, err = st.runs.load(ctx, deployment, runID)
	} else {
		doc, etag, err = st.runs.reload(ctx, doc, etag)
	}
	if err != nil {
		st.endStep(ctx, lock, log)
		return -1, 0, err
	}
	if doc.Run.Status != run.Running {
		// It ended meanwhile; its clean-up (the lock's release among it) may have failed
		// if this invocation took the lock over from a step past its claim.
		return -1, 0, st.finishEnded(ctx, doc, log)
	}
	if doc.LockToken != lock.Token {
		st.endStep(ctx, lock, log)
		return -1, 0, nil // fenced meanwhile: the step that saw it did the rest
	}
	if t.lingered > 0 && doc.Steps != t.lingered {
		st.endStep(ctx, lock, log)
		log.Debug("deploy: another invocation stepped the run while this one lingered; it carries on", "steps", doc.Steps)
		return -1, 0, nil
	}
	if t.restart {
		doc.Beat++ // the chain the warning above named
	}
	chained := t.restart || slices.Contains(t.Beats, doc.Beat)
	if len(doc.Waiting) > 0 {
		err = st.resumeStart(ctx, doc, etag, lock, log)
	} else {
		err = st.step(ctx, doc, etag, lock, log, t.Stacks...)
	}
	if doc.Run.Status == run.Running {
		st.endStep(ctx, lock, log)
	}
	// After a lost race the run may have ended meanwhile; the next heartbeat then finds
	// it finished and stops the chain. A restart whose new chain number was not saved
	// sends nothing: the run is found stalled again.
	if chained && doc.Run.Status == run.Running && (err == nil || errors.Is(err, errRaceLost) && !t.restart) {
		if herr := st.heartbeat(ctx, deployment, runID, doc.Beat); herr != nil {
			return -1, 0, herr // delivered again, so the chain is not lost
		}
		// The index object's time says when the chain last beat (runs.stalled).
		st.runs.index(ctx, doc, log)
	}
	if errors.Is(err, errRaceLost) {
		log.Info("deploy: another step advanced the run first; this one ends", "err", err)
		return -1, 0, st.handOn(ctx, deployment, runID, t)
	}
	if err != nil {
		return -1, 0, err
	}
	if wait, ok := run.Lingers(doc.Run, st.clk.Now().UTC()); ok {
		return wait, doc.Steps, nil
	}
	return -1, 0, nil
}

// handOn queues what a step that was not made (or not saved) was asked to look at: the
// stacks stack events named, which the run's own looks may not reach for a while. A
// trigger that named none needs nothing: the step that won looked at every stack due.
func (st stepper) handOn(ctx context.Context, deployment, runID string, t Trigger) error {
	if len(t.Stacks) == 0 {
		return nil
	}
	return st.send(ctx, Heartbeat{Cairn: "check", Deployment: deployment, Run: runID, Stacks: t.Stacks}, 0)
}

// lost deals with a lock check that failed (cause), as statestore.Fenced decides from the lock
// read again: another invocation of the same run carries on and this step ends unsaved
// (errRaceLost: its trigger is handed on), or the run was fenced and is abandoned.
func (st stepper) lost(ctx context.Context, doc *rundoc.Document, etag string, cause error, log *slog.Logger) error {
	var current *statestore.Lock
	if errors.Is(cause, statestore.ErrLockLost) {
		current, _ = st.store.CurrentLock(ctx, doc.Namespace, doc.GraphKey) // unreadable: nil
	}
	if !statestore.Fenced(cause, current, doc.Run.ID, doc.LockToken) {
		return fmt.Errorf("another invocation of this run holds its lock now: %w: %w", errRaceLost, cause)
	}
	return st.abandon(ctx, doc, etag, cause, log)
}

// abandon ends a run whose lock was taken over or removed: it must not change anything
// more, and the lock is not its own to release. It is closed as abandoned, the change sets
// it made and did not execute are deleted, and it leaves the index of open runs.
func (st stepper) abandon(ctx context.Context, doc *rundoc.Document, etag string, cause error, log *slog.Logger) error {
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
	st.plans.markApplied(ctx, doc, log) // its plans were consumed: a plan applies at most once
	st.runs.report(ctx, doc, log)
	if _, err := st.runs.save(ctx, doc, etag); err != nil {
		if errors.Is(err, errRaceLost) {
			return nil
		}
		return err
	}
	st.forget(doc.Run.ID)
	st.runs.unindexStacks(ctx, doc, false, log)
	st.runs.unindex(ctx, doc.Run.ID, log)
	st.notify(ctx, doc, log)
	return nil
}

// finishEnded finishes the clean-up of a run that ended, which its last step may not have
// finished (killed after saving it): while the lock still holds the run's token, nothing
// ran since, so all of it (finish); otherwise only its own entry in the index of open
// runs, which nobody else removes.
func (st stepper) finishEnded(ctx context.Context, doc *rundoc.Document, log *slog.Logger) error {
	if doc.LockToken == "" {
		log.Debug("deploy: trigger for a run that ended without a lock ignored", "status", string(doc.Run.Status))
		return nil
	}
	l, err := st.store.CurrentLock(ctx, doc.Namespace, doc.GraphKey)
	switch {
	case err == nil && l.HeldBy(doc.Run.ID, doc.LockToken):
		lock, err := st.resumeLock(ctx, doc.Namespace, doc.GraphKey, doc.Run.ID, doc.LockToken)
		if errors.Is(err, statestore.ErrLockLost) {
			break // gone meanwhile: someone else's now
		}
		if err != nil {
			return err
		}
		log.Info("deploy: finishing the clean-up of a run that ended", "status", string(doc.Run.Status))
		st.finish(ctx, doc, lock, log)
		return nil
	case err != nil && !errors.Is(err, statestore.ErrNotLocked):
		return err
	}
	log.Debug("deploy: trigger for a finished run", "status", string(doc.Run.Status))
	if idx, err := st.runs.readIndex(ctx, bucket.OpenRunKey(doc.Run.ID)); err == nil && idx == nil {
		return nil // cleaned up: a delayed check or a late event of a run that ended
	}
	st.runs.unindexStacks(ctx, doc, false, log)
	st.runs.unindex(ctx, doc.Run.ID, log)
	return nil
}

// finish is what follows the save of a run that ended, under its lock: the applied plan
// is marked (again: step marks it before the save), open plans it outdated are retired,
// the run leaves the index of open runs, the lock is released and the summary published.
// Each part may run again (finishEnded).
func (st stepper) finish(ctx context.Context, doc *rundoc.Document, lock *statestore.Lock, log *slog.Logger) {
	st.plans.markApplied(ctx, doc, log)
	if doc.Run.Mode == run.ModeDeploy {
		st.hygiene.afterApply(ctx, doc, log)
	}
	st.forget(doc.Run.ID)
	st.runs.unindexStacks(ctx, doc, true, log)
	st.runs.unindex(ctx, doc.Run.ID, log)
	st.release(ctx, lock, log)
	if _, ok := ReplanOf(doc); ok {
		if err := st.send(ctx, Heartbeat{Cairn: "replan", Deployment: doc.Run.Deployment, Run: doc.Run.ID}, 0); err != nil {
			log.Error("deploy: cannot ask for the plan of the stopped stacks", "err", err)
		}
	}
	st.notify(ctx, doc, log)
}

// step observes, advances, acts and records, under lock. It looks at the stacks whose
// check is due and at those named (run.Stack.Key of the stacks an event was about).
func (st stepper) step(ctx context.Context, doc *rundoc.Document, etag string, lock *statestore.Lock, log *slog.Logger, named ...string) error {
	if doc.Statuses == nil {
		doc.Statuses = map[string]string{}
	}
	sc := &seal.Scrubber{}
	log = slog.New(sc.Handler(log.Handler()))
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
	opts, err := st.options(ctx, doc)
	if err != nil {
		return err // the trigger comes again
	}
	// What CloudFormation said this turn is scrubbed of the run's secrets before the run
	// records it (scrub.go).
	known := st.secrets(ctx, doc, seen, cs, sc)
	observed := make([]*run.Observation, len(seen))
	for i := range seen {
		observed[i] = &seen[i]
	}
	known.scrub(doc.Run, observed, log)
	if doc.Steps == 0 {
		// A push is judged by the policies before its first stack starts.
		if err := st.pol.gatePush(ctx, doc); err != nil {
			return err // the trigger comes again
		}
	}
	prev := doc.Run
	now := st.clk.Now().UTC()
	next, actions := run.Advance(prev, seen, now, opts)
	if slices.ContainsFunc(actions, func(a run.Action) bool { return a.Kind == run.JudgePolicies }) {
		// The policy function answers at once: the run observes its verdict in this step.
		next, actions = run.Advance(next, []run.Observation{st.pol.judgePush(ctx, doc, next, log)}, now, opts)
	}
	pending, lockErr := st.act(ctx, doc, next, actions, lock, cs, sc, log)
	acted := map[string]*run.Observation{}
	for name, o := range pending {
		acted[name] = &o
	}
	known.scrub(next, slices.Collect(maps.Values(acted)), log)
	for name, o := range acted {
		pending[name] = *o
	}
	doc.Run, doc.Pending = next, pending
	var started []string
	for _, a := range actions {
		if p := prev.Stacks[a.Stack]; p != nil && p.Phase == run.Pending && pending[a.Stack].Err == "" {
			started = append(started, a.Stack)
		}
	}
	st.runs.indexStacks(ctx, doc, started, log)
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
			if errors.Is(err, statestore.ErrLockLost) || errors.Is(err, statestore.ErrLeaseExpired) {
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
		if u, ok := ReplanOf(doc); ok {
			id := u.RunID()
			doc.Notes = append(doc.Notes, fmt.Sprintf("stopped stacks are planned again for review against the stacks as this run left them: plan %s (`cairn plans %s %s`), then `cairn approve %s %s`",
				id, doc.Run.Deployment, id, doc.Run.Deployment, id))
		}
		// Whoever sees the apply run ended finds its plans marked applied.
		st.plans.markApplied(ctx, doc, log)
		st.runs.report(ctx, doc, log)
	} else if len(started) > 0 || len(finished) > 0 {
		st.runs.livePage(ctx, doc, now, log)
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

// recordPlan records the plan of a plan run that ended and, under the lock, retires
// the older plans it supersedes.
func (st stepper) recordPlan(ctx context.Context, doc *rundoc.Document, lock *statestore.Lock, log *slog.Logger) error {
	cs := st.changesets(doc.Run.ID, log)
	p, err := st.plans.document(ctx, doc, lock, cs)
	if err != nil {
		return err
	}
	if err := st.pol.judgePlan(ctx, doc, p, log); err != nil {
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

// options are run.Advance's options for a step of doc's run: how it resolves its stacks'
// inputs and seals their outputs.
func (st stepper) options(ctx context.Context, doc *rundoc.Document) (run.Options, error) {
	key, err := st.key(ctx)
	if err != nil {
		return run.Options{}, err
	}
	opts := st.cfg.Run
	opts.Resolve = plan.Resolver(doc.Run, doc.Lookups, doc.SSM)
	opts.Seal, opts.SealOutputs = plan.Seal(key), plan.SealOutputs(key)
	opts.Explain = plan.RippleStops
	opts.Heartbeat = st.cfg.Heartbeat
	return opts, nil
}

func finishedNow(prev, next *run.Run, name string) bool {
	n := next.Stacks[name]
	p := prev.Stacks[name]
	return n.Phase.Terminal() && (p == nil || !p.Phase.Terminal())
}
