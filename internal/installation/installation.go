// Package installation is how the command-line tool finds and reaches one installation of
// cairn: the AWS configuration from the environment (tuned for a person at a terminal,
// not for a Lambda), and cairn's bucket, drift queue and notifications topic, each taken
// from its flag, then its environment variable, then the CloudFormation export cairn's
// own stack sets. Every command resolves them here, so they all agree.
//
// It also turns the failures a user causes by setup (an emulator that is not running, no
// credentials, a bucket that does not exist) into errors that say what to do.
package installation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/logging"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/target"
)

// Environment variables naming cairn's resources, as `cairn local env` and the Lambdas'
// configuration spell them.
const (
	BucketEnv     = "CAIRN_BUCKET"
	DriftQueueEnv = "CAIRN_DRIFT_QUEUE_URL"
	TopicEnv      = "CAIRN_NOTIFICATIONS_TOPIC"
)

// CloudFormation exports of cairn's own stack (infra/ and `cairn local up` set them).
const (
	BucketExport = "cairn-bucket-name"
	TopicExport  = "cairn-notifications-topic-arn"
	// PolicyRoleExport is the ARN of the policy role, the only principal that may write the
	// team's policies and overrides.
	PolicyRoleExport = "cairn-policy-role-arn"
)

// DialTimeout bounds connecting to an endpoint: a person waits for the answer, and a host
// that does not answer within it is not going to.
const DialTimeout = 5 * time.Second

// Options are the command's flags; "" means "not given".
type Options struct {
	Bucket     string
	DriftQueue string
	Topic      string
	// Stderr receives warnings of the libraries the command calls (nil: discarded).
	Stderr io.Writer
}

// Session is one command's view of cairn. Resources resolve lazily and once.
type Session struct {
	AWS            aws.Config
	S3             *s3.Client
	CloudFormation *cloudformation.Client
	// Logger logs warnings and errors only: commands print what matters themselves.
	Logger *slog.Logger

	opts    Options
	exports map[string]string
	bucket  string
}

// Open loads the AWS configuration from the environment and checks that it holds
// credentials, so a missing one is named before any call is made.
func Open(ctx context.Context, opts Options) (*Session, error) {
	cfg, err := Config(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return nil, credentialsError(err)
	}
	w := opts.Stderr
	if w == nil {
		w = io.Discard
	}
	return &Session{
		AWS: cfg, S3: awsclient.S3(cfg), CloudFormation: cloudformation.NewFromConfig(cfg),
		Logger: slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn})),
		opts:   opts,
	}, nil
}

// Config is the shared AWS configuration (awsclient.Load) with the command line's network
// behaviour: an endpoint that refuses or does not answer fails the call at once instead
// of being retried, throttling is still retried with backoff, and the SDK's own log lines
// (such as IMDS fallbacks while looking for credentials) stay off the terminal.
func Config(ctx context.Context) (aws.Config, error) {
	return awsclient.Load(ctx,
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = awsclient.MaxAttempts
				o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
					if Unreachable(err) {
						return aws.FalseTernary
					}
					return aws.UnknownTernary
				})}, o.Retryables...)
			})
		}),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithDialerOptions(func(d *net.Dialer) { d.Timeout = DialTimeout })),
		config.WithLogger(logging.Nop{}),
	)
}

// Region is the AWS region the session talks to.
func (s *Session) Region() string { return s.AWS.Region }

// Home is cairn's own account and region as the session sees them — the account of its
// credentials (STS GetCallerIdentity), the region it talks to — so a command describes a
// stack elsewhere as the deployer does (target.Describe). When STS cannot tell, the account
// is "" and every account is shown.
func (s *Session) Home(ctx context.Context) target.Target {
	home := target.Target{Region: s.Region()}
	if out, err := sts.NewFromConfig(s.AWS).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}); err == nil {
		home.Account = aws.ToString(out.Account)
	} else {
		s.Logger.Debug("who am I (sts GetCallerIdentity)", "err", err)
	}
	return home
}

// Bucket is cairn's bucket: --bucket, CAIRN_BUCKET, or the export cairn-bucket-name. A
// bucket that does not exist is named with where its name came from.
func (s *Session) Bucket(ctx context.Context) (string, error) {
	if s.bucket != "" {
		return s.bucket, nil
	}
	b, from := s.opts.Bucket, "--bucket"
	if b == "" {
		b, from = os.Getenv(BucketEnv), BucketEnv
	}
	if b == "" {
		var err error
		if b, err = s.export(ctx, BucketExport); err != nil {
			return "", fmt.Errorf("find cairn's bucket: %w", err)
		}
		if b == "" {
			return "", &SetupError{Msg: fmt.Sprintf("find cairn's bucket: %s; or pass --bucket, or set %s", s.noExport(BucketExport), BucketEnv)}
		}
		from = "the export " + BucketExport
	}
	_, err := s.S3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b)})
	if err != nil && (awserr.NotFound(err) || awserr.ErrorCode(err) == "NoSuchBucket") {
		return "", &SetupError{Msg: fmt.Sprintf("bucket %s (from %s) does not exist: check the name, or the AWS account and region (%s) you point at", b, from, s.Region()), Err: err}
	}
	if err != nil && Unreachable(err) {
		return "", err
	}
	// Any other answer (403 without s3:ListBucket, say) leaves the real calls to tell.
	s.bucket = b
	return b, nil
}

// Topic is the notifications topic: --topic, CAIRN_NOTIFICATIONS_TOPIC, or the export
// cairn-notifications-topic-arn; "" when none of them names one.
func (s *Session) Topic(ctx context.Context) (string, error) {
	if t := first(s.opts.Topic, os.Getenv(TopicEnv)); t != "" {
		return t, nil
	}
	t, err := s.export(ctx, TopicExport)
	if err != nil {
		return "", fmt.Errorf("find cairn's notifications topic: %w", err)
	}
	return t, nil
}

// PolicyRole is the ARN of cairn's policy role, from the export cairn-policy-role-arn.
func (s *Session) PolicyRole(ctx context.Context) (string, error) {
	return s.export(ctx, PolicyRoleExport)
}

// DriftQueue is the drift function's queue: --queue-url or CAIRN_DRIFT_QUEUE_URL ("" when
// neither is set: cairn's stack exports no queue).
func (s *Session) DriftQueue() string { return first(s.opts.DriftQueue, os.Getenv(DriftQueueEnv)) }

// export returns the value of a CloudFormation export, "" when it does not exist. The
// exports are listed once per session.
func (s *Session) export(ctx context.Context, name string) (string, error) {
	if s.exports == nil {
		exports := map[string]string{}
		p := cloudformation.NewListExportsPaginator(s.CloudFormation, &cloudformation.ListExportsInput{})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return "", fmt.Errorf("list CloudFormation exports in %s: %w", s.Region(), err)
			}
			for _, e := range page.Exports {
				exports[aws.ToString(e.Name)] = aws.ToString(e.Value)
			}
		}
		s.exports = exports
	}
	return s.exports[name], nil
}

// noExport says an export is missing, and what that means where the session points.
func (s *Session) noExport(name string) string {
	if ep := awsclient.Endpoint(); ep != "" {
		return fmt.Sprintf("no CloudFormation export %s at %s (AWS_ENDPOINT_URL): is it a cairn emulator (`cairn local up`)?", name, ep)
	}
	return fmt.Sprintf("no CloudFormation export %s in %s: deploy cairn there first (make deploy), or set AWS_REGION to where it is; for the local emulator run `eval \"$(cairn local env)\"`", name, s.Region())
}

func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// credentialsError names the variables that provide credentials.
func credentialsError(err error) error {
	if ep := awsclient.Endpoint(); ep != "" {
		return &SetupError{Msg: fmt.Sprintf("no AWS credentials for %s (AWS_ENDPOINT_URL): for the local emulator run `eval \"$(cairn local env)\"`; otherwise set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE", ep), Err: err}
	}
	return &SetupError{Msg: "no AWS credentials: set AWS_PROFILE (a profile of ~/.aws/config), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones); for the local emulator run `eval \"$(cairn local env)\"`", Err: err}
}

// SetupError is a failure of the user's setup rather than of the command: its message
// says what to set or start, and the SDK's error stays behind it for errors.Is/As.
type SetupError struct {
	Msg string
	Err error
}

func (e *SetupError) Error() string { return e.Msg }
func (e *SetupError) Unwrap() error { return e.Err }

// Explain returns err, or when err is a setup failure an error that says what to do
// instead of the SDK's chain of wrapped messages.
func Explain(err error) error {
	var se *SetupError
	switch {
	case err == nil || errors.As(err, &se):
		return err
	case Unreachable(err):
		if ep := awsclient.Endpoint(); ep != "" {
			return &SetupError{Msg: fmt.Sprintf("cannot reach AWS at %s (AWS_ENDPOINT_URL): is \"cairn local up\" running?", ep), Err: err}
		}
		return &SetupError{Msg: fmt.Sprintf("cannot reach AWS%s: check the network connection and AWS_REGION", unreachableHost(err)), Err: err}
	}
	return err
}

// Unreachable reports a call that never reached its endpoint: the connection was refused,
// timed out while connecting, or the host name did not resolve.
func Unreachable(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED)
}

// unreachableHost is " at URL" of the endpoint a failed call tried, or "".
func unreachableHost(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			return " at " + u.Scheme + "://" + u.Host
		}
	}
	return ""
}
