package installation_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/installation"
	"github.com/cairn-dev/cairn/internal/localcairn"
)

// serve serves the emulator, bare, and points the environment at it, with no CAIRN_*
// variable set.
func serve(t *testing.T) *awslocal.Emulator {
	t.Helper()
	e, err := awslocal.New(awslocal.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	clearEnv(t)
	for _, kv := range e.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return e
}

// emulator serves cairn in the emulator (localcairn.Start), its exports included, no
// function running, and points the environment at the emulator with no CAIRN_* variable set.
func emulator(t *testing.T) *localcairn.Cairn {
	t.Helper()
	l, err := localcairn.Start(context.Background(), localcairn.StartOptions{Emulator: awslocal.Options{Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	clearEnv(t)
	for _, kv := range l.Emulator.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return l.Cairn
}

func clearEnv(t *testing.T) {
	for _, k := range []string{installation.BucketEnv, installation.DriftQueueEnv, installation.TopicEnv, "AWS_CA_BUNDLE", "AWS_PROFILE"} {
		t.Setenv(k, "")
	}
}

func TestBucketResolution(t *testing.T) {
	c := emulator(t)
	ctx := context.Background()
	s0, err := installation.Open(ctx, installation.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s0.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("from-flag")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s0.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("from-env")}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, flag, env string
		want, wantErr   string
	}{
		{name: "the export", want: c.Bucket},
		{name: "the environment over the export", env: "from-env", want: "from-env"},
		{name: "the flag over both", flag: "from-flag", env: "from-env", want: "from-flag"},
		{name: "a flag naming no bucket", flag: "nope", env: "from-env",
			wantErr: "bucket nope (from --bucket) does not exist: check the name, or the AWS account and region (us-east-1) you point at"},
		{name: "the environment naming no bucket", env: "nope",
			wantErr: "bucket nope (from CAIRN_BUCKET) does not exist: check the name, or the AWS account and region (us-east-1) you point at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(installation.BucketEnv, tt.env)
			s, err := installation.Open(ctx, installation.Options{Bucket: tt.flag})
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Bucket(ctx)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Bucket() = %q, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Bucket() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	t.Run("topic from the export", func(t *testing.T) {
		s, _ := installation.Open(ctx, installation.Options{})
		if got, err := s.Topic(ctx); err != nil || got != c.Notifications {
			t.Fatalf("Topic() = %q, %v; want %q", got, err, c.Notifications)
		}
		t.Setenv(installation.TopicEnv, "arn:aws:sns:us-east-1:000000000000:mine")
		if got, _ := s.Topic(ctx); got != "arn:aws:sns:us-east-1:000000000000:mine" {
			t.Fatalf("Topic() = %q, want the environment's", got)
		}
	})
}

func TestNoExport(t *testing.T) {
	e := serve(t)
	s, err := installation.Open(context.Background(), installation.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Bucket(context.Background())
	want := fmt.Sprintf("find cairn's bucket: no CloudFormation export cairn-bucket-name at %s (AWS_ENDPOINT_URL): is it a cairn emulator (`cairn local up`)?; or pass --bucket, or set CAIRN_BUCKET", e.URL())
	if err == nil || err.Error() != want {
		t.Fatalf("Bucket() error %v, want %q", err, want)
	}
}

// closedEndpoint returns the URL of a loopback port nothing listens on.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestUnreachableEndpoint(t *testing.T) {
	clearEnv(t)
	ep := closedEndpoint(t)
	t.Setenv("AWS_ENDPOINT_URL", ep)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	ctx := context.Background()
	s, err := installation.Open(ctx, installation.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Bucket(ctx)
	if !installation.Unreachable(err) {
		t.Fatalf("Bucket() error %v: not classified unreachable", err)
	}
	// A refused connection is not retried: one attempt, not awsclient.MaxAttempts.
	var qe *retry.MaxAttemptsError
	if errors.As(err, &qe) {
		t.Fatalf("the call was retried %d times: %v", qe.Attempt, err)
	}
	want := fmt.Sprintf(`cannot reach AWS at %s (AWS_ENDPOINT_URL): is "cairn local up" running?`, ep)
	if got := installation.Explain(fmt.Errorf("status shop: %w", err)); got.Error() != want {
		t.Fatalf("Explain() = %q, want %q", got, want)
	}
	t.Setenv("AWS_ENDPOINT_URL", "")
	dns := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "cloudformation.us-east-1.amazonaws.com"}}
	if got := installation.Explain(fmt.Errorf("list exports: %w", dns)).Error(); got != "cannot reach AWS: check the network connection and AWS_REGION" {
		t.Fatalf("Explain() without an endpoint = %q", got)
	}
}

func TestMissingCredentials(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "",
		"AWS_CONFIG_FILE": dir + "/config", "AWS_SHARED_CREDENTIALS_FILE": dir + "/credentials",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_ENDPOINT_URL": "",
	} {
		t.Setenv(k, v)
	}
	_, err := installation.Open(context.Background(), installation.Options{})
	want := "no AWS credentials: set AWS_PROFILE (a profile of ~/.aws/config), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones); for the local emulator run `eval \"$(cairn local env)\"`"
	if err == nil || err.Error() != want {
		t.Fatalf("Open() error %v, want %q", err, want)
	}
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
	_, err = installation.Open(context.Background(), installation.Options{})
	want = "no AWS credentials for http://127.0.0.1:4566 (AWS_ENDPOINT_URL): for the local emulator run `eval \"$(cairn local env)\"`; otherwise set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
	if err == nil || err.Error() != want {
		t.Fatalf("Open() error %v, want %q", err, want)
	}
}
