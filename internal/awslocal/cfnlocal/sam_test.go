package cfnlocal

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// samTemplate uses the Serverless types and event sources the emulator expands.
const samTemplate = `Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Runtime: python3.12
    Timeout: 10
    Environment: {Variables: {STAGE: dev}}
Resources:
  Orders:
    Type: AWS::SQS::Queue
  Notices:
    Type: AWS::SNS::Topic
  Uploads:
    Type: AWS::S3::Bucket
  Deps:
    Type: AWS::Serverless::LayerVersion
    Properties:
      ContentUri: s3://artifacts/deps.zip
  Table:
    Type: AWS::Serverless::SimpleTable
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      Handler: app.handler
      InlineCode: "def handler(event, context): return event"
      Layers: [!Ref Deps]
      Environment:
        Variables:
          TABLE: !Ref Table
      Policies:
        - DynamoDBCrudPolicy:
            TableName: !Ref Table
        - SQSPollerPolicy:
            QueueName: !GetAtt Orders.QueueName
      Events:
        Queue:
          Type: SQS
          Properties:
            Queue: !GetAtt Orders.Arn
            BatchSize: 5
        Notice:
          Type: SNS
          Properties:
            Topic: !Ref Notices
        Upload:
          Type: S3
          Properties:
            Bucket: !Ref Uploads
            Events: "s3:ObjectCreated:*"
        Nightly:
          Type: Schedule
          Properties:
            Schedule: rate(1 day)
        Get:
          Type: Api
          Properties:
            Path: /orders/{id}
            Method: get
        Http:
          Type: HttpApi
Outputs:
  Api: {Value: !Sub "https://${ServerlessRestApi}.execute-api.${AWS::Region}.amazonaws.com/Prod/"}
  Role: {Value: !GetAtt WorkerRole.Arn}
  Layer: {Value: !Ref Deps}
`

func TestServerlessTemplatesAreExpandedAsSAMDoes(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	cs := e.settledChangeSet(&cloudformation.CreateChangeSetInput{StackName: aws.String("sam"), ChangeSetName: aws.String("c1"),
		ChangeSetType: types.ChangeSetTypeCreate, TemplateBody: aws.String(samTemplate), Capabilities: []types.Capability{types.CapabilityCapabilityIam}})
	if cs.Status != types.ChangeSetStatusCreateComplete {
		t.Fatalf("change set %s: %s", cs.Status, aws.ToString(cs.StatusReason))
	}
	var added []string
	for _, c := range cs.Changes {
		added = append(added, aws.ToString(c.ResourceChange.LogicalResourceId)+" "+aws.ToString(c.ResourceChange.ResourceType))
	}
	for _, want := range []string{
		"Worker AWS::Lambda::Function", "WorkerRole AWS::IAM::Role", "WorkerQueue AWS::Lambda::EventSourceMapping",
		"WorkerNotice AWS::SNS::Subscription", "WorkerNoticePermission AWS::Lambda::Permission", "WorkerUploadPermission AWS::Lambda::Permission",
		"WorkerNightly AWS::Events::Rule", "WorkerNightlyPermission AWS::Lambda::Permission", "WorkerGetPermissionProd AWS::Lambda::Permission",
		"WorkerHttpPermission AWS::Lambda::Permission", "ServerlessRestApi AWS::ApiGateway::RestApi", "ServerlessRestApiProdStage AWS::ApiGateway::Stage",
		"ServerlessHttpApi AWS::ApiGatewayV2::Api", "ServerlessHttpApiApiGatewayDefaultStage AWS::ApiGatewayV2::Stage",
		"Table AWS::DynamoDB::Table", "Uploads AWS::S3::Bucket",
	} {
		if !slices.Contains(added, want) {
			t.Errorf("change set lacks %s:\n%s", want, strings.Join(added, "\n"))
		}
	}
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{ChangeSetName: cs.ChangeSetId}); err != nil {
		t.Fatal(err)
	}
	st := e.settle("sam")
	if st.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("status %s (%s)\n%s", st.StackStatus, aws.ToString(st.StackStatusReason), strings.Join(eventLines(e.allEvents("sam")), "\n"))
	}
	out := outputs(st)
	if !strings.HasPrefix(out["Role"], "arn:aws:iam::000000000000:role/sam-WorkerRole-") || !strings.HasPrefix(out["Layer"], "arn:aws:lambda:us-east-1:000000000000:layer:Deps:") {
		t.Errorf("outputs %v", out)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(e.template("sam", types.TemplateStageProcessed)), &m); err != nil {
		t.Fatal(err)
	}
	res := m["Resources"].(map[string]any)
	fn := res["Worker"].(map[string]any)["Properties"].(map[string]any)
	if env := fn["Environment"].(map[string]any)["Variables"].(map[string]any); env["STAGE"] != "dev" || fn["Runtime"] != "python3.12" || fn["Timeout"] == nil {
		t.Errorf("Globals not merged into the function: %v", fn)
	}
	layers := fn["Layers"].([]any)
	if r, _ := layers[0].(map[string]any)["Ref"].(string); !strings.HasPrefix(r, "Deps") || len(r) != len("Deps")+10 || res[r] == nil {
		t.Errorf("the function's layer %v is not the hashed LayerVersion", layers)
	}
	bucket := res["Uploads"].(map[string]any)
	if deps, _ := bucket["DependsOn"].([]any); !slices.Contains(deps, any("WorkerUploadPermission")) {
		t.Errorf("bucket DependsOn %v", bucket["DependsOn"])
	}
	role := res["WorkerRole"].(map[string]any)["Properties"].(map[string]any)
	if pols := role["Policies"].([]any); len(pols) != 2 || pols[1].(map[string]any)["PolicyName"] != "WorkerRolePolicy1" {
		t.Errorf("role policies %v", role["Policies"])
	}
	if arns := role["ManagedPolicyArns"].([]any); !slices.Contains(arns, any("arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole")) {
		t.Errorf("role managed policies %v", arns)
	}
}

func TestServerlessTranslatorRefusals(t *testing.T) {
	tests := []struct{ name, resources, want string }{
		{"unsupported type", "  Ws:\n    Type: AWS::Serverless::WebSocketApi\n    Properties: {RouteSelectionExpression: $request.body.action, Routes: {$default: {FunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:f'}}}\n", "AWS::Serverless::WebSocketApi is not supported"},
		{"s3 bucket elsewhere", "  F:\n    Type: AWS::Serverless::Function\n    Properties:\n      Handler: a.b\n      Runtime: python3.12\n      InlineCode: x\n      Events:\n        U: {Type: S3, Properties: {Bucket: other, Events: 's3:ObjectCreated:*'}}\n",
			"S3 events must reference an S3 bucket in the same template."},
		{"no code", "  F:\n    Type: AWS::Serverless::Function\n    Properties: {Handler: a.b, Runtime: python3.12}\n", "Only one of 'InlineCode' or 'CodeUri' can be set."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			cs := e.settledChangeSet(&cloudformation.CreateChangeSetInput{StackName: aws.String("sam"), ChangeSetName: aws.String("c1"),
				ChangeSetType: types.ChangeSetTypeCreate, TemplateBody: aws.String("Transform: AWS::Serverless-2016-10-31\nResources:\n" + tc.resources)})
			if cs.Status != types.ChangeSetStatusFailed || !strings.Contains(aws.ToString(cs.StatusReason), tc.want) ||
				!strings.HasPrefix(aws.ToString(cs.StatusReason), "Transform AWS::Serverless-2016-10-31 failed with: Invalid Serverless Application Specification document.") {
				t.Errorf("change set %s (%s), want FAILED with %q", cs.Status, aws.ToString(cs.StatusReason), tc.want)
			}
		})
	}
}
