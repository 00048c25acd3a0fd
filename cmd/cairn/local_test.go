package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
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

func TestLocalUpServesUntilInterrupted(t *testing.T) {
	// local up exports the emulator's environment into its own process, as it must for
	// in-process handlers; keep that from leaking into other tests.
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		t.Setenv(k, os.Getenv(k))
	}
	dir := t.TempDir()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"local", "up", "--addr", "127.0.0.1:0", "--dir", dir}, &stdout, &stderr) }()
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == ""; {
		for _, line := range strings.Split(stdout.String(), "\n") {
			if v, ok := strings.CutPrefix(line, "export AWS_ENDPOINT_URL="); ok && strings.Contains(stdout.String(), "AWS_SECRET_ACCESS_KEY=test") {
				url = v
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no export lines; stdout %q stderr %q", stdout.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"), config.WithBaseEndpoint(url),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sqs.NewFromConfig(cfg).CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("kept")}); err != nil {
		t.Fatal(err)
	}
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
	if b, err := os.ReadFile(filepath.Join(dir, "sqs", "sqs.json")); err != nil || !strings.Contains(string(b), "kept") {
		t.Fatalf("state not saved under --dir: %v %s", err, b)
	}
}
