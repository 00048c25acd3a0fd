package ecrlocal_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/ecr/types"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal/ecrlocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

func client(t *testing.T, svc *ecrlocal.Service) *ecr.Client {
	t.Helper()
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	cfg, err := config.LoadDefaultConfig(context.Background(), awsclient.WithSafeBodies(), config.WithRegion("us-east-1"), config.WithBaseEndpoint(srv.URL),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")), config.WithRetryMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	return ecr.NewFromConfig(cfg)
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	return ""
}

const manifest = `{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json","config":{"digest":"sha256:1"},"layers":[]}`

// TestImages drives the emulated registry with the Go SDK as cairn and cdk-assets do:
// repositories, an image pushed as its manifest, looked up by tag, and what ECR answers
// for a missing image or repository; the state survives a restart on the same folder.
func TestImages(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	svc, err := ecrlocal.New(ecrlocal.Options{Dir: dir, Clock: clk, AccountID: "111111111111", Region: "eu-west-1"})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, svc)
	ctx := context.Background()
	const repo = "cdk-hnb659fds-container-assets-111111111111-eu-west-1"
	out, err := c.CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: aws.String(repo)})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(out.Repository.RepositoryUri); got != "111111111111.dkr.ecr.eu-west-1.amazonaws.com/"+repo {
		t.Errorf("uri %s", got)
	}
	if _, err := c.CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: aws.String(repo)}); code(err) != "RepositoryAlreadyExistsException: The repository with name '"+repo+"' already exists in the registry with id '111111111111'" {
		t.Errorf("create twice: %v", err)
	}
	if _, err := c.CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: aws.String("Upper")}); code(err) == "" || code(err)[:len("InvalidParameterException")] != "InvalidParameterException" {
		t.Errorf("an upper-case name: %v", err)
	}
	byTag := []types.ImageIdentifier{{ImageTag: aws.String("abc123")}}
	_, err = c.DescribeImages(ctx, &ecr.DescribeImagesInput{RepositoryName: aws.String(repo), ImageIds: byTag})
	if want := "ImageNotFoundException: The image with imageId {imageDigest:'null', imageTag:'abc123'} does not exist within the repository with name '" + repo + "' in the registry with id '111111111111'"; code(err) != want {
		t.Fatalf("describe a missing image: %v\nwant %s", err, want)
	}
	if _, err := c.DescribeImages(ctx, &ecr.DescribeImagesInput{RepositoryName: aws.String("nope"), ImageIds: byTag}); code(err) != "RepositoryNotFoundException: The repository with name 'nope' does not exist in the registry with id '111111111111'" {
		t.Errorf("describe in a missing repository: %v", err)
	}
	put, err := c.PutImage(ctx, &ecr.PutImageInput{RepositoryName: aws.String(repo), ImageManifest: aws.String(manifest), ImageTag: aws.String("abc123")})
	if err != nil {
		t.Fatal(err)
	}
	digest := aws.ToString(put.Image.ImageId.ImageDigest)
	if len(digest) != len("sha256:")+64 {
		t.Errorf("digest %q", digest)
	}
	if _, err := c.PutImage(ctx, &ecr.PutImageInput{RepositoryName: aws.String(repo), ImageManifest: aws.String(manifest), ImageTag: aws.String("abc123")}); code(err) == "" {
		t.Error("the same image and tag twice was accepted")
	}
	// After a restart on the same folder, the image is still there.
	svc2, err := ecrlocal.New(ecrlocal.Options{Dir: dir, Clock: clk, AccountID: "111111111111", Region: "eu-west-1"})
	if err != nil {
		t.Fatal(err)
	}
	c2 := client(t, svc2)
	d, err := c2.DescribeImages(ctx, &ecr.DescribeImagesInput{RepositoryName: aws.String(repo), ImageIds: byTag})
	if err != nil || len(d.ImageDetails) != 1 || aws.ToString(d.ImageDetails[0].ImageDigest) != digest || d.ImageDetails[0].ImageTags[0] != "abc123" ||
		!aws.ToTime(d.ImageDetails[0].ImagePushedAt).Equal(clk.Now()) {
		t.Fatalf("describe after a restart: %+v %v", d, err)
	}
	g, err := c2.BatchGetImage(ctx, &ecr.BatchGetImageInput{RepositoryName: aws.String(repo), ImageIds: append(byTag, types.ImageIdentifier{ImageTag: aws.String("zzz")})})
	if err != nil || len(g.Images) != 1 || aws.ToString(g.Images[0].ImageManifest) != manifest || len(g.Failures) != 1 || g.Failures[0].FailureCode != types.ImageFailureCodeImageNotFound {
		t.Fatalf("batch get: %+v %v", g, err)
	}
	// An immutable repository (as CDK's bootstrap makes) keeps a tag on its image.
	if _, err := c2.CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: aws.String("fixed"), ImageTagMutability: types.ImageTagMutabilityImmutable}); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.PutImage(ctx, &ecr.PutImageInput{RepositoryName: aws.String("fixed"), ImageManifest: aws.String(manifest), ImageTag: aws.String("v1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.PutImage(ctx, &ecr.PutImageInput{RepositoryName: aws.String("fixed"), ImageManifest: aws.String(manifest + " "), ImageTag: aws.String("v1")}); code(err) != "ImageTagAlreadyExistsException: The image tag 'v1' already exists in the 'fixed' repository and cannot be overwritten because the repository is immutable." {
		t.Errorf("moving a tag of an immutable repository: %v", err)
	}
	if _, err := c2.DeleteRepository(ctx, &ecr.DeleteRepositoryInput{RepositoryName: aws.String(repo)}); code(err) == "" {
		t.Error("a repository holding an image was deleted without force")
	}
	if _, err := c2.DeleteRepository(ctx, &ecr.DeleteRepositoryInput{RepositoryName: aws.String(repo), Force: true}); err != nil {
		t.Errorf("delete with force: %v", err)
	}
}
