package awslocal_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

// TestLambdaAndIAMAnswerAsAWS: Lambda's GetFunction and Invoke reach a function cairn runs
// in process, IAM's GetRole a role a stack made; a missing function or role is 404
// ResourceNotFoundException / NoSuchEntity; an operation not served is answered as an
// operation the endpoint does not know (Lambda 404 UnknownOperationException, IAM 400
// InvalidAction), saying the emulator does not serve it.
func TestLambdaAndIAMAnswerAsAWS(t *testing.T) {
	v := startStacks(t)
	ctx := context.Background()
	if err := v.e.RegisterFunction("echo", func(_ context.Context, in map[string]any) (map[string]any, error) {
		return map[string]any{"got": in["say"]}, nil
	}); err != nil {
		t.Fatal(err)
	}
	v.deploy(t, "roles", `Resources:
  Runner:
    Type: AWS::IAM::Role
    Properties:
      RoleName: d43-runner
      AssumeRolePolicyDocument: {Version: "2012-10-17", Statement: [{Effect: Allow, Principal: {Service: lambda.amazonaws.com}, Action: "sts:AssumeRole"}]}
`)
	cfg, err := v.e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lc, ic := lambda.NewFromConfig(cfg), iam.NewFromConfig(cfg)

	fn, err := lc.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String("echo")})
	if err != nil || aws.ToString(fn.Configuration.FunctionName) != "echo" {
		t.Fatalf("GetFunction: %v %+v", err, fn)
	}
	out, err := lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("echo"), Payload: []byte(`{"say":"hi"}`)})
	var got map[string]string
	if err != nil || json.Unmarshal(out.Payload, &got) != nil || got["got"] != "hi" {
		t.Fatalf("Invoke: %v %s", err, out.Payload)
	}
	if _, err := lc.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String("missing")}); code(err) != "ResourceNotFoundException" || status(err) != "404" {
		t.Errorf("GetFunction of a missing function: %v", err)
	}
	if _, err := lc.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String("echo")}); code(err) != "UnknownOperationException" || status(err) != "404" ||
		!strings.Contains(err.Error(), "DeleteFunction (DELETE /2015-03-31/functions/echo) is an operation of Lambda that the local emulator does not serve") {
		t.Errorf("DeleteFunction (not served): %v", err)
	}

	role, err := ic.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("d43-runner")})
	if err != nil || aws.ToString(role.Role.RoleName) != "d43-runner" || aws.ToString(role.Role.Path) != "/" {
		t.Fatalf("GetRole: %v %+v", err, role)
	}
	if _, err := ic.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("missing")}); code(err) != "NoSuchEntity" || status(err) != "404" {
		t.Errorf("GetRole of a missing role: %v", err)
	}
	if _, err := ic.GetUser(ctx, &iam.GetUserInput{UserName: aws.String("someone")}); code(err) != "NoSuchEntity" || status(err) != "404" {
		t.Errorf("GetUser: %v", err)
	}
	if _, err := ic.ListRoles(ctx, &iam.ListRolesInput{}); code(err) != "InvalidAction" || status(err) != "400" || !strings.Contains(err.Error(), "ListRoles is an operation of IAM that the local emulator does not serve") {
		t.Errorf("ListRoles (not served): %v", err)
	}
}
