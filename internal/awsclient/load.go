//go:build !cairn.lambda

package awsclient

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go/middleware"
)

// Load reads the shared AWS configuration from the environment: the SDK's whole chain
// (environment, shared files and profiles, SSO, instance and container credentials), as
// the CLI and `cairn local up` need it.
func Load(ctx context.Context, optFns ...func(*config.LoadOptions) error) (aws.Config, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(retryer),
		WithSafeBodies(),
		// Checksums only where an API requires them: plain-HTTP endpoints and non-seekable
		// bodies otherwise break uploads.
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		opts = append(opts, config.WithRegion(defaultRegion))
	}
	cfg, err := config.LoadDefaultConfig(ctx, append(opts, optFns...)...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration from the environment: %w", err)
	}
	return cfg, nil
}

// ForFunction is a function's configuration: Load's, where the functions run in process
// (`cairn local up`, tests); built for Lambda (the cairn.lambda build tag, the Makefile's
// LAMBDA_TAGS), FromEnvironment's.
func ForFunction(ctx context.Context) (aws.Config, error) { return Load(ctx) }

// WithSafeBodies is the configuration option that adds SafeBodies to every client, for
// configurations loaded without Load (the emulator's own clients, tests).
func WithSafeBodies() func(*config.LoadOptions) error {
	return config.WithAPIOptions([]func(*middleware.Stack) error{SafeBodies})
}
