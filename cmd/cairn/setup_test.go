package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/localcairn"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// cairnWorld serves the emulator with cairn's resources provisioned in it (bucket, queues,
// the exports) but no function running, and points the environment at it as
// `eval "$(cairn local env)"` would, except that CAIRN_BUCKET is not set: commands find
// the bucket through the export cairn-bucket-name.
func cairnWorld(t *testing.T) (*localcairn.Cairn, *s3.Client) {
	t.Helper()
	keepEnv(t)
	l, err := localcairn.Start(context.Background(), localcairn.StartOptions{Emulator: awslocal.Options{Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	t.Setenv("AWS_CA_BUNDLE", "")
	t.Setenv("AWS_PROFILE", "")
	for _, kv := range l.Emulator.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	c := l.Cairn
	for _, k := range []string{"CAIRN_BUCKET", "CAIRN_DRIFT_QUEUE_URL", "CAIRN_NOTIFICATIONS_TOPIC"} {
		t.Setenv(k, "")
	}
	cfg, err := awsclient.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c, awsclient.S3(cfg)
}

// TestEveryCommandFindsTheBucketFromTheExport runs each command that reads cairn's bucket
// with neither --bucket nor CAIRN_BUCKET: each finds it through the export.
func TestEveryCommandFindsTheBucketFromTheExport(t *testing.T) {
	c, s3c := cairnWorld(t)
	store := &statestore.Store{S3: s3c, Bucket: c.Bucket}
	ctx := context.Background()
	l, err := store.Acquire(ctx, "shop", "shop", "run-1", statestore.Owner{Function: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Read(ctx, l); err != nil && !errors.Is(err, statestore.ErrNotFound) {
		t.Fatal(err)
	}
	if err := store.Write(ctx, l, &state.Graph{Stacks: map[string]*state.Stack{}}); err != nil {
		t.Fatal(err)
	}
	if err := store.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	b := c.Bucket
	nothingDeployed := "cairn: deployment shop has no runs in s3://" + b + ": nothing was deployed yet (push a bundle with `cairn push PATH --deployment shop`)\n"
	tests := []struct {
		args     []string
		code     int
		out, err string // contained in stdout, and stderr exactly
	}{
		{args: []string{"state", "list"}, out: "shop       shop  1"},
		{args: []string{"state", "show", "shop", "shop"}, out: "state shop/shop (latest): generation 1"},
		{args: []string{"state", "history", "shop", "shop"}, out: "VERSION"},
		{args: []string{"ports", "list"}, out: "no port allocations in any pool (s3://" + b + "/ports/)"},
		{args: []string{"unlock", "shop", "shop"}, out: "state shop/shop is not locked: nothing to do"},
		{args: []string{"status", "shop"}, code: 1, err: "cairn: deployment shop has no runs in s3://" + b + ": push a bundle with `cairn push PATH --deployment shop`\n"},
		{args: []string{"plans", "shop"}, code: 1, err: "cairn: deployment shop has no plans: make one with `cairn plan PATH --deployment shop`\n"},
		{args: []string{"drift", "shop", "--wait", "--poll", "10ms"}, out: "GRAPH"},
		{args: []string{"rollback", "shop"}, code: 1, err: nothingDeployed},
		{args: []string{"destroy", "shop"}, code: 1, err: nothingDeployed},
		{args: []string{"recover", "shop", "app"}, code: 1, err: nothingDeployed},
		{args: []string{"push", filepath.Join(testBundles, "webshop"), "--deployment", "shop"}, out: "pushed " + filepath.Join(testBundles, "webshop") + " to s3://" + b + "/deployments/shop.zip"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:2], " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stdout.String(), tt.out) || stderr.String() != tt.err {
				t.Errorf("cairn %s: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d, stdout with %q, stderr %q", strings.Join(tt.args, " "), code, stdout.String(), stderr.String(), tt.code, tt.out, tt.err)
			}
		})
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

// TestErrorsPointAtTheFix: what a newcomer gets wrong first (the emulator not running, no
// credentials, an argument left out) is said in one line that says what to do.
func TestErrorsPointAtTheFix(t *testing.T) {
	keepEnv(t)
	for _, k := range []string{"CAIRN_BUCKET", "CAIRN_DRIFT_QUEUE_URL", "CAIRN_NOTIFICATIONS_TOPIC", "AWS_CA_BUNDLE", "AWS_PROFILE", "AWS_SESSION_TOKEN"} {
		t.Setenv(k, "")
	}
	ep := closedEndpoint(t)
	unreachable := `cairn: cannot reach AWS at ` + ep + ` (AWS_ENDPOINT_URL): is "cairn local up" running?` + "\n"
	webshop := filepath.Join(testBundles, "webshop")
	t.Run("the emulator is not running", func(t *testing.T) {
		t.Setenv("AWS_ENDPOINT_URL", ep)
		t.Setenv("AWS_ACCESS_KEY_ID", "test")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
		for _, args := range [][]string{
			{"status", "shop"}, {"state", "show", "shop", "shop"}, {"state", "history", "shop", "shop"}, {"unlock", "shop", "shop"},
			{"ports", "list"}, {"plans", "shop"}, {"approve", "shop", "p"}, {"drift", "--wait"}, {"push", webshop, "--deployment", "shop"},
			{"plan", webshop, "--deployment", "shop"}, {"rollback", "shop"}, {"destroy", "shop"}, {"recover", "shop", "app"},
			{"local", "tamper", "shop-network", "Vpc", "CidrBlock=10.9.0.0/16"},
			// Found through the flag or the environment, the bucket is still checked first.
			{"status", "shop", "--bucket", "cairn-state"},
		} {
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != 2 || stderr.String() != unreachable || stdout.Len() != 0 {
				t.Errorf("cairn %s: exit %d\nstdout: %s\nstderr: %s\nwant exit 2 and %q", strings.Join(args, " "), code, stdout.String(), stderr.String(), unreachable)
			}
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		dir := t.TempDir()
		for k, v := range map[string]string{
			"AWS_ENDPOINT_URL": "", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
			"AWS_CONFIG_FILE": dir + "/config", "AWS_SHARED_CREDENTIALS_FILE": dir + "/credentials", "AWS_EC2_METADATA_DISABLED": "true",
			"AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
		} {
			t.Setenv(k, v)
		}
		want := "cairn: no AWS credentials: set AWS_PROFILE (a profile of ~/.aws/config), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones); for the local emulator run `eval \"$(cairn local env)\"`\n"
		var stdout, stderr bytes.Buffer
		if code := run([]string{"status", "shop"}, &stdout, &stderr); code != 2 || stderr.String() != want {
			t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), want)
		}
	})
	t.Run("arguments", func(t *testing.T) {
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"state", "show", "shop"}, "cairn: missing KEY: usage: cairn state show NAMESPACE KEY [flags]\n"},
			{[]string{"state", "history"}, "cairn: missing NAMESPACE KEY: usage: cairn state history NAMESPACE KEY [flags]\n"},
			{[]string{"unlock", "shop", "shop", "extra"}, "cairn: unexpected argument \"extra\": usage: cairn unlock NAMESPACE KEY [flags]\n"},
			{[]string{"approve", "shop"}, "cairn: missing PLAN_ID: usage: cairn approve NAME PLAN_ID [flags]\n"},
			{[]string{"status"}, "cairn: missing NAME: usage: cairn status NAME [flags]\n"},
			{[]string{"recover", "shop"}, "cairn: missing STACK: usage: cairn recover NAME STACK [--skip RESOURCE...] [--rollback] [flags]\n"},
			{[]string{"push", webshop}, "cairn: --deployment NAME is required (the upload goes to deployments/NAME.zip): usage: cairn push PATH --deployment NAME [flags]\n"},
			{[]string{"ports", "list", "a", "b"}, "cairn: unexpected argument \"b\": usage: cairn ports list [POOL] [flags]\n"},
		} {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != 2 || stderr.String() != tt.want {
				t.Errorf("cairn %s: exit %d, stderr %q; want 2 and %q", strings.Join(tt.args, " "), code, stderr.String(), tt.want)
			}
		}
	})
}
