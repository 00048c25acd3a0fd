package cfnlocal

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// TestUnknownTypesRefusedAsAWSDoes: a template naming a type AWS does not know is refused,
// in AWS's words, by CreateStack, CreateChangeSet and ValidateTemplate alike.
func TestUnknownTypesRefusedAsAWSDoes(t *testing.T) {
	const body = "Resources:\n  A:\n    Type: AWS::Nope::Thing\n  B:\n    Type: AWS::SQS::Queu\n  C:\n    Type: AWS::SQS::Queue\n  D:\n    Type: Acme::Widgets::Widget\n"
	const want = "Template format error: Unrecognized resource types: [AWS::Nope::Thing, AWS::SQS::Queu]"
	e := newEnv(t, nil)
	ctx := context.Background()
	calls := map[string]func() error{
		"CreateStack": func() error {
			_, err := e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("bad-types"), TemplateBody: aws.String(body)})
			return err
		},
		"CreateChangeSet": func() error {
			_, err := e.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("bad-types"), ChangeSetName: aws.String("c1"),
				ChangeSetType: types.ChangeSetTypeCreate, TemplateBody: aws.String(body)})
			return err
		},
		"ValidateTemplate": func() error {
			_, err := e.cfn.ValidateTemplate(ctx, &cloudformation.ValidateTemplateInput{TemplateBody: aws.String(body)})
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call()
			if err == nil || !strings.Contains(err.Error(), want) || apiCode(err) != "ValidationError" {
				t.Fatalf("err = %v (code %s), want a ValidationError %q", err, apiCode(err), want)
			}
		})
	}
	if _, err := e.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("bad-types")}); err == nil {
		t.Error("a refused stack exists")
	}
}

// TestPropertyErrorsFailTheResource: properties the type's schema refuses fail the
// resource's creation with AWS's message, and the stack rolls back.
func TestPropertyErrorsFailTheResource(t *testing.T) {
	tests := []struct{ name, props, want string }{
		{"unknown property", "{VisibiltyTimeout: 30}", "Properties validation failed for resource Bad with message: #: extraneous key [VisibiltyTimeout] is not permitted"},
		{"list for a scalar", "{QueueName: [a, b]}", "Properties validation failed for resource Bad with message: #/QueueName: expected type: String, found: JSONArray"},
		{"scalar for a list", "{Tags: x}", "Properties validation failed for resource Bad with message: #/Tags: expected type: JSONArray, found: String"},
		{"nested required", "{Tags: [{Value: v}]}", "Properties validation failed for resource Bad with message: #/Tags/0: required key [Key] not found"},
	}
	e := newEnv(t, nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "props-" + strings.ReplaceAll(tc.name, " ", "-")
			body := "Resources:\n  Good:\n    Type: AWS::SNS::Topic\n  Bad:\n    Type: AWS::SQS::Queue\n    DependsOn: Good\n    Properties: " + tc.props + "\n"
			e.create(name, body, nil)
			st := e.settle(name)
			if st.StackStatus != types.StackStatusRollbackComplete {
				t.Fatalf("status = %s (%s), want ROLLBACK_COMPLETE", st.StackStatus, aws.ToString(st.StackStatusReason))
			}
			var reason string
			for _, ev := range e.allEvents(name) {
				if aws.ToString(ev.LogicalResourceId) == "Bad" && ev.ResourceStatus == types.ResourceStatusCreateFailed {
					reason = aws.ToString(ev.ResourceStatusReason)
				}
			}
			if reason != tc.want {
				t.Errorf("Bad CREATE_FAILED reason = %q, want %q", reason, tc.want)
			}
		})
	}
	t.Run("required property", func(t *testing.T) {
		e.create("props-required", "Resources:\n  P:\n    Type: AWS::SSM::Parameter\n    Properties: {Value: x}\n", nil)
		st := e.settle("props-required")
		if st.StackStatus != types.StackStatusRollbackComplete {
			t.Fatalf("status = %s", st.StackStatus)
		}
		found := false
		for _, ev := range e.allEvents("props-required") {
			if aws.ToString(ev.ResourceStatusReason) == "Properties validation failed for resource P with message: #: required key [Type] not found" {
				found = true
			}
		}
		if !found {
			t.Errorf("no CREATE_FAILED of P with the required-key message in %+v", e.allEvents("props-required"))
		}
	})
}

// TestAllowedPatternLookahead: AWS's AllowedPattern is a Java regular expression, so a
// lookahead is accepted and applied.
func TestAllowedPatternLookahead(t *testing.T) {
	const body = "Parameters:\n  Password:\n    Type: String\n    AllowedPattern: '(?=.*[0-9])(?=.*[a-z]).{8,}'\nResources:\n  T:\n    Type: AWS::SNS::Topic\n"
	e := newEnv(t, nil)
	e.create("lookahead-ok", body, map[string]string{"Password": "abcdefg1"})
	if st := e.settle("lookahead-ok"); st.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("status = %s (%s)", st.StackStatus, aws.ToString(st.StackStatusReason))
	}
	_, err := e.cfn.CreateStack(context.Background(), &cloudformation.CreateStackInput{StackName: aws.String("lookahead-bad"), TemplateBody: aws.String(body),
		Parameters: []types.Parameter{{ParameterKey: aws.String("Password"), ParameterValue: aws.String("abcdefgh")}}})
	if err == nil || !strings.Contains(err.Error(), "must match pattern (?=.*[0-9])(?=.*[a-z]).{8,}") {
		t.Fatalf("err = %v, want the pattern refused", err)
	}
}
