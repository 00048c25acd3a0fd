package ssmlocal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/cairn-dev/cairn/internal/awslocal/ssmlocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

// TestParameterHistory: GetParameterHistory lists every version oldest first, with what
// each was (value, type, description, time), pages, decrypts SecureStrings only when
// asked, and survives a restart.
func TestParameterHistory(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(at)
	svc, err := ssmlocal.New(ssmlocal.Options{Dir: dir, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, svc)
	ctx := context.Background()
	for i, v := range []struct {
		value, description string
		typ                types.ParameterType
	}{{"one", "first", types.ParameterTypeString}, {"two", "second", types.ParameterTypeString}, {"s3cret", "", types.ParameterTypeSecureString}} {
		if _, err := c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/app/p"), Value: aws.String(v.value), Type: v.typ,
			Description: aws.String(v.description), Overwrite: aws.Bool(i > 0)}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
	}
	render := func(ps []types.ParameterHistory) string {
		var parts []string
		for _, p := range ps {
			parts = append(parts, strings.Join([]string{aws.ToString(p.Value), string(p.Type), aws.ToString(p.Description),
				p.LastModifiedDate.UTC().Format("15:04")}, "|"))
		}
		return strings.Join(parts, " ")
	}
	out, err := c.GetParameterHistory(ctx, &ssm.GetParameterHistoryInput{Name: aws.String("/app/p"), WithDecryption: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := render(out.Parameters), "one|String|first|12:00 two|String|second|12:01 s3cret|SecureString|second|12:02"; got != want {
		t.Fatalf("history = %s, want %s", got, want)
	}
	if out.Parameters[0].Version != 1 || out.Parameters[2].Version != 3 || aws.ToString(out.Parameters[2].KeyId) != "alias/aws/ssm" {
		t.Fatalf("versions/key: %+v", out.Parameters)
	}
	enc, err := c.GetParameterHistory(ctx, &ssm.GetParameterHistoryInput{Name: aws.String("/app/p")})
	if err != nil || aws.ToString(enc.Parameters[2].Value) == "s3cret" {
		t.Fatalf("a SecureString version without WithDecryption is in clear: %v", err)
	}
	page, err := c.GetParameterHistory(ctx, &ssm.GetParameterHistoryInput{Name: aws.String("/app/p"), MaxResults: aws.Int32(2)})
	if err != nil || len(page.Parameters) != 2 || page.NextToken == nil {
		t.Fatalf("first page: %+v %v", page, err)
	}
	rest, err := c.GetParameterHistory(ctx, &ssm.GetParameterHistoryInput{Name: aws.String("/app/p"), MaxResults: aws.Int32(2), NextToken: page.NextToken})
	if err != nil || len(rest.Parameters) != 1 || rest.NextToken != nil || rest.Parameters[0].Version != 3 {
		t.Fatalf("last page: %+v %v", rest, err)
	}
	if _, err := c.GetParameterHistory(ctx, &ssm.GetParameterHistoryInput{Name: aws.String("/app/missing")}); !strings.HasPrefix(code(err), "ParameterNotFound") {
		t.Fatalf("history of a missing parameter: %v", err)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := ssmlocal.New(ssmlocal.Options{Dir: dir, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	out, err = client(t, again).GetParameterHistory(ctx, &ssm.GetParameterHistoryInput{Name: aws.String("/app/p"), WithDecryption: aws.Bool(true)})
	if err != nil || render(out.Parameters) != "one|String|first|12:00 two|String|second|12:01 s3cret|SecureString|second|12:02" {
		t.Fatalf("after a restart: %s %v", render(out.Parameters), err)
	}
}
