package cfnlocal

import (
	"context"
	"fmt"
	"regexp"
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

// TestRefIsWhatCloudFormationReturns: Ref of a state machine or an activity is its ARN, of a
// user pool domain its Domain, of a schedule or a schedule group its Name (a schedule's
// Arn naming its group), as the resource types' documentation says (and templates
// pass them on as such: a state machine's Ref to an IAM policy's Resource).
func TestRefIsWhatCloudFormationReturns(t *testing.T) {
	e := newEnv(t, nil)
	e.create("refs", `Resources:
  Machine:
    Type: AWS::StepFunctions::StateMachine
    Properties:
      RoleArn: arn:aws:iam::000000000000:role/sfn
      DefinitionString: '{"StartAt":"Done","States":{"Done":{"Type":"Succeed"}}}'
  Named:
    Type: AWS::StepFunctions::StateMachine
    Properties:
      StateMachineName: orders
      RoleArn: arn:aws:iam::000000000000:role/sfn
      DefinitionString: '{"StartAt":"Done","States":{"Done":{"Type":"Succeed"}}}'
  Work:
    Type: AWS::StepFunctions::Activity
    Properties: {Name: work}
  Pool:
    Type: AWS::Cognito::UserPool
  Domain:
    Type: AWS::Cognito::UserPoolDomain
    Properties: {Domain: shop-auth, UserPoolId: !Ref Pool}
  Schedule:
    Type: AWS::Scheduler::Schedule
    Properties:
      Name: !Sub '${AWS::StackName}-schedule'
      ScheduleExpression: rate(5 minutes)
      FlexibleTimeWindow: {Mode: 'OFF'}
      Target: {Arn: arn:aws:sqs:us-east-1:000000000000:q, RoleArn: arn:aws:iam::000000000000:role/s}
  Unnamed:
    Type: AWS::Scheduler::Schedule
    Properties:
      GroupName: !Ref Group
      ScheduleExpression: rate(5 minutes)
      FlexibleTimeWindow: {Mode: 'OFF'}
      Target: {Arn: arn:aws:sqs:us-east-1:000000000000:q, RoleArn: arn:aws:iam::000000000000:role/s}
  Group:
    Type: AWS::Scheduler::ScheduleGroup
    Properties: {Name: jobs}
Outputs:
  MachineRef: {Value: !Ref Machine}
  MachineArn: {Value: !GetAtt Machine.Arn}
  MachineName: {Value: !GetAtt Machine.Name}
  NamedRef: {Value: !Ref Named}
  WorkRef: {Value: !Ref Work}
  DomainRef: {Value: !Ref Domain}
  DomainCloudFront: {Value: !GetAtt Domain.CloudFrontDistribution}
  ScheduleRef: {Value: !Ref Schedule}
  ScheduleArn: {Value: !GetAtt Schedule.Arn}
  UnnamedRef: {Value: !Ref Unnamed}
  UnnamedArn: {Value: !GetAtt Unnamed.Arn}
  GroupRef: {Value: !Ref Group}
  GroupArn: {Value: !GetAtt Group.Arn}
`, nil)
	st := e.settle("refs")
	if st.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("stack %s: %s", st.StackStatus, aws.ToString(st.StackStatusReason))
	}
	outputs := map[string]string{}
	for _, o := range st.Outputs {
		outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	tests := []struct{ output, want string }{
		{"MachineRef", `^arn:aws:states:us-east-1:\d{12}:stateMachine:refs-Machine-[A-Z0-9]{12}$`},
		{"NamedRef", `^arn:aws:states:us-east-1:\d{12}:stateMachine:orders$`},
		{"WorkRef", `^arn:aws:states:us-east-1:\d{12}:activity:work$`},
		{"DomainRef", `^shop-auth$`},
		{"DomainCloudFront", `^d[0-9a-f]{13}\.cloudfront\.net$`},
		{"ScheduleRef", `^refs-schedule$`},
		{"ScheduleArn", `^arn:aws:scheduler:us-east-1:\d{12}:schedule/default/refs-schedule$`},
		{"UnnamedRef", `^refs-Unnamed-[A-Z0-9]{12}$`},
		{"UnnamedArn", `^arn:aws:scheduler:us-east-1:\d{12}:schedule/jobs/refs-Unnamed-[A-Z0-9]{12}$`},
		{"GroupRef", `^jobs$`},
		{"GroupArn", `^arn:aws:scheduler:us-east-1:\d{12}:schedule-group/jobs$`},
	}
	for _, tc := range tests {
		t.Run(tc.output, func(t *testing.T) {
			if !regexp.MustCompile(tc.want).MatchString(outputs[tc.output]) {
				t.Errorf("%s = %q, want %s", tc.output, outputs[tc.output], tc.want)
			}
		})
	}
	if outputs["MachineArn"] != outputs["MachineRef"] || !strings.HasSuffix(outputs["MachineRef"], ":"+outputs["MachineName"]) {
		t.Errorf("Machine: Ref %q, Arn %q, Name %q", outputs["MachineRef"], outputs["MachineArn"], outputs["MachineName"])
	}
}
