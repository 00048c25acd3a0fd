package localcairn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/smithy-go"
)

// stackTemplate is the local stand-in for cairn's own stack: its resources are made by
// Provision through the service APIs (the emulated CloudFormation only simulates
// resources), so the stack holds a placeholder and exports what infra/stack.go exports.
const stackTemplate = `AWSTemplateFormatVersion: "2010-09-09"
Description: cairn's own resources in the local emulator (made by cairn local up); exports as in AWS
Parameters:
  BucketName:
    Type: String
  PortsTopicArn:
    Type: String
  NotificationsTopicArn:
    Type: String
Resources:
  Provisioned:
    Type: AWS::CloudFormation::WaitConditionHandle
Outputs:
  BucketName:
    Description: "cairn's bucket: push bundles to deployments/NAME.zip"
    Value: !Ref BucketName
    Export:
      Name: ` + ExportBucketName + `
  PortsServiceToken:
    Description: ServiceToken of Custom::PortAllocation
    Value: !Ref PortsTopicArn
    Export:
      Name: ` + ExportPortsServiceToken + `
  NotificationsTopicArn:
    Description: subscribe here for run summaries, drift reports and alarms
    Value: !Ref NotificationsTopicArn
    Export:
      Name: ` + ExportNotificationsTopic + `
`

// pollInterval is how often Provision looks at the cairn stack while it settles.
const pollInterval = 50 * time.Millisecond

// stack creates the cairn stack, or updates it when its exports differ from c's, or
// re-creates it when an earlier attempt left it failed, and waits until it is complete.
func (p provisioner) stack(ctx context.Context, c *Cairn, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	want := map[string]string{
		ExportBucketName:         c.Bucket,
		ExportPortsServiceToken:  c.PortsTopic,
		ExportNotificationsTopic: c.Notifications,
	}
	params := []cfntypes.Parameter{
		{ParameterKey: aws.String("BucketName"), ParameterValue: aws.String(c.Bucket)},
		{ParameterKey: aws.String("PortsTopicArn"), ParameterValue: aws.String(c.PortsTopic)},
		{ParameterKey: aws.String("NotificationsTopicArn"), ParameterValue: aws.String(c.Notifications)},
	}
	done := map[string]bool{} // actions taken, each at most once: a stack that fails again is an error
	act := func(action string, f func() error) error {
		if done[action] {
			return fmt.Errorf("provision cairn: stack %s is still not as wanted after %s it: see cairn's stack events (aws cloudformation describe-stack-events --stack-name %s)",
				StackName, strings.ToLower(action), StackName)
		}
		done[action] = true
		return f()
	}
	for {
		st, err := p.describe(ctx)
		if err != nil {
			return "", err
		}
		switch {
		case st == nil:
			err = act("creating", func() error {
				_, err := p.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{
					StackName: aws.String(StackName), TemplateBody: aws.String(stackTemplate), Parameters: params,
				})
				return err
			})
		case strings.HasSuffix(string(st.StackStatus), "_IN_PROGRESS"):
			// Settling, perhaps from before a restart: wait.
		case st.StackStatus == cfntypes.StackStatusCreateComplete || st.StackStatus == cfntypes.StackStatusUpdateComplete ||
			st.StackStatus == cfntypes.StackStatusUpdateRollbackComplete:
			if exports(st) == fmt.Sprint(want) {
				return aws.ToString(st.StackId), nil
			}
			err = act("updating", func() error {
				_, err := p.cfn.UpdateStack(ctx, &cloudformation.UpdateStackInput{
					StackName: aws.String(StackName), TemplateBody: aws.String(stackTemplate), Parameters: params,
				})
				return err
			})
		default:
			// ROLLBACK_COMPLETE, *_FAILED: nothing to keep; start again.
			err = act("deleting", func() error {
				_, err := p.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: st.StackId})
				return err
			})
		}
		if err != nil {
			return "", fmt.Errorf("provision cairn: stack %s: %w", StackName, err)
		}
		select {
		case <-p.clk.After(pollInterval):
		case <-ctx.Done():
			status := "missing"
			if st != nil {
				status = string(st.StackStatus)
			}
			return "", fmt.Errorf("provision cairn: stack %s did not settle within %s (last status %s): %w", StackName, timeout, status, ctx.Err())
		}
	}
}

// describe returns the cairn stack, or nil when it does not exist.
func (p provisioner) describe(ctx context.Context) (*cfntypes.Stack, error) {
	out, err := p.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(StackName)})
	var ae smithy.APIError
	if errors.As(err, &ae) && strings.Contains(ae.ErrorMessage(), "does not exist") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("provision cairn: describe stack %s: %w", StackName, err)
	}
	for i := range out.Stacks {
		if out.Stacks[i].StackStatus != cfntypes.StackStatusDeleteComplete {
			return &out.Stacks[i], nil
		}
	}
	return nil, nil
}

// exports renders a stack's exports as fmt prints a map, for comparison.
func exports(st *cfntypes.Stack) string {
	m := map[string]string{}
	for _, o := range st.Outputs {
		if n := aws.ToString(o.ExportName); n != "" {
			m[n] = aws.ToString(o.OutputValue)
		}
	}
	return fmt.Sprint(m)
}
