package main

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/ports"
)

// s3Emulator points the CLI's AWS configuration at the emulator (S3, and STS, which
// tells the CLI cairn's account: 000000000000) and returns an S3 client of it with bucket
// created.
func s3Emulator(t *testing.T, bucket string) *s3.Client {
	t.Helper()
	e, err := awslocal.New(awslocal.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	for _, kv := range e.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_CA_BUNDLE", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv(ports.BucketEnv, "")
	cfg, err := awsclient.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	client := awsclient.S3(cfg)
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	return client
}

func TestPortsList(t *testing.T) {
	client := s3Emulator(t, "cairn-ops")
	pools, err := ports.ParsePools("default=20000-29999,web=8000-8099")
	if err != nil {
		t.Fatal(err)
	}
	alloc := ports.NewAllocator(ports.NewStore(client, "cairn-ops", nil), pools, nil, nil)
	const (
		app     = "arn:aws:cloudformation:us-east-1:000000000000:stack/shop-app/6f1c2a40-7e3b-11f0-9a1b-0a1b2c3d4e5f"
		replica = "arn:aws:cloudformation:us-west-2:000000000000:stack/shop-replica/7a2d3b50-7e3b-11f0-9a1b-0a1b2c3d4e5f"
		remote  = "arn:aws:cloudformation:eu-west-1:111111111111:stack/shop-remote/8b3e4c60-7e3b-11f0-9a1b-0a1b2c3d4e5f"
	)
	for _, r := range []struct{ logical, pool, count, stack string }{
		{"WebPort", "default", "1", app}, {"AdminPorts", "default", "3", app}, {"Listener", "web", "1", app},
		{"QueuePort", "default", "1", remote}, {"ReplicaPort", "web", "1", replica},
	} {
		_, err := alloc.Create(context.Background(), cfn.Event{
			RequestType: cfn.RequestCreate, RequestID: "req-" + r.logical, ResourceType: ports.ResourceType,
			StackID:            r.stack,
			LogicalResourceID:  r.logical,
			ResourceProperties: map[string]any{"Pool": r.pool, "Count": r.count},
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name     string
		args     []string
		env      string // CAIRN_BUCKET
		code     int
		want     []string // regexps, in order, on stdout
		wantErr  string
		wantNone []string
	}{
		{name: "all pools", args: []string{"ports", "list", "--bucket", "cairn-ops"}, want: []string{
			`POOL\s+PORTS\s+STACK\s+LOGICAL ID\s+CREATED\s+PHYSICAL ID`,
			`default\s+20000\s+shop-app\s+WebPort\s+\d{4}-\d\d-\d\dT\S+Z\s+default:20000:[0-9a-f]{8}`,
			`default\s+20001-20003\s+shop-app\s+AdminPorts\s+\S+\s+default:20001-20003:[0-9a-f]{8}`,
			`default\s+20004\s+shop-remote \(111111111111, eu-west-1\)\s+QueuePort\s+\S+\s+default:20004:[0-9a-f]{8}`,
			`web\s+8000\s+shop-app\s+Listener\s+\S+\s+web:8000:[0-9a-f]{8}`,
			`web\s+8001\s+shop-replica \(cairn's account, us-west-2\)\s+ReplicaPort\s+`,
			`5 allocations holding 7 ports`,
		}},
		{name: "one pool, bucket from the environment", args: []string{"ports", "list", "web"}, env: "cairn-ops", want: []string{
			`web\s+8000\s+shop-app\s+Listener`, `web\s+8001\s+shop-replica \(cairn's account, us-west-2\)\s+ReplicaPort`, `2 allocations holding 2 ports`,
		}, wantNone: []string{"WebPort", "(000000000000"}},
		{name: "pool without allocations", args: []string{"ports", "list", "gpu", "--bucket", "cairn-ops"},
			want: []string{`no port allocations in pool gpu \(s3://cairn-ops/ports/\)`}},
		{name: "missing bucket", args: []string{"ports", "list", "default", "--bucket", "nope"}, code: 2,
			wantErr: "cairn: bucket nope (from --bucket) does not exist: check the name, or the AWS account and region (us-east-1) you point at\n"},
		{name: "bad pool name", args: []string{"ports", "list", "../x", "--bucket", "cairn-ops"}, code: 2,
			wantErr: `cairn: "../x" is not a pool name: use letters, digits, '.', '_' or '-': usage: cairn ports list [POOL] [flags]` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(ports.BucketEnv, tt.env)
			var out, errOut bytes.Buffer
			code := run(tt.args, &out, &errOut)
			t.Logf("cairn %s:\n%s%s", strings.Join(tt.args, " "), out.String(), errOut.String())
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, tt.code, out.String(), errOut.String())
			}
			rest := out.String()
			for _, w := range tt.want {
				loc := regexp.MustCompile(w).FindStringIndex(rest)
				if loc == nil {
					t.Fatalf("stdout lacks /%s/ (in order):\n%s", w, out.String())
				}
				rest = rest[loc[1]:]
			}
			for _, w := range tt.wantNone {
				if strings.Contains(out.String(), w) {
					t.Errorf("stdout has %q:\n%s", w, out.String())
				}
			}
			if !strings.Contains(errOut.String(), tt.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut.String(), tt.wantErr)
			}
		})
	}
}
