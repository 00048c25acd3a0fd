package deployer_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/benchbundle"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
)

// TestArtifactsGoToTheStacksRegion: Lambda reads a function's code from its own region
// only, so each stack's artifacts go to a bucket of its own place: cairn's bucket at home,
// the assets bucket of infra's target stack elsewhere — written with the deployer's own
// credentials in another region of its account, with the target's deploy role in another
// account — and the template sent there names that bucket. A place without a target stack
// has no assets bucket: its stack fails saying how to make one, the others deploy.
func TestArtifactsGoToTheStacksRegion(t *testing.T) {
	w := newWorld(t, worldOptions{FastRetries: true})
	remote, west := target.Target{Account: "111111111111", Region: "eu-west-1"}, target.Target{Account: "000000000000", Region: "us-west-2"}
	w.withTargets(remote, west)
	dir := t.TempDir()
	files := map[string]string{
		"cairn.yaml": `namespace: shop
stacks:
  - {name: home, template_path: fn.yaml}
  - {name: west, region: us-west-2, template_path: fn.yaml}
  - {name: remote, region: eu-west-1, role_arn: arn:aws:iam::111111111111:role/cairn-deploy-eu-west-1, template_path: fn.yaml}
  - {name: nowhere, region: ap-northeast-1, template_path: fn.yaml}
`,
		"fn.yaml": `Resources:
  Fn:
    Type: AWS::Lambda::Function
    Properties:
      Runtime: python3.12
      Handler: app.handler
      Role: arn:aws:iam::000000000000:role/fn
      Code: src
`,
		"src/app.py": "def handler(event, context):\n    return 1\n",
	}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Post(w.em.URL()+"/_local/calls/reset", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	doc := w.wait("shop", w.push("shop", dir))
	for name, ph := range map[string]run.Phase{"home": run.Done, "west": run.Done, "remote": run.Done, "nowhere": run.Failed} {
		if got := doc.Run.Stacks[name]; got.Phase != ph {
			t.Errorf("stack %s: %s (%s), want %s", name, got.Phase, got.Reason, ph)
		}
	}
	if r := doc.Run.Stacks["nowhere"].Reason; !strings.Contains(r, "the assets bucket cairn-assets-000000000000-ap-northeast-1 does not exist (account 000000000000, ap-northeast-1)") || !strings.Contains(r, "add ACCOUNT:REGION to the CDK context cairn:targets") {
		t.Errorf("nowhere: %s", r)
	}
	// the remote stack's code is written with the second account's deploy role, in its region
	if n := w.callsAt("111111111111", "eu-west-1")["s3.PutObject"]; n != 1 {
		t.Errorf("%d PutObject calls as account 111111111111 in eu-west-1, want the remote stack's code, once", n)
	}
	code := doc.Run.Stacks["home"].Code["src/"]
	if len(code) != 64 {
		t.Fatalf("the run records no code for home: %v", doc.Run.Stacks["home"].Code)
	}
	key := "assets/" + code + ".zip"
	for name, where := range map[string]struct {
		account, region, bucket string
	}{
		"home":   {"000000000000", "us-east-1", bucket},
		"west":   {"000000000000", "us-west-2", west.AssetsBucketName()},
		"remote": {"111111111111", "eu-west-1", remote.AssetsBucketName()},
	} {
		cfg := w.at(where.account, where.region)
		if _, err := awsclient.S3(cfg).HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(where.bucket), Key: aws.String(key)}); err != nil {
			t.Errorf("%s: the code is not in s3://%s/%s: %v", name, where.bucket, key, err)
		}
		tpl, err := cloudformation.NewFromConfig(cfg).GetTemplate(context.Background(), &cloudformation.GetTemplateInput{StackName: aws.String("shop-" + name)})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"S3Bucket": "` + where.bucket + `", "S3Key": "` + key + `"}`; !strings.Contains(aws.ToString(tpl.TemplateBody), want) {
			t.Errorf("%s's template does not name %s:\n%s", name, want, aws.ToString(tpl.TemplateBody))
		}
	}
}

// TestNestedFanOutUploadIsRefused: a bundle of twenty templates each nesting the next
// twice (2,097,150 nested stacks), uploaded to S3 directly as an attacker would (no CLI to
// validate it first), fails its run before any CloudFormation call, naming the count and
// CloudFormation's quota; no template is uploaded.
func TestNestedFanOutUploadIsRefused(t *testing.T) {
	w := newWorld(t, worldOptions{FastRetries: true})
	dir := t.TempDir()
	if err := benchbundle.WriteFiles(dir, benchbundle.DoublingNested("shop", 20)); err != nil {
		t.Fatal(err)
	}
	data, err := bundle.Zip(dir)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(w.em.URL()+"/_local/calls/reset", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	doc := w.wait("shop", w.pushBytes("shop", data))
	if doc.Run.Status != run.RunFailed || len(doc.Errors) != 1 || !strings.Contains(doc.Errors[0], "cairn.yaml:4:20: stacks[0].template_path: stack app: template templates/app.yaml makes 2,097,150 nested stacks holding 3,145,726 resources in all") {
		t.Fatalf("run %s (%s): %v", doc.Run.Status, doc.Run.Reason, doc.Errors)
	}
	for call, n := range w.em.Calls() {
		if strings.HasPrefix(call, "cloudformation.") && n > 0 && call != "cloudformation.DescribeStacks" {
			t.Errorf("%s called %d times for a refused bundle", call, n)
		}
	}
	out, err := w.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("templates/")})
	if err != nil || len(out.Contents) != 0 {
		t.Errorf("templates uploaded for a refused bundle: %v, %v", out, err)
	}
}
