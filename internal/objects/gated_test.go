package objects

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-dev/cairn/internal/bucket"
)

// recorder is an S3 API that records what reaches it.
type recorder struct {
	GatedAPI
	calls []string
}

func (r *recorder) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	r.calls = append(r.calls, "put "+aws.ToString(in.Bucket)+"/"+aws.ToString(in.Key))
	return &s3.PutObjectOutput{}, nil
}

func (r *recorder) CopyObject(_ context.Context, in *s3.CopyObjectInput, _ ...func(*s3.Options)) (*s3.CopyObjectOutput, error) {
	r.calls = append(r.calls, "copy "+aws.ToString(in.CopySource)+" "+aws.ToString(in.Key))
	return &s3.CopyObjectOutput{}, nil
}

func (r *recorder) DeleteObjects(_ context.Context, in *s3.DeleteObjectsInput, _ ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	r.calls = append(r.calls, "delete many")
	return &s3.DeleteObjectsOutput{}, nil
}

func TestGated(t *testing.T) {
	body := []byte(`{"Resources":{}}`)
	sum := sha256.Sum256(body)
	sha := hex.EncodeToString(sum[:])
	scope := bucket.ForDeployment("shop")
	scope.SetRun("R1")
	ctx := bucket.WithScope(context.Background(), scope)
	for _, tc := range []struct {
		name string
		call func(g *Gated) error
		sent string // "" when nothing may reach S3
	}{
		{"a template with the content its key names", func(g *Gated) error {
			_, err := g.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cairn"), Key: aws.String(bucket.TemplateKey(sha)), Body: bytes.NewReader(body)})
			return err
		}, "put cairn/" + bucket.TemplateKey(sha)},
		{"an asset whose content is not its key's", func(g *Gated) error {
			_, err := g.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cairn"), Key: aws.String(bucket.AssetKey(sha, "zip")), Body: bytes.NewReader([]byte("attacker's code"))})
			return err
		}, ""},
		{"an asset from a body that cannot be read twice", func(g *Gated) error {
			_, err := g.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cairn"), Key: aws.String(bucket.AssetKey(sha, "zip")), Body: strings.NewReader(string(body))})
			return err
		}, "put cairn/" + bucket.AssetKey(sha, "zip")}, // strings.Reader seeks
		{"another deployment's approval", func(g *Gated) error {
			_, err := g.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cairn"), Key: aws.String(bucket.ApprovalKey("web", "P1")), Body: bytes.NewReader(nil)})
			return err
		}, ""},
		{"another bucket", func(g *Gated) error {
			_, err := g.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("elsewhere"), Key: aws.String(bucket.RunKey("shop", "R1")), Body: bytes.NewReader(nil)})
			return err
		}, ""},
		{"no scope", func(g *Gated) error {
			_, err := g.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("cairn"), Key: aws.String(bucket.RunKey("shop", "R1")), Body: bytes.NewReader(nil)})
			return err
		}, ""},
		{"an asset refreshed onto itself", func(g *Gated) error {
			_, err := g.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("cairn"), Key: aws.String(bucket.AssetKey(sha, "zip")), CopySource: aws.String("cairn/" + bucket.AssetKey(sha, "zip"))})
			return err
		}, "copy cairn/" + bucket.AssetKey(sha, "zip") + " " + bucket.AssetKey(sha, "zip")},
		{"a bundle copied into assets", func(g *Gated) error {
			_, err := g.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("cairn"), Key: aws.String(bucket.AssetKey(sha, "zip")), CopySource: aws.String("cairn/" + bucket.DeploymentKey("web"))})
			return err
		}, ""},
		{"the index entries of another run among its own", func(g *Gated) error {
			_, err := g.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("cairn"), Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{
				{Key: aws.String(bucket.OpenRunKey("R1"))}, {Key: aws.String(bucket.OpenRunKey("R2"))}}}})
			return err
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			err := tc.call(Gate(r, "cairn"))
			if tc.sent == "" {
				if err == nil || len(r.calls) > 0 {
					t.Fatalf("err %v, sent %v: want a refusal and nothing sent", err, r.calls)
				}
				return
			}
			if err != nil || len(r.calls) != 1 || r.calls[0] != tc.sent {
				t.Fatalf("err %v, sent %v: want %q", err, r.calls, tc.sent)
			}
		})
	}
}
