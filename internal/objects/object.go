// Package objects reads and writes cairn's bucket: objects by key (conditional writes,
// size limits, JSON), listings, and Gated, the S3 client that refuses what the calling
// run's scope does not allow. What the keys are, and who may touch which, is package
// bucket's, which links no SDK: the decision packages use that, the drivers this.
package objects

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/bucket"
)

// Sentinel errors of object I/O, wrapped with the object's address.
var (
	// ErrNotFound: the object (or the version asked for) does not exist.
	ErrNotFound = errors.New("no such object")
	// ErrConflict: a conditional write or delete lost: the object changed since it was
	// read (If-Match), or exists although it was to be created (If-None-Match). Nothing
	// was written.
	ErrConflict = errors.New("object changed since it was read")
	// ErrNotModified: a conditional read (GetChanged) found the object still the one with
	// the ETag it named; no body was sent.
	ErrNotModified = errors.New("object not modified since it was read")
)

// TooLargeError reports an object larger than a reader accepts.
type TooLargeError struct {
	Object string // its s3:// address
	Limit  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %d bytes", e.Object, e.Limit)
}

// Getter reads objects.
type Getter interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// Putter writes objects.
type Putter interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// Deleter deletes objects.
type Deleter interface {
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

// Lister lists keys.
type Lister interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// Object is an object as read.
type Object struct {
	Body     []byte
	ETag     string
	Metadata map[string]string
	// VersionID is the version read ("" in a bucket without versioning).
	VersionID string
}

// Get reads the object key of bucket name, at versionID when it is not "". A missing
// object, or version, gives ErrNotFound; a missing bucket is an error of its own. limit > 0
// refuses a body larger than limit bytes.
func Get(ctx context.Context, api Getter, name, key, versionID string, limit int64) (*Object, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(name), Key: aws.String(key)}
	where := bucket.URI(name, key)
	if versionID != "" {
		in.VersionId = aws.String(versionID)
		where += " version " + versionID
	}
	return get(ctx, api, in, where, limit)
}

// GetChanged reads the object key of bucket name as Get does, unless it is still the one
// with ETag etag (If-None-Match): then ErrNotModified, and S3 sends no body. A reader
// that decoded that object already keeps what it decoded.
func GetChanged(ctx context.Context, api Getter, name, key, etag string) (*Object, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(name), Key: aws.String(key), IfNoneMatch: aws.String(etag)}
	return get(ctx, api, in, bucket.URI(name, key), 0)
}

func get(ctx context.Context, api Getter, in *s3.GetObjectInput, where string, limit int64) (*Object, error) {
	out, err := api.GetObject(ctx, in)
	if err != nil {
		if in.IfNoneMatch != nil && awserr.HTTPStatus(err) == http.StatusNotModified {
			return nil, fmt.Errorf("%s: %w", where, ErrNotModified)
		}
		if awserr.NotFound(err) && awserr.ErrorCode(err) != "NoSuchBucket" {
			return nil, fmt.Errorf("%s: %w", where, ErrNotFound)
		}
		return nil, fmt.Errorf("read %s: %w", where, err)
	}
	defer out.Body.Close()
	r := io.Reader(out.Body)
	if limit > 0 {
		r = io.LimitReader(out.Body, limit+1)
	}
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", where, err)
	}
	if limit > 0 && int64(len(body)) > limit {
		return nil, &TooLargeError{Object: where, Limit: limit}
	}
	return &Object{Body: body, ETag: aws.ToString(out.ETag), Metadata: out.Metadata, VersionID: aws.ToString(out.VersionId)}, nil
}

// Header reads the object.
type Header interface {
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// Head reads the ETag and metadata of the object key of bucket name, not its body. A
// missing object gives ErrNotFound.
func Head(ctx context.Context, api Header, name, key string) (*Object, error) {
	out, err := api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(name), Key: aws.String(key)})
	if err != nil {
		if awserr.NotFound(err) && awserr.ErrorCode(err) != "NoSuchBucket" {
			return nil, fmt.Errorf("%s: %w", bucket.URI(name, key), ErrNotFound)
		}
		return nil, fmt.Errorf("read %s: %w", bucket.URI(name, key), err)
	}
	return &Object{ETag: aws.ToString(out.ETag), Metadata: out.Metadata, VersionID: aws.ToString(out.VersionId)}, nil
}

// ReadJSON decodes the JSON document key of bucket name into v and returns its ETag, for
// a later conditional write. A missing document gives ErrNotFound.
func ReadJSON(ctx context.Context, api Getter, name, key string, v any) (etag string, err error) {
	o, err := Get(ctx, api, name, key, "", 0)
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(o.Body, v); err != nil {
		return "", fmt.Errorf("%s is not a JSON document: %w", bucket.URI(name, key), err)
	}
	return o.ETag, nil
}

// Write says how an object is written.
type Write struct {
	// Create writes only when no object exists yet (If-None-Match: *).
	Create bool
	// IfMatch writes only over the object with this ETag. Neither Create nor IfMatch:
	// the write is unconditional.
	IfMatch     string
	ContentType string
	Metadata    map[string]string
	// Compact writes a JSON document (WriteJSON) without indentation: a large document
	// read and written at every step (a running run's) costs a third as much to encode
	// and a fifth less to decode.
	Compact bool
}

// Put writes body as the object key of bucket name and returns its new ETag. A lost
// condition gives ErrConflict and writes nothing.
func Put(ctx context.Context, api Putter, name, key string, body []byte, w Write) (string, error) {
	in := &s3.PutObjectInput{Bucket: aws.String(name), Key: aws.String(key), Body: bytes.NewReader(body), Metadata: w.Metadata}
	if w.ContentType != "" {
		in.ContentType = aws.String(w.ContentType)
	}
	switch {
	case w.Create:
		in.IfNoneMatch = aws.String("*")
	case w.IfMatch != "":
		in.IfMatch = aws.String(w.IfMatch)
	}
	out, err := api.PutObject(ctx, in)
	if err != nil {
		conditional := w.Create || w.IfMatch != ""
		if conditional && (awserr.PreconditionFailed(err) || (w.IfMatch != "" && awserr.NotFound(err))) {
			return "", fmt.Errorf("write %s: %w (%w)", bucket.URI(name, key), ErrConflict, err)
		}
		return "", fmt.Errorf("write %s: %w", bucket.URI(name, key), err)
	}
	return aws.ToString(out.ETag), nil
}

// WriteJSON encodes v, indented unless w.Compact, as the JSON document key of bucket name (see Put).
func WriteJSON(ctx context.Context, api Putter, name, key string, v any, w Write) (string, error) {
	var body []byte
	var err error
	if w.Compact {
		body, err = json.Marshal(v)
	} else {
		body, err = json.MarshalIndent(v, "", "  ")
	}
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", bucket.URI(name, key), err)
	}
	if w.ContentType == "" {
		w.ContentType = "application/json"
	}
	return Put(ctx, api, name, key, body, w)
}

// Delete deletes the object key of bucket name. Without ifMatch an object already gone is
// no error; with it, the object is deleted only while it is the one with that ETag, and
// anything else (changed, or gone) gives ErrConflict.
func Delete(ctx context.Context, api Deleter, name, key, ifMatch string) error {
	in := &s3.DeleteObjectInput{Bucket: aws.String(name), Key: aws.String(key)}
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
	}
	_, err := api.DeleteObject(ctx, in)
	gone := awserr.NotFound(err) && awserr.ErrorCode(err) != "NoSuchBucket"
	switch {
	case err == nil:
		return nil
	case ifMatch != "" && (gone || awserr.PreconditionFailed(err)):
		return fmt.Errorf("delete %s: %w (%w)", bucket.URI(name, key), ErrConflict, err)
	case gone:
		return nil
	}
	return fmt.Errorf("delete %s: %w", bucket.URI(name, key), err)
}

// ManyDeleter deletes objects a thousand at a time.
type ManyDeleter interface {
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
}

// DeleteMany deletes keys of bucket name, a thousand a request (S3's most); keys that do
// not exist are no error.
func DeleteMany(ctx context.Context, api ManyDeleter, name string, keys []string) error {
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		objs := make([]s3types.ObjectIdentifier, n)
		for i, k := range keys[:n] {
			objs[i] = s3types.ObjectIdentifier{Key: aws.String(k)}
		}
		out, err := api.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(name), Delete: &s3types.Delete{Objects: objs, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("delete %d objects of %s: %w", n, bucket.URI(name, ""), err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete %s: %s: %s (and %d more)", bucket.URI(name, aws.ToString(e.Key)), aws.ToString(e.Code), aws.ToString(e.Message), len(out.Errors)-1)
		}
		keys = keys[n:]
	}
	return nil
}

// List returns every key under prefix in bucket name, in key order, all pages.
func List(ctx context.Context, api Lister, name, prefix string) ([]string, error) {
	listed, err := ListModified(ctx, api, name, prefix)
	keys := make([]string, len(listed))
	for i, l := range listed {
		keys[i] = l.Key
	}
	return keys, err
}

// Listed is one object of a listing: its key and when it was last written.
type Listed struct {
	Key          string
	LastModified time.Time
}

// ListModified returns every object under prefix in bucket name, in key order, all
// pages, with the time each was last written.
func ListModified(ctx context.Context, api Lister, name, prefix string) ([]Listed, error) {
	return listModified(ctx, api, &s3.ListObjectsV2Input{Bucket: aws.String(name), Prefix: aws.String(prefix)})
}

// ListFolder is ListModified of the objects directly in the folder prefix (ending in
// "/"), none of its subfolders' (the delimiter "/").
func ListFolder(ctx context.Context, api Lister, name, prefix string) ([]Listed, error) {
	return listModified(ctx, api, &s3.ListObjectsV2Input{Bucket: aws.String(name), Prefix: aws.String(prefix), Delimiter: aws.String("/")})
}

func listModified(ctx context.Context, api Lister, in *s3.ListObjectsV2Input) ([]Listed, error) {
	name, prefix := aws.ToString(in.Bucket), aws.ToString(in.Prefix)
	var listed []Listed
	for {
		out, err := api.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", bucket.URI(name, prefix), err)
		}
		for _, o := range out.Contents {
			listed = append(listed, Listed{Key: aws.ToString(o.Key), LastModified: aws.ToTime(o.LastModified)})
		}
		if !aws.ToBool(out.IsTruncated) {
			return listed, nil
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}

// Deployments lists the names of the deployments with an upload in bucket name (a push's
// deployments/NAME.zip or a plan's plans/NAME.zip), sorted: what a name that matches none
// may have meant. The plans' own documents, one folder down, are not listed.
func Deployments(ctx context.Context, api Lister, name string) ([]string, error) {
	seen := map[string]bool{}
	for _, prefix := range []string{bucket.DeploymentsPrefix, bucket.PlansPrefix} {
		in := &s3.ListObjectsV2Input{Bucket: aws.String(name), Prefix: aws.String(prefix), Delimiter: aws.String("/")}
		for {
			out, err := api.ListObjectsV2(ctx, in)
			if err != nil {
				return nil, fmt.Errorf("list %s: %w", bucket.URI(name, prefix), err)
			}
			for _, o := range out.Contents {
				if d, ok := bucket.UploadName(aws.ToString(o.Key), prefix); ok {
					seen[d] = true
				}
			}
			if !aws.ToBool(out.IsTruncated) {
				break
			}
			in.ContinuationToken = out.NextContinuationToken
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}
