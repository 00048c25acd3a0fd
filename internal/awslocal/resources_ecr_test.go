package awslocal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ecr"

	"github.com/cairn-dev/cairn/internal/awslocal"
)

const repositoryTemplate = `Parameters:
  Name: {Type: String, Default: shop-images}
  Empty: {Type: String, Default: "false"}
Resources:
  Images:
    Type: AWS::ECR::Repository
    Properties:
      RepositoryName: !Ref Name
      ImageTagMutability: IMMUTABLE
      EmptyOnDelete: !Ref Empty
Outputs:
  Name: {Value: !Ref Images}
  Uri: {Value: !GetAtt Images.RepositoryUri}
  Arn: {Value: !GetAtt Images.Arn}
`

// TestStackRepositoryIsReal: an AWS::ECR::Repository a stack makes is a repository of the
// place's registry (as CDK's bootstrap stack makes one), with its name, URI and ARN; a
// stack deleting it while it holds an image fails as in AWS, unless EmptyOnDelete.
func TestStackRepositoryIsReal(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet(), CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: time.Millisecond, ChangeSetDelay: time.Millisecond}})
	ctx := context.Background()
	cfg, err := v.e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cf, registry := cloudformation.NewFromConfig(cfg), ecr.NewFromConfig(cfg)
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-registry"), TemplateBody: aws.String(repositoryTemplate)}); err != nil {
		t.Fatal(err)
	}
	out := waitStack(t, cf, "shop-registry", cfntypes.StackStatusCreateComplete)
	if out["Name"] != "shop-images" || out["Uri"] != "000000000000.dkr.ecr.us-east-1.amazonaws.com/shop-images" || out["Arn"] != "arn:aws:ecr:us-east-1:000000000000:repository/shop-images" {
		t.Errorf("outputs %v", out)
	}
	repos, err := registry.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{"shop-images"}})
	if err != nil || repos.Repositories[0].ImageTagMutability != "IMMUTABLE" {
		t.Fatalf("the stack's repository: %+v %v", repos, err)
	}
	if _, err := registry.PutImage(ctx, &ecr.PutImageInput{RepositoryName: aws.String("shop-images"), ImageTag: aws.String("v1"), ImageManifest: aws.String(`{"schemaVersion":2}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("shop-registry")}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("shop-registry")})
		if err != nil {
			t.Fatal(err)
		}
		if s := st.Stacks[0]; s.StackStatus == cfntypes.StackStatusDeleteFailed {
			if reason := eventReason(t, cf, "shop-registry", "Images"); !strings.Contains(reason, "cannot be deleted because it still contains images") {
				t.Errorf("the repository's deletion failed with %q", reason)
			}
			break
		} else if !strings.HasSuffix(string(s.StackStatus), "_IN_PROGRESS") || time.Now().After(deadline) {
			t.Fatalf("deleting a stack whose repository holds an image: %s", s.StackStatus)
		}
	}
	if _, err := cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("shop-registry"), RetainResources: []string{"Images"}}); err != nil {
		t.Fatal(err)
	}
	waitDeleted(t, cf, "shop-registry")

	// EmptyOnDelete: the repository goes, image and all.
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-scratch"), TemplateBody: aws.String(repositoryTemplate),
		Parameters: []cfntypes.Parameter{{ParameterKey: aws.String("Name"), ParameterValue: aws.String("shop-scratch")}, {ParameterKey: aws.String("Empty"), ParameterValue: aws.String("true")}}}); err != nil {
		t.Fatal(err)
	}
	waitStack(t, cf, "shop-scratch", cfntypes.StackStatusCreateComplete)
	if _, err := registry.PutImage(ctx, &ecr.PutImageInput{RepositoryName: aws.String("shop-scratch"), ImageTag: aws.String("v1"), ImageManifest: aws.String(`{"schemaVersion":2}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("shop-scratch")}); err != nil {
		t.Fatal(err)
	}
	waitDeleted(t, cf, "shop-scratch")
	if _, err := registry.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{"shop-scratch"}}); err == nil {
		t.Error("the repository of a deleted stack with EmptyOnDelete is still there")
	}
}

// eventReason is the reason of the newest failed event of a stack's resource.
func eventReason(t *testing.T, cf *cloudformation.Client, stack, logicalID string) string {
	t.Helper()
	evs, err := cf.DescribeStackEvents(context.Background(), &cloudformation.DescribeStackEventsInput{StackName: aws.String(stack)})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.StackEvents {
		if aws.ToString(ev.LogicalResourceId) == logicalID && strings.HasSuffix(string(ev.ResourceStatus), "_FAILED") {
			return aws.ToString(ev.ResourceStatusReason)
		}
	}
	return ""
}
