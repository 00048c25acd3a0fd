package awslocal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

// TestStackUpdatesAndRollbacksChangeRealResources: an update changes the real queue in
// place, a change of a create-only property replaces it (the old queue is deleted in the
// cleanup), and a failed update rolls the real queue back to what it was.
func TestStackUpdatesAndRollbacksChangeRealResources(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet(), CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: time.Millisecond, ChangeSetDelay: time.Millisecond}})
	ctx := context.Background()
	cfg, _ := v.e.AWSConfig(ctx)
	cf := cloudformation.NewFromConfig(cfg)
	body := func(visibility, name string) string {
		return `Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties: {VisibilityTimeout: ` + visibility + `, QueueName: ` + name + `}
  Marker:
    Type: AWS::SNS::Topic
    DependsOn: Queue
    Properties: {DisplayName: "` + visibility + `"}
Outputs:
  Url: {Value: !Ref Queue}
`
	}
	visibility := func(url string) string {
		t.Helper()
		a, err := v.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{"VisibilityTimeout"}})
		if err != nil {
			return "gone"
		}
		return a.Attributes["VisibilityTimeout"]
	}
	update := func(b string) {
		t.Helper()
		if _, err := cf.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("shop-jobs"), TemplateBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-jobs"), TemplateBody: aws.String(body("30", "jobs"))}); err != nil {
		t.Fatal(err)
	}
	first := waitStack(t, cf, "shop-jobs", cfntypes.StackStatusCreateComplete)["Url"]

	update(body("60", "jobs"))
	if url := waitStack(t, cf, "shop-jobs", cfntypes.StackStatusUpdateComplete)["Url"]; url != first || visibility(first) != "60" {
		t.Fatalf("in-place update: url %s (was %s), visibility %s", url, first, visibility(first))
	}

	// The Marker fails after the queue changed: the rollback puts the queue back.
	if err := v.e.CloudFormation().InjectFault(cfnlocal.Fault{Stack: "shop-jobs", LogicalID: "Marker", Operation: "UPDATE", Reason: "Resource limit exceeded", Count: 1}); err != nil {
		t.Fatal(err)
	}
	update(body("90", "jobs"))
	waitStack(t, cf, "shop-jobs", cfntypes.StackStatusUpdateRollbackComplete)
	if got := visibility(first); got != "60" {
		t.Fatalf("after the rollback the queue's visibility is %s, want 60 again", got)
	}

	update(body("60", "jobs-v2"))
	second := waitStack(t, cf, "shop-jobs", cfntypes.StackStatusUpdateComplete)["Url"]
	if !strings.HasSuffix(second, "/jobs-v2") || visibility(second) != "60" || visibility(first) != "gone" {
		t.Fatalf("replacement: new %s (%s), old %s (%s)", second, visibility(second), first, visibility(first))
	}
}

// TestSchedulerScheduleSendsItsInput: an AWS::Scheduler::Schedule sends its target the
// Input at each time of its expression, on the emulator's clock, until the stack goes.
func TestSchedulerScheduleSendsItsInput(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	v := start(t, awslocal.Options{Logger: quiet(), Clock: clk, CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: time.Second, ChangeSetDelay: time.Second}})
	ctx := context.Background()
	cfg, _ := v.e.AWSConfig(ctx)
	cf := cloudformation.NewFromConfig(cfg)
	v.e.CloudFormation().SetResourceDelay("shop-timer", 0)
	tpl := `Resources:
  Ticks:
    Type: AWS::SQS::Queue
  Every:
    Type: AWS::Scheduler::Schedule
    Properties:
      ScheduleExpression: rate(5 minutes)
      FlexibleTimeWindow: {Mode: "OFF"}
      Target: {Arn: !GetAtt Ticks.Arn, RoleArn: arn:aws:iam::000000000000:role/scheduler, Input: '{"tick":true}'}
Outputs:
  Url: {Value: !Ref Ticks}
`
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-timer"), TemplateBody: aws.String(tpl)}); err != nil {
		t.Fatal(err)
	}
	url := waitStack(t, cf, "shop-timer", cfntypes.StackStatusCreateComplete)["Url"]
	count := func() string {
		a, _ := v.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages"}})
		return a.Attributes["ApproximateNumberOfMessages"]
	}
	for want := 1; want <= 2; want++ {
		if !clk.WaitForWaiters(1, 10*time.Second) {
			t.Fatal("the schedule is not waiting")
		}
		clk.Advance(5 * time.Minute)
		for deadline := time.Now().Add(10 * time.Second); count() != string(rune('0'+want)); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after %d periods the queue holds %s messages", want, count())
			}
		}
	}
	out, err := v.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	if err != nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != `{"tick":true}` {
		t.Fatalf("scheduled message %+v %v, want the schedule's Input", out, err)
	}
}
