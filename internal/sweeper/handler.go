package sweeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-dev/cairn/internal/access"
	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/drift"
	"github.com/cairn-dev/cairn/internal/lambdajob"
)

// Event detail-types and sources the handler accepts.
const (
	ScheduledEvent    = "Scheduled Event"
	DriftStatusChange = "CloudFormation Drift Detection Status Change"
	continueKind      = "drift-continue"
	sourceEvents      = "aws.events"
	sourceCFN         = "aws.cloudformation"
)

// continuation is the body of a delayed SQS message that resumes a sweep.
type continuation struct {
	Cairn string `json:"cairn"`
	Sweep string `json:"sweep"`
	Seq   int    `json:"seq"`
}

// envelope is any payload the function receives, decoded once to tell the shapes apart:
// an EventBridge event (scheduled, or a drift status change), an SQS event whose records
// carry such events or continuations, or a bare continuation.
type envelope struct {
	Records    []events.SQSMessage `json:"Records"`
	ID         string              `json:"id"`
	DetailType string              `json:"detail-type"`
	Source     string              `json:"source"`
	Detail     json.RawMessage     `json:"detail"`
	Resources  []string            `json:"resources"`
	Time       time.Time           `json:"time"`
	continuation
}

// driftDetail is the detail of a drift status change.
type driftDetail struct {
	StackID       string `json:"stack-id"`
	DetectionID   string `json:"stack-drift-detection-id"`
	StatusDetails struct {
		DetectionStatus string `json:"detection-status"`
	} `json:"status-details"`
}

// Handle is the drift Lambda's handler. It accepts the EventBridge scheduled event
// (starting a sweep, or stepping an open one), a drift status change (stepping the sweeps
// waiting for that stack), and SQS events carrying either or a continuation. An SQS batch
// makes one step per sweep however many of its records ask for it; records that fail are
// returned in batchItemFailures and delivered again.
func (d *Driver) Handle(ctx context.Context, payload json.RawMessage) (*events.SQSEventResponse, error) {
	var env envelope
	if err := json.Unmarshal(payload, &env); err != nil {
		return nil, fmt.Errorf("drift: event is not JSON (%v): send the scheduled event, a drift status change or an SQS event", err)
	}
	if len(env.Records) == 0 {
		batch := lambdajob.NewBatch[string](mergeTriggers)
		if err := d.route(ctx, env, "", batch); err != nil {
			return nil, err
		}
		var failed error
		batch.Run(func(id string, t drift.Trigger) error { _, err := d.Step(ctx, id, t); return err }, func(_ string, err error) { failed = err })
		return nil, failed
	}
	batch := lambdajob.NewBatch[string](mergeTriggers)
	var changes []statusChange
	for _, rec := range env.Records {
		var m envelope
		err := json.Unmarshal([]byte(rec.Body), &m)
		switch {
		case err != nil:
		case len(m.Records) > 0:
			err = errors.New("nested SQS event")
		case m.DetailType == DriftStatusChange && m.Source == sourceCFN:
			var det driftDetail
			if err = json.Unmarshal(m.Detail, &det); err == nil {
				changes = append(changes, statusChange{det, rec.MessageId})
			}
		default:
			err = d.route(ctx, m, rec.MessageId, batch)
		}
		if err != nil {
			d.failed(rec, err)
			batch.Fail(rec.MessageId)
		}
	}
	if err := d.statusChanged(ctx, changes, batch); err != nil {
		for _, c := range changes {
			d.log.Error("drift: drift status change not routed; it is delivered again", "message_id", c.record, "err", err)
			batch.Fail(c.record)
		}
	}
	batch.Run(func(id string, t drift.Trigger) error { _, err := d.Step(ctx, id, t); return err },
		func(id string, err error) {
			d.log.Error("drift: step failed; its records are delivered again", "sweep", id, "err", err)
		})
	resp := batch.Response()
	return &resp, nil
}

// mergeTriggers folds the triggers of one sweep's records in a batch: the newest
// continuation, and whether anything else asked.
func mergeTriggers(a, b drift.Trigger) drift.Trigger {
	return drift.Trigger{Seq: max(a.Seq, b.Seq), Event: a.Event || b.Event}
}

func (d *Driver) failed(rec events.SQSMessage, err error) {
	d.log.Error("drift: message failed; it is delivered again", "message_id", rec.MessageId, "err", err, "body", fmt.Sprintf("%.512s", rec.Body), "body_bytes", len(rec.Body))
}

// statusChange is a drift status change and the record that carried it.
type statusChange struct {
	detail driftDetail
	record string
}

// route adds the step m asks for to batch (record: the SQS record carrying it, "" for a
// direct invocation), or deals with it at once: a scheduled event.
func (d *Driver) route(ctx context.Context, m envelope, record string, batch *lambdajob.Batch[string, drift.Trigger]) error {
	switch {
	case m.Cairn == continueKind:
		if m.Sweep == "" {
			return errors.New("drift: continuation without a sweep id")
		}
		batch.Add(m.Sweep, record, drift.Trigger{Seq: m.Seq})
		return nil
	case m.DetailType == ScheduledEvent && m.Source == sourceEvents:
		return d.scheduled(ctx, m)
	case m.DetailType == DriftStatusChange && m.Source == sourceCFN:
		var det driftDetail
		if err := json.Unmarshal(m.Detail, &det); err != nil {
			return fmt.Errorf("drift: drift status change without a readable detail: %w", err)
		}
		return d.statusChanged(ctx, []statusChange{{det, record}}, batch)
	default:
		return fmt.Errorf("drift: unknown event (detail-type %q, source %q, cairn %q): the drift function takes the scheduled event, drift status changes and its continuations", m.DetailType, m.Source, m.Cairn)
	}
}

// scheduled steps open sweeps and starts a new one only when none is left open, so a slow
// sweep is never doubled by the next schedule.
func (d *Driver) scheduled(ctx context.Context, m envelope) error {
	ids, err := d.OpenSweeps(ctx)
	if err != nil {
		return err
	}
	at := m.Time
	if at.IsZero() {
		at = d.clk.Now()
	}
	id := drift.NewID(at, m.ID)
	open := false
	for _, other := range ids {
		if other == id {
			continue // a redelivered event: Start steps it
		}
		sw, err := d.Step(ctx, other, drift.Trigger{Seq: -1, Event: true})
		if err != nil {
			return err
		}
		if sw != nil && !sw.Done() {
			open = true
			d.log.Info("drift: scheduled sweep not started: an earlier sweep is still open", "open", other)
		}
	}
	if open {
		return nil
	}
	_, err = d.Start(ctx, Request{ID: id, Trigger: "schedule"})
	return err
}

// statusChanged adds to batch a step of each open sweep waiting for the stack of a finished
// detection among changes (AWS also announces detections in progress): the open sweeps are
// listed and read once for all of them.
func (d *Driver) statusChanged(ctx context.Context, changes []statusChange, batch *lambdajob.Batch[string, drift.Trigger]) error {
	var finished []statusChange
	for _, c := range changes {
		if c.detail.StatusDetails.DetectionStatus != "DETECTION_IN_PROGRESS" {
			finished = append(finished, c)
		}
	}
	if len(finished) == 0 {
		return nil
	}
	ids, err := d.OpenSweeps(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		sw, _, err := d.load(ctx, id)
		if errors.Is(err, errNoSweep) {
			continue
		}
		if err != nil {
			return err
		}
		for _, c := range finished {
			if sw.WaitsFor(c.detail.StackID, c.detail.DetectionID) {
				batch.Add(id, c.record, drift.Trigger{Seq: -1, Event: true})
			}
		}
	}
	return nil
}

// ConfigFromEnv reads the drift function's configuration: CAIRN_BUCKET,
// CAIRN_NOTIFICATIONS_TOPIC, CAIRN_DRIFT_QUEUE_URL and CAIRN_DRIFT_CONCURRENCY (default 5).
func ConfigFromEnv() (Config, error) {
	e := lambdajob.NewEnv("drift function")
	c := Config{
		Bucket:      e.Required("CAIRN_BUCKET"),
		Topic:       e.Optional("CAIRN_NOTIFICATIONS_TOPIC"),
		QueueURL:    e.Required("CAIRN_DRIFT_QUEUE_URL"),
		Concurrency: e.Int("CAIRN_DRIFT_CONCURRENCY", 1, 100, "detections"),
	}
	return c, e.Err()
}

// NewFromAWS returns a Driver using clients built from awsCfg.
func NewFromAWS(awsCfg aws.Config, c Config) (*Driver, error) {
	return New(c, Clients{
		S3:    awsclient.S3(awsCfg),
		CFN:   cloudformation.NewFromConfig(awsCfg),
		Reach: access.New(awsCfg, c.Clock),
		SQS:   sqs.NewFromConfig(awsCfg),
		SNS:   sns.NewFromConfig(awsCfg),
	})
}

// HandlerFromEnv builds the drift Lambda's handler from the environment (ConfigFromEnv
// and awsclient.Load: lambdajob.Handler).
func HandlerFromEnv(ctx context.Context) (func(context.Context, json.RawMessage) (*events.SQSEventResponse, error), error) {
	return lambdajob.Handler(ctx, ConfigFromEnv, func(awsCfg aws.Config, c Config) (func(context.Context, json.RawMessage) (*events.SQSEventResponse, error), error) {
		d, err := NewFromAWS(awsCfg, c)
		if err != nil {
			return nil, err
		}
		return d.Handle, nil
	})
}
