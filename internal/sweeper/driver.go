package sweeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/drift"
	"github.com/cairn-dev/cairn/internal/reach"
	"github.com/cairn-dev/cairn/internal/state"
)

// Defaults of Config.
const (
	DefaultPollInterval  = 10 * time.Second
	DefaultContinueAfter = 30 * time.Second
	DefaultMargin        = 15 * time.Second
	DefaultMaxWait       = 2 * time.Minute
)

// S3API is the part of *s3.Client the driver uses.
type S3API interface {
	state.S3API
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// CloudFormationAPI is the part of *cloudformation.Client the driver uses.
type CloudFormationAPI interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
	DetectStackDrift(ctx context.Context, in *cloudformation.DetectStackDriftInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DetectStackDriftOutput, error)
	DescribeStackDriftDetectionStatus(ctx context.Context, in *cloudformation.DescribeStackDriftDetectionStatusInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackDriftDetectionStatusOutput, error)
	DescribeStackResourceDrifts(ctx context.Context, in *cloudformation.DescribeStackResourceDriftsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourceDriftsOutput, error)
}

// SQSAPI sends continuations.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// SNSAPI publishes drift summaries.
type SNSAPI interface {
	Publish(ctx context.Context, in *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// Config configures a Driver.
type Config struct {
	Bucket string
	// QueueURL receives continuations of sweeps that outlive an invocation ("" makes
	// Continue-by-message impossible: only RunUntilDone finishes a sweep then).
	QueueURL string
	// Topic is the notifications topic ARN ("" publishes nothing).
	Topic string
	// Concurrency is the most drift detections in flight at once (default 5).
	Concurrency int
	// Budget returns the sweep's CloudFormation API budget (default
	// awsclient.DefaultBudget).
	Budget func() *rate.Limiter
	// PollInterval is the wait between looks at detections in flight (default 10s).
	PollInterval time.Duration
	// ContinueAfter is the delay of a continuation message (default 30s, at most 15m).
	ContinueAfter time.Duration
	// Margin is how long before its deadline an invocation stops to save and hand off
	// (default 15s).
	Margin time.Duration
	// MaxWait is the longest one invocation waits for detections before handing off
	// (default 2m): a delayed message costs less than a Lambda waiting.
	MaxWait time.Duration
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
	Reach *reach.Reacher
}

// Driver runs sweeps.
type Driver struct {
	cfg   Config
	c     Clients
	store *state.Store
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
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.ContinueAfter <= 0 {
		cfg.ContinueAfter = DefaultContinueAfter
	}
	if cfg.ContinueAfter > 15*time.Minute {
		return nil, fmt.Errorf("drift: continuation delay %s is longer than the 15 minutes SQS can delay a message", cfg.ContinueAfter)
	}
	if cfg.Margin <= 0 {
		cfg.Margin = DefaultMargin
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
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
	return &Driver{cfg: cfg, c: c, clk: cfg.Clock, log: cfg.Logger,
		store: &state.Store{S3: c.S3, Bucket: cfg.Bucket, Clock: cfg.Clock, Logger: cfg.Logger}}, nil
}

// Request asks for a new sweep.
type Request struct {
	// ID names the sweep; "" makes one from the time. A sweep with this ID that is already
	// open is continued instead (a redelivered scheduled event starts nothing twice).
	ID string
	// Trigger says who asked ("schedule", "cli"), for the report.
	Trigger string
	// Filter limits the sweep to graphs whose report name, key or NAMESPACE/KEY is Filter.
	Filter string
}

// invocation is one call's view of a sweep: its document, ETag, claim and time limits.
type invocation struct {
	sw     *drift.Sweep
	etag   string
	token  string
	stopAt time.Time // zero: no deadline (run until done)
	// places reach the sweep's accounts and regions, each with the invocation's budget.
	places  *reach.Places[CloudFormationAPI]
	sweepID string
	log     *slog.Logger
}

// Start creates the sweep of req and drives it as far as the invocation's deadline
// allows (see Drive). It returns the sweep as it was left.
func (d *Driver) Start(ctx context.Context, req Request, untilDone bool) (*drift.Sweep, error) {
	now := d.clk.Now().UTC()
	if req.ID == "" {
		req.ID = drift.NewID(now, "")
	}
	if req.Trigger == "" {
		req.Trigger = "manual"
	}
	log := d.log.With("sweep", req.ID)
	if sw, _, err := d.load(ctx, req.ID); err == nil {
		log.Info("drift: sweep already exists; continuing it", "trigger", req.Trigger)
		return d.Drive(ctx, sw.ID, -1, untilDone)
	} else if !errors.Is(err, errNoSweep) {
		return nil, err
	}
	inv := &invocation{token: newToken(), places: d.places(req.ID), log: log, sweepID: req.ID}
	inv.stopAt = d.stopAt(ctx, untilDone)
	sw := &drift.Sweep{ID: req.ID, Trigger: req.Trigger, Filter: req.Filter, StartedAt: now, Holder: inv.token, Invocations: 1}
	sw.HeldUntil = d.leaseEnd(inv)
	if err := d.plan(ctx, sw, inv); err != nil {
		return nil, err
	}
	if req.Filter != "" && len(sw.Graphs) == 0 {
		return nil, fmt.Errorf("drift: no persistent graph named %q in %s: name a deployment, a graph key or NAMESPACE/KEY (cairn state list shows them)", req.Filter, bucket.URI(d.cfg.Bucket, bucket.StatePrefix))
	}
	etag, err := d.put(ctx, sw, "", true)
	if err != nil {
		if errors.Is(err, bucket.ErrConflict) {
			log.Info("drift: sweep created concurrently by another invocation; leaving it to that one")
			return sw, nil
		}
		return nil, err
	}
	inv.sw, inv.etag = sw, etag
	log.Info("drift: sweep started", "trigger", req.Trigger, "graphs", len(sw.Graphs))
	return d.drive(ctx, inv, untilDone)
}

// Drive continues open sweep id. seq is the continuation number of the message that asks
// (-1: not a continuation message); a stale one is ignored. A sweep claimed by a live
// invocation is left to it. Drive returns the sweep as it was left, or nil when the
// sweep is finished and gone.
func (d *Driver) Drive(ctx context.Context, id string, seq int, untilDone bool) (*drift.Sweep, error) {
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
	if seq >= 0 && seq < sw.Continuation {
		log.Info("drift: stale continuation ignored", "seq", seq, "current", sw.Continuation)
		return sw, nil
	}
	if sw.Holder != "" && now.Before(sw.HeldUntil) {
		log.Info("drift: sweep is being driven by another invocation; leaving it to that one", "held_until", sw.HeldUntil)
		if seq >= 0 {
			// Look again later: if the holder hands off, this continuation is stale by
			// then; if it died, its claim has expired and this one takes the sweep on.
			return sw, d.sendContinuation(ctx, sw.ID, seq)
		}
		return sw, nil
	}
	inv := &invocation{token: newToken(), places: d.places(sw.ID), log: log, sweepID: sw.ID}
	inv.stopAt = d.stopAt(ctx, untilDone)
	sw.Holder, sw.HeldUntil = inv.token, d.leaseEnd(inv)
	sw.Invocations++
	etag, err = d.put(ctx, sw, etag, false)
	if err != nil {
		if errors.Is(err, bucket.ErrConflict) {
			log.Info("drift: sweep claimed concurrently by another invocation; leaving it to that one")
			return sw, nil
		}
		return nil, err
	}
	inv.sw, inv.etag = sw, etag
	return d.drive(ctx, inv, untilDone)
}

// stopAt is when this invocation stops driving: Margin before the context's deadline and
// at most MaxWait from now; zero for until-done runs without a deadline.
func (d *Driver) stopAt(ctx context.Context, untilDone bool) time.Time {
	now := d.clk.Now()
	dl, ok := ctx.Deadline()
	if !ok {
		if untilDone {
			return time.Time{}
		}
		return now.Add(d.cfg.MaxWait)
	}
	// The deadline is wall time; the clock may be virtual, so carry over the time left.
	left := time.Until(dl) - d.cfg.Margin
	if !untilDone && left > d.cfg.MaxWait {
		left = d.cfg.MaxWait
	}
	return now.Add(left)
}

func (d *Driver) leaseEnd(inv *invocation) time.Time {
	now := d.clk.Now()
	end := now.Add(2*d.cfg.PollInterval + d.cfg.Margin)
	if !inv.stopAt.IsZero() && inv.stopAt.Add(d.cfg.Margin).After(end) {
		end = inv.stopAt.Add(d.cfg.Margin)
	}
	return end
}

// drive runs passes until the sweep is done or this invocation must hand off.
func (d *Driver) drive(ctx context.Context, inv *invocation, untilDone bool) (*drift.Sweep, error) {
	for {
		if err := d.pass(ctx, inv); err != nil {
			// Keep what this pass learned and let a continuation try again, rather than
			// leave the sweep claimed by an invocation that gave up.
			if herr := d.handOff(context.WithoutCancel(ctx), inv); herr != nil {
				inv.log.Error("drift: sweep not handed off after a failed pass", "err", herr)
			}
			return inv.sw, err
		}
		if inv.sw.Done() {
			if err := d.delete(ctx, inv); err != nil {
				return inv.sw, err
			}
			inv.log.Info("drift: sweep finished", "invocations", inv.sw.Invocations)
			return inv.sw, nil
		}
		now := d.clk.Now()
		if !inv.stopAt.IsZero() && !now.Add(d.cfg.PollInterval).Before(inv.stopAt) {
			return inv.sw, d.handOff(ctx, inv)
		}
		inv.sw.HeldUntil = d.leaseEnd(inv)
		etag, err := d.put(ctx, inv.sw, inv.etag, false)
		if err != nil {
			return inv.sw, d.lost(inv, err)
		}
		inv.etag = etag
		select {
		case <-ctx.Done():
			return inv.sw, d.handOff(context.WithoutCancel(ctx), inv)
		case <-d.clk.After(d.cfg.PollInterval):
		}
	}
}

// handOff saves the sweep unclaimed and sends the next continuation. The message goes
// first: if saving then fails, the message still resumes the sweep.
func (d *Driver) handOff(ctx context.Context, inv *invocation) error {
	sw := inv.sw
	next := sw.Continuation + 1
	if err := d.sendContinuation(ctx, sw.ID, next); err != nil {
		return err
	}
	sw.Continuation = next
	sw.Holder, sw.HeldUntil = "", time.Time{}
	etag, err := d.put(ctx, sw, inv.etag, false)
	if err != nil {
		return d.lost(inv, err)
	}
	inv.etag = etag
	inv.log.Info("drift: sweep handed off", "in_flight", sw.InFlight(), "continuation", next, "after", d.cfg.ContinueAfter)
	return nil
}

// sendContinuation sends the delayed message that resumes sweep id as continuation seq.
func (d *Driver) sendContinuation(ctx context.Context, id string, seq int) error {
	if d.cfg.QueueURL == "" {
		d.log.Warn("drift: no continuation queue configured (CAIRN_DRIFT_QUEUE_URL); the sweep continues at the next drift status event or schedule", "sweep", id)
		return nil
	}
	body, _ := json.Marshal(continuation{Cairn: continueKind, Sweep: id, Seq: seq})
	_, err := d.c.SQS.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(d.cfg.QueueURL), MessageBody: aws.String(string(body)),
		DelaySeconds: int32(d.cfg.ContinueAfter / time.Second),
	})
	if err != nil {
		return fmt.Errorf("drift: sweep %s: send continuation to %s: %w", id, d.cfg.QueueURL, err)
	}
	return nil
}

// lost turns a failed conditional save into the outcome: another invocation took the
// sweep over (its lease ran out), which is not an error of this trigger.
func (d *Driver) lost(inv *invocation, err error) error {
	if errors.Is(err, bucket.ErrConflict) {
		inv.log.Warn("drift: sweep changed under this invocation (claim expired and taken over); stopping", "err", err)
		return nil
	}
	return fmt.Errorf("drift: save sweep %s: %w", inv.sw.ID, err)
}
