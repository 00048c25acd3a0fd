package deployer

import (
	"context"
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
// (the Parameter Store paths of each namespace, as JSON; unset: every name),
// CAIRN_POLICY_FUNCTION (the policy function's name; unset: policies, if any, fail every
// plan and push closed); and
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
	c.PolicyFunction = e.Optional("CAIRN_POLICY_FUNCTION")
	return c, e.Err()
}

// NewFromAWS returns a Driver using clients built from awsCfg.
func NewFromAWS(awsCfg aws.Config, c Config) (*Driver, error) {
	if c.Region == "" {
		c.Region = awsCfg.Region
	}
	var judge Judger
	if c.PolicyFunction != "" {
		judge = FunctionJudge{API: awsclient.NewInvoker(awsCfg), Function: c.PolicyFunction}
	}
	return New(c, Clients{
		Judge: judge,
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

// Handle is the deployer Lambda's handler, and the one entry to every run: each SQS
// record (an S3 upload event, a replan, a CloudFormation stack status event, a heartbeat
// or a delayed check) is decoded into the trigger of the run it concerns (decode), the
// triggers of one run in a batch are merged, and each run then takes one turn (turn).
// Records that fail are reported in batchItemFailures, so one bad message never holds
// back the others. Every invocation then looks for open runs whose heartbeat was lost,
// and gives each a turn too (resumeStalled).
func (d *Driver) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	batch := lambdajob.NewBatch[stepKey](Trigger.merge)
	for _, rec := range ev.Records {
		log := d.log.With("message_id", rec.MessageId)
		asks, err := d.decode(ctx, rec, log)
		if err != nil {
			batch.Fail(rec.MessageId)
			continue
		}
		for _, a := range asks {
			batch.Add(a.key, rec.MessageId, a.trigger)
		}
	}
	batch.Run(func(k stepKey, t Trigger) error { return d.turn(ctx, k, t) },
		func(k stepKey, err error) {
			d.runLogger(k.deployment, k.run).Error("deploy: turn failed; its trigger is delivered again", "err", err)
		})
	d.resumeStalled(ctx, batch)
	return batch.Response(), nil
}

// resumeStalled resumes the open runs whose heartbeat chain has not beaten for
// Config.StallAfter (a lost heartbeat), other than those stepped just now, with a new
// chain: whatever triggers the deployer, a stalled run is carried on within about a
// minute, and one fenced meanwhile is closed as abandoned. Failures are logged: the next
// invocation looks again.
func (d *Driver) resumeStalled(ctx context.Context, stepped *lambdajob.Batch[stepKey, Trigger]) {
	stalled, err := d.runs.stalled(bucket.WithScope(ctx, bucket.Routing()), d.clk.Now().Add(-d.cfg.StallAfter))
	if err != nil && ctx.Err() != nil {
		// The invocation is ending (its deadline, or `cairn local up` stopping): nothing
		// is wrong, and the next invocation looks.
		d.log.Info("deploy: the invocation ended before it looked for stalled runs", "err", ctx.Err())
		return
	}
	if err != nil {
		d.log.Warn("deploy: cannot look for stalled runs", "err", err)
		return
	}
	for _, idx := range stalled {
		if stepped.Asked(stepKey{idx.Deployment, idx.Run}) {
			continue
		}
		if err := d.turn(ctx, stepKey{idx.Deployment, idx.Run}, Trigger{restart: true}); err != nil {
			d.runLogger(idx.Deployment, idx.Run).Warn("deploy: cannot resume a stalled run; the next invocation tries again", "err", err)
		}
	}
}
