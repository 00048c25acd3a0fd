package cdkassets_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/cairn-dev/cairn/internal/access"
	"github.com/cairn-dev/cairn/internal/assembly"
	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/cdkassets"
	"github.com/cairn-dev/cairn/internal/localcairn"
	"github.com/cairn-dev/cairn/internal/target"
)

// The example app's synthesized variants (infra's TestCDKAppAssemblies keeps them).
const assemblies = "../../testdata/cdkapp/assemblies/"

var (
	home  = target.Target{Account: "000000000000", Region: "us-east-1"}
	other = target.Target{Account: "111111111111", Region: "eu-west-1"}
)

// world is an emulator, bootstrapped as cdk bootstrap does unless bare, and the publisher
// reaching it as cairn's deployer does (the roles the assembly names, assumed from cairn's
// account).
type world struct {
	e   *awslocal.Emulator
	p   *cdkassets.Publisher
	ctx context.Context
}

func newWorld(t *testing.T, bare bool) *world {
	t.Helper()
	e, err := awslocal.New(awslocal.Options{Logger: slog.New(slog.DiscardHandler), CloudFormation: awslocal.CloudFormationTimings{
		ResourceDelay: time.Millisecond, ChangeSetDelay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx := context.Background()
	if !bare {
		if err := localcairn.BootstrapCDK(ctx, e, []target.Target{home, other}, "", home.Account, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := access.New(cfg, nil)
	return &world{e: e, ctx: ctx, p: &cdkassets.Publisher{Logger: slog.New(slog.DiscardHandler),
		Clients: cdkassets.FromConfig(func(spec target.Spec) aws.Config { return r.Config("test-run", spec) })}}
}

// stacks reads a variant of the example app and deploys each stack where the app says,
// through the bootstrap deploy role it names, as config does.
func stacks(t *testing.T, variant string) []cdkassets.Stack {
	t.Helper()
	a, err := assembly.Read(os.DirFS(assemblies+variant), ".")
	if err != nil {
		t.Fatal(err)
	}
	var out []cdkassets.Stack
	for _, s := range a.Stacks {
		out = append(out, cdkassets.Stack{Name: s.Path, Assembly: s, Account: s.Account, Region: s.Region, Where: s.Account + ", " + s.Region,
			Target: target.Spec{Region: s.Region, RoleARN: assembly.Resolve(s.DeployRole, s.Account, s.Region)}})
	}
	return out
}

func problems(t *testing.T, err error) cdkassets.Problems {
	t.Helper()
	var ps cdkassets.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Prepare = %v, want Problems", err)
	}
	return ps
}

func (w *world) object(t *testing.T, at target.Target, bucket, key string) []byte {
	t.Helper()
	cfg, err := w.e.AWSConfigAt(w.ctx, at.Account, at.Region)
	if err != nil {
		t.Fatal(err)
	}
	out, err := awsclient.S3(cfg).GetObject(w.ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("s3://%s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPreparePublishesFileAssets publishes the example app's file assets as cdk-assets
// does: the function's folder zipped and the templates, each to the bucket and key its
// manifest names, in its environment; published again, nothing is uploaded; a code change
// uploads the new code and template only.
func TestPreparePublishesFileAssets(t *testing.T) {
	w := newWorld(t, false)
	base := stacks(t, "base")
	if err := w.p.Prepare(w.ctx, base); err != nil {
		t.Fatal(err)
	}
	var code assembly.FileAsset
	for _, s := range base {
		for _, f := range s.Assembly.Files {
			if f.Name == "Handler/Code" {
				code = f
			}
			d := f.Destinations[0].Resolve(s.Account, s.Region)
			w.object(t, target.Target{Account: s.Account, Region: s.Region}, d.Bucket, d.Key)
		}
	}
	zipped := w.object(t, home, localcairn.CDKAssetsBucket("hnb659fds", home), code.ID+".zip")
	zr, err := zip.NewReader(bytes.NewReader(zipped), int64(len(zipped)))
	if err != nil || len(zr.File) != 1 || zr.File[0].Name != "index.py" {
		t.Fatalf("the function's code: %v, %v; want a zip of index.py", zr, err)
	}
	puts := func() int { return w.e.Calls()["s3.PutObject"] }
	before := puts()
	if err := w.p.Prepare(w.ctx, base); err != nil {
		t.Fatal(err)
	}
	if n := puts() - before; n != 0 {
		t.Errorf("publishing the same assets again uploaded %d object(s)", n)
	}
	before = puts()
	if err := w.p.Prepare(w.ctx, stacks(t, "code-v2")); err != nil {
		t.Fatal(err)
	}
	if n := puts() - before; n != 2 {
		t.Errorf("a code change uploaded %d object(s), want 2: the new code and the Service stack's template", n)
	}
}

// TestPrepareRefusesMissingImage: an image asset that is not in its repository stops the
// deployment, naming the asset and the command that publishes it, and nothing is uploaded;
// once the image is pushed (as cdk-assets would), the assembly is published.
func TestPrepareRefusesMissingImage(t *testing.T) {
	w := newWorld(t, false)
	withImage := stacks(t, "image")
	err := w.p.Prepare(w.ctx, withImage)
	ps := problems(t, err)
	var image assembly.ImageAsset
	for _, s := range withImage {
		if len(s.Assembly.Images) > 0 {
			image = s.Assembly.Images[0]
		}
	}
	want := "image asset Worker (" + image.ID + ") of stack Test/Service is not in ECR repository cdk-hnb659fds-container-assets-000000000000-us-east-1 (us-east-1) with tag " + image.ID +
		": cairn does not build Docker images; publish it before the push, in CI: cd cdk.out && npx cdk-assets publish --path assembly-Test/TestServiceAAE03A31.assets.json " + image.ID
	if len(ps) != 1 || !strings.HasPrefix(ps[0], want) {
		t.Fatalf("problems %q\nwant one starting %q", ps, want)
	}
	if n := w.e.Calls()["s3.PutObject"]; n != 0 {
		t.Errorf("%d object(s) uploaded for an assembly that cannot deploy", n)
	}
	cfg, err := w.e.AWSConfig(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ecr.NewFromConfig(cfg).PutImage(w.ctx, &ecr.PutImageInput{RepositoryName: aws.String(localcairn.CDKImageRepository("hnb659fds", home)),
		ImageTag: aws.String(image.ID), ImageManifest: aws.String(`{"schemaVersion":2,"layers":[]}`)}); err != nil {
		t.Fatal(err)
	}
	if err := w.p.Prepare(w.ctx, withImage); err != nil {
		t.Fatalf("with the image pushed: %v", err)
	}
}

// TestPrepareChecksTheBootstrapVersion: the environments' bootstrap version, as the CDK CLI
// checks it: not bootstrapped at all (the deploy role cannot be assumed), one message per
// environment naming it, its stacks and both ways to bootstrap it, and nothing about the
// assets, whose roles and buckets the bootstrap makes; and bootstrapped with a version
// older than the templates need, in the CDK CLI's words.
func TestPrepareChecksTheBootstrapVersion(t *testing.T) {
	bare := newWorld(t, true)
	ps := problems(t, bare.p.Prepare(bare.ctx, stacks(t, "base")))
	joined := strings.Join(ps, "\n")
	for i, want := range []string{
		"environment aws://000000000000/us-east-1 is not bootstrapped for the CDK (stacks Dev/Data, Dev/Service: its deploy role arn:aws:iam::000000000000:role/cdk-hnb659fds-deploy-role-000000000000-us-east-1 cannot be assumed",
		"environment aws://111111111111/eu-west-1 is not bootstrapped for the CDK (stack Audit: its deploy role arn:aws:iam::111111111111:role/cdk-hnb659fds-deploy-role-111111111111-eu-west-1 cannot be assumed",
	} {
		if len(ps) != 2 || !strings.HasPrefix(ps[i], want) {
			t.Errorf("problems:\n%s\nwant two, the %d. starting %q", joined, i+1, want)
		}
	}
	if !strings.HasSuffix(ps[1], "bootstrap it with `cdk bootstrap aws://111111111111/eu-west-1`, or, against cairn's local emulator, start it with `cairn local up --cdk-bootstrap`") {
		t.Errorf("problem %q does not say how to bootstrap", ps[1])
	}

	w := newWorld(t, false)
	cfg, err := w.e.AWSConfigAt(w.ctx, other.Account, other.Region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ssm.NewFromConfig(cfg).PutParameter(w.ctx, &ssm.PutParameterInput{Name: aws.String("/cdk-bootstrap/hnb659fds/version"), Value: aws.String("5"),
		Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	ps = problems(t, w.p.Prepare(w.ctx, stacks(t, "base")))
	if want := "stack Audit (111111111111, eu-west-1): This CDK deployment requires bootstrap stack version '6', found '5'. Please run 'cdk bootstrap'."; len(ps) != 1 || ps[0] != want {
		t.Errorf("problems %q, want %q", ps, want)
	}
}

// TestPrepareRefusesUnbuildableFile: a file asset an executable makes is never built by
// cairn: missing at its destination it stops the deployment; once published, it passes.
func TestPrepareRefusesUnbuildableFile(t *testing.T) {
	w := newWorld(t, false)
	base := stacks(t, "base")
	var audit *cdkassets.Stack
	for i := range base {
		if base[i].Name == "Audit" {
			audit = &base[i]
		}
	}
	own := *audit.Assembly
	own.Files = append(own.Files, assembly.FileAsset{ID: "feed", Name: "Bundle", Manifest: "Audit.assets.json", Executable: []string{"make", "bundle.zip"},
		Destinations: []assembly.Destination{{Bucket: "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}", Key: "feed.zip", Region: "eu-west-1",
			RoleARN: "arn:${AWS::Partition}:iam::111111111111:role/cdk-hnb659fds-file-publishing-role-111111111111-eu-west-1"}}})
	audit.Assembly = &own
	ps := problems(t, w.p.Prepare(w.ctx, base))
	want := "file asset Bundle (feed) of stack Audit is made by a command (make bundle.zip), which cairn does not run, and is not at s3://cdk-hnb659fds-assets-111111111111-eu-west-1/feed.zip: publish it before the push, in CI: cd cdk.out && npx cdk-assets publish --path Audit.assets.json feed"
	if len(ps) != 1 || ps[0] != want {
		t.Fatalf("problems %q\nwant %q", ps, want)
	}
	cfg, err := w.e.AWSConfigAt(w.ctx, other.Account, other.Region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := awsclient.S3(cfg).PutObject(w.ctx, &s3.PutObjectInput{Bucket: aws.String("cdk-hnb659fds-assets-111111111111-eu-west-1"), Key: aws.String("feed.zip"), Body: strings.NewReader("zip")}); err != nil {
		t.Fatal(err)
	}
	if err := w.p.Prepare(w.ctx, base); err != nil {
		t.Fatalf("with the object published: %v", err)
	}
}

// TestPrepareRefusesAnotherEnvironment: a stack cairn would deploy elsewhere than where the
// app synthesized it (cairn.yaml giving it a role of another account) is refused before
// anything is read there.
func TestPrepareRefusesAnotherEnvironment(t *testing.T) {
	w := newWorld(t, false)
	base := stacks(t, "base")
	for i := range base {
		if base[i].Name == "Audit" {
			base[i].Account, base[i].Target.RoleARN = "222222222222", "arn:aws:iam::222222222222:role/cairn-deploy-eu-west-1"
		}
	}
	reads := func() int { return w.e.Calls()["ssm.GetParameter"] + w.e.Calls()["s3.HeadObject"] }
	before := reads()
	ps := problems(t, w.p.Prepare(w.ctx, base))
	want := "stack Audit: the app synthesized it for aws://111111111111/eu-west-1, but it would deploy to account 222222222222 in eu-west-1: deploy it through that environment's role (role_arn), or synthesize the app for this one"
	if len(ps) != 1 || ps[0] != want {
		t.Fatalf("problems %q\nwant %q", ps, want)
	}
	if n := reads() - before; n != 0 {
		t.Errorf("%d call(s) made for stacks refused", n)
	}
}
