//go:build cairn.lambda

package awsclient

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// ForFunction is a Lambda function's configuration: FromEnvironment's, so the function's
// binary carries none of the SDK's shared-file, profile and SSO chain.
func ForFunction(context.Context) (aws.Config, error) { return FromEnvironment() }
