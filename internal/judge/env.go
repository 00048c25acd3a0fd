package judge

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/lambdajob"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/verdict"
)

// ConfigFromEnv reads the function's configuration: CAIRN_BUCKET.
func ConfigFromEnv() (Config, error) {
	e := lambdajob.NewEnv("policy")
	c := Config{Bucket: e.Required("CAIRN_BUCKET")}
	return c, e.Err()
}

// HandlerFromEnv builds the policy function's handler from the environment, its S3
// client gated to cairn's bucket (objects.Gate).
func HandlerFromEnv(ctx context.Context) (func(context.Context, verdict.Request) (verdict.Answer, error), error) {
	return lambdajob.Handler(ctx, ConfigFromEnv, func(awsCfg aws.Config, c Config) (func(context.Context, verdict.Request) (verdict.Answer, error), error) {
		j := New(objects.Gate(awsclient.S3(awsCfg), c.Bucket), c, slog.Default())
		return j.Handle, nil
	})
}
