package statestore_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal/s3local"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

const bucket = "cairn-state"

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// distinctClock is the wall clock, but never twice the same millisecond: S3 lists a key's
// versions and its delete markers apart, and only their times order them, so two writes
// within one millisecond would make a history whose order is a coin toss.
type distinctClock struct {
	mu   sync.Mutex
	last time.Time
}

func (c *distinctClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now().Truncate(time.Millisecond)
	if !now.After(c.last) {
		now = c.last.Add(time.Millisecond)
	}
	c.last = now
	return now
}

func (c *distinctClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// startS3 serves the emulator's S3 on a test server and returns its URL.
func startS3(t testing.TB) string {
	t.Helper()
	svc, err := s3local.New(s3local.Options{Logger: quietLogger(), Clock: &distinctClock{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc)
	t.Cleanup(func() { srv.Close(); svc.Close() })
	return srv.URL
}

// newClient builds an SDK S3 client for the emulator at url, the way tests are told to.
func newClient(t testing.TB, url string) *s3.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(), awsclient.WithSafeBodies(),
		config.WithRegion("us-east-1"),
		config.WithBaseEndpoint(url),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	)
	if err != nil {
		t.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true; o.BaseEndpoint = aws.String(url) })
}

func makeBucket(t testing.TB, c *s3.Client, versioned bool) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	if versioned {
		if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
			t.Fatalf("enable versioning: %v", err)
		}
	}
}

// env is one emulator, one versioned bucket and a fake clock for the stores built on it.
type env struct {
	url   string
	s3    *s3.Client
	clock *clock.Fake
	logs  *logBuffer
}

func newEnv(t testing.TB) *env {
	t.Helper()
	url := startS3(t)
	c := newClient(t, url)
	makeBucket(t, c, true)
	return &env{url: url, s3: c, clock: clock.NewFake(t0), logs: &logBuffer{}}
}

// store returns a Store on the env's bucket; api defaults to the SDK client.
func (e *env) store(api statestore.S3API) *statestore.Store {
	if api == nil {
		api = e.s3
	}
	return &statestore.Store{S3: api, Bucket: bucket, Clock: e.clock, Logger: slog.New(slog.NewTextHandler(e.logs, nil)), Lease: 10 * time.Minute}
}

func (e *env) objectExists(t testing.TB, key string) bool {
	t.Helper()
	_, err := e.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	return err == nil
}

func (e *env) getObject(t testing.TB, key string) string {
	t.Helper()
	out, err := e.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	return string(b)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// logBuffer collects log output safely across goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// recorder wraps the SDK client and records each S3 call as "METHOD key ok|err", so
// tests can assert the order in which the store touches objects.
type recorder struct {
	statestore.S3API
	mu    sync.Mutex
	calls []string
}

func (r *recorder) note(op, key string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := "ok"
	if err != nil {
		res = "err"
	}
	r.calls = append(r.calls, op+" "+key+" "+res)
}

func (r *recorder) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func (r *recorder) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	out, err := r.S3API.GetObject(ctx, in, o...)
	r.note("GET", aws.ToString(in.Key), err)
	return out, err
}

func (r *recorder) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	out, err := r.S3API.PutObject(ctx, in, o...)
	r.note("PUT", aws.ToString(in.Key), err)
	return out, err
}

func (r *recorder) HeadObject(ctx context.Context, in *s3.HeadObjectInput, o ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	out, err := r.S3API.HeadObject(ctx, in, o...)
	r.note("HEAD", aws.ToString(in.Key), err)
	return out, err
}

func (r *recorder) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, o ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	out, err := r.S3API.DeleteObject(ctx, in, o...)
	r.note("DELETE", aws.ToString(in.Key), err)
	return out, err
}

// twoStacks is a small valid graph: app requires vpc.
func twoStacks() *state.Graph {
	return &state.Graph{
		Bundle: state.BundleRef{VersionID: "v1", SHA256: "abc", GitRef: "refs/heads/main", GitRemote: "git@example.com:shop.git"},
		Stacks: map[string]*state.Stack{
			"vpc": {Name: "vpc", StackName: "shop-vpc", Region: "us-east-1", TemplateHash: "t1", ParametersHash: "p1", Status: "CREATE_COMPLETE",
				Outputs: map[string]string{"VpcId": "vpc-123"}},
			"app": {Name: "app", StackName: "shop-app", Region: "us-east-1", Requires: []string{"vpc"}, TemplateHash: "t2", ParametersHash: "p2", Status: "CREATE_COMPLETE"},
		},
	}
}
