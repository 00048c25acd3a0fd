package upload_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/upload"
)

// TestApproveWritesTheApprovalObject writes an approval through the emulator's S3 and
// reads it back where the deployer's event comes from: approvals/NAME/PLAN_ID.
func TestApproveWritesTheApprovalObject(t *testing.T) {
	e, err := awslocal.New(awslocal.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx := context.Background()
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := awsclient.S3(cfg)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("cairn-state")}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 12, 3, 0, 0, time.FixedZone("CET", 3600))
	key, err := upload.Approve(ctx, c, "cairn-state", "shop", "20261130-110000000-1a2b3c4d", at)
	if err != nil || key != "approvals/shop/20261130-110000000-1a2b3c4d" {
		t.Fatalf("Approve: key %q, %v", key, err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("cairn-state"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	body, _ := io.ReadAll(out.Body)
	if string(body) != "approved 2026-11-30T11:03:00Z\n" {
		t.Errorf("approval body %q", body)
	}
	if _, err := upload.Approve(ctx, c, "no-such-bucket", "shop", "p", at); err == nil || err.Error()[:45] != "approve: write s3://no-such-bucket/approvals/" {
		t.Errorf("Approve into a missing bucket: %v", err)
	}
}
