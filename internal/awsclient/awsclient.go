// Package awsclient builds the aws-sdk-go-v2 configuration every part of cairn uses.
//
// The configuration comes only from the environment (credentials chain, AWS_REGION,
// AWS_ENDPOINT_URL), so the same binary talks to AWS or to the local emulator without
// knowing which. When an endpoint override is set, S3 is addressed path-style, because
// an emulator on 127.0.0.1 cannot serve virtual-hosted bucket names.
package awsclient

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// MaxAttempts bounds every SDK call's retries (throttling included, with backoff).
const MaxAttempts = 8

// Load reads the shared AWS configuration from the environment.
func Load(ctx context.Context, optFns ...func(*config.LoadOptions) error) (aws.Config, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = MaxAttempts })
		}),
		// Checksums only where an API requires them: plain-HTTP endpoints and non-seekable
		// bodies otherwise break uploads.
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		opts = append(opts, config.WithRegion("us-east-1"))
	}
	cfg, err := config.LoadDefaultConfig(ctx, append(opts, optFns...)...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration from the environment: %w", err)
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
