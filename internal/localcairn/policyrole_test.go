package localcairn_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/localcairn"
)

// TestProvisionGuardsThePolicyPrefixes: cairn's stack in the emulator makes the policy role
// (its ARN is Cairn.PolicyRole) and puts on cairn's bucket the statement of
// bucket.WriteGuard, verbatim, naming that role: the same statement the CDK stack puts in
// AWS (infra's TestPolicyRole checks the synthesized one against the same function). The
// local user may assume the role; with the user's own credentials a write under policies/
// is refused, with the role's it is not.
func TestProvisionGuardsThePolicyPrefixes(t *testing.T) {
	v := start(t, "", localcairn.Options{})
	if !strings.HasPrefix(v.c.PolicyRole, "arn:aws:iam::000000000000:role/") {
		t.Fatalf("policy role %q", v.c.PolicyRole)
	}
	out, err := v.s3.GetBucketPolicy(v.ctx, &s3.GetBucketPolicyInput{Bucket: aws.String(v.c.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Statement []map[string]any }
	if err := json.Unmarshal([]byte(aws.ToString(out.Policy)), &doc); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(bucket.WriteGuard("arn:aws:s3:::"+v.c.Bucket, v.c.PolicyRole))
	var want map[string]any
	_ = json.Unmarshal(wantJSON, &want)
	found := 0
	for _, st := range doc.Statement {
		if st["Sid"] == bucket.GuardSid {
			found++
			if !reflect.DeepEqual(st, want) {
				got, _ := json.Marshal(st)
				t.Errorf("the bucket's guard:\n%s\nwant bucket.WriteGuard's:\n%s", got, wantJSON)
			}
		}
	}
	if found != 1 {
		t.Fatalf("%d statements %s in the bucket policy %s", found, bucket.GuardSid, aws.ToString(out.Policy))
	}

	put := func(c *s3.Client) error {
		_, err := c.PutObject(v.ctx, &s3.PutObjectInput{Bucket: aws.String(v.c.Bucket), Key: aws.String("policies/evil.rego"), Body: strings.NewReader("package evil")})
		return err
	}
	if err := put(v.s3); !awserr.AccessDenied(err) || awserr.HTTPStatus(err) != http.StatusForbidden {
		t.Errorf("the local user's put of policies/evil.rego: %v, want AccessDenied (403)", err)
	}
	cfg, err := v.e.AWSConfig(v.ctx)
	if err != nil {
		t.Fatal(err)
	}
	as, err := sts.NewFromConfig(cfg).AssumeRole(v.ctx, &sts.AssumeRoleInput{RoleArn: aws.String(v.c.PolicyRole), RoleSessionName: aws.String("platform")})
	if err != nil {
		t.Fatalf("the local user assumes the policy role: %v", err)
	}
	cr := as.Credentials
	cfg.Credentials = credentials.NewStaticCredentialsProvider(aws.ToString(cr.AccessKeyId), aws.ToString(cr.SecretAccessKey), aws.ToString(cr.SessionToken))
	if err := put(awsclient.S3(cfg)); err != nil {
		t.Errorf("the policy role's put of policies/evil.rego: %v", err)
	}
}
