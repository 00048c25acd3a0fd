// Package localcairn creates, in the local AWS emulator, what `make deploy` creates in AWS
// with infra/stack.go: cairn's bucket with its upload notifications, the deploy, ports and
// drift queues with their dead-letter queues, the ports and notifications topics, the
// event rules, the drift schedule, and a CloudFormation stack named cairn whose exports
// (cairn-bucket-name, cairn-ports-service-token, cairn-notifications-topic-arn) let the
// same bundles and templates work locally and in AWS.
//
// Everything is created through the SDK clients, as `make deploy` would, except what the
// emulator offers no API for (event rules, event source mappings, schedules), which goes
// through the emulator's own Go API. Provision is idempotent, so it runs again on an
// emulator that keeps its state in a folder.
//
// The Lambda handlers are passed in as values (Handlers), so this package imports none of
// them and every handler package may use it in its tests.
package localcairn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/clock"

	layout "github.com/cairn-dev/cairn/internal/bucket"
)

// Names shared with infra/stack.go and the templates of managed stacks.
const (
	ExportBucketName         = "cairn-bucket-name"
	ExportPortsServiceToken  = "cairn-ports-service-token"
	ExportNotificationsTopic = "cairn-notifications-topic-arn"

	// StackName is the emulated CloudFormation stack holding the exports.
	StackName = "cairn"

	// Function names, as `cairn local invoke` knows them.
	DeployerFunction = "deployer"
	PortsFunction    = "ports"
	DriftFunction    = "drift"

	// Event detail-types routed to queues, as the EventBridge rules in AWS do.
	StackStatusChange = "CloudFormation Stack Status Change"
	DriftStatusChange = "CloudFormation Drift Detection Status Change"
)

// Defaults of Options, the same as infra/cdk.json's context, so a bundle that works locally
// works in AWS.
const (
	DefaultDriftSchedule = "rate(1 day)"
	DefaultPortPools     = "default=20000-29999"
	DefaultNamespaces    = "shop"
)

// Queue settings, from infra/stack.go: the visibility timeout outlasts the consumer's
// timeout, and a message received maxReceiveCount times moves to the dead-letter queue.
type queueSpec struct {
	name            string
	visibility      time.Duration
	retention       time.Duration
	maxReceiveCount int
}

var (
	deployQueue = queueSpec{"cairn-deploy", 5 * time.Minute, 4 * 24 * time.Hour, 10}
	portsQueue  = queueSpec{"cairn-ports", 2 * time.Minute, 4 * 24 * time.Hour, 5}
	// The drift function continues sweeps through delayed messages and receives drift
	// status events; its visibility outlasts its 5-minute timeout.
	driftQueue = queueSpec{"cairn-drift", 6 * time.Minute, 4 * 24 * time.Hour, 5}
)

const (
	dlqVisibility = 30 * time.Second
	dlqRetention  = 14 * 24 * time.Hour
)

// Function timeouts, from infra/stack.go.
var timeouts = map[string]time.Duration{
	DeployerFunction: 2 * time.Minute,
	PortsFunction:    30 * time.Second,
	DriftFunction:    5 * time.Minute,
}

// Options configures Provision. Zero values take the defaults.
type Options struct {
	// Bucket defaults to cairn-ACCOUNT-REGION, the name infra/stack.go gives it.
	Bucket string
	// DriftSchedule is the drift function's EventBridge schedule expression
	// (DefaultDriftSchedule).
	DriftSchedule string
	// PortPools is the CAIRN_PORT_POOLS value (DefaultPortPools).
	PortPools string
	// Namespaces is the CAIRN_NAMESPACES value: the stack name prefixes cairn manages
	// (DefaultNamespaces).
	Namespaces []string
	// StackTimeout bounds the wait for the cairn stack to settle (default 2 minutes).
	StackTimeout time.Duration
}

// Queue names one provisioned queue.
type Queue struct {
	Name, URL, ARN string
}

// Cairn is what Provision created: names, URLs and ARNs.
type Cairn struct {
	Bucket        string
	Deploy        Queue
	DeployDLQ     Queue
	Ports         Queue
	PortsDLQ      Queue
	Drift         Queue
	DriftDLQ      Queue
	PortsTopic    string // ARN; the ServiceToken of Custom::PortAllocation
	Notifications string // ARN of the notifications topic
	StackID       string // of the cairn stack
	DriftSchedule string
	PortPools     string
	Namespaces    []string
	// ResponseHosts is the emulator's host:port, the only host custom resource handlers
	// may answer locally.
	ResponseHosts string
}

// Env returns the environment (KEY=value) the functions read, as infra/stack.go sets it
// on the Lambdas, plus CAIRN_DRIFT_QUEUE_URL and CAIRN_RESPONSE_URL_HOSTS.
func (c *Cairn) Env() []string {
	return []string{
		"CAIRN_BUCKET=" + c.Bucket,
		"CAIRN_NOTIFICATIONS_TOPIC=" + c.Notifications,
		"CAIRN_DEPLOY_QUEUE_URL=" + c.Deploy.URL,
		"CAIRN_DRIFT_QUEUE_URL=" + c.Drift.URL,
		"CAIRN_PORT_POOLS=" + c.PortPools,
		"CAIRN_NAMESPACES=" + strings.Join(c.Namespaces, ","),
		"CAIRN_RESPONSE_URL_HOSTS=" + c.ResponseHosts,
		// The emulator's CloudFormation takes about a second per resource, so runs advance on
		// a shorter heartbeat than AWS's default of 15 s.
		"CAIRN_HEARTBEAT_SECONDS=" + strconv.Itoa(LocalHeartbeatSeconds),
	}
}

// LocalHeartbeatSeconds is the deployer's heartbeat in the emulator.
const LocalHeartbeatSeconds = 3

// Provision creates cairn's resources in the started emulator e, or finds them when a
// previous Provision on the same state created them, and routes stack status and drift
// status events to the deploy and drift queues. Call it once per started emulator (the
// emulator keeps event rules in memory only), then Register.
func Provision(ctx context.Context, e *awslocal.Emulator, o Options) (*Cairn, error) {
	if e.URL() == "" {
		return nil, errors.New("provision cairn: the emulator is not started: call Start first")
	}
	if o.Bucket == "" {
		o.Bucket = "cairn-" + e.AccountID() + "-" + e.Region()
	}
	if o.DriftSchedule == "" {
		o.DriftSchedule = DefaultDriftSchedule
	}
	if o.PortPools == "" {
		o.PortPools = DefaultPortPools
	}
	if len(o.Namespaces) == 0 {
		o.Namespaces = strings.Split(DefaultNamespaces, ",")
	}
	if o.StackTimeout <= 0 {
		o.StackTimeout = 2 * time.Minute
	}
	u, err := url.Parse(e.URL())
	if err != nil {
		return nil, fmt.Errorf("provision cairn: emulator URL %q: %w", e.URL(), err)
	}
	cfg, err := e.SetupConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("provision cairn: %w", err)
	}
	p := provisioner{
		e: e, clk: e.Clock(),
		s3: awsclient.S3(cfg), sqs: sqs.NewFromConfig(cfg), sns: sns.NewFromConfig(cfg), cfn: cloudformation.NewFromConfig(cfg),
	}
	c := &Cairn{Bucket: o.Bucket, DriftSchedule: o.DriftSchedule, PortPools: o.PortPools, Namespaces: o.Namespaces, ResponseHosts: u.Host}

	for _, q := range []struct {
		spec      queueSpec
		main, dlq *Queue
	}{{deployQueue, &c.Deploy, &c.DeployDLQ}, {portsQueue, &c.Ports, &c.PortsDLQ}, {driftQueue, &c.Drift, &c.DriftDLQ}} {
		if *q.main, *q.dlq, err = p.queueWithDLQ(ctx, q.spec); err != nil {
			return nil, err
		}
	}
	if c.PortsTopic, err = p.topic(ctx, "cairn-ports"); err != nil {
		return nil, err
	}
	if c.Notifications, err = p.topic(ctx, "cairn-notifications"); err != nil {
		return nil, err
	}
	// The ports function unwraps the SNS envelope itself, as in AWS (no raw delivery).
	if _, err := p.sns.Subscribe(ctx, &sns.SubscribeInput{
		TopicArn: aws.String(c.PortsTopic), Protocol: aws.String("sqs"), Endpoint: aws.String(c.Ports.ARN),
		Attributes: map[string]string{"RawMessageDelivery": "false"},
	}); err != nil {
		return nil, fmt.Errorf("provision cairn: subscribe queue %s to topic %s: %w", c.Ports.Name, c.PortsTopic, err)
	}
	if err := p.bucket(ctx, c.Bucket, c.Deploy.ARN); err != nil {
		return nil, err
	}
	// The stack goes before the rules, so its own status events do not reach the deployer.
	if c.StackID, err = p.stack(ctx, c, o.StackTimeout); err != nil {
		return nil, err
	}
	if err := e.PutRule("cairn-stack-events", awslocal.EventPattern{Source: []string{"aws.cloudformation"}, DetailType: []string{StackStatusChange}}, c.Deploy.ARN); err != nil {
		return nil, fmt.Errorf("provision cairn: %w", err)
	}
	if err := e.PutRule("cairn-drift-events", awslocal.EventPattern{Source: []string{"aws.cloudformation"}, DetailType: []string{DriftStatusChange}}, c.Drift.ARN); err != nil {
		return nil, fmt.Errorf("provision cairn: %w", err)
	}
	return c, nil
}

// Handlers are the Lambda handlers to run in the emulator (anything lambda.Start
// accepts); a nil one is not registered.
type Handlers struct {
	Deployer, Ports, Drift any
}

// Register registers the given handlers under their function names with infra's timeouts
// and wires them as in AWS: the deploy queue to the deployer, the ports queue to the
// ports function and the drift queue and schedule to the drift function, every queue with
// batches of 10 and ReportBatchItemFailures. Call it once per emulator: each call adds
// pollers.
func (c *Cairn) Register(e *awslocal.Emulator, h Handlers) error {
	for _, f := range []struct {
		name    string
		handler any
		queue   string
	}{{DeployerFunction, h.Deployer, c.Deploy.Name}, {PortsFunction, h.Ports, c.Ports.Name}, {DriftFunction, h.Drift, c.Drift.Name}} {
		if f.handler == nil {
			continue
		}
		if err := e.RegisterFunction(f.name, f.handler, awslocal.WithTimeout(timeouts[f.name])); err != nil {
			return fmt.Errorf("register cairn's %s function: %w", f.name, err)
		}
		if err := e.AddEventSourceMapping(f.queue, f.name, awslocal.ESMOptions{BatchSize: 10, ReportBatchItemFailures: true}); err != nil {
			return fmt.Errorf("register cairn's %s function: %w", f.name, err)
		}
	}
	if h.Drift != nil {
		if err := e.AddSchedule("cairn-drift-schedule", c.DriftSchedule, DriftFunction); err != nil {
			return fmt.Errorf("register cairn's drift schedule: %w", err)
		}
	}
	return nil
}

type provisioner struct {
	e   *awslocal.Emulator
	clk clock.Clock
	s3  *s3.Client
	sqs *sqs.Client
	sns *sns.Client
	cfn *cloudformation.Client
}

func seconds(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

// queueWithDLQ creates the dead-letter queue and the queue redriving to it. CreateQueue
// with the same attributes returns the existing queue.
func (p provisioner) queueWithDLQ(ctx context.Context, q queueSpec) (main, dlq Queue, err error) {
	dlq, err = p.queue(ctx, q.name+"-dlq", map[string]string{
		"VisibilityTimeout":      seconds(dlqVisibility),
		"MessageRetentionPeriod": seconds(dlqRetention),
	})
	if err != nil {
		return main, dlq, err
	}
	main, err = p.queue(ctx, q.name, map[string]string{
		"VisibilityTimeout":      seconds(q.visibility),
		"MessageRetentionPeriod": seconds(q.retention),
		"RedrivePolicy":          fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, dlq.ARN, q.maxReceiveCount),
	})
	return main, dlq, err
}

func (p provisioner) queue(ctx context.Context, name string, attrs map[string]string) (Queue, error) {
	out, err := p.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return Queue{}, fmt.Errorf("provision cairn: create queue %s: %w", name, err)
	}
	q := Queue{Name: name, URL: aws.ToString(out.QueueUrl)}
	got, err := p.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return Queue{}, fmt.Errorf("provision cairn: read the ARN of queue %s: %w", name, err)
	}
	q.ARN = got.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	if q.ARN == "" {
		return Queue{}, fmt.Errorf("provision cairn: queue %s has no QueueArn attribute", name)
	}
	return q, nil
}

func (p provisioner) topic(ctx context.Context, name string) (string, error) {
	out, err := p.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("provision cairn: create topic %s: %w", name, err)
	}
	return aws.ToString(out.TopicArn), nil
}

// bucket creates the versioned bucket and sends new uploads (uploadFilters) to the
// deploy queue. The notification configuration is written only when it differs, because
// S3 sends every destination a test event each time it is written.
func (p provisioner) bucket(ctx context.Context, name, queueARN string) error {
	if _, err := p.s3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)}); err != nil {
		if _, err := p.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			return fmt.Errorf("provision cairn: create bucket %s: %w", name, err)
		}
	}
	if _, err := p.s3.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{
		Bucket: aws.String(name), VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled},
	}); err != nil {
		return fmt.Errorf("provision cairn: turn on versioning of bucket %s: %w", name, err)
	}
	var queues []s3types.QueueConfiguration
	for _, f := range layout.UploadFilters() {
		rules := []s3types.FilterRule{{Name: s3types.FilterRuleNamePrefix, Value: aws.String(f.Prefix)}}
		if f.Suffix != "" {
			rules = append(rules, s3types.FilterRule{Name: s3types.FilterRuleNameSuffix, Value: aws.String(f.Suffix)})
		}
		queues = append(queues, s3types.QueueConfiguration{
			Id:       aws.String("cairn-" + strings.TrimSuffix(f.Prefix, "/")),
			QueueArn: aws.String(queueARN),
			Events:   []s3types.Event{"s3:ObjectCreated:*"},
			Filter:   &s3types.NotificationConfigurationFilter{Key: &s3types.S3KeyFilter{FilterRules: rules}},
		})
	}
	cur, err := p.s3.GetBucketNotificationConfiguration(ctx, &s3.GetBucketNotificationConfigurationInput{Bucket: aws.String(name)})
	if err != nil {
		return fmt.Errorf("provision cairn: read the notifications of bucket %s: %w", name, err)
	}
	if len(cur.TopicConfigurations) == 0 && len(cur.LambdaFunctionConfigurations) == 0 && notifies(cur.QueueConfigurations) == notifies(queues) {
		return nil
	}
	if _, err := p.s3.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
		Bucket: aws.String(name), NotificationConfiguration: &s3types.NotificationConfiguration{QueueConfigurations: queues},
	}); err != nil {
		return fmt.Errorf("provision cairn: send uploads of bucket %s to %s: %w", name, queueARN, err)
	}
	return nil
}

// notifies renders queue notification configurations in a canonical form, for comparison.
func notifies(qs []s3types.QueueConfiguration) string {
	var out []string
	for _, q := range qs {
		var rules []string
		if q.Filter != nil && q.Filter.Key != nil {
			for _, r := range q.Filter.Key.FilterRules {
				rules = append(rules, strings.ToLower(string(r.Name))+"="+aws.ToString(r.Value))
			}
		}
		sort.Strings(rules)
		events := fmt.Sprint(q.Events)
		out = append(out, aws.ToString(q.QueueArn)+" "+events+" "+strings.Join(rules, ","))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
