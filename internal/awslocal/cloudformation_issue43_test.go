package awslocal_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-dev/cairn/internal/awslocal"
)

// cfnIssue43 is a CloudFormation scenario of issue 43 with what AWS documents (want) and
// where (source); why is set when moto 5.2 is known to answer otherwise.
type cfnIssue43 struct {
	name              string
	run               func(ctx context.Context, c cfnTarget) (string, error)
	want, source, why string
}

func init() {
	for _, sc := range issue43CFNScenarios() {
		if sc.why != "" {
			knownMotoCloudFormationDeviations[sc.name] = deviation{aws: sc.want, why: sc.why, source: sc.source}
		}
	}
}

// createSettled creates a stack with an IAM capability and waits for it to settle.
func createSettled(ctx context.Context, c cfnTarget, name, body string) (cfntypes.Stack, error) {
	if _, err := c.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body),
		Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityNamedIam}}); err != nil {
		return cfntypes.Stack{}, err
	}
	return c.settle(ctx, name)
}

func issue43CFNScenarios() []cfnIssue43 {
	return []cfnIssue43{
		{name: "a CREATE change set of an existing stack", run: func(ctx context.Context, c cfnTarget) (string, error) {
			body := "Resources:\n  Topic: {Type: AWS::SNS::Topic}\n"
			if _, err := createSettled(ctx, c, "d43-exists", body); err != nil {
				return "", err
			}
			_, err := c.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("d43-exists"), ChangeSetName: aws.String("again"),
				ChangeSetType: cfntypes.ChangeSetTypeCreate, TemplateBody: aws.String(body)})
			return apiMessage(err), nil
		}, want: "ValidationError: Stack [d43-exists] already exists and cannot be created again with the changeSet [again].",
			source: "CreateChangeSet as the AWS CLI and SDKs report it (e.g. github.com/compose-x/ecs_composex/issues/785: \"An error occurred (ValidationError) when calling the CreateChangeSet operation: Stack [microservices] already exists and cannot be created again with the changeSet\"); AlreadyExistsException is for a change set name in use",
			why:    "moto accepts a CREATE change set for a stack that exists"},
		{name: "GetTemplateSummary capabilities, allowed values and metadata", run: func(ctx context.Context, c cfnTarget) (string, error) {
			out, err := c.cfn.GetTemplateSummary(ctx, &cloudformation.GetTemplateSummaryInput{TemplateBody: aws.String(`Metadata:
  Owner: shop
Parameters:
  Stage: {Type: String, AllowedValues: [dev, prod], Default: dev}
Resources:
  Role:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument: {Version: "2012-10-17", Statement: [{Effect: Allow, Principal: {Service: lambda.amazonaws.com}, Action: "sts:AssumeRole"}]}
`)})
			if err != nil {
				return "", err
			}
			var allowed []string
			for _, p := range out.Parameters {
				if p.ParameterConstraints != nil {
					allowed = append(allowed, p.ParameterConstraints.AllowedValues...)
				}
			}
			return fmt.Sprintf("capabilities=%v reason=%q allowed=%v metadata=%s", out.Capabilities, aws.ToString(out.CapabilitiesReason), allowed, aws.ToString(out.Metadata)), nil
		}, want: `capabilities=[CAPABILITY_IAM] reason="The following resource(s) require capabilities: [AWS::IAM::Role]" allowed=[dev prod] metadata={"Owner":"shop"}`,
			source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_GetTemplateSummary.html (Capabilities, CapabilitiesReason, Metadata; ParameterDeclaration.ParameterConstraints.AllowedValues)",
			why:    "moto fails GetTemplateSummary of a template with an IAM role (500, an XML error it cannot write)"},
		{name: "RetainExceptOnCreate keeps the resource on stack delete", run: func(ctx context.Context, c cfnTarget) (string, error) {
			if _, err := createSettled(ctx, c, "d43-retain", `Resources:
  Kept:
    Type: AWS::SQS::Queue
    DeletionPolicy: RetainExceptOnCreate
    Properties: {QueueName: d43-kept}
`); err != nil {
				return "", err
			}
			if _, err := c.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("d43-retain")}); err != nil {
				return "", err
			}
			c.settle(ctx, "d43-retain")
			_, err := c.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("d43-kept")})
			return "queue after delete: " + code(err), nil
		}, want: "queue after delete: ok",
			source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-deletionpolicy.html (RetainExceptOnCreate \"behaves like Retain for stack operations, except for the stack operation that initially created the resource\")",
			why:    "moto deletes a RetainExceptOnCreate resource with its stack"},
		{name: "Fn::GetAZs in us-east-1", run: func(ctx context.Context, c cfnTarget) (string, error) {
			st, err := createSettled(ctx, c, "d43-zones", `Resources:
  Topic: {Type: AWS::SNS::Topic}
Outputs:
  Zones: {Value: !Join [",", !GetAZs ""]}
`)
			if err != nil {
				return "", err
			}
			for _, o := range st.Outputs {
				if aws.ToString(o.OutputKey) == "Zones" {
					return fmt.Sprintf("%d zones", len(strings.Split(aws.ToString(o.OutputValue), ","))), nil
				}
			}
			return "no output " + string(st.StackStatus), nil
		}, want: "6 zones",
			source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/intrinsic-function-reference-getavailabilityzones.html and https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-availability-zones.html (us-east-1 has six zones)",
			why:    "moto answers four zones in us-east-1"},
	}
}

// cfnList is documented scenarios as the differential suite's scenarios.
func cfnList(scs []cfnIssue43) []struct {
	name string
	run  func(ctx context.Context, c cfnTarget) (string, error)
} {
	var out []struct {
		name string
		run  func(ctx context.Context, c cfnTarget) (string, error)
	}
	for _, sc := range scs {
		out = append(out, struct {
			name string
			run  func(ctx context.Context, c cfnTarget) (string, error)
		}{sc.name, sc.run})
	}
	return out
}

// asAWSDocuments runs documented CloudFormation scenarios against the emulator alone and
// requires what AWS documents.
func asAWSDocuments(t *testing.T, scs []cfnIssue43) {
	v := start(t, awslocal.Options{Logger: quiet(), AccountID: "123456789012", CloudFormation: awslocal.CloudFormationTimings{
		ResourceDelay: time.Millisecond, ChangeSetDelay: time.Millisecond}})
	cairn := newCFNTarget(t, "cairn", v.e.URL())
	for _, sc := range scs {
		t.Run(sc.name, func(t *testing.T) {
			got, err := sc.run(context.Background(), cairn)
			if err != nil {
				t.Fatalf("cairn: %v", err)
			}
			if got != sc.want {
				t.Fatalf("cairn: %q\nwant:  %q (%s)", got, sc.want, sc.source)
			}
		})
	}
}

// TestIssue43CloudFormationAsAWSDocuments runs issue 43's CloudFormation scenarios against
// the emulator alone and requires what AWS documents.
func TestIssue43CloudFormationAsAWSDocuments(t *testing.T) { asAWSDocuments(t, issue43CFNScenarios()) }
