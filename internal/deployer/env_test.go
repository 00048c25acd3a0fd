package deployer_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/kmslocal"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/deployer"
)

var epoch = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

const (
	bucket    = "cairn-state"
	queueName = "cairn-deploy"
)

// world is the emulator set up as `make deploy` sets up AWS: the versioned bucket with
// upload notifications to the deploy queue, the stack status event rule, the
// notifications topic and the deployer function behind an SQS event source mapping. Its
// virtual clock runs about five hundred times faster than the wall clock while anything
// works, and skips to the next thing due while the emulator is idle (clock.Fake.Pace).
type world struct {
	t     testing.TB
	em    *awslocal.Emulator
	cfn   *cfnlocal.Service
	clk   *clock.Fake
	s3    *s3.Client
	cfnc  *cloudformation.Client
	sqs   *sqs.Client
	queue string
	topic string
	logs  *syncBuffer
	// sealKeyID is the deployer's seal key (CAIRN_SEAL_KEY_ID).
	sealKeyID string
	// deployer is the deployer function's driver; install replaces it (a new release
	// deployed), upgrade installs one with the seal key (a world made Unkeyed: cairn
	// upgraded from before keyed seals).
	deployer atomic.Pointer[deployer.Driver]
	install  func(deployer.Config)
	upgrade  func()
	// close stops the world's clock and its emulator (at the latest when the test ends).
	close func()
	// instance returns another instance of the deployer function (as Lambda runs
	// several), whose AWS calls calls counts, for a test to invoke directly.
	instance func(calls *callCounter) *deployer.Driver
}

type worldOptions struct {
	// NoStackEvents leaves out the EventBridge rule: runs advance by heartbeats only.
	NoStackEvents bool
	// LambdaTimeout is the deployer's timeout (default one minute).
	LambdaTimeout time.Duration
	// ResourceDelay is how long each emulated resource operation takes (virtual time).
	ResourceDelay time.Duration
	// Lease is the lock's lease (default state.DefaultLease).
	Lease time.Duration
	// PlanTTL is how long a plan stays approvable (default plan.DefaultTTL).
	PlanTTL time.Duration
	// Namespaces is the deployer's CAIRN_NAMESPACES (default: every namespace).
	Namespaces string
	// SSMPaths is the deployer's CAIRN_SSM_PATHS (default: every name).
	SSMPaths string
	// Heartbeat is the deployer's heartbeat (default deployer.DefaultHeartbeat).
	Heartbeat time.Duration
	// FastRetries makes the SDK's retries back off a millisecond (of wall time), for runs
	// that meet throttling on purpose.
	FastRetries bool
	// DenySSM makes SSM answer the deployer's reads of parameters under this path with
	// AccessDeniedException, as IAM does for names outside cairn:ssmPaths (the emulator
	// has no IAM).
	DenySSM string
	// ChangeSetDelay is how long the emulator takes to create a change set (default 2s).
	ChangeSetDelay time.Duration
	// ChangeSetDelayMax and ResourceDelayMax, when above ChangeSetDelay and
	// ResourceDelay, make each delay a draw between the two from DelaySeed, as `cairn
	// local up --change-set-delay 1s..4s --delay-seed 7` does.
	ChangeSetDelayMax, ResourceDelayMax time.Duration
	DelaySeed                           uint64
	// Speed is how much virtual time passes per millisecond of wall time (default 500ms);
	// a millisecond runs the world on the wall clock's pace. While the emulator is idle,
	// the clock skips to the next thing due (clock.Fake.Pace) unless NoSkip.
	Speed  time.Duration
	NoSkip bool
	// Unkeyed runs a deployer without a seal key, which seals as cairn did before keyed
	// seals (see world.upgrade).
	Unkeyed bool
	// Calls, when set, counts the deployer's own AWS calls.
	Calls *callCounter
	// SettleBudget is how long a run waits for busy stacks (default
	// deployer.DefaultSettleBudget).
	SettleBudget time.Duration
}

// callCounter counts AWS calls by "service.Operation" (e.g. "S3.GetObject"), and S3 reads
// and writes also by "S3.Operation KEY".
type callCounter struct {
	mu sync.Mutex
	n  map[string]int
}

// middleware is the SDK option that counts every call of the clients built with it.
func (c *callCounter) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("CallCounter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c.mu.Lock()
			if c.n == nil {
				c.n = map[string]int{}
			}
			op := awsmiddleware.GetServiceID(ctx) + "." + awsmiddleware.GetOperationName(ctx)
			c.n[op]++
			switch p := in.Parameters.(type) { // by key too, e.g. "S3.GetObject deployments/shop.zip"
			case *s3.GetObjectInput:
				c.n[op+" "+aws.ToString(p.Key)]++
				if p.IfNoneMatch != nil { // a read again that may answer "not modified"
					c.n[op+" if-changed "+aws.ToString(p.Key)]++
				}
			case *s3.HeadObjectInput:
				c.n[op+" "+aws.ToString(p.Key)]++
			case *s3.PutObjectInput:
				c.n[op+" "+aws.ToString(p.Key)]++
			case *s3.DeleteObjectInput:
				c.n[op+" "+aws.ToString(p.Key)]++
			case *s3.CopyObjectInput:
				c.n[op+" "+aws.ToString(p.Key)]++
			}
			c.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// take returns the counts so far and starts again from zero.
func (c *callCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = nil
	return n
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newWorld(t testing.TB, o worldOptions) *world {
	t.Helper()
	// Each world is its own emulator on its own virtual clock: the end-to-end tests spend
	// their time waiting on that clock, so they run side by side.
	if pt, ok := t.(*testing.T); ok {
		pt.Parallel()
	}
	ctx := context.Background()
	w := &world{t: t, clk: clock.NewFake(epoch), logs: &syncBuffer{}}
	logger := slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if o.ResourceDelay == 0 {
		o.ResourceDelay = 5 * time.Second
	}
	if o.ChangeSetDelay == 0 {
		o.ChangeSetDelay = 2 * time.Second
	}
	if o.Speed == 0 {
		o.Speed = 500 * time.Millisecond
	}
	em, err := awslocal.New(awslocal.Options{Clock: w.clk, Logger: logger,
		CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: o.ResourceDelay, ChangeSetDelay: o.ChangeSetDelay,
			ResourceDelayMax: o.ResourceDelayMax, ChangeSetDelayMax: o.ChangeSetDelayMax, DelaySeed: o.DelaySeed}})
	if err != nil {
		t.Fatal(err)
	}
	if err := em.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	w.em, w.cfn = em, em.CloudFormation()
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() { // the virtual clock: o.Speed per millisecond, and idle stretches skipped
		defer close(ticked)
		var idle func() bool
		if !o.NoSkip {
			idle = em.Idle
		}
		w.clk.Pace(stop, o.Speed, idle)
	}()
	var closing sync.Once
	w.close = func() {
		closing.Do(func() {
			close(stop)
			<-ticked
			em.Close()
		})
	}
	t.Cleanup(func() {
		w.close()
		if t.Failed() {
			t.Logf("emulator and deployer logs:\n%s", tail(w.logs.String(), 400))
		}
	})
	cfg, err := em.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The retries the deployer gets from awsclient.Load in AWS.
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(r *retry.StandardOptions) {
			r.MaxAttempts = awsclient.MaxAttempts
			if o.FastRetries {
				r.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
			}
		})
	}
	w.s3, w.cfnc, w.sqs = awsclient.S3(cfg), cloudformation.NewFromConfig(cfg), sqs.NewFromConfig(cfg)

	must(t, func() error {
		_, err := w.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		return err
	})
	must(t, func() error {
		_, err := w.s3.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
			VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}})
		return err
	})
	if _, err := em.SQS().CreateQueue(queueName+"-dlq", nil); err != nil {
		t.Fatal(err)
	}
	w.queue, err = em.SQS().CreateQueue(queueName, map[string]string{
		"VisibilityTimeout": "120",
		"RedrivePolicy":     `{"deadLetterTargetArn":"` + em.SQS().QueueARN(queueName+"-dlq") + `","maxReceiveCount":"10"}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	queueARN := em.SQS().QueueARN(queueName)
	w.topic, err = em.SNS().CreateTopic("cairn-notifications", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	must(t, func() error {
		_, err := w.s3.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
			Bucket: aws.String(bucket),
			NotificationConfiguration: &s3types.NotificationConfiguration{QueueConfigurations: []s3types.QueueConfiguration{{
				QueueArn: aws.String(queueARN), Events: []s3types.Event{"s3:ObjectCreated:*"},
				Filter: &s3types.NotificationConfigurationFilter{Key: &s3types.S3KeyFilter{FilterRules: []s3types.FilterRule{
					{Name: s3types.FilterRuleNamePrefix, Value: aws.String("deployments/")}}}},
			}}},
		})
		return err
	})
	if !o.NoStackEvents {
		if err := em.PutRule("cairn-stack-events", awslocal.EventPattern{Source: []string{"aws.cloudformation"}, DetailType: []string{deployer.StackStatusChange}}, queueARN); err != nil {
			t.Fatal(err)
		}
	}
	if o.Lease == 0 {
		// The virtual clock runs a thousand times faster than the SDK's backoff and a
		// loaded machine: a real second is a quarter of an hour.
		o.Lease = 12 * time.Hour
	}
	allowed, err := config.ParseNamespaces(o.Namespaces)
	if err != nil {
		t.Fatal(err)
	}
	ssmPaths, err := config.ParseSSMPaths(o.SSMPaths)
	if err != nil {
		t.Fatal(err)
	}
	deployerCfg := cfg.Copy()
	if o.DenySSM != "" {
		deployerCfg.APIOptions = append(deployerCfg.APIOptions, denySSM(o.DenySSM))
	}
	if o.Calls != nil {
		deployerCfg.APIOptions = append(deployerCfg.APIOptions, o.Calls.middleware)
	}
	// The seal key, as cairn's stack makes it: an HMAC key of the emulator's KMS.
	sealKey, err := em.KMS().Create(kmslocal.CreateInput{KeySpec: "HMAC_256", KeyUsage: "GENERATE_VERIFY_MAC"})
	if err != nil {
		t.Fatal(err)
	}
	w.sealKeyID = sealKey.ARN
	dcfg := deployer.Config{
		Bucket: bucket, QueueURL: w.queue, Topic: w.topic, Clock: w.clk, Logger: logger, Lease: o.Lease, PlanTTL: o.PlanTTL,
		Namespaces: allowed, Heartbeat: o.Heartbeat, SSMPaths: ssmPaths, SealKeyID: sealKey.ARN, SettleBudget: o.SettleBudget,
		// A step's claim, on the same virtual clock as the lease: an hour is 7 s of wall
		// time at the default speed, longer than a slow step on a loaded machine (a claim
		// that runs out mid-step lets another invocation take the run over).
		StepClaim: time.Hour,
	}
	if o.Unkeyed {
		dcfg.SealKeyID = ""
	}
	w.install = func(c deployer.Config) {
		d, err := deployer.NewFromAWS(deployerCfg, c)
		if err != nil {
			t.Fatal(err)
		}
		w.deployer.Store(d)
	}
	w.install(dcfg)
	w.instance = func(calls *callCounter) *deployer.Driver {
		cfg := deployerCfg.Copy()
		cfg.APIOptions = append(cfg.APIOptions, calls.middleware)
		d, err := deployer.NewFromAWS(cfg, dcfg)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	w.upgrade = func() {
		c := dcfg
		c.SealKeyID = sealKey.ARN
		w.install(c)
	}
	timeout := o.LambdaTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	handle := func(ctx context.Context, ev events.SQSEvent) (out events.SQSEventResponse, err error) {
		// Labelled, so a CPU profile tells the deployer's time from the emulator's
		// (BenchmarkRunCPU).
		pprof.Do(ctx, deployerLabel, func(ctx context.Context) { out, err = w.deployer.Load().Handle(ctx, ev) })
		return out, err
	}
	if err := em.RegisterFunction("deployer", handle, awslocal.WithTimeout(timeout)); err != nil {
		t.Fatal(err)
	}
	if err := em.AddEventSourceMapping(queueName, "deployer", awslocal.ESMOptions{BatchSize: 10, ReportBatchItemFailures: true, MaxConcurrency: 5}); err != nil {
		t.Fatal(err)
	}
	return w
}

// denySSM refuses GetParameters of names under path before the request is sent, with
// the error IAM gives a role whose policy does not allow them.
func denySSM(path string) func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("cairn-test-deny-ssm", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if p, ok := in.Parameters.(*ssm.GetParametersInput); ok {
				for _, n := range p.Names {
					if strings.HasPrefix(n, path) {
						return middleware.InitializeOutput{}, middleware.Metadata{}, &smithy.GenericAPIError{Code: "AccessDeniedException",
							Message: "User: arn:aws:sts::000000000000:assumed-role/cairn-DeployerRole/cairn-deployer is not authorized to perform: ssm:GetParameters on resource: arn:aws:ssm:us-east-1:000000000000:parameter" + n + " because no identity-based policy allows the ssm:GetParameters action"}
					}
				}
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
	}
}

func must(t testing.TB, f func() error) {
	t.Helper()
	if err := f(); err != nil {
		t.Fatal(err)
	}
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// copyBundle copies a bundle directory from testdata into a temporary directory, so a test
// can change it.
func copyBundle(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// edit replaces old with new in a bundle file; the text must be there.
func edit(t testing.TB, dir, file, old, new string) {
	t.Helper()
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s does not contain %q", file, old)
	}
	if err := os.WriteFile(p, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}
