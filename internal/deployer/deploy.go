// Package deployer is the deploy engine's driver: it turns an upload of a bundle into a run,
// and each later trigger (a stack status event or a heartbeat) into one step of that run.
//
// No step waits for CloudFormation. A step loads the run document, renews the lock,
// observes the stacks in flight, lets run.Advance decide, performs the actions (checking
// the lock before each change), writes the run document conditionally on its ETag and the
// persistent graph for every stack that finished (state.Record decides how), and returns.
// The heartbeat, a delayed SQS message that re-enqueues itself while the run is open,
// makes a run finish even when every stack event is lost, so a run may outlast any Lambda
// timeout.
//
// The driver is a few small parts on one shared base: starter begins runs (uploads and
// approvals), stepper advances them, runs and plans keep their documents, hygiene retires
// plans that can no longer apply, and graphs records finished steps in the persistent
// graph.
package deployer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/access"
	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/lambdajob"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/seal"
	"github.com/cairn-dev/cairn/internal/sealkey"
	"github.com/cairn-dev/cairn/internal/statestore"
	"github.com/cairn-dev/cairn/internal/target"
)

// DefaultHeartbeat is how long a heartbeat waits in the queue before it advances its run.
const DefaultHeartbeat = 15 * time.Second

// DefaultStallAfter is how long a run's heartbeat may be late before the run counts as
// stalled (its heartbeat lost) and the next invocation of any kind resumes it: four
// heartbeats of the default 15 s, so a stalled run goes on within about a minute.
const DefaultStallAfter = time.Minute

// S3API is the part of *s3.Client the driver uses.
type S3API interface {
	statestore.S3API
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	// CopyObject refreshes an artifact the assets lifecycle would otherwise expire.
	CopyObject(ctx context.Context, in *s3.CopyObjectInput, optFns ...func(*s3.Options)) (*s3.CopyObjectOutput, error)
	// DeleteObjects removes a run's entries of the open-run index by stack.
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
}

// SQSAPI sends heartbeats and re-sends uploads that wait for the lock.
type SQSAPI = lambdajob.SQSAPI

// SNSAPI publishes run summaries.
type SNSAPI interface {
	Publish(ctx context.Context, in *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// CFNAPI is the CloudFormation API the driver calls: the change set client's (with
// ListChangeSets, so plan hygiene never deletes a stack that holds a change set it did not
// make).
type CFNAPI = changeset.API

// Config configures a Driver.
type Config struct {
	// Bucket holds uploads, state, locks, runs and templates.
	Bucket string
	// QueueURL is the deploy queue: heartbeats and uploads waiting for the lock go there.
	QueueURL string
	// Topic is the notifications topic ARN ("" publishes nothing).
	Topic string
	// Region is cairn's own region (home): stacks without a region of their own live here,
	// and large templates' URLs point here.
	Region string
	// Namespaces are the namespaces the deployer may manage (CAIRN_NAMESPACES; empty:
	// every namespace). A bundle or plan naming another namespace, or a stack named
	// outside them, is refused before any CloudFormation call.
	Namespaces config.Namespaces
	// SSMPaths are the Parameter Store paths each namespace's ${ssm} lookups may read
	// (CAIRN_SSM_PATHS; nil: every name, the role's policy decides alone). A bundle
	// reading outside its namespace's is refused before any AWS call.
	SSMPaths config.SSMPaths
	// SealKeyID is the KMS HMAC key (CAIRN_SEAL_KEY_ID, made by cairn's stack and usable
	// by the deployer's role only) the seals of secrets are keyed with (package seal).
	// Empty: secrets are sealed without a key, as by cairn before keyed seals, so anyone
	// who reads the bucket can confirm a guess of one; the deployer Lambda refuses to
	// start so (ConfigFromEnv), and every run says so in a warning.
	SealKeyID string
	// ServiceRole is the CloudFormation service role (cairn:cfnServiceRole) of stacks in
	// cairn's own account that name none (service_role) themselves; "" none.
	ServiceRole string
	// PolicyFunction is the policy function the deployer invokes to judge plans and
	// pushes (CAIRN_POLICY_FUNCTION; "" none).
	PolicyFunction string
	// Heartbeat is the delay of heartbeat messages (default DefaultHeartbeat; SQS allows
	// at most 15 minutes).
	Heartbeat time.Duration
	// LockRetry is how long an upload waits before it tries the lock again (default:
	// Heartbeat).
	LockRetry time.Duration
	// StallAfter is how long an open run's heartbeat chain may go without a beat before
	// any invocation of the deployer resumes it with a new one (default DefaultStallAfter,
	// at least twice Heartbeat).
	StallAfter time.Duration
	// Lease is the lock's lease (default statestore.DefaultLease).
	Lease time.Duration
	// StepClaim bounds how long a step keeps the run's other invocations waiting
	// (default statestore.DefaultStepClaim).
	StepClaim time.Duration
	// Budget returns a run's CloudFormation API budget (default awsclient.DefaultBudget),
	// paced on Clock.
	Budget func() *rate.Limiter
	// PlanTTL is how long an unapplied plan stays approvable (default plan.DefaultTTL).
	PlanTTL time.Duration
	// SettleBudget is how long a run waits for busy stacks to settle before it decides
	// (default DefaultSettleBudget).
	SettleBudget time.Duration
	// Run tunes the state machine (retries, phase timeout).
	Run    run.Options
	Clock  clock.Clock
	Logger *slog.Logger
}

// Clients are the AWS APIs the driver calls.
type Clients struct {
	S3  S3API
	CFN CFNAPI
	SQS SQSAPI
	SNS SNSAPI
	// SSM reads the SSM parameters of ${ssm} lookups (nil: a config with some fails).
	SSM SSMAPI
	// Reach reaches the stacks of other accounts and regions (nil: stacks at home only).
	Reach *access.Reacher
	// KMS derives the seal key (required with Config.SealKeyID).
	KMS sealkey.MACAPI
	// Judge judges plans and pushes with the policies (the policy function); nil while
	// policies exist fails every plan and push closed.
	Judge Judger
}

// base is what every part of the driver shares.
type base struct {
	cfg   Config
	s3    S3API
	cfn   CFNAPI
	queue lambdajob.Queue // the deploy queue: heartbeats, checks, uploads waiting for the lock
	sns   SNSAPI
	ssm   SSMAPI
	store *statestore.Store
	clk   clock.Clock
	log   *slog.Logger

	kms     sealkey.MACAPI
	sealMu  sync.Mutex
	sealKey seal.Key // derived once per process (key)

	judger Judger
	reach  *access.Reacher
	places *sync.Map // run id → *access.Places[changeset.API]: a run's clients and budgets span the steps a warm process makes
	// clients are the S3 clients of the targets' assets buckets, by run id and target.
	clients *sync.Map
	// bundles keeps what the process loaded, so a step loads nothing it already knows.
	bundles *bundles
	// resumeStart makes the start of a run that waited for busy stacks again (the
	// starter's resume), when a trigger of that run comes.
	resumeStart func(ctx context.Context, doc *rundoc.Document, etag string, lock *statestore.Lock, log *slog.Logger) error
}

// Driver runs deployments: Start and Approve begin runs, Step advances them, and Handle
// routes the deployer's events to them.
type Driver struct {
	*base
	runs  runs
	start starter
	step  stepper
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
	if cfg.Heartbeat > lambdajob.MaxDelay {
		return nil, fmt.Errorf("deploy: heartbeat %s is longer than the 15 minutes SQS can delay a message", cfg.Heartbeat)
	}
	if cfg.LockRetry <= 0 {
		cfg.LockRetry = cfg.Heartbeat
	}
	if cfg.StallAfter <= 0 {
		cfg.StallAfter = max(DefaultStallAfter, 4*cfg.Heartbeat)
	}
	if cfg.StallAfter < 2*cfg.Heartbeat {
		return nil, fmt.Errorf("deploy: stall after %s is less than two heartbeats (%s): every run would be found stalled", cfg.StallAfter, cfg.Heartbeat)
	}
	if cfg.PlanTTL <= 0 {
		cfg.PlanTTL = plan.DefaultTTL
	}
	if cfg.SettleBudget <= 0 {
		cfg.SettleBudget = DefaultSettleBudget
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
	if cfg.SealKeyID != "" && c.KMS == nil {
		return nil, errors.New("deploy: a seal key is configured (CAIRN_SEAL_KEY_ID) but no KMS client")
	}
	if c.Reach != nil && c.Reach.Clock == nil {
		c.Reach.Clock = cfg.Clock
	}
	// Every request of a run to cairn's bucket passes one gate (objects.Gated), which
	// allows only the keys of the run's deployment and graph (bucket.Rules).
	gated := objects.Gate(c.S3, cfg.Bucket)
	b := &base{cfg: cfg, s3: gated, cfn: c.CFN, queue: lambdajob.Queue{SQS: c.SQS, URL: cfg.QueueURL}, sns: c.SNS, ssm: c.SSM, kms: c.KMS, clk: cfg.Clock, log: cfg.Logger, judger: c.Judge,
		reach: c.Reach, places: &sync.Map{}, clients: &sync.Map{}, bundles: &bundles{},
		store: &statestore.Store{S3: gated, Bucket: cfg.Bucket, Clock: cfg.Clock, Logger: cfg.Logger, Lease: cfg.Lease, StepClaim: cfg.StepClaim}}
	rs, ps := runs{b}, plans{b}
	h := hygiene{b, ps}
	st := stepper{base: b, runs: rs, plans: ps, hygiene: h, graphs: graphs{b}, pol: policies{b}}
	start := starter{stepper: st}
	b.resumeStart = start.resume
	return &Driver{base: b, runs: rs, step: st, start: start}, nil
}

// runScope is ctx carrying the scope of run runID of deployment: what its requests to
// cairn's bucket may touch (bucket.Rules).
func runScope(ctx context.Context, deployment, runID string) context.Context {
	s := bucket.ForDeployment(deployment)
	s.SetRun(runID)
	return bucket.WithScope(ctx, s)
}

// hold lets the run of ctx read and write the persistent graph namespace/key, and its
// lock: the graph its config names (state checks the graph's owner in the document).
func hold(ctx context.Context, namespace, key string) {
	if s := bucket.ScopeOf(ctx); s != nil {
		s.Hold(namespace, key)
	}
}

// Upload is an S3 ObjectCreated event of an upload.
type Upload struct {
	Bucket, Key, VersionID, Sequencer string
	Time                              time.Time
	// Body is the SQS message body that carried the event, re-sent while the lock is held.
	Body string
}

// RunID names the run of an upload: its time to the millisecond, YYYYMMDD-HHMMSSmmm (so
// ids sort as strings in upload order, S3 event times having milliseconds), and a digest of
// the exact object version, so a redelivered event names the same run.
func (u Upload) RunID() string {
	sum := sha256.Sum256([]byte(u.Bucket + "\x00" + u.Key + "\x00" + u.VersionID + "\x00" + u.Sequencer))
	t := u.Time.UTC()
	return fmt.Sprintf("%s%03d-%s", t.Format("20060102-150405"), t.Nanosecond()/int(time.Millisecond), hex.EncodeToString(sum[:4]))
}

// loadOptions are how the deployer loads the config of deployment's bundles: Lambda
// runtimes are judged on its clock's date.
func (b *base) loadOptions(deployment string) config.LoadOptions {
	return config.LoadOptions{Deployment: deployment, Namespaces: b.cfg.Namespaces, SSMPaths: b.cfg.SSMPaths, Bucket: b.cfg.Bucket,
		Today: b.clk.Now().UTC().Format(time.DateOnly)}
}

func (b *base) runLogger(deployment, runID string) *slog.Logger {
	return b.log.With("deployment", deployment, "run", runID)
}

func (b *base) changesets(runID string, log *slog.Logger) *changeset.Client {
	return &changeset.Client{CFN: b.cfn, S3: b.s3, Bucket: b.cfg.Bucket, Region: b.cfg.Region, Budget: b.placesOf(runID).Budget(target.Target{}),
		Reach: func(ctx context.Context, t target.Spec) (changeset.API, *rate.Limiter, error) {
			return b.at(ctx, runID, t)
		},
		Assets: func(ctx context.Context, t target.Spec) (*changeset.Assets, error) {
			return b.assets(ctx, runID, t)
		}, Clock: b.clk, Logger: log}
}

// key is the seal key (package seal), derived from the KMS key SealKeyID on first use
// and then held for the life of the process; seal.Unkeyed without SealKeyID. An error is
// KMS's, naming the key.
func (b *base) key(ctx context.Context) (seal.Key, error) {
	if b.cfg.SealKeyID == "" {
		return seal.Unkeyed, nil
	}
	b.sealMu.Lock()
	defer b.sealMu.Unlock()
	if b.sealKey.Keyed() {
		return b.sealKey, nil
	}
	k, err := sealkey.FromKMS(ctx, b.kms, b.cfg.SealKeyID)
	if err != nil {
		return seal.Unkeyed, err
	}
	b.sealKey = k
	return k, nil
}

// unkeyedWarning is the warning of every run of a deployer without a seal key.
const unkeyedWarning = "secrets are sealed without a key (CAIRN_SEAL_KEY_ID is not set): anyone who can read cairn's bucket can test a guessed NoEcho value or SecureString against its seal; deploy cairn's stack again to get the seal key"

// placesOf is run runID's way into its accounts and regions: its clients and API budgets,
// kept across the steps a warm process makes until the run ends (forget).
func (b *base) placesOf(runID string) *access.Places[changeset.API] {
	if p, ok := b.places.Load(runID); ok {
		return p.(*access.Places[changeset.API])
	}
	p, _ := b.places.LoadOrStore(runID, access.NewPlaces(access.PlacesConfig[changeset.API]{
		Session: runID, Reacher: b.reach, Home: b.cfn, Region: b.cfg.Region, Budget: b.cfg.Budget,
		Dial: func(c aws.Config) changeset.API { return cloudformation.NewFromConfig(c) },
	}))
	return p.(*access.Places[changeset.API])
}

// forget drops what a run that ended kept: its budgets, clients and credentials.
func (b *base) forget(runID string) {
	if p, ok := b.places.LoadAndDelete(runID); ok {
		p.(*access.Places[changeset.API]).Forget()
	}
	b.clients.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), runID+"@") {
			b.clients.Delete(k)
		}
		return true
	})
}

func (b *base) release(ctx context.Context, lock *statestore.Lock, log *slog.Logger) {
	if err := b.store.Release(ctx, lock); err != nil {
		log.Warn("deploy: cannot release the lock; it frees itself when the lease ends", "err", err)
	}
}

// resumeLock re-attaches this trigger to the lock the run acquired earlier (state.Resume
// renews it and fences out any older invocation of the same run), and checks it is still
// the same acquisition by its token.
func (b *base) resumeLock(ctx context.Context, namespace, key, runID, token string) (*statestore.Lock, error) {
	hold(ctx, namespace, key)
	l, err := b.resumeAfterStep(ctx, namespace, key, runID)
	if err != nil {
		return nil, err
	}
	if l.Token != token {
		return nil, fmt.Errorf("the lock on %s/%s was acquired again by run %s since this run started: %w", namespace, key, runID, statestore.ErrLockLost)
	}
	return l, nil
}

// stepPoll is how often an invocation waiting for another's step of the same run reads
// the lock again: a step takes from a fraction of a second to a few.
const stepPoll = 200 * time.Millisecond

// resumeAfterStep resumes the lock of run runID once no other invocation of the run is in a
// step: two invocations of one run (a stack event and a heartbeat at once, as Lambda runs
// up to the event source mapping's concurrency) step it one after the other, each with
// its own trigger, instead of taking the lock from each other's steps, which made every
// step but the last end unsaved, its actions wasted, its trigger dropped (with five at
// once, a livelock). It gives up, with the statestore.ErrStepping error, when waiting
// longer would reach the invocation's deadline.
func (b *base) resumeAfterStep(ctx context.Context, namespace, key, runID string) (*statestore.Lock, error) {
	for {
		l, err := b.store.Resume(ctx, namespace, key, runID, owner(ctx))
		var busy *statestore.SteppingError
		if !errors.As(err, &busy) {
			return l, err
		}
		wait := min(max(busy.Until.Sub(b.clk.Now()), 0), stepPoll)
		b.log.Debug("deploy: waiting for another invocation's step of the run", "run", runID, "holder", busy.Holder.RequestID)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait+10*time.Second {
			return nil, fmt.Errorf("run %s: %w", runID, err)
		}
		select {
		case <-b.clk.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// endStep lets another invocation of the run step now (statestore.Store.EndStep).
func (b *base) endStep(ctx context.Context, l *statestore.Lock, log *slog.Logger) {
	if l == nil {
		return
	}
	if err := b.store.EndStep(ctx, l); err != nil {
		log.Debug("deploy: the step's claim on the lock was not cleared; it runs out by itself", "err", err)
	}
}

// notify publishes the summary of a run that ended.
func (b *base) notify(ctx context.Context, doc *rundoc.Document, log *slog.Logger) {
	if b.sns == nil || b.cfg.Topic == "" {
		return
	}
	in := doc.Report()
	uri := bucket.URI(b.cfg.Bucket, doc.ReportKey())
	_, err := b.sns.Publish(ctx, &sns.PublishInput{
		TopicArn: aws.String(b.cfg.Topic), Subject: aws.String(report.Subject(in)), Message: aws.String(report.Summary(in, uri)),
	})
	if err != nil {
		log.Warn("deploy: cannot publish the run summary", "topic", b.cfg.Topic, "err", err)
	}
}

func owner(ctx context.Context) statestore.Owner {
	o := statestore.Owner{Function: lambdacontext.FunctionName}
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
