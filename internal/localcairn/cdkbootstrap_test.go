package localcairn_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/localcairn"
	"github.com/cairn-dev/cairn/internal/target"
	"github.com/cairn-dev/cairn/internal/template"
)

// bootstrapped checks in t what `cdk bootstrap --qualifier q --trust 000000000000` makes
// there: the CDKToolkit stack, the staging bucket, the image repository, the version
// parameter, and the five roles, which cairn's account (the deployer's) may assume.
func bootstrapped(t *testing.T, v *env, at target.Target, q string) {
	t.Helper()
	cfg, err := v.e.AWSConfigAt(v.ctx, at.Account, at.Region)
	if err != nil {
		t.Fatal(err)
	}
	st, err := cloudformation.NewFromConfig(cfg).DescribeStacks(v.ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(localcairn.CDKToolkitStack)})
	if err != nil || st.Stacks[0].StackStatus != cfntypes.StackStatusCreateComplete && st.Stacks[0].StackStatus != cfntypes.StackStatusUpdateComplete {
		t.Fatalf("%s: CDKToolkit %+v, %v", at, st, err)
	}
	if _, err := awsclient.S3(cfg).HeadBucket(v.ctx, &s3.HeadBucketInput{Bucket: aws.String(localcairn.CDKAssetsBucket(q, at))}); err != nil {
		t.Errorf("%s: staging bucket: %v", at, err)
	}
	if _, err := ecr.NewFromConfig(cfg).DescribeRepositories(v.ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{localcairn.CDKImageRepository(q, at)}}); err != nil {
		t.Errorf("%s: image repository: %v", at, err)
	}
	p, err := ssm.NewFromConfig(cfg).GetParameter(v.ctx, &ssm.GetParameterInput{Name: aws.String(localcairn.CDKVersionParameter(q))})
	if err != nil || aws.ToString(p.Parameter.Value) != "30" {
		t.Errorf("%s: version parameter %+v, %v", at, p, err)
	}
	home, err := v.e.AWSConfig(v.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"deploy", "file-publishing", "image-publishing", "lookup"} {
		arn := "arn:aws:iam::" + at.Account + ":role/cdk-" + q + "-" + role + "-role-" + at.Account + "-" + at.Region
		if _, err := sts.NewFromConfig(home).AssumeRole(v.ctx, &sts.AssumeRoleInput{RoleArn: aws.String(arn), RoleSessionName: aws.String("cairn-test")}); err != nil {
			t.Errorf("%s: cairn's account assuming %s: %v", at, arn, err)
		}
	}
	res, err := cloudformation.NewFromConfig(cfg).DescribeStackResource(v.ctx, &cloudformation.DescribeStackResourceInput{
		StackName: aws.String(localcairn.CDKToolkitStack), LogicalResourceId: aws.String("CloudFormationExecutionRole")})
	if err != nil || aws.ToString(res.StackResourceDetail.PhysicalResourceId) != "cdk-"+q+"-cfn-exec-role-"+at.Account+"-"+at.Region {
		t.Errorf("%s: execution role %+v, %v", at, res, err)
	}
}

// TestCDKBootstrap: local up --cdk-bootstrap makes in cairn's account and region and in each
// target what `cdk bootstrap` makes, its roles trusting cairn's account; another account
// may not assume them.
func TestCDKBootstrap(t *testing.T) {
	other := target.Target{Account: "111111111111", Region: "eu-west-1"}
	v := start(t, "", localcairn.Options{CDKBootstrap: true, Targets: []target.Target{other}})
	bootstrapped(t, v, target.Target{Account: "000000000000", Region: "us-east-1"}, localcairn.DefaultCDKQualifier)
	bootstrapped(t, v, other, localcairn.DefaultCDKQualifier)
	stranger, err := v.e.AWSConfigAt(v.ctx, "333333333333", "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	arn := "arn:aws:iam::111111111111:role/cdk-hnb659fds-deploy-role-111111111111-eu-west-1"
	if _, err := sts.NewFromConfig(stranger).AssumeRole(v.ctx, &sts.AssumeRoleInput{RoleArn: aws.String(arn), RoleSessionName: aws.String("stranger")}); awserr.ErrorCode(err) != "AccessDenied" {
		t.Errorf("another account assuming %s: %v, want AccessDenied", arn, err)
	}
}

// TestCDKBootstrapAfterLocalUp: a state folder in which `local up` ran without
// --cdk-bootstrap (its own deployment made the staging bucket and version parameter
// outside any stack) takes --cdk-bootstrap later, and cairn's stack is still served; an
// other qualifier makes its own.
func TestCDKBootstrapAfterLocalUp(t *testing.T) {
	dir := t.TempDir()
	first := start(t, dir, localcairn.Options{})
	if err := first.e.Close(); err != nil {
		t.Fatal(err)
	}
	v := start(t, dir, localcairn.Options{CDKBootstrap: true})
	home := target.Target{Account: "000000000000", Region: "us-east-1"}
	bootstrapped(t, v, home, localcairn.DefaultCDKQualifier)
	if v.c.StackID != first.c.StackID {
		t.Errorf("cairn's stack %s, was %s", v.c.StackID, first.c.StackID)
	}
	if _, err := localcairn.Provision(v.ctx, v.e, localcairn.Options{CDKBootstrap: true, CDKQualifier: "orders"}); err != nil {
		t.Fatal(err)
	}
	bootstrapped(t, v, home, "orders")
}

// TestCDKBootstrapTemplate: the bootstrap template passes cairn's own checks.
func TestCDKBootstrapTemplate(t *testing.T) {
	tpl, err := template.Parse([]byte(localcairn.CDKBootstrapTemplate()))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tpl.Check() {
		if !p.Warning {
			t.Errorf("cdk-bootstrap.yaml:%d:%d: %s: %s", p.Line, p.Col, p.Path, p.Msg)
		}
	}
}
