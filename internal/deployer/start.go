package deployer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/access"
	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/seal"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
	"github.com/cairn-dev/cairn/internal/target"
)

// starter begins runs: of an uploaded bundle (a deploy or a plan), and of an approved
// plan (its apply run). Both share one beginning (begin, acquire) and one end (launch).
type starter struct{ stepper }

// begin is the beginning every run shares: the run's id and logger, and the document of a
// run that is not started yet. It returns a nil document when the run exists already (the
// event was delivered again); a run whose start was killed before its first step is then
// resumed, and one that ended gets the rest of its clean-up.
func (s starter) begin(ctx context.Context, u *Upload, deployment string, mode run.Mode) (*rundoc.Document, *slog.Logger, error) {
	if u.Bucket == "" {
		u.Bucket = s.cfg.Bucket
	}
	if u.Time.IsZero() {
		u.Time = s.clk.Now()
	}
	runID := u.RunID()
	if sc := bucket.ScopeOf(ctx); sc != nil {
		sc.SetRun(runID)
	}
	log := s.runLogger(deployment, runID)
	if doc, _, err := s.runs.load(ctx, deployment, runID); err == nil {
		log.Info("deploy: run already started for this event; event redelivered", "key", u.Key, "status", string(doc.Run.Status), "steps", doc.Steps)
		if doc.Run.Status == run.Running && doc.Steps > 0 {
			return nil, log, nil // its heartbeat chain was started before its first step
		}
		// Killed before its first step, so maybe before its first heartbeat: nothing else
		// would advance it. Or it ended, maybe before its clean-up.
		return nil, log, s.trigger(ctx, deployment, runID, Trigger{restart: doc.Run.Status == run.Running})
	} else if !errors.Is(err, errNoRun) {
		return nil, log, err
	}
	now := s.clk.Now().UTC()
	return &rundoc.Document{Run: &run.Run{ID: runID, Deployment: deployment, Mode: mode, Status: run.Running, Stacks: map[string]*run.Stack{}, StartedAt: now, UpdatedAt: now}}, log, nil
}

// acquire takes the lock of namespace/key for doc's run. A lock this run took before (its
// start did not finish) is carried on; one another run holds makes the upload wait on the
// queue: then the lock is nil, and so is the error.
func (s starter) acquire(ctx context.Context, u Upload, waiter string, doc *rundoc.Document, namespace, key string, log *slog.Logger) (*statestore.Lock, error) {
	runID := doc.Run.ID
	hold(ctx, namespace, key)
	lock, err := s.store.Acquire(ctx, namespace, key, runID, owner(ctx))
	var held *statestore.LockedError
	switch {
	case errors.As(err, &held) && held.Holder.RunID == runID:
		lock, err = s.resumeLock(ctx, namespace, key, runID, held.Holder.Token)
		if err == nil {
			// A start claims no step: the run's steps begin once its document exists, and
			// a start of a run whose document exists (a duplicate delivery) changes nothing.
			s.endStep(ctx, lock, log)
		}
	case errors.As(err, &held):
		log.Info("deploy: another run holds the lock; the "+waiter+" waits", "holder_run", held.Holder.RunID, "retry_in", s.cfg.LockRetry.String())
		return nil, s.requeue(ctx, u)
	}
	if err != nil {
		return nil, err
	}
	doc.LockToken = lock.Token
	return lock, nil
}

// launch is the end every start shares: the graph records what the plan dropped, the run
// document is created (or a duplicate delivery that created it first wins), the run is
// indexed for stack events, its heartbeat chain starts, and its first step is made.
func (s starter) launch(ctx context.Context, doc *rundoc.Document, lock *statestore.Lock, log *slog.Logger, what string) error {
	if err := s.graphs.record(ctx, lock, doc, nil); err != nil {
		s.release(ctx, lock, log)
		return err
	}
	waited := doc.ETag != ""
	s.runs.unindexWaiting(ctx, doc, log)
	doc.Waiting = nil
	etag, err := s.runs.save(ctx, doc, doc.ETag)
	if errors.Is(err, errRaceLost) {
		// A duplicate delivery of this event started the run meanwhile, under this same
		// lock: it is that run's to release.
		log.Info("deploy: run already started by a duplicate of this event")
		return nil
	}
	if err != nil {
		s.release(ctx, lock, log)
		return err
	}
	s.runs.index(ctx, doc, log)
	log.Info("deploy: "+what+" started", "stacks", len(doc.Run.Stacks), "decisions", len(doc.Decisions))
	if waited {
		// Its heartbeat chain began while it waited.
	} else if err := s.heartbeat(ctx, doc.Run.Deployment, doc.Run.ID, doc.Beat); err != nil {
		// Without a heartbeat the run advances by stack events only; the first step below
		// may still finish it.
		log.Error("deploy: cannot enqueue the first heartbeat", "err", err)
	}
	// The first step claims the run as every step does: its heartbeat, or a stack event,
	// may come while it acts.
	claimed, err := s.resumeLock(ctx, doc.Namespace, doc.GraphKey, doc.Run.ID, doc.LockToken)
	if err != nil {
		log.Warn("deploy: the first step waits for the heartbeat", "err", err)
		return nil
	}
	if err := s.step(ctx, doc, etag, claimed, log); err != nil {
		log.Warn("deploy: first step failed; the heartbeat retries it", "err", err)
	}
	if doc.Run.Status == run.Running {
		s.endStep(ctx, claimed, log)
	}
	return nil
}

// ownBucket reports whether u is an event of cairn's own bucket (an event that names no
// bucket is). An event naming any other bucket is forged or misrouted: whoever may send to
// the deploy queue could otherwise make cairn deploy a bundle of their own bucket. It is
// refused and logged, and nothing is recorded.
func (s starter) ownBucket(u Upload) bool {
	if u.Bucket == "" || u.Bucket == s.cfg.Bucket {
		return true
	}
	s.log.Error("deploy: upload refused: the event names another bucket than cairn's; nothing is recorded or changed",
		"bucket", u.Bucket, "key", u.Key, "version", u.VersionID, "want", s.cfg.Bucket)
	return false
}

// upload begins the run of a bundle upload (up is what its key names): a deploy run, or a
// plan run.
func (s starter) upload(ctx context.Context, u Upload, up bucket.Upload) error {
	if !s.ownBucket(u) {
		return nil
	}
	if up.Kind != bucket.DeployUpload && up.Kind != bucket.PlanUpload {
		s.log.Info("deploy: ignoring an object that is not a bundle upload", "bucket", u.Bucket, "key", u.Key,
			"want", bucket.DeploymentKey("NAME")+" or "+bucket.PlanUploadKey("NAME"))
		return nil
	}
	if err := bucket.CheckDeployment(up.Deployment); err != nil {
		s.log.Error("deploy: upload refused; nothing is recorded or changed", "key", u.Key, "err", err)
		return nil
	}
	mode := run.ModeDeploy
	if up.Kind == bucket.PlanUpload {
		mode = run.ModePlan
	}
	return s.bundleRun(ctx, u, up.Deployment, mode)
}

// bundleRun begins the run of the bundle uploaded as u (a deploy, or a plan: mode).
func (s starter) bundleRun(ctx context.Context, u Upload, deployment string, mode run.Mode) error {
	doc, log, err := s.begin(ctx, &u, deployment, mode)
	if doc == nil {
		return err
	}
	up := bucket.Upload{Deployment: deployment}
	log = log.With("version", u.VersionID)
	doc.Bundle = rundoc.Bundle{Bucket: u.Bucket, Key: u.Key, VersionID: u.VersionID, Sequencer: u.Sequencer}
	if warn, err := s.store.VersioningWarning(ctx); err != nil {
		log.Warn("deploy: cannot read bucket versioning", "err", err)
	} else if warn != "" {
		doc.Warnings = append(doc.Warnings, warn)
	}
	// A newer push supersedes a push; plans of a deployment coexist (each upload to
	// plans/NAME.zip is planned: another pull request's may follow it at once), and a
	// newer plan supersedes only the earlier plans of the same change (hygiene).
	if mode == run.ModeDeploy {
		if sup, err := s.superseded(ctx, u); err != nil {
			return err
		} else if sup {
			return s.supersede(ctx, doc, log)
		}
	}
	lb, err := rundoc.Download(ctx, s.s3, doc.Bundle, s.loadOptions(up.Deployment))
	if err != nil {
		return err
	}
	s.bundles.put(up.Deployment, lb) // the run's steps use it again
	doc.Bundle = lb.Bundle
	if len(lb.Errors) > 0 {
		log.Error("deploy: invalid bundle; nothing is changed", "errors", strings.Join(lb.Errors, "; "))
		doc.Errors = lb.Errors
		return s.fail(ctx, doc, nil, fmt.Sprintf("invalid bundle: %d error(s); nothing was changed", len(lb.Errors)), log)
	}
	if mode == run.ModePlan {
		late, err := s.late(ctx, deployment, lb.Bundle.Source, doc.Run.StartedAt)
		if err != nil {
			return err
		}
		if late != "" {
			doc.Late = late
			log.Warn("deploy: a plan of a merged pull request's own checkout: nothing is planned", "reason", late)
			return s.fail(ctx, doc, nil, "late: "+late, log)
		}
	}
	cfg := lb.Config
	doc.Namespace, doc.GraphKey = cfg.Namespace, cfg.PersistentGraphKey
	hold(ctx, cfg.Namespace, cfg.PersistentGraphKey)
	log = log.With("namespace", cfg.Namespace, "graph_key", cfg.PersistentGraphKey)
	trial := s.trial(ctx, doc, lb)
	if trial != nil && s.quiet(ctx, trial) {
		return s.recordQuiet(ctx, trial.doc, log)
	}
	lock, err := s.acquire(ctx, u, "upload", doc, cfg.Namespace, cfg.PersistentGraphKey, log)
	if lock == nil {
		return err
	}
	// A newer push may have arrived while this one waited for the lock.
	if mode == run.ModeDeploy {
		if sup, err := s.superseded(ctx, u); err != nil || sup {
			s.release(ctx, lock, log)
			if err != nil {
				return err
			}
			return s.supersede(ctx, doc, log)
		}
	}
	return s.locked(ctx, doc, lock, lb, trial, log)
}

// locked is the rest of the start of an upload's run, under its lock: the decisions (the
// trial's when it was planned against this same graph), then the run, or its wait for busy
// stacks to settle.
func (s starter) locked(ctx context.Context, doc *rundoc.Document, lock *statestore.Lock, lb *rundoc.Loaded, trial *trialRun, log *slog.Logger) error {
	d, failed, err := s.decide(ctx, doc, lock, lb, doc.Run.Mode, trial, log)
	if failed || err != nil {
		if !failed {
			s.release(ctx, lock, log)
		}
		return err
	}
	if len(d.res.Busy) > 0 {
		return s.wait(ctx, doc, lock, d.res.Busy, log)
	}
	return s.launch(ctx, doc, lock, log, "run")
}

// ReplanOf is the plan run an apply run that stopped stacks (run.Stack.Stopped) asks
// for: the same bundle planned again against the stacks as the apply left them, so what
// stopped is reviewed anew. Its upload is the apply's bundle, told apart by the sequencer
// "replan:RUN", which names its run (Upload.RunID): the apply run's report names the plan.
func ReplanOf(doc *rundoc.Document) (Upload, bool) {
	if doc.Run.Mode != run.ModeDeploy || doc.Run.Status == run.Running {
		return Upload{}, false
	}
	for _, s := range doc.Run.Stacks {
		if s.Stopped {
			return Upload{Bucket: doc.Bundle.Bucket, Key: doc.Bundle.Key, VersionID: doc.Bundle.VersionID,
				Sequencer: "replan:" + doc.Run.ID, Time: doc.Run.FinishedAt}, true
		}
	}
	return Upload{}, false
}

// replan begins the plan run an apply run that stopped stacks asks for (ReplanOf), by a
// message of the deployer's own: body is re-sent while the lock is held.
func (s starter) replan(ctx context.Context, deployment, runID, body string) error {
	doc, _, err := s.runs.load(ctx, deployment, runID)
	if errors.Is(err, errNoRun) {
		s.log.Info("deploy: replan of an unknown run ignored", "deployment", deployment, "run", runID)
		return nil
	}
	if err != nil {
		return err
	}
	u, ok := ReplanOf(doc)
	if !ok {
		s.log.Info("deploy: replan of a run that stopped nothing ignored", "deployment", deployment, "run", runID)
		return nil
	}
	u.Body = body
	return s.bundleRun(ctx, u, deployment, run.ModePlan)
}

// decided is what a start decided under the lock: plan.Make's result, and what it saw.
type decided struct {
	res   *plan.Result
	live  map[string]plan.Live
	graph *state.Graph
	key   seal.Key
}

// decide makes the run of a bundle under its lock: the persistent graph (rebuilt from the
// stacks' tags when it is missing), one look at every stack, and plan.Make's decisions in
// mode (an apply decides in plan mode: what it changes is covered by reviewed plans, so
// nothing is refused for needing review). A trial planned against this same graph before
// the lock was taken is adopted as it is. A plan that fails or is refused is recorded as a
// failed run (failed, and the lock is released); an error is one of AWS. Stacks another
// hand is changing (Result.Busy) leave doc as it was: the run waits for them.
func (s starter) decide(ctx context.Context, doc *rundoc.Document, lock *statestore.Lock, lb *rundoc.Loaded, mode run.Mode, trial *trialRun, log *slog.Logger) (d *decided, failed bool, err error) {
	cfg := lb.Config
	if !lb.Destroy {
		// A CDK assembly's environments and assets, before any CloudFormation call: the
		// bundle passed its checks when it loaded, and every destination is checked
		// (cdkassets.Destination) before anything is published.
		if failed, err := s.assemblyAssets(ctx, doc, lock, cfg, log); failed || err != nil {
			return nil, failed, err
		}
	}
	g, err := s.store.ReadOrRebuild(ctx, lock, s.cfn, awsclient.Budget{Limiter: s.placesOf(doc.Run.ID).Budget(target.Target{}), Clock: s.clk})
	if err != nil {
		return nil, false, err
	}
	if trial != nil && !g.Rebuilt && g.Generation == trial.generation {
		// Planned against this same graph before the lock was taken (trial).
		token := doc.LockToken
		*doc = *trial.doc
		doc.LockToken = token
		return trial.decided, false, nil
	}
	if g.Rebuilt {
		doc.Warnings = append(doc.Warnings, fmt.Sprintf("the persistent graph %s was missing and was rebuilt from the tags of %d stack(s)", bucket.StateKey(cfg.Namespace, cfg.PersistentGraphKey), len(g.Stacks)))
		if err := s.store.Write(ctx, lock, g); err != nil {
			return nil, false, err
		}
	}
	d, reason, err := s.plan(ctx, doc, lb, g, mode, log)
	if err != nil {
		return nil, false, err
	}
	if reason != "" {
		if len(doc.Refusals) > 0 {
			log.Warn("deploy: plan refused; nothing is changed", "refusals", strings.Join(doc.Refusals, "; "))
		}
		return d, true, s.fail(ctx, doc, lock, reason, log)
	}
	return d, false, nil
}

// plan is the part of decide that needs no lock, on graph g: one look at every stack and
// plan.Make's decisions in mode, recorded in doc (unless stacks are busy: Result.Busy). A
// plan that fails or is refused gives the reason its run fails (doc says why); an error
// is one of AWS.
func (s starter) plan(ctx context.Context, doc *rundoc.Document, lb *rundoc.Loaded, g *state.Graph, mode run.Mode, log *slog.Logger) (d *decided, reason string, err error) {
	cfg := lb.Config
	cs := s.changesets(doc.Run.ID, log)
	home, err := s.placesOf(doc.Run.ID).Home(ctx, hasRole(cfg, g))
	if err != nil {
		return nil, "", err
	}
	doc.Destroy = lb.Destroy
	planCfg := cfg
	if doc.Destroy {
		planCfg = &config.Config{Namespace: cfg.Namespace, PersistentGraphKey: cfg.PersistentGraphKey, File: cfg.File}
	}
	live, unreachable, err := survey(ctx, cs, access.Where(home, configSpecs(planCfg), graphSpecs(g)), plannedKeys(home, cfg, g))
	if err != nil {
		return nil, "", err
	}
	for loc, why := range unreachable {
		log.Warn("deploy: an account and region of the run cannot be reached; its stacks fail", "account", loc.Account, "region", loc.Region, "reason", why)
	}
	imports, err := importers(ctx, cs, planCfg, g, home, live)
	if err != nil {
		return nil, "", err
	}
	undeletable, err := s.undeletable(ctx, cs, cfg, g, home, live)
	if err != nil {
		return nil, "", err
	}
	key, err := s.key(ctx)
	if err != nil {
		if !awserr.Permanent(err) {
			return nil, "", err
		}
		doc.Errors = []string{err.Error()}
		return nil, "no plan: " + err.Error(), nil
	}
	if !key.Keyed() && !slices.Contains(doc.Warnings, unkeyedWarning) {
		doc.Warnings = append(doc.Warnings, unkeyedWarning)
	}
	if !doc.Destroy {
		if doc.SSM, err = s.ssmValues(ctx, key, cfg.SSMNames()); err != nil {
			retry, reason := plan.Unreadable(err)
			if retry {
				return nil, "", err
			}
			doc.Errors = []string{err.Error()}
			return nil, reason, nil
		}
	}
	res, err := plan.Make(plan.Input{
		RunID: doc.Run.ID, Deployment: doc.Run.Deployment, Mode: mode, Config: cfg, Graph: g, Live: live,
		Importers: imports, Bundle: doc.Bundle.Ref(), Now: doc.Run.StartedAt, Destroy: doc.Destroy, SSM: doc.SSM,
		Home: home, Unreachable: unreachable, Undeletable: undeletable, Namespaces: s.cfg.Namespaces, Key: key,
	})
	if err != nil {
		doc.Errors = []string{err.Error()}
		return nil, "no plan: " + err.Error(), nil
	}
	d = &decided{res: res, live: live, graph: g, key: key}
	if len(res.Busy) > 0 {
		return d, "", nil
	}
	res.Run.Mode = doc.Run.Mode
	doc.Run = res.Run
	switch {
	case doc.Destroy:
	case mode == run.ModePlan:
		s.detectDrift(ctx, doc, cfg, log)
	case doc.Plan == "" && !doc.Content:
		s.pushDrift(ctx, doc, cfg, log)
	}
	doc.Decisions, doc.Refusals = res.Decisions, res.Refusals
	if res.TakesOverFrom != "" {
		doc.Notes = append(doc.Notes, fmt.Sprintf("deployment %s takes over the persistent graph %s/%s from deployment %s (take_over_graph_from)",
			doc.Run.Deployment, cfg.Namespace, cfg.PersistentGraphKey, res.TakesOverFrom))
	}
	doc.Warnings = append(doc.Warnings, res.Warnings...)
	if len(res.Refusals) > 0 {
		return d, fmt.Sprintf("refused: %d reason(s); nothing was changed", len(res.Refusals)), nil
	}
	for _, c := range res.Run.GuardChanges {
		// The graph records it with the run's first write.
		doc.Notes = append(doc.Notes, c.String())
	}
	doc.Lookups, doc.Statuses, doc.Inputs = lookupsOf(cfg), map[string]string{}, res.Inputs
	for name, rs := range doc.Run.Stacks {
		if l, ok := live[rs.Key()]; ok {
			doc.Statuses[name] = l.Status
		}
	}
	for _, dec := range res.Decisions {
		if dec.Action == plan.Drop {
			doc.Drop = append(doc.Drop, dec.Stack)
		}
	}
	return d, "", nil
}

// undeletable reads, for each stack of the config or the graph that CloudFormation left
// ROLLBACK_FAILED or DELETE_FAILED, the resources it failed to delete, keyed as live: the
// plan's way out for such a stack is a deletion that keeps them.
func (s starter) undeletable(ctx context.Context, cs *changeset.Client, cfg *config.Config, g *state.Graph, home target.Target, live map[string]plan.Live) (map[string][]plan.Resource, error) {
	specs := map[string]target.Spec{}
	for _, st := range cfg.Stacks {
		specs[target.Key(st.Target.Location(home), st.StackName)] = st.Target
	}
	for _, st := range g.Stacks {
		specs[target.Key(st.Target.Location(home), st.StackName)] = st.Target
	}
	out := map[string][]plan.Resource{}
	for _, key := range slices.Sorted(maps.Keys(specs)) {
		l, ok := live[key]
		if !ok || l.Status != "ROLLBACK_FAILED" && l.Status != "DELETE_FAILED" {
			continue
		}
		res, err := cs.Undeletable(ctx, specs[key], l.StackID)
		if err != nil {
			return nil, err
		}
		out[key] = res
	}
	return out, nil
}

// lookupsOf keeps each stack's lookups as a run stores them (config.StoredLookups: none
// holding a NoEcho value), so parameters resolve without the bundle.
func lookupsOf(cfg *config.Config) map[string][]config.Lookup {
	out := map[string][]config.Lookup{}
	for _, s := range cfg.Stacks {
		if l := s.StoredLookups(); len(l) > 0 {
			out[s.Name] = l
		}
	}
	return out
}

func (s starter) requeue(ctx context.Context, u Upload) error {
	if err := s.queue.SendBody(ctx, u.Body, s.cfg.LockRetry); err != nil {
		return fmt.Errorf("re-queue upload s3://%s/%s to wait for the lock: %w", u.Bucket, u.Key, err)
	}
	return nil
}

// fail records a run that fails before it changes anything, releasing lock (when held),
// and notifies.
func (s starter) fail(ctx context.Context, doc *rundoc.Document, lock *statestore.Lock, reason string, log *slog.Logger) error {
	doc.Run = run.Fail(doc.Run, reason, s.clk.Now().UTC())
	s.runs.report(ctx, doc, log)
	if doc.Run.Mode == run.ModePlan {
		// The failed plan is recorded too, so whoever waits for it learns why.
		if err := s.recordPlan(ctx, doc, nil, log); err != nil {
			log.Warn("deploy: cannot record the failed plan", "err", err)
		}
	}
	s.runs.unindexWaiting(ctx, doc, log)
	doc.Waiting = nil
	_, err := s.runs.save(ctx, doc, doc.ETag)
	if lock != nil {
		s.release(ctx, lock, log)
	}
	if err != nil && !errors.Is(err, errRaceLost) {
		return err
	}
	if doc.ETag != "" {
		s.forget(doc.Run.ID)
		s.runs.unindex(ctx, doc.Run.ID, log)
	}
	s.notify(ctx, doc, log)
	return nil
}
