package main

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
)

// TestWebshopFailedApplyShowsReasonMasked: the README's sample bumps its service's image
// through plan → approve, and the reviewed change set fails with a reason quoting the
// secret ARN the service's NoEcho DatabaseSecretArn parameter is given. The apply run
// holds that value as the plan stored it (its hash only); the deployer resolves it again
// from the run's lookups, checks it against the hash and masks it: `cairn approve --wait`,
// `cairn status` and the run's report show the failure reason with ****, never the ARN,
// and never the "(withheld: ...)" they showed when the value could not be read; a push of
// the same change failing the same way (a deploy run stores the value by hash too, and
// reads it again in the step that sees the failure) shows it the same way. (The
// live lines of --wait, read from CloudFormation's events without the secrets, withhold
// the resource's reason by design: follow.Withheld.) It takes some 7s under -race, as
// TestWebshopServiceThroughPlanAndApprove does: the webshop's five stacks are first
// deployed through plan → approve in the emulator, then planned, applied and pushed.
func TestWebshopFailedApplyShowsReasonMasked(t *testing.T) {
	deployWebshop(t)
	arn := secretArn(t)
	bump := webshop(t, [3]string{"cairn.yaml", "nginx:1.27", "nginx:1.28"})
	p := planPR(t, "shop", bump, "2")
	if svc := p.Stack("service"); svc == nil || svc.ChangeSetID == "" {
		t.Fatalf("plan of the image bump: %+v", svc)
	}
	const prefix = `Resource handler returned message: "The secret `
	reason := prefix + arn + ` cannot be read by the task execution role"`
	if code, out, errOut := cli(t, "local", "fault", "shop-service", "TaskDefinition", "--fail", reason); code != 0 {
		t.Fatalf("local fault: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := cli(t, append([]string{"approve", "shop", p.ID}, reviewWait...)...)
	_, st, stErr := cli(t, "status", "shop")
	t.Logf("approve: exit %d\n%s%s\nstatus:\n%s%s", code, out, errOut, st, stErr)
	masked := prefix + `**** cannot be read by the task execution role"`
	if code != 1 || !strings.Contains(out, "TaskDefinition (AWS::ECS::TaskDefinition): "+masked) {
		t.Errorf("approve of a failing apply: exit %d; want 1 and the failure reason %q", code, masked)
	}
	if !regexp.MustCompile(`(?m)^service +shop-service +update +failed .*TaskDefinition \(AWS::ECS::TaskDefinition\): ` + regexp.QuoteMeta(masked) + `$`).MatchString(st) {
		t.Errorf("status after the failed apply lacks service's failure reason %q", masked)
	}
	m := regexp.MustCompile(`(?m)^report: s3://[^/]+/(runs/shop/\S+\.md)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("approve names no report")
	}
	report := s3Text(t, m[1])
	if !strings.Contains(report, "| service | TaskDefinition | AWS::ECS::TaskDefinition | ") || !strings.Contains(report, masked) {
		t.Errorf("the report lacks the failed resource with its reason masked:\n%s", report)
	}
	// A push of the same change, failing the same way, shows it the same way.
	if code, out, errOut := cli(t, "local", "fault", "shop-service", "TaskDefinition", "--fail", reason); code != 0 {
		t.Fatalf("local fault: exit %d\n%s%s", code, out, errOut)
	}
	pcode, pushed, pushErr := cli(t, append([]string{"push", bump, "--deployment", "shop"}, reviewWait...)...)
	t.Logf("push: exit %d\n%s%s", pcode, pushed, pushErr)
	if pcode != 1 || !strings.Contains(pushed, "TaskDefinition (AWS::ECS::TaskDefinition): "+masked) {
		t.Errorf("push of a failing update: exit %d; want 1 and the failure reason %q", pcode, masked)
	}
	for _, o := range []string{out, errOut, st, stErr, report, pushed, pushErr} {
		if strings.Contains(o, arn) {
			t.Errorf("the CLI or the report shows the secret %s", arn)
		}
		if strings.Contains(o, "could not be read") {
			t.Errorf("a text of the apply is withheld as unreadable:\n%s", o)
		}
	}
}

// s3Text reads an object of cairn's bucket as text.
func s3Text(t *testing.T, key string) string {
	t.Helper()
	cfg, err := awsclient.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	o, err := awsclient.S3(cfg).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(localBucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Body.Close()
	b, err := io.ReadAll(o.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
