package deployer

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cairn-dev/cairn/internal/access"
	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/lambdajob"
)

// StackStatusChange is the EventBridge detail-type of CloudFormation stack status events.
const StackStatusChange = "CloudFormation Stack Status Change"

// ConfigFromEnv reads the deployer's configuration: CAIRN_BUCKET, CAIRN_DEPLOY_QUEUE_URL,
// CAIRN_NOTIFICATIONS_TOPIC, CAIRN_CFN_ROLE_ARN (optional), CAIRN_HEARTBEAT_SECONDS (default
// 15), CAIRN_NAMESPACES (the CDK context cairn:namespaces, comma-separated; unset or
// empty allows every namespace, as `cairn local up` does by default) and CAIRN_SSM_PATHS
// (the Parameter Store paths of each namespace, as JSON; unset: every name); and
// CAIRN_SEAL_KEY_ID, the KMS HMAC key secrets are sealed with, which it requires.
func ConfigFromEnv() (Config, error) {
	e := lambdajob.NewEnv("deployer")
	c := Config{
		Bucket:      e.Required("CAIRN_BUCKET"),
		QueueURL:    e.Required("CAIRN_DEPLOY_QUEUE_URL"),
		Topic:       e.Optional("CAIRN_NOTIFICATIONS_TOPIC"),
		ServiceRole: e.Optional("CAIRN_CFN_ROLE_ARN"),
		// Without it, the seals of secrets in the bucket would confirm guesses.
		SealKeyID: e.Required("CAIRN_SEAL_KEY_ID"),
		Heartbeat: time.Duration(e.Int("CAIRN_HEARTBEAT_SECONDS", 1, 900, "seconds")) * time.Second,
	}
	var err error
	c.Namespaces, err = config.ParseNamespaces(e.Optional("CAIRN_NAMESPACES"))
	e.Check("CAIRN_NAMESPACES", err)
	c.SSMPaths, err = config.ParseSSMPaths(e.Optional("CAIRN_SSM_PATHS"))
	e.Check("CAIRN_SSM_PATHS", err)
	return c, e.Err()
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
		KMS:   kms.NewFromConfig(awsCfg),
		Reach: access.New(awsCfg, c.Clock),
	})
}

// HandlerFromEnv builds the deployer Lambda's handler from the environment (ConfigFromEnv
// and awsclient.Load: lambdajob.Handler).
func HandlerFromEnv(ctx context.Context) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	return lambdajob.Handler(ctx, ConfigFromEnv, func(awsCfg aws.Config, c Config) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
		d, err := NewFromAWS(awsCfg, c)
		if err != nil {
			return nil, err
		}
		return d.Handle, nil
	})
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
	batch := lambdajob.NewBatch[stepKey](func(a, b Trigger) Trigger {
		a.Beats = append(a.Beats, b.Beats...)
		a.Stacks = append(a.Stacks, b.Stacks...)
		return a
	})
	for _, rec := range ev.Records {
		log := d.log.With("message_id", rec.MessageId)
		var m message
		if err := json.Unmarshal([]byte(rec.Body), &m); err != nil {
			log.Error("deploy: message is not JSON; it goes to the dead-letter queue", "err", err, "body", truncate(rec.Body))
			batch.Fail(rec.MessageId)
			continue
		}
		switch {
		case m.Cairn == "heartbeat" || m.Cairn == "check":
			if m.Deployment == "" || m.Run == "" {
				log.Error("deploy: "+m.Cairn+" without deployment or run", "body", truncate(rec.Body))
				batch.Fail(rec.MessageId)
				continue
			}
			var t Trigger // a delayed check only asks for a step
			if m.Cairn == "heartbeat" {
				t.Beats = []int{m.Beat}
			}
			batch.Add(stepKey{m.Deployment, m.Run}, rec.MessageId, t)
		case m.Cairn == "replan":
			if m.Deployment == "" || m.Run == "" {
				log.Error("deploy: replan without deployment or run", "body", truncate(rec.Body))
				batch.Fail(rec.MessageId)
				continue
			}
			if err := d.start.replan(runScope(ctx, m.Deployment, m.Run), m.Deployment, m.Run, rec.Body); err != nil {
				log.Error("deploy: replan not started; it is delivered again", "err", err)
				batch.Fail(rec.MessageId)
			}
		case m.DetailType == StackStatusChange && m.Source == "aws.cloudformation":
			var det stackStatusDetail
			if err := json.Unmarshal(m.Detail, &det); err != nil || det.StackID == "" {
				log.Error("deploy: stack status event without a stack id", "err", err, "body", truncate(rec.Body))
				batch.Fail(rec.MessageId)
				continue
			}
			if !settles(det.StatusDetails.Status) {
				log.Debug("deploy: intermediate stack status ignored", "stack_id", det.StackID, "status", det.StatusDetails.Status)
				continue
			}
			idx, err := d.runs.find(bucket.WithScope(ctx, bucket.Routing()), det.StackID)
			if err != nil {
				log.Warn("deploy: cannot look up the run of a stack event", "err", err)
				batch.Fail(rec.MessageId)
				continue
			}
			if idx == nil {
				log.Debug("deploy: stack event of no open run ignored", "stack_id", det.StackID, "status", det.StatusDetails.Status)
				continue
			}
			batch.Add(stepKey{idx.Deployment, idx.Run}, rec.MessageId, Trigger{Stacks: eventKeys(det.StackID, d.cfg.Region)})
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
				switch up.Kind {
				case bucket.ApprovalUpload:
					start = d.start.approval
				case bucket.ApplyUpload:
					start = d.start.content
				}
				if err := start(bucket.WithScope(ctx, bucket.ForDeployment(up.Deployment)), u, up); err != nil {
					errs = append(errs, err)
				}
			}
			if err := errors.Join(errs...); err != nil {
				log.Error("deploy: upload not started; it is delivered again", "err", err)
				batch.Fail(rec.MessageId)
			}
		default:
			log.Error("deploy: unknown message; it goes to the dead-letter queue", "body", truncate(rec.Body))
			batch.Fail(rec.MessageId)
		}
	}
	batch.Run(func(k stepKey, t Trigger) error {
		return d.step.trigger(runScope(ctx, k.deployment, k.run), k.deployment, k.run, t)
	},
		func(k stepKey, err error) {
			d.runLogger(k.deployment, k.run).Error("deploy: step failed; its trigger is delivered again", "err", err)
		})
	d.resumeStalled(ctx, batch)
	return batch.Response(), nil
}

type stepKey struct{ deployment, run string }

// resumeStalled resumes the open runs whose heartbeat chain has not beaten for
// Config.StallAfter (a lost heartbeat), other than those stepped just now, with a new
// chain: whatever triggers the deployer, a stalled run is carried on within about a
// minute, and one fenced meanwhile is closed as abandoned. Failures are logged: the next
// invocation looks again.
func (d *Driver) resumeStalled(ctx context.Context, stepped *lambdajob.Batch[stepKey, Trigger]) {
	stalled, err := d.runs.stalled(bucket.WithScope(ctx, bucket.Routing()), d.clk.Now().Add(-d.cfg.StallAfter))
	if err != nil {
		d.log.Warn("deploy: cannot look for stalled runs", "err", err)
		return
	}
	for _, idx := range stalled {
		if stepped.Asked(stepKey{idx.Deployment, idx.Run}) {
			continue
		}
		if err := d.step.trigger(runScope(ctx, idx.Deployment, idx.Run), idx.Deployment, idx.Run, Trigger{restart: true}); err != nil {
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
