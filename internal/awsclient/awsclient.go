// Package awsclient builds the aws-sdk-go-v2 configuration every part of cairn uses.
//
// The configuration comes only from the environment (credentials chain, AWS_REGION,
// AWS_ENDPOINT_URL), so the same binary talks to AWS or to the local emulator without
// knowing which. When an endpoint override is set, S3 is addressed path-style, because
// an emulator on 127.0.0.1 cannot serve virtual-hosted bucket names.
package awsclient

import (
	"cmp"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
)

// MaxAttempts bounds every SDK call's retries (throttling included, with backoff).
const MaxAttempts = 8

func retryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = MaxAttempts })
}

// defaultRegion is the region when the environment names none.
const defaultRegion = "us-east-1"

// FromEnvironment is the configuration of a Lambda function, from the environment Lambda
// gives it alone: AWS_REGION, the credentials of the function's role
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), and AWS_ENDPOINT_URL when
// set; with Load's retries and checksum settings. It leaves out the SDK's chain of shared
// files, profiles, SSO and instance metadata, which a Lambda never uses, so a function's
// binary carries none of it (ForFunction, under the cairn.lambda build tag).
func FromEnvironment() (aws.Config, error) {
	key, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if key == "" || secret == "" {
		return aws.Config{}, fmt.Errorf("load AWS configuration from the environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (Lambda sets them from the function's role)")
	}
	cfg := aws.Config{
		Region:                     cmp.Or(os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"), defaultRegion),
		Credentials:                credentials.NewStaticCredentialsProvider(key, secret, os.Getenv("AWS_SESSION_TOKEN")),
		HTTPClient:                 awshttp.NewBuildableClient(),
		Retryer:                    retryer,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		APIOptions:                 []func(*middleware.Stack) error{SafeBodies},
	}
	if e := Endpoint(); e != "" {
		cfg.BaseEndpoint = aws.String(e)
	}
	return cfg, nil
}

// Endpoint returns the endpoint override the environment sets, or "" for real AWS.
func Endpoint() string {
	return os.Getenv("AWS_ENDPOINT_URL")
}

// StackName returns NAME of a CloudFormation stack id, arn:aws:cloudformation:REGION:ACCOUNT:stack/NAME/ID;
// anything else is returned as it is (a stack name already).
func StackName(stackID string) string {
	_, rest, ok := strings.Cut(stackID, ":stack/")
	if !ok {
		return stackID
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// S3 returns an S3 client for cfg, path-style when an endpoint override is set.
func S3(cfg aws.Config) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if Endpoint() != "" || o.BaseEndpoint != nil {
			o.UsePathStyle = true
		}
	})
}
