package awslocal_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awslocal"
)

// A function whose Code names an S3 object gets that object's code, as Lambda reads it
// when CloudFormation creates or updates the function: the stand-in records where it came
// from and its CodeSha256, and an update to another object changes them. An object that is
// not there fails the resource in Lambda's words, and the stack rolls back.
func TestFunctionCodeIsReadFromS3(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet(), CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: time.Millisecond, ChangeSetDelay: time.Millisecond}})
	ctx := context.Background()
	cfg, err := v.e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("code")}); err != nil {
		t.Fatal(err)
	}
	put := func(key, body string) string {
		if _, err := v.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("code"), Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(body))
		return base64.StdEncoding.EncodeToString(sum[:])
	}
	v1, v2 := put("assets/v1.zip", "code one"), put("assets/v2.zip", "code two")
	template := func(key string) string {
		return `Resources:
  Fn:
    Type: AWS::Lambda::Function
    Properties:
      FunctionName: worker
      Runtime: provided.al2023
      Handler: bootstrap
      Role: arn:aws:iam::000000000000:role/fn
      Code: {S3Bucket: code, S3Key: ` + key + `}
`
	}
	cf := cloudformation.NewFromConfig(cfg)
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("fn"), TemplateBody: aws.String(template("assets/v1.zip"))}); err != nil {
		t.Fatal(err)
	}
	waitStack(t, cf, "fn", cfntypes.StackStatusCreateComplete)
	code := func() awslocal.FunctionCode {
		t.Helper()
		resp, err := http.Get(v.e.URL() + "/_local/lambda/functions")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var fns []awslocal.FunctionConfig
		if err := json.NewDecoder(resp.Body).Decode(&fns); err != nil {
			t.Fatal(err)
		}
		for _, f := range fns {
			if f.Name == "worker" {
				return f.Code
			}
		}
		t.Fatalf("no function worker in %+v", fns)
		return awslocal.FunctionCode{}
	}
	if c := code(); c.S3Bucket != "code" || c.S3Key != "assets/v1.zip" || c.CodeSha256 != v1 || c.CodeSize != int64(len("code one")) {
		t.Errorf("code after create %+v, want assets/v1.zip with CodeSha256 %s", c, v1)
	}
	if _, err := cf.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("fn"), TemplateBody: aws.String(template("assets/v2.zip"))}); err != nil {
		t.Fatal(err)
	}
	waitStack(t, cf, "fn", cfntypes.StackStatusUpdateComplete)
	if c := code(); c.S3Key != "assets/v2.zip" || c.CodeSha256 != v2 {
		t.Errorf("code after update %+v, want assets/v2.zip with CodeSha256 %s", c, v2)
	}
	// a missing object: the update fails with Lambda's message and rolls back to v2
	if _, err := cf.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("fn"), TemplateBody: aws.String(template("assets/gone.zip"))}); err != nil {
		t.Fatal(err)
	}
	waitStack(t, cf, "fn", cfntypes.StackStatusUpdateRollbackComplete)
	evs, err := cf.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String("fn")})
	if err != nil {
		t.Fatal(err)
	}
	var reasons bytes.Buffer
	for _, e := range evs.StackEvents {
		reasons.WriteString(aws.ToString(e.ResourceStatusReason) + "\n")
	}
	if want := "Error occurred while GetObject. S3 Error Code: NoSuchKey. S3 Error Message: The specified key does not exist."; !strings.Contains(reasons.String(), want) {
		t.Errorf("events lack %q:\n%s", want, reasons.String())
	}
	if c := code(); c.S3Key != "assets/v2.zip" {
		t.Errorf("code after the rollback %+v, want assets/v2.zip again", c)
	}
}
