package awslocal_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/awslocal"
)

// A bucket policy naming its bucket by name rather than by Ref waits for the bucket, as
// the policy's handler in AWS does (CloudFormation creates both at once): the stack is
// created, and deleted, without NoSuchBucket.
func TestResourcesNamingAnotherByNameComeAfterIt(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet(), CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: time.Millisecond, ChangeSetDelay: time.Millisecond}})
	ctx := context.Background()
	cfg, err := v.e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cf := cloudformation.NewFromConfig(cfg)
	body := `Resources:
  AAPolicy:
    Type: AWS::S3::BucketPolicy
    Properties:
      Bucket: !Sub "site-${AWS::AccountId}"
      PolicyDocument: {Version: "2012-10-17", Statement: [{Effect: Deny, Principal: "*", Action: "s3:*", Resource: !Sub "arn:aws:s3:::site-${AWS::AccountId}/*", Condition: {Bool: {"aws:SecureTransport": false}}}]}
  Site:
    Type: AWS::S3::Bucket
    Properties: {BucketName: !Sub "site-${AWS::AccountId}"}
`
	out, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("site"), TemplateBody: aws.String(body)})
	if err != nil {
		t.Fatal(err)
	}
	waitStack(t, cf, "site", cfntypes.StackStatusCreateComplete)
	if _, err := cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("site")}); err != nil {
		t.Fatal(err)
	}
	waitStack(t, cf, aws.ToString(out.StackId), cfntypes.StackStatusDeleteComplete)
}
