// Package awslocal is cairn's embedded AWS emulator: S3, SQS, SNS, SSM Parameter Store,
// Secrets Manager, CloudWatch alarms (and the CloudFormation emulator, which plugs in through
// RegisterService and Mount) on one loopback port, routed by protocol as LocalStack does on
// 4566, with the Lambda wiring — handlers, SQS event source mappings, schedules and an event
// bus — run in process with the exact event JSON AWS sends. A control endpoint under
// /_local/ counts calls and injects faults.
//
// It exists so that cairn runs end to end, and is tested, through the real aws-sdk-go-v2
// clients with no AWS account. It is a test double of AWS, never a production path.
// Emulators share no global state, so a test may run several.
package awslocal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/cloudwatchlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/kmslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/s3local"
	"github.com/cairn-dev/cairn/internal/awslocal/secretslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/snslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/sqslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/ssmlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/stslocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

// Options configures an Emulator.
type Options struct {
	// Dir keeps state across restarts (one sub-folder per service); "" keeps it in memory.
	Dir string
	// Region defaults to us-east-1, AccountID to 000000000000.
	Region, AccountID string
	// Clock drives object times, SQS delays and visibility, schedules and fault latency
	// (default clock.Real); tests pass a *clock.Fake.
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// CloudFormation tunes the emulated CloudFormation's timings (resource and change set
	// durations, custom resource timeout); zero values take cfnlocal's defaults.
	CloudFormation CloudFormationTimings
	// FaultSeed seeds the random draws of fault injection so runs are reproducible
	// (default 1); POST /_local/faults may reseed.
	FaultSeed uint64
	// HoldUntilReady makes service requests wait until MarkReady is called, so a client
	// that starts as soon as the port answers never sees a half-provisioned account.
	// Requests made with SetupConfig, and the control endpoints under /_local/, are
	// served at once. Without it the emulator is ready when it starts.
	HoldUntilReady bool
}

// CloudFormationTimings are the durations the emulated CloudFormation simulates (see
// cfnlocal.Options): with a Max above its delay, each operation's is drawn between the two
// from DelaySeed.
type CloudFormationTimings struct {
	ResourceDelay, ChangeSetDelay, CustomResourceTimeout time.Duration
	ResourceDelayMax, ChangeSetDelayMax                  time.Duration
	DelaySeed                                            uint64
}

// Emulator serves the emulated AWS services.
type Emulator struct {
	opts Options
	log  *slog.Logger
	// s3 and sts are global services; every other one is served per account and region,
	// by the places.
	s3   *s3local.Service
	sts  *stslocal.Service
	home *Place // Options.AccountID in Options.Region

	placeMu sync.Mutex // serialises making places

	mu       sync.Mutex
	url      string
	places   map[string]*Place       // by placeKey
	roles    map[string]*iamRole     // IAM roles made by stacks, by account/name
	services map[string]http.Handler // global services and RegisterService's, by SigV4 signing name
	mounts   map[string]http.Handler // by path prefix
	calls    map[string]int
	callsAt  map[string]map[string]int // calls by placeKey
	faults   []Fault
	injected map[string]int // throttles injected per fault (faultKey), for Fault.Times
	rng      *rand.Rand
	funcs    map[string]*function
	// funcsChanged is closed and replaced whenever a function or its handler changes.
	funcsChanged chan struct{}
	mappings     map[string]*mapping   // by event source mapping id
	schedules    map[string]*scheduled // EventBridge Scheduler schedules, by group/name
	server       *http.Server

	ready      chan struct{} // closed when ready
	readyOnce  sync.Once
	setupToken string // the SetupConfig header value that passes the readiness gate
	waiting    atomic.Int64
	// working counts the requests being served and the functions being invoked (Idle).
	working atomic.Int64

	ctx    context.Context // ends background pollers and schedules
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New builds an Emulator; Start serves it on a port, Handler serves it in a test server.
func New(opts Options) (*Emulator, error) {
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if opts.AccountID == "" {
		opts.AccountID = "000000000000"
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.FaultSeed == 0 {
		opts.FaultSeed = 1
	}
	e := &Emulator{
		opts:         opts,
		log:          opts.Logger,
		services:     map[string]http.Handler{},
		mounts:       map[string]http.Handler{},
		calls:        map[string]int{},
		callsAt:      map[string]map[string]int{},
		places:       map[string]*Place{},
		roles:        map[string]*iamRole{},
		injected:     map[string]int{},
		rng:          rand.New(rand.NewPCG(opts.FaultSeed, opts.FaultSeed)),
		funcs:        map[string]*function{},
		funcsChanged: make(chan struct{}),
		mappings:     map[string]*mapping{},
		schedules:    map[string]*scheduled{},
		ready:        make(chan struct{}),
		setupToken:   newID(),
	}
	if !opts.HoldUntilReady {
		e.MarkReady()
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	dir := func(name string) string {
		if opts.Dir == "" {
			return ""
		}
		return filepath.Join(opts.Dir, name)
	}
	var err error
	e.sts, err = stslocal.New(stslocal.Options{Clock: opts.Clock, Dir: dir("sts"), Role: e.role, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	e.s3, err = s3local.New(s3local.Options{
		Region: opts.Region, Dir: dir("s3"), Clock: opts.Clock, Logger: opts.Logger,
		Notify:      func(ctx context.Context, queueARN, body string) error { return e.send(ctx, queueARN, body, nil) },
		QueueExists: e.queueExists, TopicExists: e.topicExists, FunctionExists: e.functionExists, Invoke: e.notifyFunction,
		Publish: func(ctx context.Context, topicARN, subject, message string) error {
			_, err := e.publish(ctx, topicARN, subject, message)
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	// The home account and region keep their state directly under Dir, as before there
	// were others; every other place is under Dir/accounts/ACCOUNT/REGION.
	if e.home, err = newPlace(e, opts.AccountID, opts.Region, opts.Dir); err != nil {
		e.s3.Close()
		return nil, err
	}
	e.places[placeKey(opts.AccountID, opts.Region)] = e.home
	if err := e.loadPlaces(); err != nil {
		e.closePlaces()
		e.s3.Close()
		return nil, err
	}
	e.services["s3"] = e.s3
	e.services["sts"] = e.sts
	e.services["lambda"] = http.HandlerFunc(e.serveLambda)
	e.services["iam"] = http.HandlerFunc(e.serveIAM)
	e.mounts[cfnlocal.ResponsePath] = e.home.cfn.ResponseHandler()
	e.mounts[placePrefix] = http.HandlerFunc(e.servePlace)
	e.mounts["/_local/cloudformation/"] = http.HandlerFunc(e.serveCloudFormationControl)
	e.mounts[controlPrefix] = http.HandlerFunc(e.serveControl)
	// What stacks made and the emulator keeps in memory only (functions, event source
	// mappings, rules, schedules, roles) comes back from the stacks' state.
	for _, p := range e.allPlaces() {
		p.cfn.Restore()
	}
	return e, nil
}

// S3 returns the emulated S3, for in-process callers.
func (e *Emulator) S3() *s3local.Service { return e.s3 }

// SQS returns the emulated SQS of the home account and region, for in-process callers.
func (e *Emulator) SQS() *sqslocal.Service { return e.home.sqs }

// SNS returns the emulated SNS of the home account and region, for in-process callers.
func (e *Emulator) SNS() *snslocal.Service { return e.home.sns }

// SSM returns the emulated Parameter Store of the home account and region, for in-process
// callers.
func (e *Emulator) SSM() *ssmlocal.Service { return e.home.ssm }

// SecretsManager returns the emulated Secrets Manager of the home account and region, for
// in-process callers.
func (e *Emulator) SecretsManager() *secretslocal.Service { return e.home.secrets }

// KMS returns the emulated KMS of the home account and region, for in-process callers.
func (e *Emulator) KMS() *kmslocal.Service { return e.home.kms }

// CloudFormation returns the emulated CloudFormation of the home account and region, for
// fault injection and records.
func (e *Emulator) CloudFormation() *cfnlocal.Service { return e.home.cfn }

// STS returns the emulated Security Token Service.
func (e *Emulator) STS() *stslocal.Service { return e.sts }

// CloudWatch returns the emulated CloudWatch alarms of the home account and region, for
// in-process callers.
func (e *Emulator) CloudWatch() *cloudwatchlocal.Service { return e.home.cw }

// Region returns the home region: where requests signed for no region go.
func (e *Emulator) Region() string { return e.opts.Region }

// AccountID returns the home account: the account of credentials that do not name one.
func (e *Emulator) AccountID() string { return e.opts.AccountID }

// Clock returns the emulator's clock.
func (e *Emulator) Clock() clock.Clock { return e.opts.Clock }

// RegisterService routes requests signed for signingName (e.g. "cloudformation") to h,
// with call counting and fault injection, in every account and region: h replaces the
// emulated service of that name.
func (e *Emulator) RegisterService(signingName string, h http.Handler) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.services[signingName] = h
}

// Mount serves every path under pathPrefix (e.g. "/_local/cloudformation/") with h,
// before any service routing, without counting or faults.
func (e *Emulator) Mount(pathPrefix string, h http.Handler) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.mounts[pathPrefix] = h
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves in the background.
func (e *Emulator) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("emulator: listen on %s: %w (is another emulator running? pick another --addr)", addr, err)
	}
	srv := &http.Server{Handler: e.Handler(), ReadHeaderTimeout: 30 * time.Second}
	e.mu.Lock()
	e.url = "http://" + ln.Addr().String()
	e.server = srv
	e.mu.Unlock()
	for _, p := range e.allPlaces() {
		p.cfn.Wake() // stacks resumed from Dir wait for the address their ResponseURLs need
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Error("emulator: server stopped", "err", err)
		}
	}()
	return nil
}

// Idle reports whether the emulator serves no request and runs no function at this
// moment: what a simulated world's clock waits for before it skips to the next thing due
// (clock.Fake.Pace).
func (e *Emulator) Idle() bool { return e.working.Load() == 0 }

// URL returns the base URL once Start ran ("" before).
func (e *Emulator) URL() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.url
}

// SetURL records the address the emulator is reached at when it is served by someone else
// (e.g. httptest.NewServer(e.Handler())), so SQS queue URLs point at it.
func (e *Emulator) SetURL(url string) {
	e.mu.Lock()
	e.url = strings.TrimRight(url, "/")
	e.mu.Unlock()
	for _, p := range e.allPlaces() {
		p.cfn.Wake()
	}
}

// Close stops the server, the pollers and schedules, and persists every service's state.
func (e *Emulator) Close() error {
	e.cancel()
	e.mu.Lock()
	srv := e.server
	e.mu.Unlock()
	var errs []error
	// The SQS services end long polls on Close (state is saved at each change, so a request
	// still finishing loses nothing): first, so that neither the pollers nor a client's
	// ReceiveMessage holding its connection for up to 20 s outlast the server's shutdown.
	places := e.allPlaces()
	for _, p := range places {
		errs = append(errs, p.sqs.Close())
	}
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("emulator: stop server: %w", err))
		}
	}
	e.wg.Wait()
	for _, p := range places {
		errs = append(errs, p.closeServices())
	}
	errs = append(errs, e.sts.Close(), e.s3.Close())
	return errors.Join(errs...)
}

// AWSConfig returns an SDK configuration addressing this emulator with dummy credentials
// of the home account and region. S3 clients built from it need UsePathStyle
// (awsclient.S3 sets it).
func (e *Emulator) AWSConfig(ctx context.Context) (aws.Config, error) {
	return e.AWSConfigAt(ctx, e.opts.AccountID, e.opts.Region)
}

// AWSConfigAt is AWSConfig for account (its plain credentials: the access key id is the
// account) in region.
func (e *Emulator) AWSConfigAt(ctx context.Context, account, region string) (aws.Config, error) {
	url := e.URL()
	if url == "" {
		return aws.Config{}, errors.New("emulator: AWSConfig called before Start: start the emulator first")
	}
	key := "test"
	if account != e.opts.AccountID {
		key = account
	}
	return config.LoadDefaultConfig(ctx,
		config.WithRegion(region),
		config.WithBaseEndpoint(url),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(key, "test", "")),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
		awsclient.WithSafeBodies(),
	)
}

// setupHeader carries SetupConfig's token past the readiness gate.
const setupHeader = "X-Cairn-Local-Setup"

// SetupConfig is AWSConfig for the code that makes the emulator ready (provisioning what
// clients expect to find): its requests are served before MarkReady, while everyone
// else's wait.
func (e *Emulator) SetupConfig(ctx context.Context) (aws.Config, error) {
	return e.SetupConfigAt(ctx, e.opts.AccountID, e.opts.Region)
}

// SetupConfigAt is SetupConfig for account in region (see AWSConfigAt).
func (e *Emulator) SetupConfigAt(ctx context.Context, account, region string) (aws.Config, error) {
	cfg, err := e.AWSConfigAt(ctx, account, region)
	if err != nil {
		return cfg, err
	}
	cfg.APIOptions = append(cfg.APIOptions, smithyhttp.AddHeaderValue(setupHeader, e.setupToken))
	return cfg, nil
}

// MarkReady lets waiting and later requests through the readiness gate (see
// Options.HoldUntilReady). It may be called more than once.
func (e *Emulator) MarkReady() {
	e.readyOnce.Do(func() { close(e.ready) })
}

// Ready reports whether the emulator serves every request (GET /_local/health says so too).
func (e *Emulator) Ready() bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}

// Env returns the environment (KEY=value) that points the SDK and the AWS CLI at the emulator.
func (e *Emulator) Env() []string {
	return []string{
		"AWS_ENDPOINT_URL=" + e.URL(),
		"AWS_REGION=" + e.opts.Region,
		"AWS_DEFAULT_REGION=" + e.opts.Region,
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
