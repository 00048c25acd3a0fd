package awslocal_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
)

func health(t *testing.T, url string) awslocal.Health {
	t.Helper()
	resp, err := http.Get(url + "/_local/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h awslocal.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("health: %d %v", resp.StatusCode, err)
	}
	return h
}

// TestRequestsWaitUntilReady: with HoldUntilReady, a client's request that arrives before
// the emulator is provisioned is held and then sees what provisioning made, while the
// provisioning's own requests (SetupConfig) and the health endpoint are served at once.
func TestRequestsWaitUntilReady(t *testing.T) {
	e, err := awslocal.New(awslocal.Options{HoldUntilReady: true, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if h := health(t, e.URL()); h.Ready || h.Services["s3"] != "running" || h.Services["cloudformation"] != "running" {
		t.Fatalf("health before ready = %+v, want services running and ready false", h)
	}
	userCfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := awsclient.S3(userCfg).HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("made-by-setup")})
		done <- err
	}()
	// The user's request is held at the gate...
	for deadline := time.Now().Add(10 * time.Second); health(t, e.URL()).Waiting != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the early request was not held")
		}
	}
	// ...while provisioning goes on.
	setupCfg, err := e.SetupConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := awsclient.S3(setupCfg).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("made-by-setup")}); err != nil {
		t.Fatalf("setup request before ready: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("the early request finished before the emulator was ready: %v", err)
	default:
	}
	e.MarkReady()
	if err := <-done; err != nil {
		t.Fatalf("the held request, once ready: %v (want the bucket provisioning made)", err)
	}
	if h := health(t, e.URL()); !h.Ready || h.Waiting != 0 {
		t.Fatalf("health after ready = %+v", h)
	}
}

// TestHeldRequestsEndWithTheEmulator: an emulator closed before it was ready answers the
// requests it held with 503 ServiceUnavailable instead of leaving them hanging.
func TestHeldRequestsEndWithTheEmulator(t *testing.T) {
	e, err := awslocal.New(awslocal.Options{HoldUntilReady: true, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	url := e.URL()
	done := make(chan int, 1)
	go func() {
		resp, err := http.Get(url + "/some-bucket")
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	for deadline := time.Now().Add(10 * time.Second); health(t, url).Waiting != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the request was not held")
		}
	}
	e.Close()
	if code := <-done; code != http.StatusServiceUnavailable {
		t.Fatalf("held request ended with %d, want 503", code)
	}
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }
