// Package teampolicy writes the platform team's side of policy in cairn's bucket: the
// team's policies under policies/ (Publish, from a folder, after they compile and their
// tests pass) and the overrides of a plan's denials under policy-overrides/ (WriteOverride).
// Only the policy role may write either folder (the bucket policy's bucket.WriteGuard), so
// a refusal by S3 is told as such, with who the caller is and which role to assume.
package teampolicy

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/policy"
)

// Files reads the files of a policy folder that Publish uploads: the ones policy.Load
// reads (.rego modules and tests, .json data), by slash-separated path relative to fsys.
func Files(fsys fs.FS) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || (!strings.HasSuffix(p, ".rego") && !strings.HasSuffix(p, ".json")) {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		out[p] = b
		return nil
	})
	return out, err
}

// Check refuses a policy set that cannot judge a plan: one that does not compile, or whose
// own Rego tests fail. Nothing is published unless it passes.
func Check(ctx context.Context, set policy.Set, timeout time.Duration) error {
	if len(set.Modules) == 0 {
		return fmt.Errorf("%s holds no policy (.rego files other than _test.rego): nothing to publish", set.Dir)
	}
	if _, err := policy.Compile(ctx, set); err != nil {
		return fmt.Errorf("%s does not compile, nothing published: %w", set.Dir, err)
	}
	if len(set.Tests) == 0 {
		return nil
	}
	res, err := policy.Test(ctx, set, timeout)
	if err != nil {
		return fmt.Errorf("%s: its tests cannot run, nothing published: %w", set.Dir, err)
	}
	var failed []string
	for _, r := range res {
		if !r.Pass {
			failed = append(failed, fmt.Sprintf("%s (%s:%d)", r.Name, r.File, r.Line))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s: %d of its %d tests fail, nothing published: %s; run `cairn policy test %s`", set.Dir, len(failed), len(res), strings.Join(failed, ", "), set.Dir)
	}
	return nil
}

// Kinds of Change.
const (
	Added   = "added"
	Changed = "changed"
	Removed = "removed"
)

// Change is one object Publish writes or deletes.
type Change struct {
	Kind string
	Key  string
}

// Diff compares a folder's files (by relative path) with the objects under policies/ (key
// to ETag, as S3 lists them): what to add, replace and delete, sorted by key. An object
// whose ETag is its content's MD5 (a single PUT's) and equal to the file's is unchanged.
func Diff(local map[string][]byte, remote map[string]string) []Change {
	var out []Change
	for p, b := range local {
		key := bucket.PolicyKey(p)
		etag, ok := remote[key]
		switch {
		case !ok:
			out = append(out, Change{Added, key})
		case etag != md5Hex(b):
			out = append(out, Change{Changed, key})
		}
	}
	for key := range remote {
		if _, ok := local[strings.TrimPrefix(key, bucket.PoliciesPrefix)]; !ok {
			out = append(out, Change{Removed, key})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func md5Hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// S3API is the part of *s3.Client a Store uses.
type S3API interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

// Store writes the team's side of policy in cairn's bucket.
type Store struct {
	S3     S3API
	Bucket string
	// Caller is who writes (sts GetCallerIdentity's ARN), named when S3 refuses; Role the
	// policy role's ARN when known, named as what to assume.
	Caller, Role string
}

// Remote lists the objects under policies/: key to ETag (unquoted).
func (s *Store) Remote(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	p := s3.NewListObjectsV2Paginator(s.S3, &s3.ListObjectsV2Input{Bucket: aws.String(s.Bucket), Prefix: aws.String(bucket.PoliciesPrefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s.refused(bucket.PoliciesPrefix, "list", err)
		}
		for _, o := range page.Contents {
			out[aws.ToString(o.Key)] = strings.Trim(aws.ToString(o.ETag), `"`)
		}
	}
	return out, nil
}

// Publish applies changes (Diff's) with the folder's files: first it puts what is added
// or changed, then deletes what is removed, so a rule moved from one file to another is
// never missing while it publishes (a reader that meets it twice fails to compile the set,
// and fails closed). It stops at the first refusal, and the error says how many changes
// were made.
func (s *Store) Publish(ctx context.Context, local map[string][]byte, changes []Change) error {
	ordered := make([]Change, 0, len(changes))
	for _, removals := range []bool{false, true} {
		for _, c := range changes {
			if (c.Kind == Removed) == removals {
				ordered = append(ordered, c)
			}
		}
	}
	for i, c := range ordered {
		var err error
		if c.Kind == Removed {
			_, err = s.S3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(c.Key)})
		} else {
			b := local[strings.TrimPrefix(c.Key, bucket.PoliciesPrefix)]
			_, err = s.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(c.Key), Body: bytes.NewReader(b),
				ContentType: aws.String(contentType(c.Key))})
		}
		if err != nil {
			err = s.refused(bucket.PoliciesPrefix, c.Kind, err)
			if i > 0 {
				return fmt.Errorf("%w (after %d of %d changes were made: publish again once it is fixed)", err, i, len(changes))
			}
			return err
		}
	}
	return nil
}

func contentType(key string) string {
	if strings.HasSuffix(key, ".json") {
		return "application/json"
	}
	return "text/plain; charset=utf-8"
}

// Override is an override of one rule's denials for one plan, as the bucket keeps it.
type Override struct {
	Reason string    `json:"reason"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// MaxReason bounds an override's reason: a sentence or a ticket, shown in the comment.
const MaxReason = 1000

// WriteOverride writes the override of rule for plan planID of deployment name.
func (s *Store) WriteOverride(ctx context.Context, name, planID, rule string, o Override) (string, error) {
	if err := bucket.ValidRule(rule); err != nil {
		return "", err
	}
	if strings.TrimSpace(o.Reason) == "" || len(o.Reason) > MaxReason {
		return "", fmt.Errorf("an override needs a reason of 1 to %d characters (--reason): say why the rule may be broken here, e.g. a ticket", MaxReason)
	}
	key := bucket.PolicyOverrideKey(name, planID, rule)
	body, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return "", err
	}
	_, err = s.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key), Body: bytes.NewReader(body), ContentType: aws.String("application/json")})
	if err != nil {
		return "", s.refused(bucket.PolicyOverridesPrefix, "write", err)
	}
	return key, nil
}

// sessionNameRE matches what STS does not accept in a role session name.
var sessionNameRE = regexp.MustCompile(`[^\w+=,.@-]`)

// SessionName names a session of the policy role after the caller who assumes it: the last
// part of its ARN (a user's name, an assumed role's session name, root), as STS allows it
// (2 to 64 of [\w+=,.@-]). So what the session writes names the person, not only the role.
func SessionName(callerARN string) string {
	name := sessionNameRE.ReplaceAllString(callerARN[strings.LastIndexAny(callerARN, "/:")+1:], "-")
	if len(name) < 2 {
		name = "cairn-" + name
	}
	return name[:min(len(name), 64)]
}

// DeniedError is S3's refusal of a write under a folder only the policy role may write.
type DeniedError struct {
	Prefix, Caller, Role string
	Err                  error
}

func (e *DeniedError) Error() string {
	what := "team policies"
	if e.Prefix == bucket.PolicyOverridesPrefix {
		what = "policy overrides"
	}
	caller := e.Caller
	if caller == "" {
		caller = "unknown to sts GetCallerIdentity"
	}
	role := e.Role
	if role == "" {
		role = "the policy role (output PolicyRoleArn of cairn's stack)"
	}
	return fmt.Sprintf("%s: only the policy role may write %s (you are %s): assume %s or ask the platform team", e.Prefix, what, caller, role)
}

func (e *DeniedError) Unwrap() error { return e.Err }

// refused names S3's AccessDenied as a DeniedError; other errors say what failed.
func (s *Store) refused(prefix, what string, err error) error {
	if awserr.AccessDenied(err) {
		return &DeniedError{Prefix: prefix, Caller: s.Caller, Role: s.Role, Err: err}
	}
	var de *DeniedError
	if errors.As(err, &de) {
		return err
	}
	return fmt.Errorf("%s of s3://%s/%s: %s", what, s.Bucket, prefix, awserr.Reason(err))
}
