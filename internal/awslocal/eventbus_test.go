package awslocal_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awslocal"
)

func ebCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// received waits briefly for one event on a queue and returns its detail-type, "" when
// none comes.
func (v *env) received(t *testing.T, url string) string {
	t.Helper()
	out, err := v.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 1, MaxNumberOfMessages: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) == 0 {
		return ""
	}
	var ev events.CloudWatchEvent
	if err := json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &ev); err != nil {
		t.Fatalf("not an event: %s", aws.ToString(out.Messages[0].Body))
	}
	v.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: out.Messages[0].ReceiptHandle})
	return ev.DetailType
}

// TestCustomEventBus: CreateEventBus makes a bus; rules on it see the events put on it,
// and only those; the API's buses, rules and targets survive a restart; EventBridge's
// refusals come in its words.
func TestCustomEventBus(t *testing.T) {
	dir := t.TempDir()
	v := start(t, awslocal.Options{Logger: quiet(), Dir: dir})
	ctx := context.Background()
	cfg, err := v.e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eb := eventbridge.NewFromConfig(cfg)
	bus, err := eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String("orders"), Description: aws.String("shop orders")})
	if err != nil || aws.ToString(bus.EventBusArn) != "arn:aws:events:us-east-1:000000000000:event-bus/orders" {
		t.Fatalf("create bus: %v %v", bus, err)
	}
	if _, err := eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String("orders")}); ebCode(err) != "ResourceAlreadyExistsException" {
		t.Fatalf("create twice: %v", err)
	}
	url, arn := v.queue(t, "order-events", nil)
	rule, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("big"), EventBusName: aws.String("orders"),
		EventPattern: aws.String(`{"source":["shop"],"detail":{"total":[{"numeric":[">",100]}]}}`)})
	if err != nil || aws.ToString(rule.RuleArn) != "arn:aws:events:us-east-1:000000000000:rule/orders/big" {
		t.Fatalf("put rule: %v %v", rule, err)
	}
	if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String("big"), EventBusName: aws.String("orders"),
		Targets: []ebtypes.Target{{Id: aws.String("q"), Arn: aws.String(arn)}}}); err != nil {
		t.Fatal(err)
	}
	put := func(bus, detailType, detail string) *eventbridge.PutEventsOutput {
		t.Helper()
		out, err := eb.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{EventBusName: aws.String(bus),
			Source: aws.String("shop"), DetailType: aws.String(detailType), Detail: aws.String(detail)}}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	put("orders", "small order", `{"total":5}`)
	put("default", "big order on the default bus", `{"total":500}`)
	put("arn:aws:events:us-east-1:000000000000:event-bus/orders", "big order", `{"total":500}`)
	if got := v.received(t, url); got != "big order" {
		t.Fatalf("the rule of the orders bus got %q, want only the big order put on it", got)
	}
	if got := v.received(t, url); got != "" {
		t.Fatalf("and then %q", got)
	}
	if out := put("nope", "x", `{}`); out.FailedEntryCount != 1 || aws.ToString(out.Entries[0].ErrorCode) != "ResourceNotFoundException" {
		t.Fatalf("an event for a missing bus: %+v", out.Entries)
	}
	bad, err := eb.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{Source: aws.String("shop"), DetailType: aws.String("x"), Detail: aws.String("not json")}}})
	if err != nil || bad.FailedEntryCount != 1 || aws.ToString(bad.Entries[0].ErrorCode) != "MalformedDetail" {
		t.Fatalf("malformed detail: %+v %v", bad, err)
	}
	if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("tick"), EventBusName: aws.String("orders"), ScheduleExpression: aws.String("rate(5 minutes)")}); ebCode(err) != "ValidationException" {
		t.Fatalf("a schedule on a custom bus: %v", err)
	}
	if _, err := eb.DeleteRule(ctx, &eventbridge.DeleteRuleInput{Name: aws.String("big"), EventBusName: aws.String("orders")}); ebCode(err) != "ValidationException" {
		t.Fatalf("delete a rule with targets: %v", err)
	}
	if _, err := eb.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String("none"), EventBusName: aws.String("orders")}); ebCode(err) != "ResourceNotFoundException" {
		t.Fatalf("describe a missing rule: %v", err)
	}
	if _, err := eb.DeleteEventBus(ctx, &eventbridge.DeleteEventBusInput{Name: aws.String("default")}); ebCode(err) != "ValidationException" {
		t.Fatalf("delete the default bus: %v", err)
	}

	// A restart keeps what the API made.
	if err := v.e.Close(); err != nil {
		t.Fatal(err)
	}
	v = start(t, awslocal.Options{Logger: quiet(), Dir: dir})
	cfg, _ = v.e.AWSConfig(ctx)
	eb = eventbridge.NewFromConfig(cfg)
	buses, err := eb.ListEventBuses(ctx, &eventbridge.ListEventBusesInput{})
	if err != nil || len(buses.EventBuses) != 2 || aws.ToString(buses.EventBuses[1].Name) != "orders" || aws.ToString(buses.EventBuses[1].Description) != "shop orders" {
		t.Fatalf("buses after a restart: %+v %v", buses, err)
	}
	targets, err := eb.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: aws.String("big"), EventBusName: aws.String("orders")})
	if err != nil || len(targets.Targets) != 1 || aws.ToString(targets.Targets[0].Arn) != arn {
		t.Fatalf("targets after a restart: %+v %v", targets, err)
	}
	put("orders", "after the restart", `{"total":1000}`)
	if got := v.received(t, url); got != "after the restart" {
		t.Fatalf("after a restart the rule got %q", got)
	}
	if _, err := eb.DisableRule(ctx, &eventbridge.DisableRuleInput{Name: aws.String("big"), EventBusName: aws.String("orders")}); err != nil {
		t.Fatal(err)
	}
	put("orders", "while disabled", `{"total":1000}`)
	if got := v.received(t, url); got != "" {
		t.Fatalf("a disabled rule delivered %q", got)
	}
}

// TestStackEventBus: AWS::Events::EventBus makes a bus, AWS::Events::Rule with
// EventBusName a rule on it, and a default-bus rule whose target is the bus forwards to it.
func TestStackEventBus(t *testing.T) {
	v := startStacks(t)
	ctx := context.Background()
	out := v.deploy(t, "shop-bus", `Resources:
  Bus:
    Type: AWS::Events::EventBus
    Properties: {Name: shop}
  Queue:
    Type: AWS::SQS::Queue
  OnBus:
    Type: AWS::Events::Rule
    Properties:
      EventBusName: !Ref Bus
      EventPattern: {source: [shop]}
      Targets: [{Id: q, Arn: !GetAtt Queue.Arn}]
  Forward:
    Type: AWS::Events::Rule
    Properties:
      EventPattern: {source: [shop], detail-type: [forwarded]}
      Targets: [{Id: bus, Arn: !GetAtt Bus.Arn}]
Outputs:
  Bus: {Value: !Ref Bus}
  BusArn: {Value: !GetAtt Bus.Arn}
  Queue: {Value: !Ref Queue}
  RuleArn: {Value: !GetAtt OnBus.Arn}
`)
	if out["Bus"] != "shop" || out["BusArn"] != "arn:aws:events:us-east-1:000000000000:event-bus/shop" || out["RuleArn"] != "arn:aws:events:us-east-1:000000000000:rule/shop/"+lastPart(out["RuleArn"]) {
		t.Fatalf("outputs %v", out)
	}
	cfg, _ := v.e.AWSConfig(ctx)
	eb := eventbridge.NewFromConfig(cfg)
	for _, e := range []ebtypes.PutEventsRequestEntry{
		{EventBusName: aws.String("shop"), Source: aws.String("shop"), DetailType: aws.String("direct"), Detail: aws.String("{}")},
		{Source: aws.String("shop"), DetailType: aws.String("forwarded"), Detail: aws.String("{}")},
	} {
		if _, err := eb.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{e}}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for deadline := time.Now().Add(5 * time.Second); len(got) < 2 && time.Now().Before(deadline); {
		if dt := v.received(t, out["Queue"]); dt != "" {
			got[dt] = true
		}
	}
	if !got["direct"] || !got["forwarded"] {
		t.Fatalf("the bus's rule got %v, want the direct event and the forwarded one", got)
	}
}

// TestStreamEventSourceMapping: a DynamoDB table's StreamArn is a stream ARN of the table,
// a Kinesis stream's Arn the ARN of the stream its Ref names, and an event source mapping
// from either is accepted as Lambda accepts it (StartingPosition required), also those SAM
// makes for DynamoDB and Kinesis events.
func TestStreamEventSourceMapping(t *testing.T) {
	v := startStacks(t)
	body := `Transform: AWS::Serverless-2016-10-31
Resources:
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
      KeySchema: [{AttributeName: id, KeyType: HASH}]
      BillingMode: PAY_PER_REQUEST
      StreamSpecification: {StreamViewType: NEW_AND_OLD_IMAGES}
  Kinesis:
    Type: AWS::Kinesis::Stream
    Properties: {ShardCount: 1}
  Handler:
    Type: AWS::Lambda::Function
    Properties: {Runtime: provided.al2023, Handler: bootstrap, Role: arn:aws:iam::000000000000:role/fn, Code: {ZipFile: x}}
  Mapping:
    Type: AWS::Lambda::EventSourceMapping
    Properties: {EventSourceArn: !GetAtt Table.StreamArn, FunctionName: !Ref Handler, StartingPosition: LATEST, BatchSize: 100}
  SamFunction:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: provided.al2023
      Handler: bootstrap
      InlineCode: x
      Events:
        Changes: {Type: DynamoDB, Properties: {Stream: !GetAtt Table.StreamArn, StartingPosition: TRIM_HORIZON}}
        Records: {Type: Kinesis, Properties: {Stream: !GetAtt Kinesis.Arn, StartingPosition: LATEST, BatchSize: 100}}
Outputs:
  Stream: {Value: !GetAtt Table.StreamArn}
  Table: {Value: !Ref Table}
  KinesisArn: {Value: !GetAtt Kinesis.Arn}
  KinesisName: {Value: !Ref Kinesis}
`
	ctx := context.Background()
	if _, err := v.cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("streams"), TemplateBody: aws.String(body),
		Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityIam, cfntypes.CapabilityCapabilityAutoExpand}}); err != nil {
		t.Fatal(err)
	}
	out := waitStack(t, v.cf, "streams", cfntypes.StackStatusCreateComplete)
	if !strings.HasPrefix(out["Stream"], "arn:aws:dynamodb:us-east-1:000000000000:table/"+out["Table"]+"/stream/") {
		t.Fatalf("stream ARN %s of table %s", out["Stream"], out["Table"])
	}
	if want := "arn:aws:kinesis:us-east-1:000000000000:stream/" + out["KinesisName"]; out["KinesisName"] == "" || out["KinesisArn"] != want {
		t.Fatalf("Kinesis stream %q: Arn %s, want %s", out["KinesisName"], out["KinesisArn"], want)
	}
	reason := v.failure(t, "no-position", `Resources:
  Table:
    Type: AWS::DynamoDB::Table
    Properties: {AttributeDefinitions: [{AttributeName: id, AttributeType: S}], KeySchema: [{AttributeName: id, KeyType: HASH}], BillingMode: PAY_PER_REQUEST, StreamSpecification: {StreamViewType: KEYS_ONLY}}
  Handler:
    Type: AWS::Lambda::Function
    Properties: {Runtime: provided.al2023, Handler: bootstrap, Role: arn:aws:iam::000000000000:role/fn, Code: {ZipFile: x}}
  Mapping:
    Type: AWS::Lambda::EventSourceMapping
    Properties: {EventSourceArn: !GetAtt Table.StreamArn, FunctionName: !Ref Handler}
`)
	contains(t, "a stream mapping without StartingPosition", reason, "Mapping: ", "StartingPosition is required")
}
