// Command policy is the Lambda function that judges plans and pushes with policies: the
// deployer invokes it synchronously (Lambda Invoke) with the plan document or the push's
// run, and it answers each policy's denials and warnings and where it read the policies.
// It alone links the policy engine (OPA), which would double the deployer.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cairn-dev/cairn/internal/judge"
)

func main() {
	// JSON logs, so CloudWatch Logs Insights can filter on deployment, run and plan.
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	h, err := judge.HandlerFromEnv(context.Background())
	if err != nil {
		slog.Error("policy function misconfigured", "err", err)
		os.Exit(1)
	}
	lambda.Start(h)
}
