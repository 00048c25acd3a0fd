package sweeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/access"
	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/drift"
	"github.com/cairn-dev/cairn/internal/lambdajob"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// DefaultContinueAfter is the delay of a continuation: how long a sweep waits, between
// passes, for detections that no drift status change announced.
const DefaultContinueAfter = 30 * time.Second

// DefaultPollInterval is how often Wait steps the sweep it follows.
const DefaultPollInterval = 10 * time.Second

// S3API is the part of *s3.Client the driver uses.
type S3API interface {
	statestore.S3API
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// CloudFormationAPI is the part of *cloudformation.Client the driver uses.
type CloudFormationAPI interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
	DetectStackDrift(ctx context.Context, in *cloudformation.DetectStackDriftInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DetectStackDriftOutput, error)
	DescribeStackDriftDetectionStatus(ctx context.Context, in *cloudformation.DescribeStackDriftDetectionStatusInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackDriftDetectionStatusOutput, error)
	DescribeStackResourceDrifts(ctx context.Context, in *cloudformation.DescribeStackResourceDriftsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourceDriftsOutput, error)
	GetTemplate(ctx context.Context, in *cloudformation.GetTemplateInput, optFns ...func(*cloudformation.Options)) (*cloudformation.GetTemplateOutput, error)
}

// SQSAPI sends continuations.
type SQSAPI = lambdajob.SQSAPI

// SNSAPI publishes drift summaries.
type SNSAPI interface {
	Publish(ctx context.Context, in *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// Config configures a Driver.
type Config struct {
	Bucket string
	// QueueURL is the drift function's queue, which continuations of sweeps go to (""
	// sends none: a sweep then goes on at its next drift status change, schedule or Wait).
	QueueURL string
	// Topic is the notifications topic ARN ("" publishes nothing).
	Topic string
	// Concurrency is the most drift detections in flight at once (default 5).
	Concurrency int
	// Budget returns the sweep's CloudFormation API budget (default
	// awsclient.DefaultBudget).
	Budget func() *rate.Limiter
	// ContinueAfter is the delay of a continuation message (default DefaultContinueAfter,
	// at most 15m).
	ContinueAfter time.Duration
	// Lease is how long a step's claim on a sweep lasts at most (default
	// drift.DefaultLease; never past the invocation's deadline).
	Lease time.Duration
	// MaxAge ends a sweep whose detections have not finished after this long (default
	// 6h); what is left is reported UNKNOWN.
	MaxAge time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
}

// Clients are the AWS APIs the driver calls.
type Clients struct {
	S3  S3API
	CFN CloudFormationAPI
	SQS SQSAPI
	SNS SNSAPI
	// Reach reaches the stacks of other accounts and regions (nil: cairn's own only).
	Reach *access.Reacher
}

// Driver runs sweeps, one step per trigger.
type Driver struct {
	cfg   Config
	c     Clients
	queue lambdajob.Queue
	store *statestore.Store
	clk   clock.Clock
	log   *slog.Logger
}

// New returns a Driver.
func New(cfg Config, c Clients) (*Driver, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("drift: no bucket configured: set CAIRN_BUCKET")
	}
	if c.S3 == nil || c.CFN == nil {
		return nil, errors.New("drift: S3 and CloudFormation clients are required")
	}
	if cfg.QueueURL != "" && c.SQS == nil {
		return nil, errors.New("drift: a queue URL is set but no SQS client")
	}
	if cfg.Topic != "" && c.SNS == nil {
		return nil, errors.New("drift: a notifications topic is set but no SNS client")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = drift.DefaultConcurrency
	}
	if cfg.Budget == nil {
		cfg.Budget = awsclient.DefaultBudget
	}
	if cfg.ContinueAfter <= 0 {
		cfg.ContinueAfter = DefaultContinueAfter
	}
	if cfg.ContinueAfter > lambdajob.MaxDelay {
		return nil, fmt.Errorf("drift: continuation delay %s is longer than the 15 minutes SQS can delay a message", cfg.ContinueAfter)
	}
	if cfg.Lease <= 0 {
		cfg.Lease = drift.DefaultLease
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = drift.DefaultMaxAge
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Driver{cfg: cfg, c: c, queue: lambdajob.Queue{SQS: c.SQS, URL: cfg.QueueURL}, clk: cfg.Clock, log: cfg.Logger,
		store: &statestore.Store{S3: c.S3, Bucket: cfg.Bucket, Clock: cfg.Clock, Logger: cfg.Logger}}, nil
}

// Request asks for a new sweep.
type Request struct {
	// ID names the sweep; "" makes one from the time. A sweep with this ID that is already
	// open is stepped instead (a redelivered scheduled event starts nothing twice).
	ID string
	// Trigger says who asked ("schedule", "cli"), for the report.
	Trigger string
	// Filter limits the sweep to graphs whose report name, key or NAMESPACE/KEY is Filter.
	Filter string
}

// invocation is one step's view of a sweep: its document, ETag and claim.
type invocation struct {
	sw    *drift.Sweep
	etag  string
	token string
	// places reach the sweep's accounts and regions, each with the invocation's budget.
	places  *access.Places[CloudFormationAPI]
	sweepID string
	log     *slog.Logger
}

func (d *Driver) invocation(id string, log *slog.Logger) *invocation {
	return &invocation{token: newToken(), places: d.places(id), log: log, sweepID: id}
}

// deadline is the invocation's deadline on the driver's clock (zero: none). The context's
// deadline is wall time and the clock may be virtual, so the time left carries over.
func (d *Driver) deadline(ctx context.Context) time.Time {
	dl, ok := ctx.Deadline()
	if !ok {
		return time.Time{}
	}
	return d.clk.Now().Add(time.Until(dl))
}

// Start creates the sweep of req and makes its first step: every graph planned (its
// stacks pending, or not checked and why), the first detections started, then the sweep
// handed to its continuation (or finished). It returns the sweep as it was left.
func (d *Driver) Start(ctx context.Context, req Request) (*drift.Sweep, error) {
	now := d.clk.Now().UTC()
	if req.ID == "" {
		req.ID = drift.NewID(now, "")
	}
	if req.Trigger == "" {
		req.Trigger = "manual"
	}
	log := d.log.With("sweep", req.ID)
	if _, _, err := d.load(ctx, req.ID); err == nil {
		log.Info("drift: sweep already exists; stepping it", "trigger", req.Trigger)
		return d.Step(ctx, req.ID, drift.Trigger{Seq: -1, Event: true})
	} else if !errors.Is(err, errNoSweep) {
		return nil, err
	}
	inv := d.invocation(req.ID, log)
	sw := drift.Claim(&drift.Sweep{ID: req.ID, Trigger: req.Trigger, Filter: req.Filter, StartedAt: now}, inv.token, now, d.deadline(ctx), d.cfg.Lease)
	if err := d.plan(ctx, sw, inv); err != nil {
		return nil, err
	}
	if req.Filter != "" && len(sw.Graphs) == 0 {
		return nil, fmt.Errorf("drift: no persistent graph named %q in %s: name a deployment, a graph key or NAMESPACE/KEY (cairn state list shows them)", req.Filter, bucket.URI(d.cfg.Bucket, bucket.StatePrefix))
	}
	etag, err := d.put(ctx, sw, "", true)
	if err != nil {
		if errors.Is(err, objects.ErrConflict) {
			log.Info("drift: sweep created concurrently by another invocation; leaving it to that one")
			return sw, nil
		}
		return nil, err
	}
	inv.sw, inv.etag = sw, etag
	log.Info("drift: sweep started", "trigger", req.Trigger, "graphs", len(sw.Graphs))
	return d.advance(ctx, inv)
}

// Step makes one step of open sweep id, asked for by t, as drift.Admit decides: a stale
// continuation is dropped; a sweep a live invocation holds is left to it (its live
// continuation sent again, to look later); else the sweep is claimed, one pass is made,
// and the sweep is handed to its next continuation or, finished, removed. No step waits
// for CloudFormation: detections finish between steps, announced by drift status changes.
// Step returns the sweep as it was left, or nil when it is finished and gone.
func (d *Driver) Step(ctx context.Context, id string, t drift.Trigger) (*drift.Sweep, error) {
	log := d.log.With("sweep", id)
	sw, etag, err := d.load(ctx, id)
	if errors.Is(err, errNoSweep) {
		log.Info("drift: sweep already finished; nothing to do")
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := d.clk.Now()
	switch v, resend := drift.Admit(sw, t, now); v {
	case drift.Stale:
		log.Info("drift: stale continuation ignored", "seq", t.Seq, "current", sw.Continuation)
		return sw, nil
	case drift.Wait:
		log.Info("drift: sweep is being driven by another invocation; leaving it to that one", "held_until", sw.HeldUntil)
		if resend >= 0 {
			return sw, d.continueLater(ctx, sw.ID, resend)
		}
		return sw, nil
	}
	inv := d.invocation(id, log)
	sw = drift.Claim(sw, inv.token, now, d.deadline(ctx), d.cfg.Lease)
	etag, err = d.put(ctx, sw, etag, false)
	if err != nil {
		if errors.Is(err, objects.ErrConflict) {
			log.Info("drift: sweep claimed concurrently by another invocation; leaving it to that one")
			return sw, nil
		}
		return nil, err
	}
	inv.sw, inv.etag = sw, etag
	return d.advance(ctx, inv)
}

// advance makes one pass of the claimed sweep, then removes it when it is done, or hands
// it to its next continuation. A pass that fails is handed off too, keeping what it
// learned, rather than leave the sweep claimed by an invocation that gave up.
func (d *Driver) advance(ctx context.Context, inv *invocation) (*drift.Sweep, error) {
	if err := d.pass(ctx, inv); err != nil {
		if herr := d.handOff(context.WithoutCancel(ctx), inv); herr != nil {
			inv.log.Error("drift: sweep not handed off after a failed pass", "err", herr)
		}
		return inv.sw, err
	}
	if inv.sw.Done() {
		if err := d.delete(ctx, inv); err != nil {
			return inv.sw, err
		}
		inv.places.Forget()
		inv.log.Info("drift: sweep finished", "invocations", inv.sw.Invocations)
		return inv.sw, nil
	}
	return inv.sw, d.handOff(ctx, inv)
}

// handOff saves the sweep unclaimed with its next continuation (drift.HandOff), which is
// sent first: if saving then fails, the message still resumes the sweep.
func (d *Driver) handOff(ctx context.Context, inv *invocation) error {
	next, seq := drift.HandOff(inv.sw)
	if err := d.continueLater(ctx, next.ID, seq); err != nil {
		return err
	}
	etag, err := d.put(ctx, next, inv.etag, false)
	if err != nil {
		return d.lost(inv, err)
	}
	inv.sw, inv.etag = next, etag
	inv.log.Info("drift: sweep handed off", "in_flight", next.InFlight(), "continuation", seq, "after", d.cfg.ContinueAfter)
	return nil
}

// continueLater sends the delayed message that resumes sweep id as continuation seq.
func (d *Driver) continueLater(ctx context.Context, id string, seq int) error {
	if d.queue.URL == "" {
		d.log.Info("drift: no continuation queue configured (CAIRN_DRIFT_QUEUE_URL); the sweep goes on at its next drift status change, schedule or Wait", "sweep", id)
		return nil
	}
	if err := d.queue.Send(ctx, continuation{Cairn: continueKind, Sweep: id, Seq: seq}, d.cfg.ContinueAfter); err != nil {
		return fmt.Errorf("drift: sweep %s: send continuation to %s: %w", id, d.queue.URL, err)
	}
	return nil
}

// lost turns a failed conditional save into the outcome: another invocation took the
// sweep over (its claim ran out), which is not an error of this trigger.
func (d *Driver) lost(inv *invocation, err error) error {
	if errors.Is(err, objects.ErrConflict) {
		inv.log.Warn("drift: sweep changed under this invocation (claim expired and taken over); stopping", "err", err)
		return nil
	}
	return fmt.Errorf("drift: save sweep %s: %w", inv.sw.ID, err)
}

// Wait follows sweep sw to its end for a caller that waits (cairn drift --wait): every
// poll it steps the sweep itself, as a trigger of its own (the drift function's
// continuations and drift status changes step it too, one invocation at a time). It
// returns the sweep as it ended; when another invocation finished it, its graphs are read
// back from their reports.
func (d *Driver) Wait(ctx context.Context, sw *drift.Sweep, poll time.Duration) (*drift.Sweep, error) {
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	for first := true; !sw.Done(); first = false {
		if !first {
			select {
			case <-ctx.Done():
				return sw, ctx.Err()
			case <-d.clk.After(poll):
			}
		}
		next, err := d.Step(ctx, sw.ID, drift.Trigger{Seq: -1, Event: true})
		if err != nil {
			return sw, err
		}
		if next == nil {
			return d.ended(ctx, sw)
		}
		sw = next
	}
	return sw, nil
}

// ended is sw once another invocation finished it: each graph as its report recorded it.
func (d *Driver) ended(ctx context.Context, sw *drift.Sweep) (*drift.Sweep, error) {
	out := sw.Clone()
	for i, g := range out.Graphs {
		r, err := d.ReadReport(ctx, bucket.DriftReportKey(g.Name, sw.ID))
		if err != nil {
			return sw, fmt.Errorf("drift: sweep %s finished, but the report of %s is unreadable: %w", sw.ID, g.Name, err)
		}
		out.Graphs[i] = r.Graph
	}
	return out, nil
}
