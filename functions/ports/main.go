// Command ports is the Lambda function serving Custom::PortAllocation requests that
// CloudFormation publishes to cairn's SNS topic and SQS delivers.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/ports"
)

func main() {
	// JSON logs, so CloudWatch Logs Insights can filter on request_id, stack_id, logical_id.
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	ctx := context.Background()
	cfg, err := ports.ConfigFromEnv()
	if err != nil {
		slog.Error("ports function misconfigured", "err", err)
		os.Exit(1)
	}
	aws, err := awsclient.ForFunction(ctx)
	if err != nil {
		slog.Error("ports function cannot load its AWS configuration", "err", err)
		os.Exit(1)
	}
	h, err := ports.NewHandler(awsclient.S3(aws), cfg)
	if err != nil {
		slog.Error("ports function misconfigured", "err", err)
		os.Exit(1)
	}
	lambda.Start(h.HandleSQS)
}
