// Command deployer is the Lambda function that runs deployments: it starts a run for each
// bundle uploaded to deployments/NAME.zip and advances open runs on CloudFormation stack
// status events and heartbeats, all arriving through the deploy SQS queue.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cairn-dev/cairn/internal/deployer"
)

func main() {
	// JSON logs, so CloudWatch Logs Insights can filter on run, deployment and stack.
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	h, err := deployer.HandlerFromEnv(context.Background())
	if err != nil {
		slog.Error("deployer function misconfigured", "err", err)
		os.Exit(1)
	}
	lambda.Start(h)
}
