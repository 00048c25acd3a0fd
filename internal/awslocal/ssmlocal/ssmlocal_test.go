package ssmlocal_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal/ssmlocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

func client(t *testing.T, svc *ssmlocal.Service) *ssm.Client {
	t.Helper()
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	cfg, err := config.LoadDefaultConfig(context.Background(), awsclient.WithSafeBodies(), config.WithRegion("us-east-1"), config.WithBaseEndpoint(srv.URL),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")), config.WithRetryMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	return ssm.NewFromConfig(cfg)
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	return ""
}

func TestParameters(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	svc, err := ssmlocal.New(ssmlocal.Options{Dir: dir, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, svc)
	ctx := context.Background()
	put := func(name, value string, typ types.ParameterType, overwrite bool) (*ssm.PutParameterOutput, error) {
		return c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value), Type: typ, Overwrite: aws.Bool(overwrite)})
	}
	if out, err := put("/shop/db/host", "db.internal", types.ParameterTypeString, false); err != nil || out.Version != 1 {
		t.Fatalf("put: %+v %v", out, err)
	}
	if _, err := put("/shop/db/host", "other", types.ParameterTypeString, false); code(err) != "ParameterAlreadyExists: The parameter already exists. To overwrite this value, set the overwrite option in the request to true." {
		t.Fatalf("put twice: %v", err)
	}
	if out, err := put("/shop/db/host", "db2.internal", "", true); err != nil || out.Version != 2 {
		t.Fatalf("overwrite: %+v %v", out, err)
	}
	if _, err := put("/shop/db/password", "s3cret!", types.ParameterTypeSecureString, false); err != nil {
		t.Fatal(err)
	}
	if _, err := put("/shop/app/ports", "80,443", types.ParameterTypeStringList, false); err != nil {
		t.Fatal(err)
	}
	if _, err := put("/shop/flag", "on", "", false); code(err) != "ValidationException: A parameter type is required when you create a parameter." {
		t.Fatalf("put without type: %v", err)
	}
	if _, err := put("/aws/thing", "x", types.ParameterTypeString, false); !strings.Contains(code(err), `can't be prefixed with "aws" or "ssm"`) {
		t.Fatalf("reserved prefix: %v", err)
	}

	got, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/shop/db/host")})
	if err != nil || aws.ToString(got.Parameter.Value) != "db2.internal" || got.Parameter.Version != 2 ||
		aws.ToString(got.Parameter.ARN) != "arn:aws:ssm:us-east-1:000000000000:parameter/shop/db/host" {
		t.Fatalf("get: %+v %v", got, err)
	}
	old, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/shop/db/host:1")})
	if err != nil || aws.ToString(old.Parameter.Value) != "db.internal" {
		t.Fatalf("get version 1: %+v %v", old, err)
	}
	secret, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/shop/db/password")})
	if err != nil || aws.ToString(secret.Parameter.Value) == "s3cret!" || secret.Parameter.Type != types.ParameterTypeSecureString {
		t.Fatalf("SecureString without decryption: %+v %v", secret.Parameter, err)
	}
	secret, err = c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/shop/db/password"), WithDecryption: aws.Bool(true)})
	if err != nil || aws.ToString(secret.Parameter.Value) != "s3cret!" {
		t.Fatalf("SecureString with decryption: %+v %v", secret.Parameter, err)
	}
	if _, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/shop/nope")}); code(err) != "ParameterNotFound: Parameter /shop/nope not found." {
		t.Fatalf("missing: %v", err)
	}
	many, err := c.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"/shop/db/host", "/shop/nope"}})
	if err != nil || len(many.Parameters) != 1 || strings.Join(many.InvalidParameters, ",") != "/shop/nope" {
		t.Fatalf("GetParameters: %+v %v", many, err)
	}

	var names []string
	p := ssm.NewGetParametersByPathPaginator(c, &ssm.GetParametersByPathInput{Path: aws.String("/shop"), Recursive: aws.Bool(true), MaxResults: aws.Int32(2)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range page.Parameters {
			names = append(names, aws.ToString(x.Name))
		}
	}
	if strings.Join(names, " ") != "/shop/app/ports /shop/db/host /shop/db/password" {
		t.Fatalf("by path, recursive: %v", names)
	}
	direct, err := c.GetParametersByPath(ctx, &ssm.GetParametersByPathInput{Path: aws.String("/shop/db")})
	if err != nil || len(direct.Parameters) != 2 {
		t.Fatalf("by path /shop/db: %+v %v", direct, err)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	// On disk the secret is encrypted; a restarted Parameter Store still decrypts it.
	if b, _ := os.ReadFile(filepath.Join(dir, "ssm.json")); strings.Contains(string(b), "s3cret!") || !strings.Contains(string(b), "db2.internal") {
		t.Fatalf("state on disk: %s", b)
	}
	again, err := ssmlocal.New(ssmlocal.Options{Dir: dir, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := again.Get("/shop/db/password", true); err != nil || p.Value != "s3cret!" {
		t.Fatalf("after restart: %+v %v", p, err)
	}
	if _, err := client(t, again).DeleteParameter(ctx, &ssm.DeleteParameterInput{Name: aws.String("/shop/db/host")}); err != nil {
		t.Fatal(err)
	}
	if _, err := again.Get("/shop/db/host", false); err == nil {
		t.Fatal("deleted parameter still there")
	}
}
