package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/deployer"
	"github.com/cairn-dev/cairn/internal/history"
)

// Pushes within one second start runs in push order, and `cairn status` shows the newest
// as the latest: run ids sort by the upload's time to the millisecond, not by a digest
// once the second is the same. The clock stands still but for the 150ms between pushes;
// the deployer gets each S3 event, in the exact record Lambda delivers, once the push
// before it has been shown.
func TestStatusShowsTheNewestOfPushesInOneSecond(t *testing.T) {
	ctx := context.Background()
	// The virtual clock starts at the wall clock, which the CLI itself reads (plan ages and
	// expiry): a fixed date would make plans look expired once the calendar moves on.
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	em, err := awslocal.New(awslocal.Options{Clock: clk, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if err := em.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	t.Setenv("AWS_CA_BUNDLE", "")
	t.Setenv("CAIRN_BUCKET", "cairn-state")
	for _, kv := range em.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	cfg, err := awsclient.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s3c := awsclient.S3(cfg)
	queueURL, err := em.SQS().CreateQueue("cairn-deploy", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() error{
		func() error {
			_, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("cairn-state")})
			return err
		},
		func() error {
			_, err := s3c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("cairn-state"),
				VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}})
			return err
		},
		func() error {
			_, err := s3c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
				Bucket: aws.String("cairn-state"),
				NotificationConfiguration: &s3types.NotificationConfiguration{QueueConfigurations: []s3types.QueueConfiguration{{
					QueueArn: aws.String(em.SQS().QueueARN("cairn-deploy")), Events: []s3types.Event{"s3:ObjectCreated:*"},
				}}},
			})
			return err
		},
	} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	d, err := deployer.NewFromAWS(cfg, deployer.Config{Bucket: "cairn-state", QueueURL: queueURL, Clock: clk, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}

	const pushes = 5 // the digests of five runs in one second sort in push order once in 120 tries
	dir := bundleDir(t, "")
	var versions []string
	for i := range pushes {
		if i > 0 {
			clk.Advance(150 * time.Millisecond)
		}
		var stdout, stderr bytes.Buffer
		if code := run([]string{"push", dir, "--deployment", "cli"}, &stdout, &stderr); code != 0 {
			t.Fatalf("push %d exited %d: %s", i+1, code, stderr.String())
		}
		_, v, ok := strings.Cut(stdout.String(), "(version ")
		v, _, _ = strings.Cut(v, ")")
		if !ok || v == "" {
			t.Fatalf("push %d printed no version:\n%s", i+1, stdout.String())
		}
		versions = append(versions, v)
	}
	var uploads []events.SQSMessage
	for deadline := time.Now().Add(10 * time.Second); len(uploads) < pushes; {
		if time.Now().After(deadline) {
			t.Fatalf("%d upload events in the deploy queue, want %d", len(uploads), pushes)
		}
		msgs, err := em.SQS().Receive(ctx, "cairn-deploy", 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if strings.Contains(m.Body, `"ObjectCreated:`) {
				uploads = append(uploads, m)
			}
		}
		if len(msgs) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	for i, v := range versions {
		var rec *events.SQSMessage
		for j := range uploads {
			// Human output shortens the version id to its end (report.ShortVersion).
			if strings.Contains(uploads[j].Body, strings.TrimPrefix(v, "…")+`"`) {
				rec = &uploads[j]
			}
		}
		if rec == nil {
			t.Fatalf("no upload event of version %s", v)
		}
		if out, err := d.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{*rec}}); err != nil || len(out.BatchItemFailures) > 0 {
			t.Fatalf("deployer on push %d: %v, failures %v", i+1, err, out.BatchItemFailures)
		}
		var want string
		docs, err := (&history.Store{S3: s3c, Bucket: "cairn-state"}).Runs(ctx, "cli", 0)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, doc := range docs {
			ids = append(ids, doc.Run.ID)
			if strings.HasSuffix(doc.Bundle.VersionID, strings.TrimPrefix(v, "…")) {
				want = doc.Run.ID
			}
		}
		if want == "" {
			t.Fatalf("push %d (version %s) has no run document among %v", i+1, v, ids)
		}
		var stdout, stderr bytes.Buffer
		if code := run([]string{"status", "cli"}, &stdout, &stderr); code != 0 {
			t.Fatalf("status exited %d: %s", code, stderr.String())
		}
		// The newest run heads the recent runs.
		_, recent, _ := strings.Cut(stdout.String(), "recent runs:\n")
		rows := strings.Split(recent, "\n")
		if len(rows) < 2 || !strings.HasPrefix(strings.TrimSpace(rows[1]), want+" ") {
			t.Fatalf("after push %d of %d in one second, status lists first %q, want the run of that push, %s (runs %v):\n%s", i+1, pushes, rows, want, ids, stdout.String())
		}
	}
}
