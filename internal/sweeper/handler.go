package sweeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/drift"
	"github.com/cairn-dev/cairn/internal/reach"
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
// (starting a sweep, or continuing an open one), a drift status change event (continuing
// the sweeps waiting for that stack), and SQS events carrying either or a continuation.
// For SQS, records that fail are returned in batchItemFailures and delivered again.
func (d *Driver) Handle(ctx context.Context, payload json.RawMessage) (*events.SQSEventResponse, error) {
	var env envelope
	if err := json.Unmarshal(payload, &env); err != nil {
		return nil, fmt.Errorf("drift: event is not JSON (%v): send the scheduled event, a drift status change or an SQS event", err)
	}
	if len(env.Records) > 0 {
		resp := &events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
		for _, rec := range env.Records {
			var m envelope
			err := json.Unmarshal([]byte(rec.Body), &m)
			if err == nil {
				if len(m.Records) > 0 {
					err = errors.New("nested SQS event")
				} else {
					err = d.handleOne(ctx, m)
				}
			}
			if err != nil {
				d.log.Error("drift: message failed; it is delivered again", "message_id", rec.MessageId, "err", err, "body", fmt.Sprintf("%.512s", rec.Body), "body_bytes", len(rec.Body))
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
			}
		}
		return resp, nil
	}
	return nil, d.handleOne(ctx, env)
}

func (d *Driver) handleOne(ctx context.Context, m envelope) error {
	switch {
	case m.Cairn == continueKind:
		if m.Sweep == "" {
			return errors.New("drift: continuation without a sweep id")
		}
		_, err := d.Drive(ctx, m.Sweep, m.Seq, false)
		return err
	case m.DetailType == ScheduledEvent && m.Source == sourceEvents:
		return d.scheduled(ctx, m)
	case m.DetailType == DriftStatusChange && m.Source == sourceCFN:
		var det driftDetail
		if err := json.Unmarshal(m.Detail, &det); err != nil {
			return fmt.Errorf("drift: drift status change without a readable detail: %w", err)
		}
		return d.statusChanged(ctx, det)
	default:
		return fmt.Errorf("drift: unknown event (detail-type %q, source %q, cairn %q): the drift function takes the scheduled event, drift status changes and its continuations", m.DetailType, m.Source, m.Cairn)
	}
}

// scheduled continues open sweeps and starts a new one only when none is left open, so
// a slow sweep is never doubled by the next schedule.
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
			continue // a redelivered event: Start continues it
		}
		sw, err := d.Drive(ctx, other, -1, false)
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
	_, err = d.Start(ctx, Request{ID: id, Trigger: "schedule"}, false)
	return err
}

// statusChanged continues the open sweeps waiting for the stack of det, once its
// detection has finished (AWS also announces detections in progress).
func (d *Driver) statusChanged(ctx context.Context, det driftDetail) error {
	if det.StatusDetails.DetectionStatus == "DETECTION_IN_PROGRESS" {
		return nil
	}
	detID := det.DetectionID
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
		if !sw.WaitsFor(det.StackID, detID) {
			continue
		}
		if _, err := d.Drive(ctx, id, -1, false); err != nil {
			return err
		}
	}
	return nil
}

// ConfigFromEnv reads the drift function's configuration: CAIRN_BUCKET,
// CAIRN_NOTIFICATIONS_TOPIC, CAIRN_DRIFT_QUEUE_URL and CAIRN_DRIFT_CONCURRENCY (default 5).
func ConfigFromEnv() (Config, error) {
	c := Config{
		Bucket:   os.Getenv("CAIRN_BUCKET"),
		Topic:    os.Getenv("CAIRN_NOTIFICATIONS_TOPIC"),
		QueueURL: os.Getenv("CAIRN_DRIFT_QUEUE_URL"),
	}
	if v := os.Getenv("CAIRN_DRIFT_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return c, fmt.Errorf("CAIRN_DRIFT_CONCURRENCY=%q: want a whole number from 1 to 100", v)
		}
		c.Concurrency = n
	}
	var missing []string
	if c.Bucket == "" {
		missing = append(missing, "CAIRN_BUCKET")
	}
	if c.QueueURL == "" {
		missing = append(missing, "CAIRN_DRIFT_QUEUE_URL")
	}
	if len(missing) > 0 {
		return c, fmt.Errorf("drift function misconfigured: set %s", strings.Join(missing, " and "))
	}
	return c, nil
}

// NewFromAWS returns a Driver using clients built from awsCfg.
func NewFromAWS(awsCfg aws.Config, c Config) (*Driver, error) {
	return New(c, Clients{
		S3:    awsclient.S3(awsCfg),
		CFN:   cloudformation.NewFromConfig(awsCfg),
		Reach: reach.New(awsCfg, c.Clock),
		SQS:   sqs.NewFromConfig(awsCfg),
		SNS:   sns.NewFromConfig(awsCfg),
	})
}

// HandlerFromEnv builds the drift Lambda's handler from the environment (ConfigFromEnv
// and awsclient.Load).
func HandlerFromEnv(ctx context.Context) (func(context.Context, json.RawMessage) (*events.SQSEventResponse, error), error) {
	c, err := ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	awsCfg, err := awsclient.Load(ctx)
	if err != nil {
		return nil, err
	}
	d, err := NewFromAWS(awsCfg, c)
	if err != nil {
		return nil, err
	}
	return d.Handle, nil
}
