package objects_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal/s3local"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/objects"
)

const name = "cairn-state"

// newS3 serves the emulator's S3 and returns an SDK client of a versioned bucket in it.
func newS3(t *testing.T) *s3.Client {
	t.Helper()
	svc, err := s3local.New(s3local.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc)
	t.Cleanup(func() { srv.Close(); svc.Close() })
	cfg, err := config.LoadDefaultConfig(context.Background(), awsclient.WithSafeBodies(),
		config.WithRegion("us-east-1"),
		config.WithBaseEndpoint(srv.URL),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	)
	if err != nil {
		t.Fatal(err)
	}
	c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true; o.BaseEndpoint = aws.String(srv.URL) })
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(name),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	return c
}

type doc struct {
	N int `json:"n"`
}

// TestConditionalDocuments writes a document the way every store of cairn does: created
// once, then replaced only over the ETag that was read; a writer holding an older ETag
// loses and overwrites nothing.
func TestConditionalDocuments(t *testing.T) {
	c := newS3(t)
	ctx := context.Background()
	key := bucket.RunKey("shop", "R1")

	var got doc
	if _, err := objects.ReadJSON(ctx, c, name, key, &got); !errors.Is(err, objects.ErrNotFound) {
		t.Fatalf("read of a missing document: %v, want ErrNotFound", err)
	}
	etag1, err := objects.WriteJSON(ctx, c, name, key, doc{1}, objects.Write{Create: true})
	if err != nil || etag1 == "" {
		t.Fatalf("create: %q, %v", etag1, err)
	}
	if _, err := objects.WriteJSON(ctx, c, name, key, doc{2}, objects.Write{Create: true}); !errors.Is(err, objects.ErrConflict) {
		t.Fatalf("second create: %v, want ErrConflict", err)
	}
	etag, err := objects.ReadJSON(ctx, c, name, key, &got)
	if err != nil || got.N != 1 || etag != etag1 {
		t.Fatalf("read: %+v, %q, %v; want n 1 and ETag %q", got, etag, err, etag1)
	}
	etag2, err := objects.WriteJSON(ctx, c, name, key, doc{3}, objects.Write{IfMatch: etag1})
	if err != nil || etag2 == etag1 {
		t.Fatalf("replace: %q, %v", etag2, err)
	}
	if _, err := objects.WriteJSON(ctx, c, name, key, doc{4}, objects.Write{IfMatch: etag1}); !errors.Is(err, objects.ErrConflict) {
		t.Fatalf("replace over a stale ETag: %v, want ErrConflict", err)
	}
	if _, err := objects.ReadJSON(ctx, c, name, key, &got); err != nil || got.N != 3 {
		t.Fatalf("after the lost write: %+v, %v; want n 3", got, err)
	}
	if _, err := objects.WriteJSON(ctx, c, name, key, doc{5}, objects.Write{}); err != nil {
		t.Fatalf("unconditional write: %v", err)
	}
	if err := objects.Delete(ctx, c, name, key, etag2); !errors.Is(err, objects.ErrConflict) {
		t.Fatalf("delete over a stale ETag: %v, want ErrConflict", err)
	}
	o, err := objects.Get(ctx, c, name, key, "", 0)
	if err != nil || !strings.Contains(string(o.Body), `"n": 5`) {
		t.Fatalf("get: %v", err)
	}
	if err := objects.Delete(ctx, c, name, key, o.ETag); err != nil {
		t.Fatalf("delete over the current ETag: %v", err)
	}
	if err := objects.Delete(ctx, c, name, key, ""); err != nil {
		t.Fatalf("delete of a missing object: %v", err)
	}
	if _, err := objects.WriteJSON(ctx, c, name, key, doc{6}, objects.Write{IfMatch: o.ETag}); !errors.Is(err, objects.ErrConflict) {
		t.Fatalf("replace of a deleted object: %v, want ErrConflict", err)
	}
}

func TestGet(t *testing.T) {
	c := newS3(t)
	ctx := context.Background()
	key := bucket.DeploymentKey("shop")
	out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(name), Key: aws.String(key), Body: strings.NewReader("first"),
		Metadata: map[string]string{"git-ref": "abc"}})
	if err != nil {
		t.Fatal(err)
	}
	first := aws.ToString(out.VersionId)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(name), Key: aws.String(key), Body: strings.NewReader("second!")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what, key, version string
		limit              int64
		body, err          string
		notFound, tooLarge bool
	}{
		{what: "newest", key: key, body: "second!"},
		{what: "a version", key: key, version: first, body: "first"},
		{what: "within the limit", key: key, limit: 7, body: "second!"},
		{what: "over the limit", key: key, limit: 6, err: "s3://cairn-state/deployments/shop.zip is larger than 6 bytes", tooLarge: true},
		{what: "missing key", key: bucket.DeploymentKey("other"), err: "s3://cairn-state/deployments/other.zip: no such object", notFound: true},
	} {
		t.Run(tc.what, func(t *testing.T) {
			o, err := objects.Get(ctx, c, name, tc.key, tc.version, tc.limit)
			if tc.err != "" {
				var big *objects.TooLargeError
				if err == nil || err.Error() != tc.err || errors.Is(err, objects.ErrNotFound) != tc.notFound || errors.As(err, &big) != tc.tooLarge {
					t.Fatalf("err %v, want %q (not found %v, too large %v)", err, tc.err, tc.notFound, tc.tooLarge)
				}
				return
			}
			if err != nil || string(o.Body) != tc.body || o.ETag == "" {
				t.Fatalf("%+v, %v; want %q", o, err, tc.body)
			}
		})
	}
	o, err := objects.Get(ctx, c, name, key, first, 0)
	if err != nil || o.Metadata["git-ref"] != "abc" {
		t.Fatalf("metadata of the first version: %+v, %v", o, err)
	}
	if _, err := objects.Get(ctx, c, "no-such-bucket", key, "", 0); err == nil || errors.Is(err, objects.ErrNotFound) {
		t.Fatalf("a missing bucket reads as %v: it must be an error of its own, not a missing object", err)
	}
}

// TestGetChanged reads an object again only when it changed: the ETag of what was read
// gives ErrNotModified (and no body) while the object is still that one, the new object
// once it was written over, and a missing object ErrNotFound.
func TestGetChanged(t *testing.T) {
	c := newS3(t)
	ctx := context.Background()
	key := bucket.RunKey("shop", "r1")
	etag, err := objects.Put(ctx, c, name, key, []byte(`{"steps":1}`), objects.Write{})
	if err != nil {
		t.Fatal(err)
	}
	if o, err := objects.GetChanged(ctx, c, name, key, etag); !errors.Is(err, objects.ErrNotModified) || o != nil {
		t.Fatalf("unchanged: %+v, %v; want ErrNotModified", o, err)
	}
	again, err := objects.Put(ctx, c, name, key, []byte(`{"steps":2}`), objects.Write{IfMatch: etag})
	if err != nil {
		t.Fatal(err)
	}
	o, err := objects.GetChanged(ctx, c, name, key, etag)
	if err != nil || string(o.Body) != `{"steps":2}` || o.ETag != again {
		t.Fatalf("changed: %+v, %v; want the second document with ETag %s", o, err, again)
	}
	if _, err := objects.GetChanged(ctx, c, name, bucket.RunKey("shop", "r2"), etag); !errors.Is(err, objects.ErrNotFound) {
		t.Fatalf("missing: %v; want ErrNotFound", err)
	}
}

// pages is a Lister that answers in pages of size keys.
type pages struct {
	keys  []string
	size  int
	calls int
}

func (p *pages) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	p.calls++
	var match []string
	for _, k := range p.keys {
		if strings.HasPrefix(k, aws.ToString(in.Prefix)) {
			match = append(match, k)
		}
	}
	start := 0
	if tok := aws.ToString(in.ContinuationToken); tok != "" {
		fmt.Sscan(tok, &start)
	}
	end := min(start+p.size, len(match))
	out := &s3.ListObjectsV2Output{}
	for _, k := range match[start:end] {
		out.Contents = append(out.Contents, types.Object{Key: aws.String(k)})
	}
	if end < len(match) {
		out.IsTruncated, out.NextContinuationToken = aws.Bool(true), aws.String(fmt.Sprint(end))
	}
	return out, nil
}

func TestListReadsEveryPage(t *testing.T) {
	var keys []string
	for i := range 7 {
		keys = append(keys, bucket.RunKey("shop", fmt.Sprintf("R%d", i)))
	}
	p := &pages{keys: append(keys, bucket.RunKey("other", "R9")), size: 3}
	got, err := objects.List(context.Background(), p, name, bucket.RunsOf("shop"))
	if err != nil || !slices.Equal(got, keys) || p.calls != 3 {
		t.Fatalf("%q in %d calls, %v; want %q in 3", got, p.calls, err, keys)
	}
}

// deleter answers DeleteObject with err.
type deleter struct{ err error }

func (d deleter) DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	return &s3.DeleteObjectOutput{}, d.err
}

func TestDeleteClassifiesTheAnswer(t *testing.T) {
	answer := func(status int, code string) error {
		return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err: &smithy.GenericAPIError{Code: code, Message: "m"}}
	}
	for _, tc := range []struct {
		name         string
		err          error
		ifMatch      string
		ok, conflict bool
	}{
		{"deleted", nil, "", true, false},
		{"already gone", answer(404, "NoSuchKey"), "", true, false},
		{"gone, while it was to be the one read", answer(404, "NoSuchKey"), `"e1"`, false, true},
		{"changed since read", answer(412, "PreconditionFailed"), `"e1"`, false, true},
		{"no bucket", answer(404, "NoSuchBucket"), "", false, false},
		{"denied", answer(403, "AccessDenied"), "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := objects.Delete(context.Background(), deleter{tc.err}, name, bucket.OpenRunKey("R1"), tc.ifMatch)
			if (err == nil) != tc.ok || errors.Is(err, objects.ErrConflict) != tc.conflict {
				t.Errorf("err %v, want ok %v conflict %v", err, tc.ok, tc.conflict)
			}
		})
	}
}
