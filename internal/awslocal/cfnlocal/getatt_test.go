package cfnlocal

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

const getAttFunction = `  Fn:
    Type: AWS::Lambda::Function
    Properties:
      Role: arn:aws:iam::000000000000:role/r
      Runtime: python3.12
      Handler: index.handler
      Code: {ZipFile: "def handler(e, c): return e"}
`

// Fn::GetAtt names only the attributes the resource type's schema declares: any other is
// refused before anything is created, in CloudFormation's words, instead of an invented value.
func TestGetAttOfUndeclaredAttributeIsRefused(t *testing.T) {
	refused := []struct{ name, rest string }{
		{"short form", "  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: !GetAtt Fn.Name\n"},
		{"in Fn::Sub", "  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: !Sub '${Fn.Name}-q'\n"},
		{"in an output", "  Q:\n    Type: AWS::SQS::Queue\nOutputs:\n  N: {Value: !GetAtt Fn.Name}\n"},
	}
	e := newEnv(t, nil)
	for i, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.cfn.CreateStack(context.Background(), &cloudformation.CreateStackInput{
				StackName: aws.String(fmt.Sprintf("getatt-%d", i)), TemplateBody: aws.String("Resources:\n" + getAttFunction + tc.rest)})
			want := "Template error: resource Fn does not support attribute type Name in Fn::GetAtt"
			if err == nil || !strings.Contains(err.Error(), want) || apiCode(err) != "ValidationError" {
				t.Fatalf("err = %v, want a ValidationError with %q", err, want)
			}
		})
	}

	// declared attributes, any attribute of a custom resource and a nested stack's outputs work
	ok := "Resources:\n" + getAttFunction + `  Custom:
    Type: Custom::Thing
    Properties: {ServiceToken: arn:aws:sns:us-east-1:000000000000:t}
  Q:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: !Sub '${Fn}-q'
      Tags: [{Key: arn, Value: !GetAtt Fn.Arn}, {Key: snap, Value: !GetAtt Fn.SnapStartResponse.ApplyOn}]
Outputs:
  Any: {Value: !GetAtt Custom.Whatever}
`
	tpl, err := parseTemplate(ok)
	if err != nil {
		t.Fatalf("declared attributes refused: %v", err)
	}
	if len(tpl.Resources) != 3 {
		t.Errorf("resources %v", tpl.Resources)
	}
}

// A Serverless template's GetAtt of an attribute its generated function does not have
// fails the change set as AWS does (the transform runs when the change set is made).
func TestGetAttOfUndeclaredAttributeFailsServerlessChangeSet(t *testing.T) {
	e := newEnv(t, nil)
	body := `Transform: AWS::Serverless-2016-10-31
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties: {Runtime: python3.12, Handler: index.handler, InlineCode: x}
Outputs:
  Name: {Value: !GetAtt Fn.Name}
`
	cs := e.settledChangeSet(&cloudformation.CreateChangeSetInput{StackName: aws.String("sam-getatt"), ChangeSetName: aws.String("c1"),
		ChangeSetType: types.ChangeSetTypeCreate, TemplateBody: aws.String(body), Capabilities: []types.Capability{types.CapabilityCapabilityIam}})
	if cs.Status != types.ChangeSetStatusFailed || !strings.Contains(aws.ToString(cs.StatusReason), "resource Fn does not support attribute type Name in Fn::GetAtt") {
		t.Fatalf("change set %s (%s), want FAILED for the attribute", cs.Status, aws.ToString(cs.StatusReason))
	}
}
