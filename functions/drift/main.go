// Command drift is the Lambda function that checks cairn's stacks for drift: started by
// the EventBridge schedule, continued by drift status change events and delayed SQS
// messages until every detection has finished.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cairn-dev/cairn/internal/sweeper"
)

func main() {
	// JSON logs, so CloudWatch Logs Insights can filter on sweep, graph and stack.
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	h, err := sweeper.HandlerFromEnv(context.Background())
	if err != nil {
		slog.Error("drift function misconfigured", "err", err)
		os.Exit(1)
	}
	lambda.Start(h)
}
