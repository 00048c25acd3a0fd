package overrides_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/overrides"
	"github.com/cairn-dev/cairn/internal/verdict"
)

const name = "cairn-000000000000-us-east-1"

const good = `{"reason": "reviewed (SEC-12)", "by": "arn:aws:sts::000000000000:assumed-role/cairn-policy/alice", "at": "2026-12-07T09:00:00Z"}`

// TestCheck reads overrides from the emulator's S3 through the gate a run passes, as the
// deployer does: only the plan's own overrides count, a key that names no rule lifts
// nothing, and a document that is not an override fails closed.
func TestCheck(t *testing.T) {
	denied := &verdict.Verdict{Kind: verdict.Plan, Denied: true, Results: []verdict.Result{
		{Level: verdict.Deny, Rule: "cairn.s3_public", Origin: "team", Msg: "public", Stack: "web", Resource: "Site"}}}
	tests := []struct {
		name    string
		objects map[string]string
		denied  bool
		err     string
	}{
		{"none", nil, true, ""},
		{"the plan's override of the rule", map[string]string{bucket.PolicyOverrideKey("shop", "p1", "cairn.s3_public"): good}, false, ""},
		{"another plan's", map[string]string{bucket.PolicyOverrideKey("shop", "p2", "cairn.s3_public"): good}, true, ""},
		{"another deployment's", map[string]string{bucket.PolicyOverrideKey("web", "p1", "cairn.s3_public"): good}, true, ""},
		{"another rule's", map[string]string{bucket.PolicyOverrideKey("shop", "p1", "cairn.iam_wildcard"): good}, true, ""},
		{"a key naming no rule", map[string]string{"policy-overrides/shop/p1/cairn..s3_public.json": good, "policy-overrides/shop/p1/x/cairn.s3_public.json": good}, true, ""},
		{"a document without a reason", map[string]string{bucket.PolicyOverrideKey("shop", "p1", "cairn.s3_public"): `{"by": "arn"}`}, false, "needs a reason and who wrote it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s3c := emulatorS3(t)
			for k, body := range tt.objects {
				if _, err := s3c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(name), Key: aws.String(k), Body: bytes.NewReader([]byte(body))}); err != nil {
					t.Fatal(err)
				}
			}
			ctx := bucket.WithScope(context.Background(), bucket.ForDeployment("shop"))
			v, refusal, err := overrides.Check(ctx, objects.Gate(s3c, name), name, "shop", "p1", denied)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.Denied != tt.denied || (refusal != "") != tt.denied {
				t.Errorf("denied %v, refusal %q; want denied %v", v.Denied, refusal, tt.denied)
			}
			if !tt.denied && (len(v.Overrides) != 1 || v.Overrides[0].By != "arn:aws:sts::000000000000:assumed-role/cairn-policy/alice" || !v.Overrides[0].At.Equal(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))) {
				t.Errorf("overrides %+v", v.Overrides)
			}
			if !denied.Denied || len(denied.Overrides) > 0 {
				t.Errorf("Check changed the verdict it was given: %+v", denied)
			}
		})
	}
}

func emulatorS3(t *testing.T) *s3.Client {
	t.Helper()
	e, err := awslocal.New(awslocal.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	cfg, err := e.AWSConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s3c := awsclient.S3(cfg)
	if _, err := s3c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	return s3c
}
