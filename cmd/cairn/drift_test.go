package main

import (
	"bytes"
	"context"
	"errors"
	"log"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// driftEmulator serves the emulator with CloudFormation on the real clock (each resource
// operation and drift detection takes 10ms), points the environment at it and deploys
// stack shop-app of graph shop/shop.
func driftEmulator(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	e, err := awslocal.New(awslocal.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := cfnlocal.New(cfnlocal.Options{PutEvent: e.PutEvent, BaseURL: e.URL, Logger: quiet, ResourceDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.RegisterService("cloudformation", svc)
	e.Mount("/_local/cloudformation/", svc.ControlHandler())
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		svc.Close()
	})
	for _, kv := range e.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("CAIRN_BUCKET", "cairn-state")
	t.Setenv("CAIRN_DRIFT_QUEUE_URL", "")
	t.Setenv("CAIRN_NOTIFICATIONS_TOPIC", "")
	cfg, err := config.LoadDefaultConfig(ctx, awsclient.WithSafeBodies(), config.WithRegion("us-east-1"), config.WithBaseEndpoint(e.URL()),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired))
	if err != nil {
		t.Fatal(err)
	}
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	cfn := cloudformation.NewFromConfig(cfg)
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("cairn-state")}); err != nil {
		t.Fatal(err)
	}
	tmpl, err := os.ReadFile("../../internal/sweeper/testdata/bundle/templates/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st := &state.Stack{Name: "app", StackName: "shop-app"}
	var tags []cfntypes.Tag
	for k, v := range state.StackTags("shop", "shop", state.BundleRef{}, st) {
		tags = append(tags, cfntypes.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-app"), TemplateBody: aws.String(string(tmpl)), Tags: tags}); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		out, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("shop-app")})
		if err != nil {
			t.Fatal(err)
		}
		if out.Stacks[0].StackStatus == cfntypes.StackStatusCreateComplete {
			break
		}
		if i == 3000 { // 30s: the stack takes 20ms
			t.Fatalf("stack shop-app still %s", out.Stacks[0].StackStatus)
		}
		time.Sleep(10 * time.Millisecond)
	}
	store := &statestore.Store{S3: s3c, Bucket: "cairn-state", Logger: quiet}
	l, err := store.Acquire(ctx, "shop", "shop", "run-1", statestore.Owner{Function: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Read(ctx, l); err != nil && !errors.Is(err, statestore.ErrNotFound) {
		t.Fatal(err)
	}
	if err := store.Write(ctx, l, &state.Graph{Stacks: map[string]*state.Stack{"app": st}}); err != nil {
		t.Fatal(err)
	}
	if err := store.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
}

// runTamper runs `cairn local tamper ARGS...` as a user types it.
func runTamper(args []string, stdout, stderr *bytes.Buffer) int {
	return run(append([]string{"local", "tamper"}, args...), stdout, stderr)
}

func TestDriftCommandReportsTamperedProperty(t *testing.T) {
	driftEmulator(t)
	steps := []struct {
		name        string
		tamper      []string
		args        []string
		code        int
		out, errOut string
		exact       bool // stderr is exactly errOut
	}{
		{name: "in sync", args: []string{"drift", "shop", "--wait", "--poll", "20ms"}, code: 0, out: "shop   app    shop-app        IN_SYNC"},
		{name: "bad property", tamper: []string{"shop-app", "Bucket", "Versioning"}, code: 2, errOut: "is not PROPERTY=VALUE"},
		{name: "no such resource", tamper: []string{"shop-app", "Nope", "A=b"}, code: 2, errOut: "cairn: local tamper: stack shop-app has no resource Nope (it has Bucket, Queue)\n", exact: true},
		{name: "tamper", tamper: []string{"shop-app", "Bucket", "VersioningConfiguration/Status=Suspended"}, code: 0, out: "Bucket VersioningConfiguration/Status set to Suspended"},
		{name: "drifted", args: []string{"drift", "--wait", "--poll", "20ms"}, code: 1, out: "DRIFTED  Bucket /VersioningConfiguration/Status: Enabled -> Suspended"},
		{name: "drifted, for a script", args: []string{"drift", "shop", "--json", "--poll", "20ms"}, code: 1, out: `"status":"DRIFTED"`},
		{name: "unknown graph", args: []string{"drift", "nope", "--wait"}, code: 2, errOut: `no persistent graph named "nope"`},
		{name: "no queue without --wait", args: []string{"drift"}, code: 2, errOut: "pass --queue-url or set CAIRN_DRIFT_QUEUE_URL"},
	}
	// Log lines of the libraries the command calls go nowhere near the terminal: neither to
	// the command's stderr nor through the default logger.
	var logged bytes.Buffer
	log.SetOutput(&logged)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	for _, st := range steps {
		var stdout, stderr bytes.Buffer
		var code int
		if st.tamper != nil {
			code = runTamper(st.tamper, &stdout, &stderr)
		} else {
			code = run(st.args, &stdout, &stderr)
		}
		if st.errOut == "" || st.exact {
			if got := stderr.String(); got != st.errOut {
				t.Errorf("%s: stderr %q, want %q", st.name, got, st.errOut)
			}
		}
		if logged.Len() > 0 {
			t.Errorf("%s: the command logged through the default logger:\n%s", st.name, logged.String())
			logged.Reset()
		}
		if code != st.code || !strings.Contains(stdout.String(), st.out) || !strings.Contains(stderr.String(), st.errOut) {
			t.Fatalf("%s: code %d\nstdout:\n%s\nstderr:\n%s\nwant code %d, stdout with %q, stderr with %q", st.name, code, stdout.String(), stderr.String(), st.code, st.out, st.errOut)
		}
	}
}
