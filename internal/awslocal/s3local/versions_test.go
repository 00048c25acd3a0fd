package s3local_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cairn-dev/cairn/internal/awslocal/s3local"
)

// responseOf returns the HTTP response behind an SDK error.
func responseOf(err error) *http.Response {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.Response.Response
	}
	return nil
}

// versions renders a key's versions newest first: body-or-marker and IsLatest.
func versions(t *testing.T, c *s3.Client, bucket, key string) string {
	t.Helper()
	out, err := c.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, v := range out.Versions {
		parts = append(parts, aws.ToString(v.VersionId)[:4]+" latest="+map[bool]string{true: "true", false: "false"}[aws.ToBool(v.IsLatest)])
	}
	for _, m := range out.DeleteMarkers {
		parts = append(parts, "marker latest="+map[bool]string{true: "true", false: "false"}[aws.ToBool(m.IsLatest)])
	}
	return strings.Join(parts, ";")
}

// TestUndeleteByDeletingTheMarker: deleting the delete marker on top of a key (S3's
// undelete) makes the newest remaining version current again: it is listed IsLatest, GET,
// HEAD, listing and tagging see it (gofakes3's s3mem left no current version and panicked).
func TestUndeleteByDeletingTheMarker(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "live", true: "after a restart"}[restart], func(t *testing.T) {
			dir := t.TempDir()
			c, svc := start(t, s3local.Options{Dir: dir})
			ctx := context.Background()
			mustBucket(t, c, "undelete", true)
			put(t, c, "undelete", "k", "one")
			two := put(t, c, "undelete", "k", "two")
			del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("undelete"), Key: aws.String("k")})
			if err != nil || !aws.ToBool(del.DeleteMarker) {
				t.Fatalf("delete: %+v %v", del, err)
			}
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("undelete"), Key: aws.String("k"), VersionId: del.VersionId}); err != nil {
				t.Fatalf("delete the marker: %v", err)
			}
			if restart {
				svc.Close()
				c, _ = start(t, s3local.Options{Dir: dir})
			}
			if got := get(t, c, "undelete", "k"); got != "two" {
				t.Fatalf("GET after undelete = %q, want two", got)
			}
			head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("undelete"), Key: aws.String("k")})
			if err != nil || aws.ToString(head.VersionId) != aws.ToString(two.VersionId) {
				t.Fatalf("HEAD after undelete: %+v %v, want version %s", head, err, aws.ToString(two.VersionId))
			}
			out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("undelete")})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.DeleteMarkers) != 0 || len(out.Versions) != 2 || !aws.ToBool(out.Versions[0].IsLatest) ||
				aws.ToString(out.Versions[0].VersionId) != aws.ToString(two.VersionId) || aws.ToBool(out.Versions[1].IsLatest) {
				t.Fatalf("versions after undelete: %s", versions(t, c, "undelete", "k"))
			}
			list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("undelete")})
			if err != nil || len(list.Contents) != 1 || aws.ToString(list.Contents[0].Key) != "k" {
				t.Fatalf("list after undelete: %+v %v", list, err)
			}
			if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("undelete"), Key: aws.String("k"),
				Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("a"), Value: aws.String("b")}}}}); err != nil {
				t.Fatalf("tag after undelete: %v", err)
			}
			// Deleting the current version itself makes the previous one current.
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("undelete"), Key: aws.String("k"), VersionId: two.VersionId}); err != nil {
				t.Fatal(err)
			}
			if got := get(t, c, "undelete", "k"); got != "one" {
				t.Fatalf("GET after deleting the current version = %q, want one", got)
			}
		})
	}
}

// TestSuspendedVersioningDelete: on a bucket whose versioning is suspended, DeleteObject
// of a key with older versions makes a null delete marker current and keeps the older
// versions (s3mem left the key without a current version, and reads panicked).
func TestSuspendedVersioningDelete(t *testing.T) {
	c, _ := start(t, s3local.Options{})
	ctx := context.Background()
	mustBucket(t, c, "suspended", true)
	old := put(t, c, "suspended", "k", "one")
	put(t, c, "suspended", "k", "two")
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("suspended"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}}); err != nil {
		t.Fatal(err)
	}
	del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("suspended"), Key: aws.String("k")})
	if err != nil || !aws.ToBool(del.DeleteMarker) || aws.ToString(del.VersionId) != "null" {
		t.Fatalf("delete: %+v %v, want a null delete marker", del, err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("suspended"), Key: aws.String("k")})
	if errorCode(err) != "NoSuchKey" || responseOf(err).Header.Get("x-amz-delete-marker") != "true" {
		t.Fatalf("GET after delete: %v, want NoSuchKey behind a delete marker", err)
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("suspended"), Key: aws.String("k"), VersionId: old.VersionId})
	if err != nil {
		t.Fatalf("the older version is kept: %v", err)
	}
	got.Body.Close()
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("suspended")})
	if err != nil || len(list.Contents) != 0 {
		t.Fatalf("list: %+v %v", list, err)
	}
}

// TestDeleteMarkerReads: GET and HEAD of a key behind a delete marker answer 404 with
// x-amz-delete-marker: true and the marker's version id; GET and HEAD of the marker's own
// version answer 405 Method Not Allowed, as S3 does.
func TestDeleteMarkerReads(t *testing.T) {
	c, _ := start(t, s3local.Options{})
	ctx := context.Background()
	mustBucket(t, c, "markers", true)
	put(t, c, "markers", "k", "v")
	del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("markers"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("markers"), Key: aws.String("k")})
	resp := responseOf(err)
	if errorCode(err) != "NoSuchKey" || resp == nil || resp.Header.Get("x-amz-delete-marker") != "true" || resp.Header.Get("x-amz-version-id") != aws.ToString(del.VersionId) {
		t.Fatalf("GET behind a marker: %v", err)
	}
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("markers"), Key: aws.String("k")})
	if resp := responseOf(err); resp == nil || resp.StatusCode != 404 || resp.Header.Get("x-amz-delete-marker") != "true" {
		t.Fatalf("HEAD behind a marker: %v", err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("markers"), Key: aws.String("k"), VersionId: del.VersionId})
	resp = responseOf(err)
	if errorCode(err) != "MethodNotAllowed" || resp.StatusCode != 405 || resp.Header.Get("x-amz-delete-marker") != "true" || resp.Header.Get("Last-Modified") == "" {
		t.Fatalf("GET of the marker's version: %v", err)
	}
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("markers"), Key: aws.String("k"), VersionId: del.VersionId})
	if resp := responseOf(err); resp == nil || resp.StatusCode != 405 {
		t.Fatalf("HEAD of the marker's version: %v", err)
	}
	// A key behind a delete marker is absent for a conditional write, as for a lock that
	// was released.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("markers"), Key: aws.String("k"), Body: strings.NewReader("again"),
		IfNoneMatch: aws.String("*")}); err != nil {
		t.Fatalf("If-None-Match: * on a key behind a delete marker: %v", err)
	}
	if got := get(t, c, "markers", "k"); got != "again" {
		t.Fatalf("after the conditional write: %q", got)
	}
	// A key that never existed has no delete marker header.
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("markers"), Key: aws.String("never")})
	if resp := responseOf(err); errorCode(err) != "NoSuchKey" || resp.Header.Get("x-amz-delete-marker") != "" {
		t.Fatalf("GET of a key that never existed: %v", err)
	}
}

// TestListV2Edges: KeyCount is sent when it is 0, and a last page carries no continuation
// token.
func TestListV2Edges(t *testing.T) {
	c, _ := start(t, s3local.Options{})
	ctx := context.Background()
	mustBucket(t, c, "lists", false)
	empty, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("lists")})
	if err != nil || empty.KeyCount == nil || *empty.KeyCount != 0 {
		t.Fatalf("empty list KeyCount = %v, %v; want 0", empty.KeyCount, err)
	}
	put(t, c, "lists", "a", "1")
	put(t, c, "lists", "b", "2")
	page, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("lists"), MaxKeys: aws.Int32(2)})
	if err != nil || aws.ToBool(page.IsTruncated) || page.NextContinuationToken != nil {
		t.Fatalf("a full last page: truncated=%v token=%v %v; want neither", aws.ToBool(page.IsTruncated), aws.ToString(page.NextContinuationToken), err)
	}
	first, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("lists"), MaxKeys: aws.Int32(1)})
	if err != nil || !aws.ToBool(first.IsTruncated) || first.NextContinuationToken == nil {
		t.Fatalf("a first page: %+v %v", first, err)
	}
	last, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("lists"), MaxKeys: aws.Int32(1), ContinuationToken: first.NextContinuationToken})
	if err != nil || aws.ToBool(last.IsTruncated) || last.NextContinuationToken != nil || len(last.Contents) != 1 || aws.ToString(last.Contents[0].Key) != "b" {
		t.Fatalf("the last page: truncated=%v token=%v %v", aws.ToBool(last.IsTruncated), aws.ToString(last.NextContinuationToken), err)
	}
}
