package ssmlocal_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awslocal/ssmlocal"
)

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// TestLabelsAndDeleteParameters: labels attach to a version (the current one by default),
// move when attached elsewhere, select it as NAME:LABEL, show in the history, and invalid
// ones come back in InvalidLabels; DeleteParameters deletes what exists and lists the rest.
func TestLabelsAndDeleteParameters(t *testing.T) {
	svc, err := ssmlocal.New(ssmlocal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, svc)
	ctx := context.Background()
	for i, v := range []string{"one", "two"} {
		if _, err := c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/app/p"), Value: aws.String(v), Type: types.ParameterTypeString, Overwrite: aws.Bool(i > 0)}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := c.LabelParameterVersion(ctx, &ssm.LabelParameterVersionInput{Name: aws.String("/app/p"), Labels: []string{"live", "awsBad", "9lives"}})
	if err != nil || out.ParameterVersion != 2 || strings.Join(out.InvalidLabels, ",") != "awsBad,9lives" {
		t.Fatalf("LabelParameterVersion: %v %+v", err, out)
	}
	if _, err := c.LabelParameterVersion(ctx, &ssm.LabelParameterVersionInput{Name: aws.String("/app/p"), ParameterVersion: aws.Int64(1), Labels: []string{"old"}}); err != nil {
		t.Fatal(err)
	}
	get := func(name string) string {
		p, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
		if err != nil {
			return apiCode(err)
		}
		return aws.ToString(p.Parameter.Value) + "@" + aws.ToString(p.Parameter.Selector)
	}
	if got := get("/app/p:live") + " " + get("/app/p:old") + " " + get("/app/p:gone"); got != "two@:live one@:old ParameterVersionLabelNotFound" {
		t.Errorf("selected by label: %s", got)
	}
	if _, err := c.LabelParameterVersion(ctx, &ssm.LabelParameterVersionInput{Name: aws.String("/app/p"), ParameterVersion: aws.Int64(1), Labels: []string{"live"}}); err != nil {
		t.Fatal(err)
	}
	if got := get("/app/p:live"); got != "one@:live" {
		t.Errorf("a moved label selects %s", got)
	}
	h, err := c.GetParameterHistory(ctx, &ssm.GetParameterHistoryInput{Name: aws.String("/app/p")})
	if err != nil || len(h.Parameters) != 2 || strings.Join(h.Parameters[0].Labels, ",") != "live,old" || len(h.Parameters[1].Labels) != 0 {
		t.Errorf("history labels: %v %+v", err, h)
	}
	if _, err := c.LabelParameterVersion(ctx, &ssm.LabelParameterVersionInput{Name: aws.String("/app/p"), ParameterVersion: aws.Int64(7), Labels: []string{"x"}}); apiCode(err) != "ParameterVersionNotFound" {
		t.Errorf("a missing version: %v", err)
	}
	un, err := c.UnlabelParameterVersion(ctx, &ssm.UnlabelParameterVersionInput{Name: aws.String("/app/p"), ParameterVersion: aws.Int64(1), Labels: []string{"old", "nope"}})
	if err != nil || strings.Join(un.RemovedLabels, ",") != "old" || strings.Join(un.InvalidLabels, ",") != "nope" {
		t.Errorf("UnlabelParameterVersion: %v %+v", err, un)
	}

	c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/app/q"), Value: aws.String("q"), Type: types.ParameterTypeString})
	del, err := c.DeleteParameters(ctx, &ssm.DeleteParametersInput{Names: []string{"/app/p", "/app/missing", "/app/q"}})
	if err != nil || strings.Join(del.DeletedParameters, ",") != "/app/p,/app/q" || strings.Join(del.InvalidParameters, ",") != "/app/missing" {
		t.Fatalf("DeleteParameters: %v %+v", err, del)
	}
	if got := get("/app/q"); got != "ParameterNotFound" {
		t.Errorf("after DeleteParameters: %s", got)
	}
}
