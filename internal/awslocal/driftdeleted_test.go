package awslocal_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-dev/cairn/internal/awslocal"
)

// TestDriftAwareChangeSetRecreatesDeletedResource: a queue of a stack deleted out of band
// (through the SQS API) is DELETED in a drift-aware change set, which re-creates it from
// the template (Action Add, ResourceDriftStatus DELETED, as the user guide's "Using
// drift-aware change sets" has a deleted resource brought back); executing it makes a new
// queue, and drift detection finds the stack IN_SYNC after. A plain change set of the same
// template does not see the deletion.
func TestDriftAwareChangeSetRecreatesDeletedResource(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet(), CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: time.Millisecond, ChangeSetDelay: time.Millisecond}})
	ctx := context.Background()
	cfg, err := v.e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cf := cloudformation.NewFromConfig(cfg)
	const v1 = "Resources:\n  Work:\n    Type: AWS::SQS::Queue\n    Properties: {VisibilityTimeout: 30}\n  Other:\n    Type: AWS::SQS::Queue\n"
	const v2 = v1 + "    Properties: {DelaySeconds: 5}\n"
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("gone"), TemplateBody: aws.String(v1)}); err != nil {
		t.Fatal(err)
	}
	waitStack(t, cf, "gone", cfntypes.StackStatusCreateComplete)
	res, err := cf.DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{StackName: aws.String("gone"), LogicalResourceId: aws.String("Work")})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(res.StackResourceDetail.PhysicalResourceId)
	if _, err := v.sqs.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}

	changeSet := func(name string, mode cfntypes.DeploymentMode) *cloudformation.DescribeChangeSetOutput {
		t.Helper()
		if _, err := cf.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("gone"), ChangeSetName: aws.String(name),
			TemplateBody: aws.String(v2), DeploymentMode: mode}); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			cs, err := cf.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String("gone"), ChangeSetName: aws.String(name)})
			if err != nil {
				t.Fatal(err)
			}
			if cs.Status == cfntypes.ChangeSetStatusCreateComplete || cs.Status == cfntypes.ChangeSetStatusFailed || time.Now().After(deadline) {
				return cs
			}
		}
	}
	byID := func(cs *cloudformation.DescribeChangeSetOutput) map[string]*cfntypes.ResourceChange {
		out := map[string]*cfntypes.ResourceChange{}
		for _, c := range cs.Changes {
			out[aws.ToString(c.ResourceChange.LogicalResourceId)] = c.ResourceChange
		}
		return out
	}
	if plain := byID(changeSet("plain", "")); plain["Work"] != nil || plain["Other"] == nil {
		t.Errorf("a plain change set: %+v", plain)
	}
	cs := changeSet("revert", cfntypes.DeploymentModeRevertDrift)
	rcs := byID(cs)
	work := rcs["Work"]
	if cs.Status != cfntypes.ChangeSetStatusCreateComplete || work == nil || work.Action != cfntypes.ChangeActionAdd ||
		work.ResourceDriftStatus != cfntypes.StackResourceDriftStatusDeleted || aws.ToString(work.ResourceType) != "AWS::SQS::Queue" {
		t.Fatalf("change set %s (%s): Work %+v", cs.Status, aws.ToString(cs.StatusReason), work)
	}
	if other := rcs["Other"]; other == nil || other.Action != cfntypes.ChangeActionModify || other.ResourceDriftStatus != cfntypes.StackResourceDriftStatusInSync {
		t.Errorf("Other: %+v", other)
	}
	if _, err := cf.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{ChangeSetName: cs.ChangeSetId}); err != nil {
		t.Fatal(err)
	}
	waitStack(t, cf, "gone", cfntypes.StackStatusUpdateComplete)
	res, err = cf.DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{StackName: aws.String("gone"), LogicalResourceId: aws.String("Work")})
	if err != nil {
		t.Fatal(err)
	}
	again := aws.ToString(res.StackResourceDetail.PhysicalResourceId)
	attrs, err := v.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(again), AttributeNames: []sqstypes.QueueAttributeName{"VisibilityTimeout"}})
	if err != nil || attrs.Attributes["VisibilityTimeout"] != "30" {
		t.Fatalf("the re-created queue %s: %v %v", again, attrs, err)
	}
	det, err := cf.DetectStackDrift(ctx, &cloudformation.DetectStackDriftInput{StackName: aws.String("gone")})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st, err := cf.DescribeStackDriftDetectionStatus(ctx, &cloudformation.DescribeStackDriftDetectionStatusInput{StackDriftDetectionId: det.StackDriftDetectionId})
		if err != nil {
			t.Fatal(err)
		}
		if st.DetectionStatus != cfntypes.StackDriftDetectionStatusDetectionInProgress {
			if st.StackDriftStatus != cfntypes.StackDriftStatusInSync {
				t.Errorf("drift after the re-creation: %s", st.StackDriftStatus)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("drift detection never ended")
		}
	}
}
