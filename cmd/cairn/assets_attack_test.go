package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/localcairn"
	"github.com/cairn-dev/cairn/internal/target"
)

// TestAssemblyAssetsCannotWriteWhereTheyLike: a plan upload (what any pull request's CI
// may make) carrying a hand-made cloud assembly whose asset destination is cairn's own
// bucket, or names no role, another account's role or a role of cairn's, is refused
// before anything is published: nothing lands at the key it names (before: the deployer
// published it there with its own credentials, so another deployment's approval, a push
// nobody made, a lock expiring in 2099 or a victim's next code was written).
func TestAssemblyAssetsCannotWriteWhereTheyLike(t *testing.T) {
	em, s3c := deployEmulator(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	ctx := context.Background()
	if err := localcairn.BootstrapCDK(ctx, em, []target.Target{cdkHome, cdkOther}, "", cdkHome.Account, time.Minute); err != nil {
		t.Fatal(err)
	}
	const (
		staging = "cdk-hnb659fds-assets-000000000000-us-east-1"
		role    = "arn:${AWS::Partition}:iam::000000000000:role/cdk-hnb659fds-file-publishing-role-000000000000-us-east-1"
	)
	sha := strings.Repeat("0f", 32)
	for _, tc := range []struct {
		name, bucket, key, role, want string
	}{
		{"another deployment's approval", localBucket, "approvals/web/20261207-000000000-00000000", role, "is a bucket of cairn's own"},
		{"a push nobody made", localBucket, "deployments/web.zip", role, "is a bucket of cairn's own"},
		{"a lock that never expires", localBucket, "locks/web/web.lock", role, "is a bucket of cairn's own"},
		{"a victim's next code", localBucket, "assets/" + sha + ".zip", role, "is a bucket of cairn's own"},
		{"a target's assets bucket", target.Target{Account: "000000000000", Region: "us-east-1"}.AssetsBucketName(), "assets/" + sha + ".zip", role, "is a bucket of cairn's own"},
		{"the deployer's own credentials", staging, "code.zip", "", "names no role to publish it with"},
		{"another account's role", staging, "code.zip", "arn:aws:iam::111111111111:role/cdk-hnb659fds-file-publishing-role-111111111111-eu-west-1", "but the stack deploys to account 000000000000"},
		{"a role of cairn's", staging, "code.zip", "arn:aws:iam::000000000000:role/cairn-deploy-us-east-1", "a role of cairn's own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cdk.out")
			if err := os.CopyFS(dir, os.DirFS(cdkApp("base"))); err != nil {
				t.Fatal(err)
			}
			manifest := filepath.Join(dir, "assembly-Dev", "DevServiceED593074.assets.json")
			b, err := os.ReadFile(manifest)
			if err != nil {
				t.Fatal(err)
			}
			edited := strings.Replace(string(b), `"bucketName": "`+staging+`",
          "objectKey": "af3ac05db6d5b436c268ebbad969a0eb36221b66e86d13e163cfb4140d8dbba3.zip",
          "region": "us-east-1",
          "assumeRoleArn": "`+role+`"`, `"bucketName": "`+tc.bucket+`",
          "objectKey": "`+tc.key+`",
          "region": "us-east-1",
          "assumeRoleArn": "`+tc.role+`"`, 1)
			if edited == string(b) {
				t.Fatal("the asset manifest was not edited")
			}
			if err := os.WriteFile(manifest, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			out, code := cairnRun(t, append([]string{"plan", dir, "--deployment", "orders"}, followFlags...)...)
			if code == 0 || !strings.Contains(out, tc.want) {
				t.Fatalf("plan exited %d; want a refusal saying %q:\n%s", code, tc.want, out)
			}
			var head *s3.HeadObjectOutput
			if tc.bucket == localBucket {
				head, err = s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String(tc.key)})
			} else {
				cfg, cerr := em.AWSConfig(ctx)
				if cerr != nil {
					t.Fatal(cerr)
				}
				head, err = awsclient.S3(cfg).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String(tc.key)})
			}
			if err == nil || !awserr.NotFound(err) && awserr.ErrorCode(err) != "NoSuchBucket" {
				t.Fatalf("s3://%s/%s after the refused plan: %+v, %v; want nothing there", tc.bucket, tc.key, head, err)
			}
		})
	}
}
