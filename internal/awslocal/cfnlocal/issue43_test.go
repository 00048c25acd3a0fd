package cfnlocal

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/smithy-go"
)

func apiErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// TestCreateChangeSetOnExistingStack: a CREATE change set for a stack that exists is
// refused with ValidationError, as AWS answers it (AlreadyExistsException is for a change
// set name already in use).
func TestCreateChangeSetOnExistingStack(t *testing.T) {
	e := newEnv(t, nil)
	e.create("s", threeQueues, nil)
	e.settle("s")
	_, err := e.cfn.CreateChangeSet(context.Background(), &cloudformation.CreateChangeSetInput{StackName: aws.String("s"), ChangeSetName: aws.String("again"),
		ChangeSetType: types.ChangeSetTypeCreate, TemplateBody: aws.String(threeQueues)})
	if apiErrorCode(err) != "ValidationError" || !strings.Contains(err.Error(), "Stack [s] already exists and cannot be created again with the changeSet [again].") {
		t.Fatalf("CreateChangeSet CREATE on an existing stack: %v", err)
	}
}

// TestTemplateSummaryCapabilitiesAllowedValuesMetadata: GetTemplateSummary names the
// capability IAM resources need and why, each parameter's allowed values, and the
// template's Metadata as JSON.
func TestTemplateSummaryCapabilitiesAllowedValuesMetadata(t *testing.T) {
	e := newEnv(t, nil)
	const body = `Metadata:
  AWS::CloudFormation::Interface: {ParameterGroups: [{Label: {default: Env}, Parameters: [Stage]}]}
Parameters:
  Stage: {Type: String, AllowedValues: [dev, prod], Default: dev}
Resources:
  Role:
    Type: AWS::IAM::Role
    Properties:
      RoleName: named
      AssumeRolePolicyDocument: {Version: "2012-10-17", Statement: []}
  Q: {Type: AWS::SQS::Queue}
`
	out, err := e.cfn.GetTemplateSummary(context.Background(), &cloudformation.GetTemplateSummaryInput{TemplateBody: aws.String(body)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Capabilities) != 1 || out.Capabilities[0] != types.CapabilityCapabilityNamedIam ||
		aws.ToString(out.CapabilitiesReason) != "The following resource(s) require capabilities: [AWS::IAM::Role]" {
		t.Errorf("capabilities %v %q", out.Capabilities, aws.ToString(out.CapabilitiesReason))
	}
	if len(out.Parameters) != 1 || out.Parameters[0].ParameterConstraints == nil || strings.Join(out.Parameters[0].ParameterConstraints.AllowedValues, ",") != "dev,prod" {
		t.Errorf("parameters %+v", out.Parameters)
	}
	if aws.ToString(out.Metadata) != `{"AWS::CloudFormation::Interface":{"ParameterGroups":[{"Label":{"default":"Env"},"Parameters":["Stage"]}]}}` {
		t.Errorf("metadata %s", aws.ToString(out.Metadata))
	}
	plain, err := e.cfn.GetTemplateSummary(context.Background(), &cloudformation.GetTemplateSummaryInput{TemplateBody: aws.String(threeQueues)})
	if err != nil || len(plain.Capabilities) != 0 || plain.CapabilitiesReason != nil || plain.Metadata != nil {
		t.Errorf("a template without IAM or Metadata: %v %+v", err, plain)
	}
}

const retainExceptOnCreate = `Resources:
  Kept:
    Type: AWS::SQS::Queue
    DeletionPolicy: RetainExceptOnCreate
  Other:
    Type: AWS::SQS::Queue
`

// TestRetainExceptOnCreate: a resource with DeletionPolicy RetainExceptOnCreate is kept
// when its stack is deleted, and deleted when the creation that made it rolls back.
func TestRetainExceptOnCreate(t *testing.T) {
	ctx := context.Background()
	t.Run("stack delete keeps it", func(t *testing.T) {
		e := newEnv(t, nil)
		id := e.create("s", retainExceptOnCreate, nil)
		e.settle("s")
		if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("s")}); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(3600e9)
		mustContainInOrder(t, eventLines(e.allEvents(id)), "Kept DELETE_SKIPPED", "s DELETE_COMPLETE")
	})
	t.Run("a rollback of its creation deletes it", func(t *testing.T) {
		e := newEnv(t, nil)
		postControl(t, e, "faults", Fault{Stack: "s", LogicalID: "Other", Operation: "CREATE", Reason: "boom"})
		e.create("s", retainExceptOnCreate, nil)
		if st := e.settle("s"); st.StackStatus != types.StackStatusRollbackComplete {
			t.Fatalf("status %s", st.StackStatus)
		}
		lines := eventLines(e.allEvents("s"))
		mustContainInOrder(t, lines, "Kept CREATE_COMPLETE", "Kept DELETE_COMPLETE", "s ROLLBACK_COMPLETE")
	})
}

// TestSSMParameterResolvedValue: DescribeStacks gives a parameter of an SSM parameter type
// its ResolvedValue, the value the stack's operation read.
func TestSSMParameterResolvedValue(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.SSMParameter = func(name, typ string) (string, error) { return "value-of-" + name, nil }
	})
	e.create("s", `Parameters:
  Image: {Type: "AWS::SSM::Parameter::Value<String>", Default: /app/image}
  Plain: {Type: String, Default: x}
Resources:
  Q: {Type: AWS::SQS::Queue}
`, nil)
	st := e.settle("s")
	got := map[string]string{}
	for _, p := range st.Parameters {
		got[aws.ToString(p.ParameterKey)] = aws.ToString(p.ParameterValue) + "=>" + aws.ToString(p.ResolvedValue)
	}
	if got["Image"] != "/app/image=>value-of-/app/image" || got["Plain"] != "x=>" {
		t.Fatalf("parameters %v", got)
	}
}
