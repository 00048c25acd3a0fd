package awslocal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/clock"
)

// guardPolicy is cairn's bucket policy as the CDK stack writes it for bucket b: the
// statement only the policy role passes (bucket.WriteGuard), and the TLS-only statement the
// emulator cannot evaluate (it serves plain HTTP), which must not refuse anything.
func guardPolicy(b, policyRole string) string {
	doc := map[string]any{"Version": "2012-10-17", "Statement": []any{
		map[string]any{"Effect": "Deny", "Principal": map[string]any{"AWS": "*"}, "Action": "s3:*",
			"Resource":  []any{"arn:aws:s3:::" + b, "arn:aws:s3:::" + b + "/*"},
			"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}}},
		bucket.WriteGuard("arn:aws:s3:::"+b, policyRole),
	}}
	out, _ := json.Marshal(doc)
	return string(out)
}

// guardOnly is a bucket policy of the one statement only the policy role passes.
func guardOnly(b, policyRole string) string {
	out, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": []any{bucket.WriteGuard("arn:aws:s3:::"+b, policyRole)}})
	return string(out)
}

// TestBucketPolicyGuardsThePolicyPrefixes: with cairn's bucket policy in place, the
// emulator's S3 refuses every write under policies/ and policy-overrides/ — a put, a copy,
// a multipart upload, a delete, a delete of a version, tags, and the keys of a
// DeleteObjects — to the account's plain credentials (its root), a deploy role's session
// and a GitHub plan role's session, with 403 AccessDenied in S3's words; the policy role's
// session may do all of it; everyone may still write elsewhere and read everything.
func TestBucketPolicyGuardsThePolicyPrefixes(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
	v := start(t, awslocal.Options{Logger: quiet(), Clock: clk, CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: time.Nanosecond, ChangeSetDelay: time.Nanosecond}})
	ctx := context.Background()
	home := as(t, v.e, "test", "x", "", "us-east-1")
	trust := `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:root"},"Action":"sts:AssumeRole"}]}`
	roles := []string{"cairn-policy", "cairn-deployer", "cairn-github-plan"}
	for _, r := range roles {
		waitStackDone(t, clk, home, "role-"+r, roleStack(r, trust))
	}
	session := func(role string) aws.Config {
		out, err := sts.NewFromConfig(home).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::000000000000:role/" + role), RoleSessionName: aws.String("t-" + role)})
		if err != nil {
			t.Fatalf("assume %s: %v", role, err)
		}
		c := out.Credentials
		return as(t, v.e, aws.ToString(c.AccessKeyId), aws.ToString(c.SecretAccessKey), aws.ToString(c.SessionToken), "us-east-1")
	}
	const b = "cairn-000000000000-us-east-1"
	admin := awsclient.S3(home)
	if _, err := admin.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(b), VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	// What is there before the policy: a team policy and an object elsewhere to copy.
	for _, k := range []string{"policies/team.rego", "plans/shop.zip"} {
		if _, err := admin.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k), Body: strings.NewReader("package team")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(b), Policy: aws.String(guardPolicy(b, "arn:aws:iam::000000000000:role/cairn-policy"))}); err != nil {
		t.Fatal(err)
	}
	teamVersion := func() string {
		out, err := admin.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("policies/team.rego")})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.VersionId)
	}

	writes := []struct {
		name, key string
		do        func(c *s3.Client, key string) error
	}{
		{"put", "policies/evil.rego", func(c *s3.Client, k string) error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k), Body: strings.NewReader("package evil")})
			return err
		}},
		{"put an override", "policy-overrides/shop/20261207-090000-00000001/cairn.s3_public.json", func(c *s3.Client, k string) error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k), Body: strings.NewReader(`{"reason":"x"}`)})
			return err
		}},
		{"copy", "policies/copied.rego", func(c *s3.Client, k string) error {
			_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String(k), CopySource: aws.String(b + "/plans/shop.zip")})
			return err
		}},
		{"multipart", "policies/parts.rego", func(c *s3.Client, k string) error {
			_, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(b), Key: aws.String(k)})
			return err
		}},
		{"tags", "policies/team.rego", func(c *s3.Client, k string) error {
			_, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String(b), Key: aws.String(k), Tagging: &s3types.Tagging{TagSet: []s3types.Tag{{Key: aws.String("a"), Value: aws.String("b")}}}})
			return err
		}},
		{"delete a version", "policies/team.rego", func(c *s3.Client, k string) error {
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(k), VersionId: aws.String(teamVersion())})
			return err
		}},
		{"delete", "policies/team.rego", func(c *s3.Client, k string) error {
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(k)})
			return err
		}},
	}
	callers := []struct {
		name, arn, role string
		client          *s3.Client
	}{
		{"the account's root", "arn:aws:iam::000000000000:root", "", admin},
		{"the deploy role", "arn:aws:sts::000000000000:assumed-role/cairn-deployer/t-cairn-deployer", "cairn-deployer", nil},
		{"the GitHub plan role", "arn:aws:sts::000000000000:assumed-role/cairn-github-plan/t-cairn-github-plan", "cairn-github-plan", nil},
	}
	for _, c := range callers {
		if c.client == nil {
			c.client = awsclient.S3(session(c.role))
		}
		t.Run(c.name, func(t *testing.T) {
			for _, w := range writes {
				err := w.do(c.client, w.key)
				action := map[string]string{"tags": "s3:PutObjectTagging", "delete": "s3:DeleteObject", "delete a version": "s3:DeleteObjectVersion"}[w.name]
				if action == "" {
					action = "s3:PutObject"
				}
				want := "User: " + c.arn + " is not authorized to perform: " + action + ` on resource: "arn:aws:s3:::` + b + "/" + w.key + `" with an explicit deny in a resource-based policy`
				if awserr.ErrorCode(err) != "AccessDenied" || awserr.HTTPStatus(err) != http.StatusForbidden || awserr.Message(err) != "AccessDenied: "+want {
					t.Errorf("%s %s: %v; want AccessDenied (403): %s", w.name, w.key, err, want)
				}
			}
			out, err := c.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b), Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{
				{Key: aws.String("policies/team.rego")}, {Key: aws.String("plans/" + c.name + ".zip")}}}})
			if err != nil || len(out.Errors) != 1 || aws.ToString(out.Errors[0].Key) != "policies/team.rego" || aws.ToString(out.Errors[0].Code) != "AccessDenied" ||
				len(out.Deleted) != 1 || aws.ToString(out.Deleted[0].Key) != "plans/"+c.name+".zip" {
				t.Errorf("DeleteObjects of policies/team.rego and a plan: %+v %v; want the policy refused, the plan deleted", out, err)
			}
			// Elsewhere, and reading, the policy changes nothing.
			if _, err := c.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("plans/shop.zip"), Body: strings.NewReader("zip")}); err != nil {
				t.Errorf("put plans/shop.zip: %v", err)
			}
			if _, err := c.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("policies/team.rego")}); err != nil {
				t.Errorf("read policies/team.rego: %v", err)
			}
		})
	}
	if _, err := admin.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("policies/evil.rego")}); awserr.HTTPStatus(err) != http.StatusNotFound {
		t.Errorf("policies/evil.rego after the refusals: %v, want 404", err)
	}

	t.Run("the policy role", func(t *testing.T) {
		c := awsclient.S3(session("cairn-policy"))
		for _, w := range writes {
			if err := w.do(c, w.key); err != nil {
				t.Errorf("%s %s: %v", w.name, w.key, err)
			}
		}
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b), Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{{Key: aws.String("policies/evil.rego")}}}})
		if err != nil || len(out.Errors) != 0 || len(out.Deleted) != 1 {
			t.Errorf("DeleteObjects: %+v %v", out, err)
		}
	})

	// The bucket owner's root cannot lock itself out of the bucket policy, as in S3: it
	// may remove the guard, and then write. (So the guard stops mistakes and every role,
	// not an administrator who first changes the policy; CloudTrail records that.)
	if _, err := admin.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(b)}); err != nil {
		t.Fatalf("the root deletes the bucket policy: %v", err)
	}
	if _, err := admin.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("policies/after.rego"), Body: strings.NewReader("x")}); err != nil {
		t.Errorf("put without the policy: %v", err)
	}
}

// bucketPolicyScenarios are the bucket policy's scenarios, run against the emulator alone
// (TestBucketPolicyAsAWSDocuments) and against moto (TestDifferentialAgainstMoto).
func bucketPolicyScenarios() []documented {
	return []documented{
		{scenario{"s3", "a bucket policy's explicit Deny refuses a write", func(ctx context.Context, t target) (string, error) {
			const b = "d45-guard"
			if _, err := t.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
				return "", err
			}
			if _, err := t.s3.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(b),
				Policy: aws.String(guardOnly(b, "arn:aws:iam::123456789012:role/cairn-policy"))}); err != nil {
				return "", err
			}
			_, put := t.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("policies/evil.rego"), Body: strings.NewReader("x")})
			_, other := t.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("plans/shop.zip"), Body: strings.NewReader("x")})
			_, read := t.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("plans/shop.zip")})
			return fmt.Sprintf("guarded=%s %s elsewhere=%s read=%s", code(put), status(put), code(other), code(read)), nil
		}}, "guarded=AccessDenied 403 elsewhere=ok read=ok",
			"https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html (an explicit deny in any policy overrides any allow; the account's root is not exempt from a bucket policy's Deny)"},
	}
}

// bucketPolicyMotoDeviations says why moto differs from AWS on the bucket policy's scenarios.
var bucketPolicyMotoDeviations = map[string]string{
	"s3/a bucket policy's explicit Deny refuses a write": "moto 5.2 evaluates the Deny and refuses the write, but answers the code Forbidden where S3 answers AccessDenied. " +
		"(With the CDK's TLS-only statement beside it, moto also evaluates aws:SecureTransport and refuses every request over its plain HTTP, reads too; the emulator does not evaluate that key.)",
}

func init() {
	for _, d := range bucketPolicyScenarios() {
		key := d.service + "/" + d.name
		if why, ok := bucketPolicyMotoDeviations[key]; ok {
			knownMotoDeviations[key] = deviation{aws: d.want, why: why, source: d.source}
		}
	}
}

// bucketPolicyList is bucketPolicyScenarios as plain scenarios, for the differential suite.
func bucketPolicyList() []scenario {
	var out []scenario
	for _, d := range bucketPolicyScenarios() {
		out = append(out, d.scenario)
	}
	return out
}

// TestBucketPolicyAsAWSDocuments runs the bucket policy's scenarios against the emulator
// alone and requires what AWS documents.
func TestBucketPolicyAsAWSDocuments(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet(), AccountID: "123456789012"})
	cairn := newTarget(t, "cairn", v.e.URL())
	for _, d := range bucketPolicyScenarios() {
		t.Run(d.service+"/"+d.name, func(t *testing.T) {
			got, err := d.run(context.Background(), cairn)
			if err != nil {
				t.Fatalf("cairn: %v", err)
			}
			if got != d.want {
				t.Fatalf("cairn: %q\nwant:  %q (%s)", got, d.want, d.source)
			}
		})
	}
}
