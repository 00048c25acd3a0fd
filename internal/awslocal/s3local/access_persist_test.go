package s3local_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-dev/cairn/internal/awslocal/s3local"
	"github.com/cairn-dev/cairn/internal/awslocal/stslocal"
)

// asCaller serves svc to requests of caller, as the emulator's router names them.
func asCaller(svc http.Handler, caller stslocal.Caller) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		svc.ServeHTTP(w, r.WithContext(stslocal.WithCaller(r.Context(), caller)))
	})
}

// TestBucketPolicySurvivesARestart: what a bucket policy refused never happened, after a
// restart too: the journal holds neither the refused put nor the refused keys of a
// DeleteObjects (it holds the request as served, without them), and the policy itself is
// restored and still refuses.
func TestBucketPolicySurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	root := stslocal.Caller{Account: "000000000000"}
	policy := `{"Statement":[{"Effect":"Deny","Principal":"*","Action":["s3:PutObject","s3:DeleteObject"],"Resource":"arn:aws:s3:::bkt/policies/*",
	  "Condition":{"ArnNotEquals":{"aws:PrincipalArn":"arn:aws:iam::000000000000:role/cairn-policy"}}}]}`
	ctx := context.Background()
	func() {
		svc, err := s3local.New(s3local.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(asCaller(svc, root))
		defer srv.Close()
		c := client(t, srv.URL)
		mustBucket(t, c, "bkt", true)
		put(t, c, "bkt", "policies/team.rego", "package team")
		put(t, c, "bkt", "plans/shop.zip", "zip")
		if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("bkt"), Policy: aws.String(policy)}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("policies/evil.rego"), Body: strings.NewReader("x")}); errorCode(err) != "AccessDenied" {
			t.Fatalf("put policies/evil.rego: %v, want AccessDenied", err)
		}
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("bkt"), Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{
			{Key: aws.String("policies/team.rego")}, {Key: aws.String("plans/shop.zip")}}}})
		if err != nil || len(out.Errors) != 1 || len(out.Deleted) != 1 {
			t.Fatalf("DeleteObjects: %+v %v", out, err)
		}
		if err := svc.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	svc, err := s3local.New(s3local.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(asCaller(svc, root))
	t.Cleanup(func() { srv.Close(); svc.Close() })
	c := client(t, srv.URL)
	if got := get(t, c, "bkt", "policies/team.rego"); got != "package team" {
		t.Errorf("policies/team.rego after the restart: %q", got)
	}
	for _, k := range []string{"policies/evil.rego", "plans/shop.zip"} {
		if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String(k)}); err == nil {
			t.Errorf("%s exists after the restart", k)
		}
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("policies/evil.rego"), Body: strings.NewReader("x")}); errorCode(err) != "AccessDenied" {
		t.Errorf("put after the restart: %v, want AccessDenied", err)
	}
}
