package cfnlocal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/smithy-go"
)

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestCreateEvaluatesIntrinsicsInDependencyOrder(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]string
		want   map[string]string
	}{
		{"dev", nil, map[string]string{
			"SubnetCidr": "10.0.0.0/24", "Azs": "us-east-1a,us-east-1b,us-east-1c,us-east-1d,us-east-1e,us-east-1f", "Mode": "dev-mode",
			"Encoded": "aGk=", "NotProd": "dev-10.0.1.0/24", "Split": "net-dev",
		}},
		{"prod", map[string]string{"Env": "prod", "CidrBlock": "10.9.0.0/16"}, map[string]string{
			"SubnetCidr": "10.9.0.0/24", "Mode": "production", "Prod": "yes", "Split": "net-prod",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			name := "net-" + tc.name
			e.create(name, readFixture(t, "network.yaml"), tc.params)
			if got := e.stack(name).StackStatus; got != types.StackStatusCreateInProgress {
				t.Fatalf("right after CreateStack status = %s, want CREATE_IN_PROGRESS", got)
			}
			st := e.settle(name)
			if st.StackStatus != types.StackStatusCreateComplete {
				t.Fatalf("status = %s (%s)", st.StackStatus, aws.ToString(st.StackStatusReason))
			}
			out := outputs(st)
			for k, v := range tc.want {
				if out[k] != v {
					t.Errorf("output %s = %q, want %q", k, out[k], v)
				}
			}
			if !strings.HasPrefix(out["VpcId"], "vpc-") {
				t.Errorf("VpcId = %q, want a vpc- id", out["VpcId"])
			}
			if _, ok := out["Prod"]; ok != (tc.name == "prod") {
				t.Errorf("conditional output Prod present = %v for %s", ok, tc.name)
			}
			lines := eventLines(e.allEvents(name))
			mustContainInOrder(t, lines, name+" CREATE_IN_PROGRESS", "Vpc CREATE_IN_PROGRESS", "Vpc CREATE_COMPLETE",
				"SubnetA CREATE_IN_PROGRESS", "SubnetA CREATE_COMPLETE", "Logs CREATE_IN_PROGRESS", "Logs CREATE_COMPLETE", name+" CREATE_COMPLETE")
			res, err := e.cfn.DescribeStackResources(context.Background(), &cloudformation.DescribeStackResourcesInput{StackName: aws.String(name)})
			if err != nil {
				t.Fatal(err)
			}
			wantN := 3
			if tc.name == "prod" {
				wantN = 4
			}
			if len(res.StackResources) != wantN {
				t.Errorf("resources = %d, want %d", len(res.StackResources), wantN)
			}
		})
	}
}

func TestInvalidTemplatesAreValidationErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"unknown ref", "Resources:\n  A:\n    Type: AWS::SNS::Topic\n    Properties:\n      TopicName: !Ref Nope\n", "Unresolved resource dependencies [Nope]"},
		{"getatt of missing", "Resources:\n  A:\n    Type: AWS::SNS::Topic\n    Properties:\n      TopicName: !GetAtt Nope.Arn\n", "references undefined resource Nope"},
		{"sub of missing", "Resources:\n  A:\n    Type: AWS::SNS::Topic\n    Properties:\n      TopicName: !Sub '${Nope}-x'\n", "Unresolved resource dependencies [Nope]"},
		{"missing mapping key", "Mappings:\n  M:\n    a: {b: c}\nResources:\n  A:\n    Type: AWS::SNS::Topic\n    Properties:\n      TopicName: !FindInMap [M, a, zz]\n", "Unable to get mapping for M::a::zz"},
		{"select out of range", "Resources:\n  A:\n    Type: AWS::SNS::Topic\n    Properties:\n      TopicName: !Select [5, [a, b]]\n", "nonexistent value at index 5"},
		{"missing import", "Resources:\n  A:\n    Type: AWS::SNS::Topic\n    Properties:\n      TopicName: !ImportValue nothing-here\n", "No export named nothing-here found"},
		{"unknown function", "Resources:\n  A:\n    Type: AWS::SNS::Topic\n    Properties:\n      TopicName: {\"Fn::Bogus\": x}\n", "Unrecognized function Fn::Bogus"},
		{"cycle", "Resources:\n  A:\n    Type: AWS::SNS::Topic\n    DependsOn: B\n  B:\n    Type: AWS::SNS::Topic\n    DependsOn: A\n", "Circular dependency between resources: [A, B]"},
		{"no resources", "Description: x\n", "At least one Resources member must be defined"},
		{"missing param", "Parameters:\n  P: {Type: String}\nResources:\n  A:\n    Type: AWS::SNS::Topic\n", "Parameters: [P] must have values"},
		{"allowed values", "Parameters:\n  P: {Type: String, Default: x, AllowedValues: [a, b]}\nResources:\n  A:\n    Type: AWS::SNS::Topic\n", "Parameter 'P' must be one of AllowedValues"},
		{"serverless type without the transform", "Resources:\n  F:\n    Type: AWS::Serverless::Function\n", "Unrecognized resource types: [AWS::Serverless::Function]"},
		{"transform without CAPABILITY_AUTO_EXPAND", "Transform: AWS::Serverless-2016-10-31\nResources:\n  A:\n    Type: AWS::SNS::Topic\n", "Requires capabilities : [CAPABILITY_AUTO_EXPAND]"},
		{"iam without capability", "Resources:\n  R:\n    Type: AWS::IAM::Role\n    Properties: {AssumeRolePolicyDocument: {}}\n", "Requires capabilities : [CAPABILITY_IAM]"},
	}
	e := newEnv(t, nil)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.cfn.CreateStack(context.Background(), &cloudformation.CreateStackInput{
				StackName: aws.String(fmt.Sprintf("bad-%d", i)), TemplateBody: aws.String(tc.body)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if c := apiCode(err); c != "ValidationError" && c != "InsufficientCapabilitiesException" {
				t.Errorf("code = %s", c)
			}
			if _, err := e.cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(fmt.Sprintf("bad-%d", i))}); err == nil {
				t.Error("a refused stack exists")
			}
		})
	}
}

// TestSubIgnoresSpacesAroundNames: CloudFormation reads ${ Name } as ${Name} in Fn::Sub
// (whitespace around a variable's name is ignored, as cfn-lint, written to CloudFormation's
// behaviour, also strips it: aws-cloudformation/cfn-lint#236), for references, pseudo
// parameters, attributes and explicit variables alike; a literal ${!X} (or ${ !X }) stays
// one, and a name that is missing is reported without its spaces.
func TestSubIgnoresSpacesAroundNames(t *testing.T) {
	e := newEnv(t, nil)
	e.create("spaces", `Resources:
  Q:
    Type: AWS::SQS::Queue
    Properties: {QueueName: spaced}
Outputs:
  Ref: {Value: !Sub "${ Q}|${Q }|${	Q	}"}
  Pseudo: {Value: !Sub "${ AWS::Region }"}
  Attr: {Value: !Sub "${ Q.QueueName }"}
  Var: {Value: !Sub ["${ X }-${!Literal}-${ !Spaced }", {X: x}]}
`, nil)
	got := outputs(e.settle("spaces"))
	want := map[string]string{"Ref": "https://sqs.us-east-1.amazonaws.com/000000000000/spaced|https://sqs.us-east-1.amazonaws.com/000000000000/spaced|https://sqs.us-east-1.amazonaws.com/000000000000/spaced",
		"Pseudo": "us-east-1", "Attr": "spaced", "Var": "x-${Literal}-${Spaced}"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("output %s = %q, want %q", k, got[k], v)
		}
	}
	_, err := e.cfn.CreateStack(context.Background(), &cloudformation.CreateStackInput{StackName: aws.String("spaces-missing"),
		TemplateBody: aws.String("Resources:\n  A:\n    Type: AWS::SNS::Topic\n    Properties:\n      TopicName: !Sub '${ Nope }-x'\n")})
	if err == nil || !strings.Contains(err.Error(), "Unresolved resource dependencies [Nope]") {
		t.Errorf("a Fn::Sub of a missing name with spaces: %v, want Unresolved resource dependencies [Nope]", err)
	}
}
