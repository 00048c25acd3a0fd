// Package deploy is the deploy engine's driver: it turns an upload of a bundle into a run,
// and each later trigger (a stack status event or a heartbeat) into one step of that run.
//
// No step waits for CloudFormation. A step loads the run document, renews the lock,
// observes the stacks in flight, lets run.Advance decide, performs the actions (checking
// the lock before each change), writes the run document conditionally on its ETag and the
// persistent graph for every stack that finished, and returns. The heartbeat, a delayed
// SQS message that re-enqueues itself while the run is open, makes a run finish even when
// every stack event is lost, so a run may outlast any Lambda timeout.
package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
)

// DefaultHeartbeat is how long a heartbeat waits in the queue before it advances its run.
const DefaultHeartbeat = 15 * time.Second

// S3API is the part of *s3.Client the driver uses.
type S3API interface {
	state.S3API
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// SQSAPI sends heartbeats and re-sends uploads that wait for the lock.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// SNSAPI publishes run summaries.
type SNSAPI interface {
	Publish(ctx context.Context, in *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// Config configures a Driver.
type Config struct {
	// Bucket holds uploads, state, locks, runs and templates.
	Bucket string
	// QueueURL is the deploy queue: heartbeats and uploads waiting for the lock go there.
	QueueURL string
	// Topic is the notifications topic ARN ("" publishes nothing).
	Topic string
	// Region places large templates' URLs.
	Region string
	// Heartbeat is the delay of heartbeat messages (default DefaultHeartbeat; SQS allows
	// at most 15 minutes).
	Heartbeat time.Duration
	// LockRetry is how long an upload waits before it tries the lock again (default:
	// Heartbeat).
	LockRetry time.Duration
	// Lease is the lock's lease (default state.DefaultLease).
	Lease time.Duration
	// Budget returns a run's CloudFormation API budget (default awsclient.DefaultBudget).
	Budget func() *rate.Limiter
	// PlanTTL is how long an unapplied plan stays approvable (default DefaultPlanTTL).
	PlanTTL time.Duration
	// Run tunes the state machine (retries, phase timeout).
	Run    run.Options
	Clock  clock.Clock
	Logger *slog.Logger
}

// CFNAPI is the CloudFormation API the driver calls: the change set client's, and
// ListChangeSets, so plan hygiene never deletes a stack that holds a change set it did not
// make.
type CFNAPI interface {
	changeset.API
	ListChangeSets(ctx context.Context, in *cloudformation.ListChangeSetsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ListChangeSetsOutput, error)
}

// Clients are the AWS APIs the driver calls.
type Clients struct {
	S3  S3API
	CFN CFNAPI
	SQS SQSAPI
	SNS SNSAPI
}

// Driver runs deployments.
type Driver struct {
	cfg   Config
	s3    S3API
	cfn   CFNAPI
	sqs   SQSAPI
	sns   SNSAPI
	store *state.Store
	clk   clock.Clock
	log   *slog.Logger

	budgets sync.Map // run id → *rate.Limiter: a run's budget spans the steps a warm process makes
}

// New returns a Driver.
func New(cfg Config, c Clients) (*Driver, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("deploy: no bucket configured: set CAIRN_BUCKET")
	}
	if cfg.QueueURL == "" {
		return nil, errors.New("deploy: no deploy queue configured: set CAIRN_DEPLOY_QUEUE_URL")
	}
	if c.S3 == nil || c.CFN == nil || c.SQS == nil {
		return nil, errors.New("deploy: S3, CloudFormation and SQS clients are required")
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Heartbeat > 15*time.Minute {
		return nil, fmt.Errorf("deploy: heartbeat %s is longer than the 15 minutes SQS can delay a message", cfg.Heartbeat)
	}
	if cfg.LockRetry <= 0 {
		cfg.LockRetry = cfg.Heartbeat
	}
	if cfg.Budget == nil {
		cfg.Budget = awsclient.DefaultBudget
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &Driver{cfg: cfg, s3: c.S3, cfn: c.CFN, sqs: c.SQS, sns: c.SNS, clk: cfg.Clock, log: cfg.Logger}
	d.store = &state.Store{S3: c.S3, Bucket: cfg.Bucket, Clock: cfg.Clock, Logger: cfg.Logger, Lease: cfg.Lease}
	return d, nil
}

// Upload is an S3 ObjectCreated event of deployments/NAME.zip.
type Upload struct {
	Bucket, Key, VersionID, Sequencer string
	Time                              time.Time
	// Body is the SQS message body that carried the event, re-sent while the lock is held.
	Body string
}

// Deployment returns NAME of deployments/NAME.zip, or "" when the key is not one.
func (u Upload) Deployment() string { return u.name(bucket.DeployUpload) }

// PlanName returns NAME of plans/NAME.zip, or "".
func (u Upload) PlanName() string { return u.name(bucket.PlanUpload) }

// Approval returns NAME and PLAN_ID of approvals/NAME/PLAN_ID, or "", "".
func (u Upload) Approval() (deployment, planID string) {
	if p, ok := bucket.ParseUpload(u.Key); ok && p.Kind == bucket.ApprovalUpload {
		return p.Deployment, p.PlanID
	}
	return "", ""
}

func (u Upload) name(kind bucket.UploadKind) string {
	if p, ok := bucket.ParseUpload(u.Key); ok && p.Kind == kind {
		return p.Deployment
	}
	return ""
}

// RunID names the run of an upload: its time to the millisecond, YYYYMMDD-HHMMSSmmm (so
// ids sort as strings in upload order, S3 event times having milliseconds), and a digest of
// the exact object version, so a redelivered event names the same run.
func (u Upload) RunID() string {
	sum := sha256.Sum256([]byte(u.Bucket + "\x00" + u.Key + "\x00" + u.VersionID + "\x00" + u.Sequencer))
	t := u.Time.UTC()
	return fmt.Sprintf("%s%03d-%s", t.Format("20060102-150405"), t.Nanosecond()/int(time.Millisecond), hex.EncodeToString(sum[:4]))
}

func (d *Driver) runLogger(deployment, runID string) *slog.Logger {
	return d.log.With("deployment", deployment, "run", runID)
}

func (d *Driver) changesets(runID string, log *slog.Logger) *changeset.Client {
	budget, ok := d.budgets.Load(runID)
	if !ok {
		budget, _ = d.budgets.LoadOrStore(runID, d.cfg.Budget())
	}
	return &changeset.Client{CFN: d.cfn, S3: d.s3, Bucket: d.cfg.Bucket, Region: d.cfg.Region, Budget: budget.(*rate.Limiter), Logger: log}
}

// latestVersion returns the newest version id of the upload's key, or "" when the bucket
// keeps no versions.
func (d *Driver) latestVersion(ctx context.Context, u Upload) (string, error) {
	out, err := d.s3.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(u.Bucket), Prefix: aws.String(u.Key), MaxKeys: aws.Int32(20)})
	if err != nil {
		return "", fmt.Errorf("list versions of s3://%s/%s: %w", u.Bucket, u.Key, err)
	}
	for _, v := range out.Versions {
		if aws.ToString(v.Key) == u.Key && aws.ToBool(v.IsLatest) {
			return aws.ToString(v.VersionId), nil
		}
	}
	return "", nil
}

func (d *Driver) superseded(ctx context.Context, u Upload) (bool, error) {
	if u.VersionID == "" || u.VersionID == "null" {
		return false, nil
	}
	latest, err := d.latestVersion(ctx, u)
	if err != nil {
		return false, err
	}
	return latest != "" && latest != u.VersionID, nil
}

func owner(ctx context.Context) state.Owner {
	o := state.Owner{Function: lambdacontext.FunctionName}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		o.RequestID = lc.AwsRequestID
		if o.Function == "" {
			if i := strings.LastIndex(lc.InvokedFunctionArn, ":"); i >= 0 {
				o.Function = lc.InvokedFunctionArn[i+1:]
			}
		}
	}
	if o.Function == "" {
		o.Function = "cairn-deployer"
	}
	return o
}

// Start begins the run of an upload. It returns nil when the event is dealt with (a run
// started, a failed or superseded run recorded, or the upload re-queued to wait for the
// lock); an error asks for the event to be delivered again.
func (d *Driver) Start(ctx context.Context, u Upload) error {
	up, ok := bucket.ParseUpload(u.Key)
	if !ok || up.Kind == bucket.ApprovalUpload {
		d.log.Info("deploy: ignoring an object that is not a bundle upload", "bucket", u.Bucket, "key", u.Key,
			"want", bucket.DeploymentKey("NAME")+" or "+bucket.PlanUploadKey("NAME"))
		return nil
	}
	if err := bucket.CheckDeployment(up.Deployment); err != nil {
		d.log.Error("deploy: upload refused; nothing is recorded or changed", "key", u.Key, "err", err)
		return nil
	}
	deployment, mode := up.Deployment, run.ModeDeploy
	if up.Kind == bucket.PlanUpload {
		mode = run.ModePlan
	}
	if u.Bucket == "" {
		u.Bucket = d.cfg.Bucket
	}
	if u.Time.IsZero() {
		u.Time = d.clk.Now()
	}
	runID := u.RunID()
	log := d.runLogger(deployment, runID).With("version", u.VersionID)
	if _, _, err := d.loadDocument(ctx, deployment, runID); err == nil {
		log.Info("deploy: run already started for this upload; event redelivered")
		return nil
	} else if !errors.Is(err, errNoRun) {
		return err
	}
	now := d.clk.Now().UTC()
	doc := &Document{
		Run:    &run.Run{ID: runID, Deployment: deployment, Mode: mode, Status: run.Running, Stacks: map[string]*run.Stack{}, StartedAt: now, UpdatedAt: now},
		Bundle: Bundle{Bucket: u.Bucket, Key: u.Key, VersionID: u.VersionID, Sequencer: u.Sequencer},
	}
	if warn, err := d.store.VersioningWarning(ctx); err != nil {
		log.Warn("deploy: cannot read bucket versioning", "err", err)
	} else if warn != "" {
		doc.Warnings = append(doc.Warnings, warn)
	}
	if sup, err := d.superseded(ctx, u); err != nil {
		return err
	} else if sup {
		return d.recordSuperseded(ctx, doc, log)
	}
	lb, err := Download(ctx, d.s3, doc.Bundle, deployment)
	if err != nil {
		return err
	}
	doc.Bundle = lb.Bundle
	if len(lb.Errors) > 0 {
		log.Error("deploy: invalid bundle; nothing is changed", "errors", strings.Join(lb.Errors, "; "))
		doc.Errors = lb.Errors
		return d.failBeforeStart(ctx, doc, nil, fmt.Sprintf("invalid bundle: %d error(s); nothing was changed", len(lb.Errors)), log)
	}
	cfg := lb.Config
	doc.Namespace, doc.GraphKey = cfg.Namespace, cfg.PersistentGraphKey
	log = log.With("namespace", cfg.Namespace, "graph_key", cfg.PersistentGraphKey)

	lock, err := d.store.Acquire(ctx, cfg.Namespace, cfg.PersistentGraphKey, runID, owner(ctx))
	var held *state.ErrLocked
	switch {
	case errors.As(err, &held) && held.Holder.RunID == runID:
		// This run took the lock before, and its Start did not finish: carry on with it.
		lock, err = d.resumeLock(ctx, cfg.Namespace, cfg.PersistentGraphKey, runID, held.Holder.Token)
		if err != nil {
			return err
		}
	case errors.As(err, &held):
		log.Info("deploy: another run holds the lock; the upload waits", "holder_run", held.Holder.RunID, "retry_in", d.cfg.LockRetry.String())
		return d.requeue(ctx, u)
	case err != nil:
		return err
	}
	doc.LockToken = lock.Token
	// A newer upload may have arrived while this one waited for the lock.
	if sup, err := d.superseded(ctx, u); err != nil {
		d.release(ctx, lock, log)
		return err
	} else if sup {
		d.release(ctx, lock, log)
		return d.recordSuperseded(ctx, doc, log)
	}
	cs := d.changesets(runID, log)
	g, err := d.store.ReadOrRebuild(ctx, lock, d.cfn)
	if err != nil {
		d.release(ctx, lock, log)
		return err
	}
	if g.Rebuilt {
		doc.Warnings = append(doc.Warnings, fmt.Sprintf("the persistent graph %s was missing and was rebuilt from the tags of %d stack(s)", bucket.StateKey(cfg.Namespace, cfg.PersistentGraphKey), len(g.Stacks)))
		if err := d.store.Write(ctx, lock, g); err != nil {
			d.release(ctx, lock, log)
			return err
		}
	}
	live, err := cs.Live(ctx)
	if err != nil {
		d.release(ctx, lock, log)
		return err
	}
	doc.Destroy = lb.Destroy
	planCfg := cfg
	if doc.Destroy {
		planCfg = &config.Config{Namespace: cfg.Namespace, PersistentGraphKey: cfg.PersistentGraphKey, File: cfg.File}
	}
	importers, err := cs.Importers(ctx, exportsOfGone(planCfg, g, live))
	if err != nil {
		d.release(ctx, lock, log)
		return err
	}
	res, err := plan.Make(plan.Input{
		RunID: runID, Deployment: deployment, Mode: mode, Config: cfg, Graph: g, Live: live,
		Importers: importers, Bundle: doc.Bundle.Ref(), Now: now, Destroy: doc.Destroy,
	})
	if err != nil {
		doc.Errors = []string{err.Error()}
		return d.failBeforeStart(ctx, doc, lock, "no plan: "+err.Error(), log)
	}
	doc.Run = res.Run
	doc.Decisions, doc.Refusals = res.Decisions, res.Refusals
	if len(res.Refusals) > 0 {
		log.Warn("deploy: plan refused; nothing is changed", "refusals", strings.Join(res.Refusals, "; "))
		return d.failBeforeStart(ctx, doc, lock, fmt.Sprintf("refused: %d reason(s); nothing was changed", len(res.Refusals)), log)
	}
	doc.Lookups, doc.Protection, doc.LiveProtection, doc.Statuses = lookupsOf(cfg), map[string]bool{}, map[string]bool{}, map[string]string{}
	for _, s := range cfg.Stacks {
		doc.Protection[s.Name] = s.TerminationProtection
	}
	for name, s := range doc.Run.Stacks {
		if l, ok := live[s.StackName]; ok {
			doc.LiveProtection[name] = l.TerminationProtection
			doc.Statuses[name] = l.Status
		}
	}
	for _, dec := range res.Decisions {
		if dec.Action == plan.Drop {
			doc.Drop = append(doc.Drop, dec.Stack)
		}
	}
	if err := d.writeGraph(ctx, lock, doc, nil, false); err != nil {
		d.release(ctx, lock, log)
		return err
	}
	etag, err := d.saveDocument(ctx, doc, "")
	if errors.Is(err, errRaceLost) {
		// A duplicate delivery of this event started the run meanwhile, under this same
		// lock: it is that run's to release.
		log.Info("deploy: run already started by a duplicate of this event")
		return nil
	}
	if err != nil {
		d.release(ctx, lock, log)
		return err
	}
	if err := d.writeIndex(ctx, doc); err != nil {
		log.Warn("deploy: cannot index the open run; it advances by heartbeats only", "err", err)
	}
	log.Info("deploy: run started", "stacks", len(doc.Run.Stacks), "decisions", len(doc.Decisions))
	if err := d.heartbeat(ctx, deployment, runID); err != nil {
		// Without a heartbeat the run advances by stack events only; the first step below
		// may still finish it. Ask for the upload event again so the chain starts.
		log.Error("deploy: cannot enqueue the first heartbeat", "err", err)
	}
	if err := d.step(ctx, doc, etag, lock, log); err != nil {
		log.Warn("deploy: first step failed; the heartbeat retries it", "err", err)
	}
	return nil
}

// exportsOfGone lists the export names of the live stacks the plan may delete (in the
// graph, not in the config): only their imports are looked up.
func exportsOfGone(cfg *config.Config, g *state.Graph, live map[string]plan.Live) []string {
	var exports []string
	for _, name := range g.Names() {
		if cfg.Stack(name) != nil {
			continue
		}
		if l, ok := live[g.Stacks[name].StackName]; ok {
			exports = append(exports, slices.Sorted(maps.Values(l.Exports))...)
		}
	}
	return exports
}

func (d *Driver) requeue(ctx context.Context, u Upload) error {
	_, err := d.sqs.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(d.cfg.QueueURL), MessageBody: aws.String(u.Body), DelaySeconds: seconds(d.cfg.LockRetry),
	})
	if err != nil {
		return fmt.Errorf("re-queue upload s3://%s/%s to wait for the lock: %w", u.Bucket, u.Key, err)
	}
	return nil
}

func seconds(d time.Duration) int32 {
	s := int32((d + time.Second - 1) / time.Second)
	return min(max(s, 0), 900)
}

// recordSuperseded stores a run that deploys nothing because a newer upload exists.
func (d *Driver) recordSuperseded(ctx context.Context, doc *Document, log *slog.Logger) error {
	now := d.clk.Now().UTC()
	doc.Run.Status, doc.Run.FinishedAt = Superseded, now
	doc.Run.Reason = fmt.Sprintf("version %s of s3://%s/%s is no longer the newest: the newer upload is deployed instead", doc.Bundle.VersionID, doc.Bundle.Bucket, doc.Bundle.Key)
	log.Info("deploy: upload superseded by a newer version; nothing deployed")
	d.report(ctx, doc, log)
	if _, err := d.saveDocument(ctx, doc, ""); err != nil && !errors.Is(err, errRaceLost) {
		return err
	}
	return nil
}

// failBeforeStart records a run that fails before it changes anything, releasing lock
// (when held), and notifies.
func (d *Driver) failBeforeStart(ctx context.Context, doc *Document, lock *state.Lock, reason string, log *slog.Logger) error {
	now := d.clk.Now().UTC()
	doc.Run.Status, doc.Run.Reason, doc.Run.FinishedAt, doc.Run.UpdatedAt = run.RunFailed, reason, now, now
	for _, s := range doc.Run.Stacks {
		if !s.Phase.Terminal() {
			s.Phase, s.FinishedAt = run.Blocked, now
			if s.Reason == "" {
				s.Reason = "not started: the run was refused"
			}
		}
	}
	d.report(ctx, doc, log)
	if doc.Run.Mode == run.ModePlan {
		// The failed plan is recorded too, so whoever waits for it learns why.
		if err := d.finishPlan(ctx, doc, nil, log); err != nil {
			log.Warn("deploy: cannot record the failed plan", "err", err)
		}
	}
	_, err := d.saveDocument(ctx, doc, "")
	if lock != nil {
		d.release(ctx, lock, log)
	}
	if err != nil && !errors.Is(err, errRaceLost) {
		return err
	}
	d.notify(ctx, doc, log)
	return nil
}

func (d *Driver) release(ctx context.Context, lock *state.Lock, log *slog.Logger) {
	if err := d.store.Release(ctx, lock); err != nil {
		log.Warn("deploy: cannot release the lock; it frees itself when the lease ends", "err", err)
	}
}

// resumeLock re-attaches this trigger to the lock the run acquired earlier (state.Resume
// renews it and fences out any older invocation of the same run), and checks it is still
// the same acquisition by its token.
func (d *Driver) resumeLock(ctx context.Context, namespace, key, runID, token string) (*state.Lock, error) {
	l, err := d.store.Resume(ctx, namespace, key, runID, owner(ctx))
	if err != nil {
		return nil, err
	}
	if l.Token != token {
		return nil, fmt.Errorf("the lock on %s/%s was acquired again by run %s since this run started: %w", namespace, key, runID, state.ErrLockLost)
	}
	return l, nil
}

// report writes the Markdown report of a run that ends. It is written before the final
// run document, so whoever sees the run ended finds its report.
func (d *Driver) report(ctx context.Context, doc *Document, log *slog.Logger) {
	if err := d.writeReport(ctx, doc); err != nil {
		log.Warn("deploy: cannot write the report", "err", err)
	}
}

// notify publishes the summary of a run that ended.
func (d *Driver) notify(ctx context.Context, doc *Document, log *slog.Logger) {
	if d.sns == nil || d.cfg.Topic == "" {
		return
	}
	in := doc.Report()
	uri := bucket.URI(d.cfg.Bucket, bucket.RunReportKey(doc.Run.Deployment, doc.Run.ID))
	_, err := d.sns.Publish(ctx, &sns.PublishInput{
		TopicArn: aws.String(d.cfg.Topic), Subject: aws.String(report.Subject(in)), Message: aws.String(report.Summary(in, uri)),
	})
	if err != nil {
		log.Warn("deploy: cannot publish the run summary", "topic", d.cfg.Topic, "err", err)
	}
}

// decodeKey undoes the URL encoding of keys in S3 event notifications.
func decodeKey(k string) string {
	if s, err := url.QueryUnescape(k); err == nil {
		return s
	}
	return k
}
