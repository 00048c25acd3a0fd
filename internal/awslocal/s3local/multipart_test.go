package s3local_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-dev/cairn/internal/awslocal/s3local"
	"github.com/cairn-dev/cairn/internal/clock"
)

// upload makes a multipart upload of parts and completes it with the parts listed in
// order (part numbers and ETags as uploaded unless changed by mod).
func upload(t *testing.T, c *s3.Client, bucket, key string, parts [][]byte, mod func([]types.CompletedPart) []types.CompletedPart) (*s3.CompleteMultipartUploadOutput, error) {
	t.Helper()
	ctx := context.Background()
	mu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	var done []types.CompletedPart
	for i, p := range parts {
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: mu.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p)})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.ETag})
	}
	if mod != nil {
		done = mod(done)
	}
	return c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: mu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
}

// multipartETag is S3's ETag of an object made of parts: the MD5 of their MD5s, "-N".
func multipartETag(parts ...[]byte) string {
	var sums []byte
	for _, p := range parts {
		s := md5.Sum(p)
		sums = append(sums, s[:]...)
	}
	return fmt.Sprintf(`"%x-%d"`, md5.Sum(sums), len(parts))
}

// TestMultipartUploadAsS3: the object's ETag is S3's multipart ETag in the completion,
// HEAD, GET and listings; parts out of order, unknown or with a wrong ETag, and a part
// but the last smaller than 5 MiB are refused with S3's codes.
func TestMultipartUploadAsS3(t *testing.T) {
	c, _ := start(t, s3local.Options{})
	ctx := context.Background()
	mustBucket(t, c, "mpu", false)
	big, small := bytes.Repeat([]byte("a"), 5<<20), []byte("tail")
	out, err := upload(t, c, "mpu", "obj", [][]byte{big, small}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := multipartETag(big, small)
	if got := aws.ToString(out.ETag); got != want {
		t.Errorf("CompleteMultipartUpload ETag %s, want %s", got, want)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("mpu"), Key: aws.String("obj")})
	if err != nil || aws.ToString(head.ETag) != want || aws.ToInt64(head.ContentLength) != int64(len(big)+len(small)) {
		t.Errorf("HeadObject: %v ETag %s size %d, want %s", err, aws.ToString(head.ETag), aws.ToInt64(head.ContentLength), want)
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("mpu")})
	if err != nil || len(list.Contents) != 1 || aws.ToString(list.Contents[0].ETag) != want {
		t.Errorf("ListObjectsV2: %v %+v", err, list)
	}
	if g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("mpu"), Key: aws.String("obj"), IfMatch: aws.String(want)}); err != nil {
		t.Errorf("GetObject If-Match the multipart ETag: %v", err)
	} else {
		io.Copy(io.Discard, g.Body)
		g.Body.Close()
		if aws.ToString(g.ETag) != want {
			t.Errorf("GetObject ETag %s, want %s", aws.ToString(g.ETag), want)
		}
	}
	put(t, c, "mpu", "obj", "single")
	if h, _ := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("mpu"), Key: aws.String("obj")}); strings.Contains(aws.ToString(h.ETag), "-") {
		t.Errorf("a plain PUT over it keeps the multipart ETag %s", aws.ToString(h.ETag))
	}

	tests := []struct {
		name  string
		parts [][]byte
		mod   func([]types.CompletedPart) []types.CompletedPart
		code  string
	}{
		{"a small part before the last", [][]byte{small, small}, nil, "EntityTooSmall"},
		{"parts out of order", [][]byte{big, small}, func(p []types.CompletedPart) []types.CompletedPart { return []types.CompletedPart{p[1], p[0]} }, "InvalidPartOrder"},
		{"a part never uploaded", [][]byte{small}, func(p []types.CompletedPart) []types.CompletedPart {
			return append(p, types.CompletedPart{PartNumber: aws.Int32(7), ETag: p[0].ETag})
		}, "InvalidPart"},
		{"a wrong ETag", [][]byte{small}, func(p []types.CompletedPart) []types.CompletedPart {
			p[0].ETag = aws.String(`"0123456789abcdef0123456789abcdef"`)
			return p
		}, "InvalidPart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := upload(t, c, "mpu", "bad", tt.parts, tt.mod)
			if got := errorCode(err); got != tt.code || !strings.Contains(fmt.Sprint(err), "StatusCode: 400") {
				t.Errorf("CompleteMultipartUpload: %v, want %s (400)", err, tt.code)
			}
		})
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("mpu"), Key: aws.String("bad")}); err == nil {
		t.Error("a refused completion made the object")
	}
}

// TestPresignedURLExpires: a presigned GET works until its expiry and is refused after it
// with 403 AccessDenied "Request has expired".
func TestPresignedURLExpires(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	clk := clock.NewFake(now)
	c, _ := start(t, s3local.Options{Clock: clk})
	mustBucket(t, c, "pre", false)
	put(t, c, "pre", "k", "v")
	req, err := s3.NewPresignClient(c).PresignGetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("pre"), Key: aws.String("k")},
		s3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	fetch := func() (int, string) {
		resp, err := http.Get(req.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := fetch(); code != 200 || body != "v" {
		t.Fatalf("within its expiry: %d %s", code, body)
	}
	clk.Advance(2 * time.Minute)
	if code, body := fetch(); code != 403 || !strings.Contains(body, "<Code>AccessDenied</Code>") || !strings.Contains(body, "Request has expired") {
		t.Fatalf("after its expiry: %d %s", code, body)
	}
}

// TestRecreateOwnBucket: CreateBucket of a bucket the caller owns answers 200 in us-east-1
// and BucketAlreadyOwnedByYou elsewhere.
func TestRecreateOwnBucket(t *testing.T) {
	c, _ := start(t, s3local.Options{})
	mustBucket(t, c, "mine", false)
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("mine")}); err != nil {
		t.Errorf("us-east-1: %v, want 200", err)
	}
	west := s3.New(c.Options(), func(o *s3.Options) { o.Region = "eu-west-1" })
	_, err := west.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("mine"),
		CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraintEuWest1}})
	if errorCode(err) != "BucketAlreadyOwnedByYou" || !strings.Contains(fmt.Sprint(err), "StatusCode: 409") {
		t.Errorf("eu-west-1: %v, want BucketAlreadyOwnedByYou (409)", err)
	}
}

// TestBucketCorsAndObjectLock: CORS configurations are stored, answered and deleted;
// Object Lock needs versioning and is answered once put.
func TestBucketCorsAndObjectLock(t *testing.T) {
	c, _ := start(t, s3local.Options{})
	ctx := context.Background()
	mustBucket(t, c, "plain", false)
	b := aws.String("plain")
	if _, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: b}); errorCode(err) != "NoSuchCORSConfiguration" {
		t.Errorf("GetBucketCors before any: %v", err)
	}
	rule := types.CORSRule{AllowedMethods: []string{"GET", "PUT"}, AllowedOrigins: []string{"https://example.com"}, MaxAgeSeconds: aws.Int32(300)}
	if _, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: b, CORSConfiguration: &types.CORSConfiguration{CORSRules: []types.CORSRule{rule}}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: b})
	if err != nil || len(got.CORSRules) != 1 || strings.Join(got.CORSRules[0].AllowedMethods, ",") != "GET,PUT" || aws.ToInt32(got.CORSRules[0].MaxAgeSeconds) != 300 {
		t.Errorf("GetBucketCors: %v %+v", err, got)
	}
	bad := types.CORSRule{AllowedMethods: []string{"PATCH"}, AllowedOrigins: []string{"*"}}
	if _, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: b, CORSConfiguration: &types.CORSConfiguration{CORSRules: []types.CORSRule{bad}}}); errorCode(err) != "InvalidRequest" {
		t.Errorf("PutBucketCors with PATCH: %v", err)
	}
	if _, err := c.DeleteBucketCors(ctx, &s3.DeleteBucketCorsInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: b}); errorCode(err) != "NoSuchCORSConfiguration" {
		t.Errorf("GetBucketCors after delete: %v", err)
	}

	if _, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: b}); errorCode(err) != "ObjectLockConfigurationNotFoundError" {
		t.Errorf("GetObjectLockConfiguration before any: %v", err)
	}
	lock := &types.ObjectLockConfiguration{ObjectLockEnabled: types.ObjectLockEnabledEnabled,
		Rule: &types.ObjectLockRule{DefaultRetention: &types.DefaultRetention{Mode: types.ObjectLockRetentionModeGovernance, Days: aws.Int32(1)}}}
	if _, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: b, ObjectLockConfiguration: lock}); errorCode(err) != "InvalidBucketState" {
		t.Errorf("PutObjectLockConfiguration without versioning: %v", err)
	}
	mustBucket(t, c, "locked", true)
	if _, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: aws.String("locked"), ObjectLockConfiguration: lock}); err != nil {
		t.Fatal(err)
	}
	l, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String("locked")})
	if err != nil || l.ObjectLockConfiguration.ObjectLockEnabled != types.ObjectLockEnabledEnabled || aws.ToInt32(l.ObjectLockConfiguration.Rule.DefaultRetention.Days) != 1 {
		t.Errorf("GetObjectLockConfiguration: %v %+v", err, l)
	}
}

// TestObjectLockAtCreation: a bucket created with Object Lock enabled is versioned and
// answers its Object Lock configuration.
func TestObjectLockAtCreation(t *testing.T) {
	c, _ := start(t, s3local.Options{})
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("locked-at-birth"), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	v, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("locked-at-birth")})
	if err != nil || v.Status != types.BucketVersioningStatusEnabled {
		t.Errorf("versioning: %v %+v", err, v)
	}
	l, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String("locked-at-birth")})
	if err != nil || l.ObjectLockConfiguration.ObjectLockEnabled != types.ObjectLockEnabledEnabled {
		t.Errorf("GetObjectLockConfiguration: %v %+v", err, l)
	}
}

// TestIssue43StateSurvivesARestart: multipart ETags, CORS and Object Lock configurations
// come back from the journal after a restart.
func TestIssue43StateSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	big, small := bytes.Repeat([]byte("r"), 5<<20), []byte("end")
	serve := func(f func(c *s3.Client)) {
		svc, err := s3local.New(s3local.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(svc)
		defer func() { srv.Close(); svc.Close() }()
		f(client(t, srv.URL))
	}
	serve(func(c *s3.Client) {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("kept"), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
		if _, err := upload(t, c, "kept", "obj", [][]byte{big, small}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: aws.String("kept"), CORSConfiguration: &types.CORSConfiguration{
			CORSRules: []types.CORSRule{{AllowedMethods: []string{"GET"}, AllowedOrigins: []string{"*"}}}}}); err != nil {
			t.Fatal(err)
		}
	})
	serve(func(c *s3.Client) {
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("kept"), Key: aws.String("obj")})
		if err != nil || aws.ToString(head.ETag) != multipartETag(big, small) {
			t.Errorf("multipart ETag after a restart: %v %s", err, aws.ToString(head.ETag))
		}
		if _, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: aws.String("kept")}); err != nil {
			t.Errorf("CORS after a restart: %v", err)
		}
		if _, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String("kept")}); err != nil {
			t.Errorf("Object Lock after a restart: %v", err)
		}
	})
}
