package awslocal_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/awslocal"
)

// A Lambda-backed custom resource whose function runs in process (a handler registered
// for the function the stack makes) is invoked with CloudFormation's request and answers
// through aws-lambda-go's cfn package, as the deployed function would.
func TestLambdaBackedCustomResourceInvokesTheRegisteredHandler(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet(), CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: time.Millisecond, ChangeSetDelay: time.Millisecond}})
	ctx := context.Background()
	var mu sync.Mutex
	var requests []string
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), requests...)
	}
	handler := cfn.LambdaWrap(func(ctx context.Context, ev cfn.Event) (string, map[string]any, error) {
		mu.Lock()
		defer mu.Unlock()
		requests = append(requests, string(ev.RequestType))
		return "greeting-1", map[string]any{"Text": "hello " + ev.ResourceProperties["Name"].(string)}, nil
	})
	provider := `Resources:
  Greeter:
    Type: AWS::Lambda::Function
    Properties:
      FunctionName: greeter
      Runtime: provided.al2023
      Handler: bootstrap
      Role: arn:aws:iam::000000000000:role/fn
      Code: {ZipFile: "x"}
Outputs:
  Arn: {Value: !GetAtt Greeter.Arn, Export: {Name: greeter-arn}}
`
	body := `Resources:
  Greeting:
    Type: Custom::Greeting
    Properties:
      ServiceToken: !ImportValue greeter-arn
      Name: cairn
Outputs:
  Text: {Value: !GetAtt Greeting.Text}
  Id: {Value: !Ref Greeting}
`
	cfg, err := v.e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cf := cloudformation.NewFromConfig(cfg)
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("provider"), TemplateBody: aws.String(provider)}); err != nil {
		t.Fatal(err)
	}
	waitStack(t, cf, "provider", cfntypes.StackStatusCreateComplete)
	if err := v.e.RegisterFunction("greeter", handler); err != nil {
		t.Fatal(err)
	}
	id, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("greet"), TemplateBody: aws.String(body)})
	if err != nil {
		t.Fatal(err)
	}
	out := waitStack(t, cf, "greet", cfntypes.StackStatusCreateComplete)
	if out["Text"] != "hello cairn" || out["Id"] != "greeting-1" {
		t.Fatalf("outputs %v", out)
	}
	if _, err := cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("greet")}); err != nil {
		t.Fatal(err)
	}
	waitStack(t, cf, aws.ToString(id.StackId), cfntypes.StackStatusDeleteComplete)
	if got := seen(); len(got) != 2 || got[0] != "Create" || got[1] != "Delete" {
		t.Fatalf("the handler got %v, want Create then Delete", got)
	}
}
