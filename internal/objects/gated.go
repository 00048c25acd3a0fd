package objects

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/bucket"
)

// GatedAPI is every S3 call the deployer makes to a bucket of cairn's.
type GatedAPI interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	ListObjectVersions(ctx context.Context, in *s3.ListObjectVersionsInput, optFns ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error)
	CopyObject(ctx context.Context, in *s3.CopyObjectInput, optFns ...func(*s3.Options)) (*s3.CopyObjectOutput, error)
	GetBucketVersioning(ctx context.Context, in *s3.GetBucketVersioningInput, optFns ...func(*s3.Options)) (*s3.GetBucketVersioningOutput, error)
}

// Gated is the one gate every request of a run to a bucket of cairn's passes: cairn's
// bucket, or the assets bucket of a target. Each request is judged by the Scope its
// context carries (WithScope) against Rules before it is sent; a request to any other
// bucket, or under no scope, is refused. A write to a content-addressed key (templates/,
// assets/) must carry exactly the content its key names.
type Gated struct {
	api  GatedAPI
	name string
}

// Gate returns api gated for bucket name.
func Gate(api GatedAPI, name string) *Gated { return &Gated{api: api, name: name} }

func (g *Gated) check(ctx context.Context, name *string, op bucket.Op, key string) error {
	if b := aws.ToString(name); b != g.name {
		return &bucket.RefusedError{Op: op, Key: bucket.URI(b, key), Scope: "a client of bucket " + g.name}
	}
	return bucket.ScopeOf(ctx).Allows(op, key)
}

func (g *Gated) GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if err := g.check(ctx, in.Bucket, bucket.OpRead, aws.ToString(in.Key)); err != nil {
		return nil, err
	}
	return g.api.GetObject(ctx, in, optFns...)
}

func (g *Gated) HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if err := g.check(ctx, in.Bucket, bucket.OpRead, aws.ToString(in.Key)); err != nil {
		return nil, err
	}
	return g.api.HeadObject(ctx, in, optFns...)
}

func (g *Gated) PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	key := aws.ToString(in.Key)
	if err := g.check(ctx, in.Bucket, bucket.OpWrite, key); err != nil {
		return nil, err
	}
	if sha, ok := bucket.ContentAddressed(key); ok {
		if err := holds(in.Body, sha); err != nil {
			return nil, fmt.Errorf("%s: %w: refused before any request", bucket.URI(g.name, key), err)
		}
	}
	return g.api.PutObject(ctx, in, optFns...)
}

// holds checks that body's content has the sha256 sha, and rewinds it.
func holds(body io.Reader, sha string) error {
	rs, ok := body.(io.ReadSeeker)
	if !ok {
		return fmt.Errorf("a content-addressed object is written from a body that can be read twice")
	}
	got, err := SHA256(rs)
	if err != nil {
		return err
	}
	if _, err := rs.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if got != sha {
		return fmt.Errorf("the content's sha256 is %s, not the %s its key names", got, sha)
	}
	return nil
}

// SHA256 is the sha256 (hex) of what r holds: the name a content-addressed key gives it.
func SHA256(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (g *Gated) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	if err := g.check(ctx, in.Bucket, bucket.OpDelete, aws.ToString(in.Key)); err != nil {
		return nil, err
	}
	return g.api.DeleteObject(ctx, in, optFns...)
}

func (g *Gated) DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	if in.Delete == nil {
		return g.api.DeleteObjects(ctx, in, optFns...)
	}
	for _, o := range in.Delete.Objects {
		if err := g.check(ctx, in.Bucket, bucket.OpDelete, aws.ToString(o.Key)); err != nil {
			return nil, err
		}
	}
	return g.api.DeleteObjects(ctx, in, optFns...)
}

func (g *Gated) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	if err := g.check(ctx, in.Bucket, bucket.OpList, aws.ToString(in.Prefix)); err != nil {
		return nil, err
	}
	return g.api.ListObjectsV2(ctx, in, optFns...)
}

func (g *Gated) ListObjectVersions(ctx context.Context, in *s3.ListObjectVersionsInput, optFns ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error) {
	if err := g.check(ctx, in.Bucket, bucket.OpList, aws.ToString(in.Prefix)); err != nil {
		return nil, err
	}
	return g.api.ListObjectVersions(ctx, in, optFns...)
}

// CopyObject allows only a copy of a content-addressed object onto itself: how an
// artifact the lifecycle would expire is written again.
func (g *Gated) CopyObject(ctx context.Context, in *s3.CopyObjectInput, optFns ...func(*s3.Options)) (*s3.CopyObjectOutput, error) {
	key := aws.ToString(in.Key)
	if err := g.check(ctx, in.Bucket, bucket.OpWrite, key); err != nil {
		return nil, err
	}
	src := strings.TrimPrefix(aws.ToString(in.CopySource), "/")
	if _, ok := bucket.ContentAddressed(key); !ok || src != g.name+"/"+key {
		return nil, &bucket.RefusedError{Op: bucket.OpWrite, Key: key + " (a copy of " + src + ")", Scope: bucket.ScopeOf(ctx).String()}
	}
	return g.api.CopyObject(ctx, in, optFns...)
}

func (g *Gated) GetBucketVersioning(ctx context.Context, in *s3.GetBucketVersioningInput, optFns ...func(*s3.Options)) (*s3.GetBucketVersioningOutput, error) {
	if b := aws.ToString(in.Bucket); b != g.name {
		return nil, &bucket.RefusedError{Op: bucket.OpRead, Key: bucket.URI(b, ""), Scope: "a client of bucket " + g.name}
	}
	return g.api.GetBucketVersioning(ctx, in, optFns...)
}
