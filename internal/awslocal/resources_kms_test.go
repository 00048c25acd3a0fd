package awslocal_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/cairn-dev/cairn/internal/awslocal"
)

// TestStackKMSKeyIsReal: an AWS::KMS::Key of a stack is a key of the emulator's KMS (Ref
// its id, GetAtt Arn its ARN) that makes MACs through the SDK; deleting the stack
// schedules its deletion, after which it makes none.
func TestStackKMSKeyIsReal(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet(), CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: time.Millisecond, ChangeSetDelay: time.Millisecond}})
	ctx := context.Background()
	cfg, err := v.e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cf, k := cloudformation.NewFromConfig(cfg), kms.NewFromConfig(cfg)
	const tpl = `Resources:
  SealKey:
    Type: AWS::KMS::Key
    Properties:
      KeySpec: HMAC_256
      KeyUsage: GENERATE_VERIFY_MAC
      KeyPolicy: {Version: "2012-10-17", Statement: [{Effect: Allow, Principal: {AWS: !Sub "arn:aws:iam::${AWS::AccountId}:root"}, Action: "kms:DescribeKey", Resource: "*"}]}
Outputs:
  Id: {Value: !Ref SealKey}
  Arn: {Value: !GetAtt SealKey.Arn}
`
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-keys"), TemplateBody: aws.String(tpl)}); err != nil {
		t.Fatal(err)
	}
	out := waitStack(t, cf, "shop-keys", cfntypes.StackStatusCreateComplete)
	if out["Arn"] != "arn:aws:kms:us-east-1:000000000000:key/"+out["Id"] {
		t.Fatalf("outputs %v", out)
	}
	mac := func() error {
		_, err := k.GenerateMac(ctx, &kms.GenerateMacInput{KeyId: aws.String(out["Id"]), MacAlgorithm: kmstypes.MacAlgorithmSpecHmacSha256, Message: []byte("m")})
		return err
	}
	if err := mac(); err != nil {
		t.Fatalf("GenerateMac with the stack's key: %v", err)
	}
	if _, err := cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("shop-keys")}); err != nil {
		t.Fatal(err)
	}
	waitDeleted(t, cf, "shop-keys")
	if err := mac(); err == nil {
		t.Error("the key of a deleted stack still makes MACs")
	}
}
