package awslocal_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cairn-dev/cairn/internal/awslocal"
)

// stackTemplate makes one resource of each type the emulator's services provide.
const stackTemplate = `Parameters:
  Greeting: {Type: String, Default: hello}
Resources:
  DLQ:
    Type: AWS::SQS::Queue
  Orders:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 45
      RedrivePolicy: {deadLetterTargetArn: !GetAtt DLQ.Arn, maxReceiveCount: 3}
  OrdersPolicy:
    Type: AWS::SQS::QueuePolicy
    Properties:
      Queues: [!Ref Orders]
      PolicyDocument: {Version: "2012-10-17", Statement: [{Effect: Allow, Principal: {Service: sns.amazonaws.com}, Action: "sqs:SendMessage", Resource: !GetAtt Orders.Arn}]}
  Topic:
    Type: AWS::SNS::Topic
    Properties: {DisplayName: orders}
  Raw:
    Type: AWS::SNS::Subscription
    Properties:
      TopicArn: !Ref Topic
      Protocol: sqs
      Endpoint: !GetAtt Orders.Arn
      RawMessageDelivery: true
      FilterPolicy: {kind: [order]}
  Setting:
    Type: AWS::SSM::Parameter
    Properties: {Name: /shop/greeting, Type: String, Value: !Ref Greeting}
  Uploads:
    Type: AWS::S3::Bucket
    DependsOn: OrdersPolicy
    Properties:
      VersioningConfiguration: {Status: Enabled}
      NotificationConfiguration:
        QueueConfigurations:
          - {Event: "s3:ObjectCreated:*", Queue: !GetAtt Orders.Arn, Filter: {S3Key: {Rules: [{Name: prefix, Value: in/}]}}}
  Handler:
    Type: AWS::Lambda::Function
    Properties:
      Runtime: provided.al2023
      Handler: bootstrap
      Role: arn:aws:iam::000000000000:role/fn
      Code: {ZipFile: "x"}
      Timeout: 7
      Environment: {Variables: {QUEUE: !Ref Orders}}
  Work:
    Type: AWS::SQS::Queue
  Mapping:
    Type: AWS::Lambda::EventSourceMapping
    Properties: {EventSourceArn: !GetAtt Work.Arn, FunctionName: !Ref Handler, BatchSize: 5}
  Forward:
    Type: AWS::Events::Rule
    Properties:
      EventPattern: {source: [shop.orders], detail: {total: [{numeric: [">", 100]}]}}
      Targets: [{Id: orders, Arn: !Ref Topic, Input: '{"kind":"big"}'}]
Outputs:
  Orders: {Value: !Ref Orders}
  OrdersArn: {Value: !GetAtt Orders.Arn}
  Topic: {Value: !Ref Topic}
  Bucket: {Value: !Ref Uploads}
  Function: {Value: !Ref Handler}
  WorkQueue: {Value: !Ref Work}
`

// TestStackResourcesAreReal: what a stack creates exists in the emulator's services and is
// wired as the template says; Ref and GetAtt return the real identifiers; out-of-band
// changes show as drift; deleting the stack deletes them.
func TestStackResourcesAreReal(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet(), CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: time.Millisecond, ChangeSetDelay: time.Millisecond}})
	ctx := context.Background()
	cfg, err := v.e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cf := cloudformation.NewFromConfig(cfg)
	var mu sync.Mutex
	var invoked []events.SQSEvent
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-orders"), TemplateBody: aws.String(stackTemplate)}); err != nil {
		t.Fatal(err)
	}
	out := waitStack(t, cf, "shop-orders", cfntypes.StackStatusCreateComplete)

	// Ref of a queue is its real URL, GetAtt its ARN; attributes are the template's.
	if want := v.e.URL() + "/000000000000/"; !strings.HasPrefix(out["Orders"], want) || out["OrdersArn"] != "arn:aws:sqs:us-east-1:000000000000:"+lastPart(out["Orders"]) {
		t.Fatalf("queue outputs %v", out)
	}
	attrs, err := v.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(out["Orders"]), AttributeNames: []sqstypes.QueueAttributeName{"All"}})
	if err != nil || attrs.Attributes["VisibilityTimeout"] != "45" || !strings.Contains(attrs.Attributes["RedrivePolicy"], `"maxReceiveCount":3`) || !strings.Contains(attrs.Attributes["Policy"], "sns.amazonaws.com") {
		t.Fatalf("queue attributes %v %v", attrs, err)
	}
	// The subscription delivers raw, filtered messages.
	for _, kind := range []string{"refund", "order"} {
		if _, err := v.sns.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(out["Topic"]), Message: aws.String("a " + kind),
			MessageAttributes: map[string]snstypesAttr{"kind": {DataType: aws.String("String"), StringValue: aws.String(kind)}}}); err != nil {
			t.Fatal(err)
		}
	}
	if m := v.receive(t, out["Orders"]); aws.ToString(m.Body) != "a order" {
		t.Fatalf("received %q through the stack's subscription, want the raw, filtered %q", aws.ToString(m.Body), "a order")
	}
	// The parameter is in Parameter Store.
	p, err := ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/shop/greeting")})
	if err != nil || aws.ToString(p.Parameter.Value) != "hello" {
		t.Fatalf("parameter %v %v", p, err)
	}
	// The bucket is versioned and notifies the queue.
	if ver, err := v.s3.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(out["Bucket"])}); err != nil || ver.Status != "Enabled" {
		t.Fatalf("versioning %v %v", ver, err)
	}
	if _, err := v.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(out["Bucket"]), Key: aws.String("in/x.txt"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	var s3ev events.S3Event
	if m := v.receive(t, out["Orders"]); json.Unmarshal([]byte(aws.ToString(m.Body)), &s3ev) != nil || len(s3ev.Records) != 1 || s3ev.Records[0].S3.Object.Key != "in/x.txt" {
		t.Fatalf("bucket notification: %s", aws.ToString(m.Body))
	}
	// The rule forwards matching events to the topic, whose subscription filters them.
	if err := v.e.PutEvent(ctx, events.CloudWatchEvent{Source: "shop.orders", DetailType: "Order", Detail: json.RawMessage(`{"total": 250}`)}); err != nil {
		t.Fatal(err)
	}
	// The function is recorded with its configuration; the mapping invokes the handler
	// once one is registered.
	fn, ok := v.e.Function(out["Function"])
	if !ok || fn.Timeout != 7*time.Second || fn.Environment["QUEUE"] != out["Orders"] || fn.Bound {
		t.Fatalf("function %+v %v", fn, ok)
	}
	if _, err := v.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(out["WorkQueue"]), MessageBody: aws.String("job")}); err != nil {
		t.Fatal(err)
	}
	got := make(chan events.SQSEvent, 1)
	if err := v.e.RegisterFunction(out["Function"], func(ctx context.Context, ev events.SQSEvent) error {
		mu.Lock()
		invoked = append(invoked, ev)
		mu.Unlock()
		got <- ev
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-got:
		if len(ev.Records) != 1 || ev.Records[0].Body != "job" {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stack's event source mapping did not invoke the registered handler")
	}

	// Drift: changing the queue out of band is detected.
	if _, err := v.sqs.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(out["Orders"]), Attributes: map[string]string{"VisibilityTimeout": "90"}}); err != nil {
		t.Fatal(err)
	}
	d, err := cf.DetectStackDrift(ctx, &cloudformation.DetectStackDriftInput{StackName: aws.String("shop-orders")})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st, err := cf.DescribeStackDriftDetectionStatus(ctx, &cloudformation.DescribeStackDriftDetectionStatusInput{StackDriftDetectionId: d.StackDriftDetectionId})
		if err != nil {
			t.Fatal(err)
		}
		if st.DetectionStatus == cfntypes.StackDriftDetectionStatusDetectionComplete {
			if st.StackDriftStatus != cfntypes.StackDriftStatusDrifted || aws.ToInt32(st.DriftedStackResourceCount) != 1 {
				t.Fatalf("drift %+v", st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("drift detection did not complete")
		}
	}
	drifts, err := cf.DescribeStackResourceDrifts(ctx, &cloudformation.DescribeStackResourceDriftsInput{StackName: aws.String("shop-orders"),
		StackResourceDriftStatusFilters: []cfntypes.StackResourceDriftStatus{cfntypes.StackResourceDriftStatusModified}})
	if err != nil || len(drifts.StackResourceDrifts) != 1 || aws.ToString(drifts.StackResourceDrifts[0].LogicalResourceId) != "Orders" {
		t.Fatalf("drifts %+v %v", drifts, err)
	}
	diff := drifts.StackResourceDrifts[0].PropertyDifferences
	if len(diff) != 1 || aws.ToString(diff[0].PropertyPath) != "/VisibilityTimeout" || aws.ToString(diff[0].ExpectedValue) != "45" || aws.ToString(diff[0].ActualValue) != "90" {
		t.Fatalf("differences %+v", diff)
	}

	// Deleting the stack deletes what it made.
	if _, err := v.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(out["Bucket"]), Key: aws.String("in/x.txt")}); err != nil {
		t.Fatal(err)
	}
	emptyBucket(t, v.s3, out["Bucket"])
	if _, err := cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("shop-orders")}); err != nil {
		t.Fatal(err)
	}
	waitDeleted(t, cf, "shop-orders")
	if _, err := v.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(lastPart(out["Orders"]))}); err == nil {
		t.Fatal("the stack's queue outlived the stack")
	}
	if _, ok := v.e.Function(out["Function"]); ok {
		t.Fatal("the stack's function outlived the stack")
	}
}

type snstypesAttr = snstypes.MessageAttributeValue

func lastPart(s string) string { return s[strings.LastIndexAny(s, "/:")+1:] }

// waitStack waits until the stack settles in want and returns its outputs.
func waitStack(t *testing.T, cf *cloudformation.Client, name string, want cfntypes.StackStatus) map[string]string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		out, err := cf.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		st := out.Stacks[0]
		if !strings.HasSuffix(string(st.StackStatus), "_IN_PROGRESS") {
			if st.StackStatus != want {
				evs, _ := cf.DescribeStackEvents(context.Background(), &cloudformation.DescribeStackEventsInput{StackName: aws.String(name)})
				var lines []string
				if evs != nil {
					for _, ev := range evs.StackEvents {
						if r := aws.ToString(ev.ResourceStatusReason); r != "" {
							lines = append(lines, aws.ToString(ev.LogicalResourceId)+" "+string(ev.ResourceStatus)+": "+r)
						}
					}
				}
				t.Fatalf("stack %s is %s, want %s:\n%s", name, st.StackStatus, want, strings.Join(lines, "\n"))
			}
			m := map[string]string{}
			for _, o := range st.Outputs {
				m[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
			}
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("stack %s still %s", name, st.StackStatus)
		}
	}
}

func waitDeleted(t *testing.T, cf *cloudformation.Client, name string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		out, err := cf.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
		if err != nil || out.Stacks[0].StackStatus == cfntypes.StackStatusDeleteComplete {
			return
		}
		if st := out.Stacks[0].StackStatus; st == cfntypes.StackStatusDeleteFailed || time.Now().After(deadline) {
			t.Fatalf("stack %s: %s (%s)", name, st, aws.ToString(out.Stacks[0].StackStatusReason))
		}
	}
}

// emptyBucket deletes every version and delete marker, as a bucket must be empty to go.
func emptyBucket(t *testing.T, c *s3.Client, bucket string) {
	t.Helper()
	ctx := context.Background()
	out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range out.Versions {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: v.Key, VersionId: v.VersionId}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range out.DeleteMarkers {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: m.Key, VersionId: m.VersionId}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStackParametersFromParameterStore: an AWS::SSM::Parameter::Value parameter takes the
// Parameter Store's value, and one naming a parameter that does not exist is refused as
// CloudFormation refuses it; AWS's public parameters get a stand-in.
func TestStackParametersFromParameterStore(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet(), CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: time.Millisecond, ChangeSetDelay: time.Millisecond}})
	ctx := context.Background()
	cfg, _ := v.e.AWSConfig(ctx)
	cf := cloudformation.NewFromConfig(cfg)
	if _, err := ssm.NewFromConfig(cfg).PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/shop/env"), Value: aws.String("prod"), Type: "String"}); err != nil {
		t.Fatal(err)
	}
	tpl := func(name string) string {
		return `Parameters:
  Env: {Type: "AWS::SSM::Parameter::Value<String>", Default: ` + name + `}
  Image: {Type: "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>", Default: /aws/service/ami-amazon-linux-latest/al2023-ami-kernel-6.1-arm64}
Resources:
  Topic: {Type: AWS::SNS::Topic, Properties: {DisplayName: !Ref Env}}
Outputs:
  Env: {Value: !Ref Env}
  Image: {Value: !Ref Image}
`
	}
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-params"), TemplateBody: aws.String(tpl("/shop/env"))}); err != nil {
		t.Fatal(err)
	}
	out := waitStack(t, cf, "shop-params", cfntypes.StackStatusCreateComplete)
	if out["Env"] != "prod" || !strings.HasPrefix(out["Image"], "ami-") {
		t.Fatalf("outputs %v", out)
	}
	_, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-params-2"), TemplateBody: aws.String(tpl("/shop/missing"))})
	if err == nil || !strings.Contains(err.Error(), "ValidationError: Unable to fetch parameters [/shop/missing] from parameter store for this account.") {
		t.Fatalf("CreateStack with a missing parameter: %v", err)
	}
}
