package teampolicy

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func etag(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestDiff: what publishing a folder changes, by key: files the bucket lacks are added,
// files whose content differs from the object's (its ETag, a single PUT's MD5) changed,
// objects the folder no longer holds removed; the rest is left alone.
func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name   string
		local  map[string][]byte
		remote map[string]string
		want   []Change
	}{
		{"nothing published yet", map[string][]byte{"a.rego": []byte("a"), "x/b.json": []byte("{}")}, nil,
			[]Change{{Added, "policies/a.rego"}, {Added, "policies/x/b.json"}}},
		{"up to date", map[string][]byte{"a.rego": []byte("a")}, map[string]string{"policies/a.rego": etag("a")}, nil},
		{"changed, removed and added", map[string][]byte{"a.rego": []byte("a2"), "c.rego": []byte("c")},
			map[string]string{"policies/a.rego": etag("a"), "policies/b.rego": etag("b"), "policies/README.md": etag("r")},
			[]Change{{Removed, "policies/README.md"}, {Changed, "policies/a.rego"}, {Removed, "policies/b.rego"}, {Added, "policies/c.rego"}}},
		{"an empty folder removes everything", map[string][]byte{}, map[string]string{"policies/a.rego": etag("a")}, []Change{{Removed, "policies/a.rego"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Diff(tc.local, tc.remote); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Diff = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSessionName(t *testing.T) {
	for arn, want := range map[string]string{
		"arn:aws:iam::123456789012:user/alice":                              "alice",
		"arn:aws:iam::123456789012:user/team/alice@example.com":             "alice@example.com",
		"arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin/alice": "alice",
		"arn:aws:iam::123456789012:root":                                    "root",
		"arn:aws:sts::123456789012:assumed-role/r/a":                        "cairn-a",
		"arn:aws:sts::123456789012:federated-user/bob smith":                "bob-smith",
		"arn:aws:iam::123456789012:user/" + strings.Repeat("x", 70):         strings.Repeat("x", 64),
	} {
		if got := SessionName(arn); got != want {
			t.Errorf("SessionName(%q) = %q, want %q", arn, got, want)
		}
	}
}

// recorder is an S3 that records the writes it is asked for.
type recorder struct{ calls []string }

func (r *recorder) ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	return &s3.ListObjectsV2Output{}, nil
}

func (r *recorder) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	r.calls = append(r.calls, "put "+aws.ToString(in.Key))
	return &s3.PutObjectOutput{}, nil
}

func (r *recorder) DeleteObject(_ context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	r.calls = append(r.calls, "delete "+aws.ToString(in.Key))
	return &s3.DeleteObjectOutput{}, nil
}

// TestPublishPutsBeforeItDeletes: a rule moved from a.rego to z.rego is put before a.rego
// is deleted, so no reader meets the set without it.
func TestPublishPutsBeforeItDeletes(t *testing.T) {
	local := map[string][]byte{"z.rego": []byte("z"), "b.rego": []byte("b2")}
	changes := Diff(local, map[string]string{"policies/a.rego": etag("a"), "policies/b.rego": etag("b")})
	r := &recorder{}
	if err := (&Store{S3: r, Bucket: "b"}).Publish(context.Background(), local, changes); err != nil {
		t.Fatal(err)
	}
	if want := []string{"put policies/b.rego", "put policies/z.rego", "delete policies/a.rego"}; !reflect.DeepEqual(r.calls, want) {
		t.Errorf("calls %v, want %v", r.calls, want)
	}
}
