package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/localdir"
)

// withFunction registers a local function for the test's duration.
func withFunction(t *testing.T, name string, h any) {
	t.Helper()
	localFunctions[name] = func(context.Context) (any, error) { return h, nil }
	t.Cleanup(func() { delete(localFunctions, name) })
}

func TestLocalInvoke(t *testing.T) {
	withFunction(t, "test-echo", func(ctx context.Context, ev events.SQSEvent) (map[string]string, error) {
		if len(ev.Records) != 1 {
			return nil, errors.New("want one record")
		}
		return map[string]string{"source": ev.Records[0].EventSourceARN}, nil
	})
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("not json"), 0o644)
	tests := []struct {
		name       string
		args       []string
		code       int
		out, inErr string
	}{
		{"event file", []string{"local", "invoke", "test-echo", "../../events/sqs-message.json"}, 0, `{"source":"arn:aws:sqs:us-east-1:000000000000:cairn-deploy"}`, ""},
		{"handler error", []string{"local", "invoke", "test-echo", "../../events/scheduled-event.json"}, 1, "", "want one record"},
		{"unknown function", []string{"local", "invoke", "nope", "../../events/sqs-message.json"}, 2, "", `unknown function "nope", known: `},
		{"not json", []string{"local", "invoke", "test-echo", bad}, 2, "", "is not JSON"},
		{"missing file", []string{"local", "invoke", "test-echo", "no-such.json"}, 2, "", "no-such.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.code || strings.TrimSpace(stdout.String()) != tt.out || !strings.Contains(stderr.String(), tt.inErr) {
				t.Fatalf("code %d stdout %q stderr %q; want code %d stdout %q stderr containing %q", code, stdout.String(), stderr.String(), tt.code, tt.out, tt.inErr)
			}
			if tt.name == "unknown function" && !strings.Contains(stderr.String(), "test-echo") {
				t.Fatalf("error does not list the known functions: %s", stderr.String())
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the command's goroutine and the test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// portsTemplate allocates a port from the pool local up configures, with the ServiceToken
// cairn's stack exports, as a user's template does.
const portsTemplate = `Resources:
  Port:
    Type: Custom::PortAllocation
    Properties:
      ServiceToken: !ImportValue cairn-ports-service-token
      Pool: default
Outputs:
  Port:
    Value: !GetAtt Port.Port
`

// keepEnv restores, after the test, the environment local up exports into its own
// process, as it must for in-process handlers.
func keepEnv(t *testing.T) {
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
		"CAIRN_BUCKET", "CAIRN_NOTIFICATIONS_TOPIC", "CAIRN_DEPLOY_QUEUE_URL", "CAIRN_DRIFT_QUEUE_URL", "CAIRN_PORT_POOLS",
		"CAIRN_NAMESPACES", "CAIRN_RESPONSE_URL_HOSTS", "CAIRN_HEARTBEAT_SECONDS"} {
		t.Setenv(k, os.Getenv(k))
	}
}

// localUp runs `cairn local up` until stop is called, and returns the environment it exported.
func localUp(t *testing.T, args ...string) (exports map[string]string, stop func() string) {
	t.Helper()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(append([]string{"local", "up", "--addr", "127.0.0.1:0"}, args...), &stdout, &stderr)
	}()
	exports = map[string]string{}
	for deadline := time.Now().Add(30 * time.Second); exports["CAIRN_RESPONSE_URL_HOSTS"] == ""; time.Sleep(10 * time.Millisecond) {
		select {
		case code := <-done:
			t.Fatalf("local up exited %d early: %s", code, stderr.String())
		default:
		}
		for _, line := range strings.Split(stdout.String(), "\n") {
			if kv, ok := strings.CutPrefix(line, "export "); ok {
				k, v, _ := strings.Cut(kv, "=")
				exports[k] = v
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no export lines; stdout %q stderr %q", stdout.String(), stderr.String())
		}
	}
	return exports, func() string {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		select {
		case code := <-done:
			if code != 0 {
				t.Fatalf("exit code %d, stderr %s", code, stderr.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("local up did not stop on interrupt")
		}
		return stderr.String()
	}
}

func TestLocalUpServesCairnUntilInterrupted(t *testing.T) {
	keepEnv(t)
	ctx := context.Background()
	dir := t.TempDir()
	for i, stackName := range []string{"shop-first", "shop-second"} {
		// The second time on the same --dir finds what the first created.
		exports, stop := localUp(t, "--dir", dir)
		for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_SECRET_ACCESS_KEY", "CAIRN_BUCKET", "CAIRN_DEPLOY_QUEUE_URL", "CAIRN_DRIFT_QUEUE_URL", "CAIRN_NOTIFICATIONS_TOPIC", "CAIRN_PORT_POOLS"} {
			if exports[k] == "" {
				t.Fatalf("local up exported no %s: %v", k, exports)
			}
		}
		cfg, err := config.LoadDefaultConfig(ctx, awsclient.WithSafeBodies(), config.WithRegion("us-east-1"), config.WithBaseEndpoint(exports["AWS_ENDPOINT_URL"]),
			config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
		if err != nil {
			t.Fatal(err)
		}
		cf := cloudformation.NewFromConfig(cfg)
		list, err := cf.ListExports(ctx, &cloudformation.ListExportsInput{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, x := range list.Exports {
			got[aws.ToString(x.Name)] = aws.ToString(x.Value)
		}
		if got["cairn-bucket-name"] != exports["CAIRN_BUCKET"] || got["cairn-notifications-topic-arn"] != exports["CAIRN_NOTIFICATIONS_TOPIC"] || got["cairn-ports-service-token"] == "" {
			t.Fatalf("exports %v do not match the environment %v", got, exports)
		}
		// The ports function runs in process, wired as in AWS: a stack allocating a port
		// completes.
		if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(stackName), TemplateBody: aws.String(portsTemplate)}); err != nil {
			t.Fatal(err)
		}
		var st cftypes.Stack
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stackName)})
			if err != nil {
				t.Fatal(err)
			}
			if st = out.Stacks[0]; !strings.HasSuffix(string(st.StackStatus), "_IN_PROGRESS") || time.Now().After(deadline) {
				break
			}
		}
		if st.StackStatus != cftypes.StackStatusCreateComplete || len(st.Outputs) != 1 || aws.ToString(st.Outputs[0].OutputValue) != strconv.Itoa(20000+i) {
			t.Fatalf("stack %s: %s (%s), outputs %+v; want CREATE_COMPLETE with port %d", stackName, st.StackStatus, aws.ToString(st.StackStatusReason), st.Outputs, 20000+i)
		}
		if _, err := sqs.NewFromConfig(cfg).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("kept")}); err != nil {
			t.Fatal(err)
		}
		log := stop()
		if !strings.Contains(log, "functions: deployer, drift, policy, ports") {
			t.Fatalf("local up did not run cairn's four functions: %s", log)
		}
		// The ready line names the policy role, the only principal that may publish policies.
		if role := got["cairn-policy-role-arn"]; !strings.HasPrefix(role, "arn:aws:iam::000000000000:role/") || !strings.Contains(log, ", policy role "+role+", ") {
			t.Fatalf("the ready line does not name the policy role %q: %s", role, log)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sqs", "sqs.json")); err != nil || !strings.Contains(string(b), "kept") {
		t.Fatalf("state not saved under --dir: %v %s", err, b)
	}
}

// TestLocalUpWaitEnv is the readiness contract as a script uses it: `cairn local up &`,
// then at once `cairn local wait` (which waits through provisioning) and
// `eval "$(cairn local env)"`; up prints only its ready line and the exports, logs to a
// file under --dir, and refuses a second instance on the same --dir.
func TestLocalUpWaitEnv(t *testing.T) {
	keepEnv(t)
	dir := t.TempDir()
	var upOut, upErr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"local", "up", "--addr", "127.0.0.1:0", "--dir", dir}, &upOut, &upErr) }()

	var stdout, stderr bytes.Buffer
	if code := run([]string{"local", "wait", "--dir", dir, "--timeout", "60s"}, &stdout, &stderr); code != 0 {
		t.Fatalf("local wait: exit %d, stderr %s; up stderr %s", code, stderr.String(), upErr.String())
	}
	if !strings.HasPrefix(stdout.String(), "cairn local: ready at http://127.0.0.1:") {
		t.Fatalf("local wait printed %q", stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"local", "env", "--dir", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("local env: exit %d, stderr %s", code, stderr.String())
	}
	env := stdout.String()
	exports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(env), "\n") {
		kv, ok := strings.CutPrefix(line, "export ")
		if !ok {
			t.Fatalf("local env printed a line that is no export: %q", line)
		}
		k, v, _ := strings.Cut(kv, "=")
		exports[k] = v
	}
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "CAIRN_BUCKET", "CAIRN_DEPLOY_QUEUE_URL"} {
		if exports[k] == "" {
			t.Fatalf("local env exports no %s:\n%s", k, env)
		}
	}
	// local up printed the same exports, and on stderr exactly one line.
	for deadline := time.Now().Add(10 * time.Second); upOut.String() != env; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("local up stdout %q, want the exports of local env %q", upOut.String(), env)
		}
	}
	lines := strings.Split(strings.TrimSpace(upErr.String()), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "cairn local: ready at "+exports["AWS_ENDPOINT_URL"]) ||
		!strings.Contains(lines[0], "log in "+filepath.Join(dir, "local.log")) {
		t.Fatalf("local up stderr = %q, want one ready line naming the URL and the log file", upErr.String())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "local.log")); err != nil || !strings.Contains(string(b), "level=INFO") {
		t.Fatalf("log file under --dir: %v %q", err, b)
	}

	// A second instance on the same --dir is refused, naming the holder.
	stderr.Reset()
	if code := run([]string{"local", "up", "--addr", "127.0.0.1:0", "--dir", dir}, &stdout, &stderr); code != 1 {
		t.Fatalf("second local up: exit %d, want 1; stderr %s", code, stderr.String())
	}
	want := fmt.Sprintf("cairn local up: %s is in use by cairn local up (pid %d): stop it first, or pick another --dir\n", dir, os.Getpid())
	if stderr.String() != want {
		t.Fatalf("second local up said %q, want %q", stderr.String(), want)
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 0 {
		t.Fatalf("local up exit %d: %s", code, upErr.String())
	}
	// Stopped: nothing to wait for, no environment.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"local", "env", "--dir", dir}, fmt.Sprintf("cairn local env: nothing runs on %s: start it with `cairn local up --dir %s &`, then `cairn local wait --dir %s`\n", dir, dir, dir)},
		{[]string{"local", "wait", "--dir", dir, "--timeout", "100ms"}, fmt.Sprintf("cairn local wait: nothing runs on %s: start it with `cairn local up --dir %s &`\n", dir, dir)},
	} {
		stdout.Reset()
		stderr.Reset()
		if code := run(tc.args, &stdout, &stderr); code != 1 || stderr.String() != tc.want || stdout.Len() != 0 {
			t.Errorf("%v: exit %d stdout %q stderr %q; want exit 1 and %q", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}

// TestLocalWaitTimesOut: an instance that holds its --dir but never gets ready makes
// `local wait` fail after --timeout and `local env` refuse, both naming it.
func TestLocalWaitTimesOut(t *testing.T) {
	dir := t.TempDir()
	claim, err := localdir.Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Release()
	e, err := awslocal.New(awslocal.Options{HoldUntilReady: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if err := claim.Publish(localdir.Info{URL: e.URL()}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"local", "wait", "--dir", dir, "--timeout", "200ms"}, fmt.Sprintf("cairn local wait: cairn local up (pid %d) on %s is not ready after 200ms: see its log %s\n", os.Getpid(), dir, filepath.Join(dir, "local.log"))},
		{[]string{"local", "env", "--dir", dir}, fmt.Sprintf("cairn local env: cairn local up (pid %d) on %s is still starting: run `cairn local wait --dir %s` first\n", os.Getpid(), dir, dir)},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 1 || stderr.String() != tc.want {
			t.Errorf("%v: exit %d stderr %q; want exit 1 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"local", "up", "--log-level", "loud"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `--log-level "loud": want debug, info, warn or error`) {
		t.Errorf("bad --log-level: exit %d stderr %q", code, stderr.String())
	}
}

// TestLocalUpRestartResumesCustomResources: `cairn local up` stopped while a stack waits to
// send a custom resource request, and started again on the same --dir and --addr, sends
// the request with a ResponseURL on its address, so the ports function's answer completes
// the stack.
func TestLocalUpRestartResumesCustomResources(t *testing.T) {
	keepEnv(t)
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	args := []string{"--addr", addr, "--dir", dir, "--resource-delay", "300ms"}
	exports, stop := localUp(t, args...)
	cfg, err := config.LoadDefaultConfig(ctx, awsclient.WithSafeBodies(), config.WithRegion("us-east-1"), config.WithBaseEndpoint(exports["AWS_ENDPOINT_URL"]),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	if err != nil {
		t.Fatal(err)
	}
	cf := cloudformation.NewFromConfig(cfg)
	// First makes the stack wait before the request for Port goes out.
	body := "Resources:\n  First:\n    Type: AWS::CloudFormation::WaitConditionHandle\n" +
		strings.Replace(strings.TrimPrefix(portsTemplate, "Resources:\n"), "    Properties:", "    DependsOn: First\n    Properties:", 1)
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-restart"), TemplateBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	stop()

	_, stop = localUp(t, args...)
	defer stop()
	var st cftypes.Stack
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("shop-restart")})
		if err != nil {
			t.Fatal(err)
		}
		if st = out.Stacks[0]; !strings.HasSuffix(string(st.StackStatus), "_IN_PROGRESS") || time.Now().After(deadline) {
			break
		}
	}
	if st.StackStatus != cftypes.StackStatusCreateComplete || len(st.Outputs) != 1 || aws.ToString(st.Outputs[0].OutputValue) != "20000" {
		t.Fatalf("stack after the restart: %s (%s), outputs %+v; want CREATE_COMPLETE with port 20000", st.StackStatus, aws.ToString(st.StackStatusReason), st.Outputs)
	}
}

// TestLocalUpListensOnLoopbackOnly: the emulator serves every secret and all of cairn's
// state with no authentication, so local up refuses an --addr beyond loopback (saying
// what it would expose) unless --allow-remote is given, and then warns.
func TestLocalUpListensOnLoopbackOnly(t *testing.T) {
	keepEnv(t)
	exposes := "whoever reaches it reads every secret in the emulator (SecureString parameters decrypted, NoEcho values) and cairn's bucket (state, plans, runs), and can push, approve and tamper, with no authentication"
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0", "[fe80::1%lo]:0"} {
		t.Run(addr, func(t *testing.T) {
			code, out, errOut := runCLI(t, "local", "up", "--dir", "", "--addr", addr)
			want := "cairn: local up: --addr " + addr + " listens beyond this machine's loopback: " + exposes + "; listen on 127.0.0.1 (the default), or give --allow-remote if that is what you want\n"
			if code != 1 || out != "" || errOut != want {
				t.Errorf("exit %d, stdout %q, stderr %q\nwant exit 1 and %q", code, out, errOut, want)
			}
		})
	}
	t.Run("not an address", func(t *testing.T) {
		if code, _, errOut := runCLI(t, "local", "up", "--dir", "", "--addr", "4566"); code != 2 || !strings.Contains(errOut, "--addr: address 4566: missing port in address") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
	for _, tt := range []struct {
		name string
		args []string
		warn bool
	}{
		{"loopback", []string{"--addr", "127.0.0.1:0"}, false},
		{"localhost", []string{"--addr", "localhost:0"}, false},
		{"IPv6 loopback", []string{"--addr", "[::1]:0"}, false},
		{"every interface, allowed", []string{"--addr", "0.0.0.0:0", "--allow-remote"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, stop := localUp(t, append([]string{"--dir", "", "--log-level", "error"}, tt.args...)...)
			log := stop()
			warning := "cairn local up: warning: --addr 0.0.0.0:0 listens beyond this machine's loopback (--allow-remote): " + exposes + "\n"
			if got := strings.Contains(log, warning); got != tt.warn {
				t.Errorf("warned %v, want %v:\n%s", got, tt.warn, log)
			}
		})
	}
}
