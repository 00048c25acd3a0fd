package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/reach"
)

// StackStatusChange is the EventBridge detail-type of CloudFormation stack status events.
const StackStatusChange = "CloudFormation Stack Status Change"

// ConfigFromEnv reads the deployer's configuration: CAIRN_BUCKET, CAIRN_DEPLOY_QUEUE_URL,
// CAIRN_NOTIFICATIONS_TOPIC, CAIRN_CFN_ROLE_ARN (optional), CAIRN_HEARTBEAT_SECONDS (default
// 15) and CAIRN_NAMESPACES (the CDK context cairn:namespaces, comma-separated; unset or
// empty allows every namespace, as `cairn local up` does by default).
func ConfigFromEnv() (Config, error) {
	c := Config{
		Bucket:      os.Getenv("CAIRN_BUCKET"),
		QueueURL:    os.Getenv("CAIRN_DEPLOY_QUEUE_URL"),
		Topic:       os.Getenv("CAIRN_NOTIFICATIONS_TOPIC"),
		ServiceRole: os.Getenv("CAIRN_CFN_ROLE_ARN"),
	}
	ns, err := config.ParseNamespaces(os.Getenv("CAIRN_NAMESPACES"))
	if err != nil {
		return c, fmt.Errorf("CAIRN_NAMESPACES: %w", err)
	}
	c.Namespaces = ns
	if v := os.Getenv("CAIRN_HEARTBEAT_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 900 {
			return c, fmt.Errorf("CAIRN_HEARTBEAT_SECONDS=%q: want a whole number of seconds from 1 to 900", v)
		}
		c.Heartbeat = time.Duration(n) * time.Second
	}
	var missing []string
	if c.Bucket == "" {
		missing = append(missing, "CAIRN_BUCKET")
	}
	if c.QueueURL == "" {
		missing = append(missing, "CAIRN_DEPLOY_QUEUE_URL")
	}
	if len(missing) > 0 {
		return c, fmt.Errorf("deployer misconfigured: set %s", strings.Join(missing, " and "))
	}
	return c, nil
}

// NewFromAWS returns a Driver using clients built from awsCfg.
func NewFromAWS(awsCfg aws.Config, c Config) (*Driver, error) {
	if c.Region == "" {
		c.Region = awsCfg.Region
	}
	return New(c, Clients{
		S3:    awsclient.S3(awsCfg),
		CFN:   cloudformation.NewFromConfig(awsCfg),
		SQS:   sqs.NewFromConfig(awsCfg),
		SNS:   sns.NewFromConfig(awsCfg),
		SSM:   ssm.NewFromConfig(awsCfg),
		Reach: reach.New(awsCfg, c.Clock),
	})
}

// HandlerFromEnv builds the deployer Lambda's handler from the environment (ConfigFromEnv
// and awsclient.Load).
func HandlerFromEnv(ctx context.Context) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
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

// message is any body the deploy queue carries, decoded once to tell the shapes apart.
type message struct {
	// S3 event notification.
	Records []events.S3EventRecord `json:"Records"`
	Event   string                 `json:"Event"` // s3:TestEvent
	// EventBridge event.
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Detail     json.RawMessage `json:"detail"`
	// Heartbeat.
	Cairn      string `json:"cairn"`
	Deployment string `json:"deployment"`
	Run        string `json:"run"`
	Beat       int    `json:"beat"`
}

type stackStatusDetail struct {
	StackID       string `json:"stack-id"`
	StatusDetails struct {
		Status string `json:"status"`
	} `json:"status-details"`
}

// settles reports the stack statuses a run may act on; intermediate ones are ignored so
// a stack's dozens of events cost one step.
func settles(status string) bool {
	return !strings.HasSuffix(status, "_IN_PROGRESS") || status == "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS"
}

// Handle is the deployer Lambda's handler: each SQS record is an S3 upload event, a
// CloudFormation stack status event, a heartbeat or a delayed check. Records that fail are reported in
// batchItemFailures, so one bad message never holds back the others. Several triggers of
// one run in a batch make one step. Every invocation then looks for open runs whose
// heartbeat was lost, and resumes them (resumeStalled).
func (d *Driver) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	var order []stepKey
	steps := map[stepKey]*stepReq{}
	addStep := func(k stepKey, t Trigger, id string) {
		r := steps[k]
		if r == nil {
			r = &stepReq{}
			steps[k] = r
			order = append(order, k)
		}
		r.trigger.Beats = append(r.trigger.Beats, t.Beats...)
		r.trigger.Stacks = append(r.trigger.Stacks, t.Stacks...)
		r.records = append(r.records, id)
	}
	fail := func(id string) {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	for _, rec := range ev.Records {
		log := d.log.With("message_id", rec.MessageId)
		var m message
		if err := json.Unmarshal([]byte(rec.Body), &m); err != nil {
			log.Error("deploy: message is not JSON; it goes to the dead-letter queue", "err", err, "body", truncate(rec.Body))
			fail(rec.MessageId)
			continue
		}
		switch {
		case m.Cairn == "heartbeat" || m.Cairn == "check":
			if m.Deployment == "" || m.Run == "" {
				log.Error("deploy: "+m.Cairn+" without deployment or run", "body", truncate(rec.Body))
				fail(rec.MessageId)
				continue
			}
			var t Trigger // a delayed check only asks for a step
			if m.Cairn == "heartbeat" {
				t.Beats = []int{m.Beat}
			}
			addStep(stepKey{m.Deployment, m.Run}, t, rec.MessageId)
		case m.DetailType == StackStatusChange && m.Source == "aws.cloudformation":
			var det stackStatusDetail
			if err := json.Unmarshal(m.Detail, &det); err != nil || det.StackID == "" {
				log.Error("deploy: stack status event without a stack id", "err", err, "body", truncate(rec.Body))
				fail(rec.MessageId)
				continue
			}
			if !settles(det.StatusDetails.Status) {
				log.Debug("deploy: intermediate stack status ignored", "stack_id", det.StackID, "status", det.StatusDetails.Status)
				continue
			}
			idx, err := d.runs.find(ctx, det.StackID)
			if err != nil {
				log.Warn("deploy: cannot look up the run of a stack event", "err", err)
				fail(rec.MessageId)
				continue
			}
			if idx == nil {
				log.Debug("deploy: stack event of no open run ignored", "stack_id", det.StackID, "status", det.StatusDetails.Status)
				continue
			}
			addStep(stepKey{idx.Deployment, idx.Run}, Trigger{Stacks: eventKeys(det.StackID, d.cfg.Region)}, rec.MessageId)
		case m.Event == "s3:TestEvent":
			log.Info("deploy: S3 test event ignored")
		case len(m.Records) > 0:
			var errs []error
			for _, r := range m.Records {
				if !strings.HasPrefix(r.EventName, "ObjectCreated:") {
					log.Info("deploy: S3 event ignored", "event", r.EventName, "key", r.S3.Object.Key)
					continue
				}
				u := Upload{
					Bucket: r.S3.Bucket.Name, Key: decodeKey(r.S3.Object.Key), VersionID: r.S3.Object.VersionID,
					Sequencer: r.S3.Object.Sequencer, Time: r.EventTime, Body: rec.Body,
				}
				start := d.start.upload
				up, _ := bucket.ParseUpload(u.Key) // the only parse of the key: its parts go along
				if up.Kind == bucket.ApprovalUpload {
					start = d.start.approval
				}
				if err := start(ctx, u, up); err != nil {
					errs = append(errs, err)
				}
			}
			if err := errors.Join(errs...); err != nil {
				log.Error("deploy: upload not started; it is delivered again", "err", err)
				fail(rec.MessageId)
			}
		default:
			log.Error("deploy: unknown message; it goes to the dead-letter queue", "body", truncate(rec.Body))
			fail(rec.MessageId)
		}
	}
	for _, k := range order {
		r := steps[k]
		if err := d.step.trigger(ctx, k.deployment, k.run, r.trigger); err != nil {
			d.runLogger(k.deployment, k.run).Error("deploy: step failed; its trigger is delivered again", "err", err)
			for _, id := range r.records {
				fail(id)
			}
		}
	}
	d.resumeStalled(ctx, steps)
	return resp, nil
}

type stepKey struct{ deployment, run string }

// stepReq gathers the triggers of one run in a batch: the heartbeats' chains, and the
// records to report failed when its step fails.
type stepReq struct {
	trigger Trigger
	records []string
}

// resumeStalled resumes the open runs whose heartbeat chain has not beaten for
// Config.StallAfter (a lost heartbeat), other than those stepped just now, with a new
// chain: whatever triggers the deployer, a stalled run is carried on within about a
// minute, and one fenced meanwhile is closed as abandoned. Failures are logged: the next
// invocation looks again.
func (d *Driver) resumeStalled(ctx context.Context, stepped map[stepKey]*stepReq) {
	stalled, err := d.runs.stalled(ctx, d.clk.Now().Add(-d.cfg.StallAfter))
	if err != nil {
		d.log.Warn("deploy: cannot look for stalled runs", "err", err)
		return
	}
	for _, idx := range stalled {
		if _, ok := stepped[stepKey{idx.Deployment, idx.Run}]; ok {
			continue
		}
		if err := d.step.trigger(ctx, idx.Deployment, idx.Run, Trigger{restart: true}); err != nil {
			d.runLogger(idx.Deployment, idx.Run).Warn("deploy: cannot resume a stalled run; the next invocation tries again", "err", err)
		}
	}
}

func truncate(s string) string {
	if len(s) > 512 {
		return s[:512] + "..."
	}
	return s
}

// decodeKey undoes the URL encoding of keys in S3 event notifications.
func decodeKey(k string) string {
	if s, err := url.QueryUnescape(k); err == nil {
		return s
	}
	return k
}
