package cfnlocal

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/smithy-go"
)

// TestNamesAreValidated: stack and change set names CloudFormation refuses are refused
// with its request-validation wording.
func TestNamesAreValidated(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	body := `Resources: {T: {Type: AWS::SNS::Topic}}`
	long := "s" + strings.Repeat("x", 128)
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"stack with underscore", func() error {
			_, err := e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop_app"), TemplateBody: aws.String(body)})
			return err
		}, "1 validation error detected: Value 'shop_app' at 'stackName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z][-a-zA-Z0-9]*"},
		{"stack starting with a digit", func() error {
			_, err := e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("1shop"), TemplateBody: aws.String(body)})
			return err
		}, "Value '1shop' at 'stackName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z][-a-zA-Z0-9]*"},
		{"stack name too long", func() error {
			_, err := e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(long), TemplateBody: aws.String(body)})
			return err
		}, "Value '" + long + "' at 'stackName' failed to satisfy constraint: Member must have length less than or equal to 128"},
		{"change set stack name", func() error {
			_, err := e.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("shop.app"), ChangeSetName: aws.String("cs1"),
				TemplateBody: aws.String(body), ChangeSetType: types.ChangeSetTypeCreate})
			return err
		}, "Value 'shop.app' at 'stackName' failed to satisfy constraint: Member must satisfy regular expression pattern: ([a-zA-Z][-a-zA-Z0-9]*)|(arn:\\b(aws|aws-us-gov|aws-cn)\\b:[-a-zA-Z0-9:/._+]*)"},
		{"change set name", func() error {
			_, err := e.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("shop"), ChangeSetName: aws.String("cairn_1"),
				TemplateBody: aws.String(body), ChangeSetType: types.ChangeSetTypeCreate})
			return err
		}, "Value 'cairn_1' at 'changeSetName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z][-a-zA-Z0-9]*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ae smithy.APIError
			if err := tt.call(); !errors.As(err, &ae) || ae.ErrorCode() != "ValidationError" || !strings.Contains(ae.ErrorMessage(), tt.want) {
				t.Fatalf("err = %v, want ValidationError containing %q", err, tt.want)
			}
		})
	}
	if out, err := e.cfn.ListStacks(ctx, &cloudformation.ListStacksInput{}); err != nil || len(out.StackSummaries) != 0 {
		t.Fatalf("refused names made stacks: %+v %v", out, err)
	}
}

// TestChangeCausedByParameter: a property that changes because a parameter it references
// got a new value is described with ChangeSource ParameterReference and the parameter as
// CausingEntity; an edit of the template stays DirectModification.
func TestChangeCausedByParameter(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	body := `Parameters:
  Env: {Type: String}
  Retention: {Type: Number, Default: "60"}
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: !Sub "orders-${Env}"
      MessageRetentionPeriod: !Ref Retention
      VisibilityTimeout: 30
`
	e.create("shop-orders", body, map[string]string{"Env": "dev"})
	e.settle("shop-orders")
	edited := strings.Replace(body, "VisibilityTimeout: 30", "VisibilityTimeout: 45", 1)
	if _, err := e.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("shop-orders"), ChangeSetName: aws.String("cs1"),
		TemplateBody: aws.String(edited), Parameters: sdkParams(map[string]string{"Env": "prod", "Retention": "120"})}); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(e.svc.o.ChangeSetDelay)
	cs, err := e.cfn.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String("shop-orders"), ChangeSetName: aws.String("cs1")})
	if err != nil || len(cs.Changes) != 1 {
		t.Fatalf("change set: %+v %v", cs, err)
	}
	var got []string
	for _, d := range cs.Changes[0].ResourceChange.Details {
		got = append(got, aws.ToString(d.Target.Name)+" "+string(d.ChangeSource)+" "+aws.ToString(d.CausingEntity)+" "+string(d.Evaluation)+" "+string(d.Target.RequiresRecreation))
	}
	want := []string{
		"MessageRetentionPeriod ParameterReference Retention Static Never",
		"QueueName ParameterReference Env Static Always",
		"VisibilityTimeout DirectModification  Static Never",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("details:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestMissingImportRollsBackAtExecution: as in AWS, a change set importing an export that
// does not exist is created and executes, and the stack then rolls back with
// "No export named X found.".
func TestMissingImportRollsBackAtExecution(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	body := `Resources:
  Topic:
    Type: AWS::SNS::Topic
    Properties:
      DisplayName: !ImportValue shop-network-vpc-id
`
	for _, tc := range []struct {
		typ        types.ChangeSetType
		final      types.StackStatus
		rollingWas string
	}{
		{types.ChangeSetTypeCreate, types.StackStatusRollbackComplete, "shop-app ROLLBACK_IN_PROGRESS (No export named shop-network-vpc-id found.)"},
		{types.ChangeSetTypeUpdate, types.StackStatusUpdateRollbackComplete, "shop-app UPDATE_ROLLBACK_IN_PROGRESS (No export named shop-network-vpc-id found.)"},
	} {
		t.Run(string(tc.typ), func(t *testing.T) {
			name := "shop-app"
			if tc.typ == types.ChangeSetTypeUpdate {
				name = "shop-app"
				e.create("shop-app", `Resources: {Topic: {Type: AWS::SNS::Topic}}`, nil)
				e.settle("shop-app")
			}
			cs := e.changeSet(name, "cs-"+strings.ToLower(string(tc.typ)), body, tc.typ)
			if cs.Status != types.ChangeSetStatusCreateComplete || cs.ExecutionStatus != types.ExecutionStatusAvailable {
				t.Fatalf("change set %s/%s (%s), want CREATE_COMPLETE and AVAILABLE", cs.Status, cs.ExecutionStatus, aws.ToString(cs.StatusReason))
			}
			if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String(name), ChangeSetName: cs.ChangeSetId}); err != nil {
				t.Fatalf("execute: %v", err)
			}
			st := e.settle(name)
			if st.StackStatus != tc.final {
				t.Fatalf("stack %s (%s), want %s", st.StackStatus, aws.ToString(st.StackStatusReason), tc.final)
			}
			mustContainInOrder(t, eventLines(e.allEvents(name)), tc.rollingWas)
			if tc.typ == types.ChangeSetTypeCreate {
				if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(name)}); err != nil {
					t.Fatal(err)
				}
				e.clk.Advance(time.Hour)
			}
		})
	}
}
