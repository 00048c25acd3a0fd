package s3local_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal/s3local"
)

// sink collects delivered notifications.
type sink struct {
	mu   sync.Mutex
	msgs []message
}

type message struct{ queue, body string }

func (s *sink) notify(_ context.Context, queue, body string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, message{queue, body})
	return nil
}

func (s *sink) take() []message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.msgs
	s.msgs = nil
	return out
}

func start(t *testing.T, opts s3local.Options) (*s3.Client, *s3local.Service) {
	t.Helper()
	svc, err := s3local.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc)
	t.Cleanup(func() { srv.Close(); svc.Close() })
	return client(t, srv.URL), svc
}

func client(t *testing.T, url string) *s3.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(), awsclient.WithSafeBodies(),
		config.WithRegion("us-east-1"),
		config.WithBaseEndpoint(url),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
		config.WithRetryMaxAttempts(1),
	)
	if err != nil {
		t.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func mustBucket(t *testing.T, c *s3.Client, name string, versioned bool) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	if versioned {
		if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(name),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
			t.Fatalf("enable versioning: %v", err)
		}
	}
}

func put(t *testing.T, c *s3.Client, bucket, key, body string) *s3.PutObjectOutput {
	t.Helper()
	out, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)})
	if err != nil {
		t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
	return out
}

func get(t *testing.T, c *s3.Client, bucket, key string) string {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	return string(b)
}

func TestConditionalWrites(t *testing.T) {
	c, _ := start(t, s3local.Options{})
	ctx := context.Background()
	mustBucket(t, c, "state", true)
	first, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String("locks/shop.lock"),
		Body: strings.NewReader(`{"owner":"a"}`), IfNoneMatch: aws.String("*")})
	if err != nil {
		t.Fatalf("first create-only put: %v", err)
	}
	tests := []struct {
		name     string
		in       *s3.PutObjectInput
		wantCode string
	}{
		{"second create-only put", &s3.PutObjectInput{IfNoneMatch: aws.String("*")}, "PreconditionFailed"},
		{"stale etag", &s3.PutObjectInput{IfMatch: aws.String(`"0123456789abcdef0123456789abcdef"`)}, "PreconditionFailed"},
		{"current etag", &s3.PutObjectInput{IfMatch: first.ETag}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Bucket, in.Key, in.Body = aws.String("state"), aws.String("locks/shop.lock"), strings.NewReader(`{"owner":"bkt"}`)
			_, err := c.PutObject(ctx, in)
			if got := errorCode(err); got != tt.wantCode {
				t.Fatalf("error code = %q (%v), want %q", got, err, tt.wantCode)
			}
			var re interface{ HTTPStatusCode() int }
			if tt.wantCode != "" && (!errors.As(err, &re) || re.HTTPStatusCode() != 412) {
				t.Fatalf("want HTTP 412, got %v", err)
			}
		})
	}
	if got := get(t, c, "state", "locks/shop.lock"); got != `{"owner":"bkt"}` {
		t.Fatalf("content = %s, want the If-Match write", got)
	}
}

func TestConditionalDelete(t *testing.T) {
	c, _ := start(t, s3local.Options{})
	ctx := context.Background()
	mustBucket(t, c, "bkt", false)
	out := put(t, c, "bkt", "k", "v1")
	_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), IfMatch: aws.String(`"ffffffffffffffffffffffffffffffff"`)})
	if code := errorCode(err); code != "PreconditionFailed" {
		t.Fatalf("delete with stale etag: %v, want PreconditionFailed", err)
	}
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), IfMatchSize: aws.Int64(99)})
	if code := errorCode(err); code != "PreconditionFailed" {
		t.Fatalf("delete with wrong size: %v, want PreconditionFailed", err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), IfMatch: out.ETag}); err != nil {
		t.Fatalf("delete with current etag: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")}); err == nil {
		t.Fatal("object still there after conditional delete")
	}
}

func TestVersionsAndTagging(t *testing.T) {
	c, _ := start(t, s3local.Options{})
	ctx := context.Background()
	mustBucket(t, c, "bkt", true)
	v1 := put(t, c, "bkt", "deployments/shop.zip", "one")
	v2 := put(t, c, "bkt", "deployments/shop.zip", "two")
	if aws.ToString(v1.VersionId) == "" || aws.ToString(v1.VersionId) == aws.ToString(v2.VersionId) {
		t.Fatalf("version ids %q %q: want two distinct ids", aws.ToString(v1.VersionId), aws.ToString(v2.VersionId))
	}
	old, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("deployments/shop.zip"), VersionId: v1.VersionId})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(old.Body)
	old.Body.Close()
	if string(body) != "one" {
		t.Fatalf("version 1 = %q", body)
	}
	list, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("bkt")})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Versions) != 2 {
		t.Fatalf("versions = %d, want 2", len(list.Versions))
	}
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("bkt"), Key: aws.String("deployments/shop.zip"),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("cairn:namespace"), Value: aws.String("shop")}}}}); err != nil {
		t.Fatal(err)
	}
	tags, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String("bkt"), Key: aws.String("deployments/shop.zip")})
	if err != nil {
		t.Fatal(err)
	}
	if len(tags.TagSet) != 1 || aws.ToString(tags.TagSet[0].Value) != "shop" {
		t.Fatalf("tags = %+v", tags.TagSet)
	}
}

func TestNotifications(t *testing.T) {
	var got sink
	c, _ := start(t, s3local.Options{Notify: got.notify, Region: "eu-west-1"})
	ctx := context.Background()
	mustBucket(t, c, "deploy", true)
	const queue = "arn:aws:sqs:eu-west-1:000000000000:deploy"
	_, err := c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
		Bucket: aws.String("deploy"),
		NotificationConfiguration: &types.NotificationConfiguration{QueueConfigurations: []types.QueueConfiguration{{
			Id:       aws.String("bundles"),
			QueueArn: aws.String(queue),
			Events:   []types.Event{"s3:ObjectCreated:*"},
			Filter: &types.NotificationConfigurationFilter{Key: &types.S3KeyFilter{FilterRules: []types.FilterRule{
				{Name: types.FilterRuleNamePrefix, Value: aws.String("deployments/")},
				{Name: types.FilterRuleNameSuffix, Value: aws.String(".zip")},
			}}},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if msgs := got.take(); len(msgs) != 1 || !strings.Contains(msgs[0].body, `"s3:TestEvent"`) {
		t.Fatalf("after configuring: %+v, want one s3:TestEvent", msgs)
	}
	cfg, err := c.GetBucketNotificationConfiguration(ctx, &s3.GetBucketNotificationConfigurationInput{Bucket: aws.String("deploy")})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.QueueConfigurations) != 1 || aws.ToString(cfg.QueueConfigurations[0].QueueArn) != queue ||
		len(cfg.QueueConfigurations[0].Filter.Key.FilterRules) != 2 {
		t.Fatalf("configuration read back = %+v", cfg.QueueConfigurations)
	}

	tests := []struct {
		key     string
		deliver bool
	}{
		{"deployments/shop app.zip", true},
		{"deployments/shop.yaml", false},
		{"plans/shop.zip", false},
		{"deployments/a:b.zip", true},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			out := put(t, c, "deploy", tt.key, "bundle "+tt.key)
			msgs := got.take()
			if !tt.deliver {
				if len(msgs) != 0 {
					t.Fatalf("delivered %d messages for a filtered-out key", len(msgs))
				}
				return
			}
			if len(msgs) != 1 || msgs[0].queue != queue {
				t.Fatalf("messages = %+v, want one to %s", msgs, queue)
			}
			var ev events.S3Event
			if err := json.Unmarshal([]byte(msgs[0].body), &ev); err != nil {
				t.Fatal(err)
			}
			r := ev.Records[0]
			if r.EventName != "ObjectCreated:Put" || r.EventSource != "aws:s3" || r.AWSRegion != "eu-west-1" || r.S3.Bucket.Name != "deploy" {
				t.Fatalf("record = %+v", r)
			}
			o := r.S3.Object
			if o.URLDecodedKey != tt.key || o.Key == tt.key || o.VersionID != aws.ToString(out.VersionId) ||
				`"`+o.ETag+`"` != aws.ToString(out.ETag) || o.Size != int64(len("bundle "+tt.key)) || o.Sequencer == "" {
				t.Fatalf("object = %+v, want key %q version %s etag %s", o, tt.key, aws.ToString(out.VersionId), aws.ToString(out.ETag))
			}
		})
	}
}

func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	var versions []string
	func() {
		svc, err := s3local.New(s3local.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(svc)
		defer srv.Close()
		c := client(t, srv.URL)
		mustBucket(t, c, "bkt", true)
		versions = append(versions, aws.ToString(put(t, c, "bkt", "state/shop.json", "g1").VersionId))
		versions = append(versions, aws.ToString(put(t, c, "bkt", "state/shop.json", "g2").VersionId))
		put(t, c, "bkt", "gone", "x")
		if _, err := c.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("gone")}); err != nil {
			t.Fatal(err)
		}
		if err := svc.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	c, svc := start(t, s3local.Options{Dir: dir})
	if got := get(t, c, "bkt", "state/shop.json"); got != "g2" {
		t.Fatalf("after restart: %q, want g2", got)
	}
	list, err := c.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String("bkt"), Prefix: aws.String("state/")})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range list.Versions {
		ids = append(ids, aws.ToString(v.VersionId))
	}
	if len(ids) != 2 || !(contains(ids, versions[0]) && contains(ids, versions[1])) {
		t.Fatalf("versions after restart %v, want %v", ids, versions)
	}
	if _, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("gone")}); err == nil {
		t.Fatal("deleted object came back after restart")
	}
	b, err := svc.GetObject(context.Background(), "bkt", "state/shop.json")
	if err != nil || string(b) != "g2" {
		t.Fatalf("GetObject = %q, %v", b, err)
	}
	if _, err := svc.GetObject(context.Background(), "bkt", "missing"); err == nil {
		t.Fatal("GetObject of a missing key succeeded")
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// A key deleted in a versioned bucket keeps its versions but is no longer listed.
func TestListOmitsDeletedKeysInVersionedBucket(t *testing.T) {
	c, _ := start(t, s3local.Options{})
	ctx := context.Background()
	mustBucket(t, c, "listed", true)
	put(t, c, "listed", "x/gone", "a")
	put(t, c, "listed", "x/kept", "b")
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("listed"), Key: aws.String("x/gone")}); err != nil {
		t.Fatal(err)
	}
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("listed"), Prefix: aws.String("x/")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, *o.Key)
	}
	if len(keys) != 1 || keys[0] != "x/kept" {
		t.Fatalf("listed %v, want [x/kept]", keys)
	}
	versions, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("listed"), Prefix: aws.String("x/gone")})
	if err != nil || len(versions.Versions) != 1 || len(versions.DeleteMarkers) != 1 {
		t.Fatalf("versions of x/gone: %d versions, %d markers, %v", len(versions.Versions), len(versions.DeleteMarkers), err)
	}
}
