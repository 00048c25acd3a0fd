package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/localcairn"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/target"
)

// cdkApp returns the synthesized assembly of a variant of the example CDK app
// (testdata/cdkapp; infra's TestCDKAppAssemblies keeps them as the app synthesizes).
func cdkApp(variant string) string {
	return filepath.Join("..", "..", "testdata", "cdkapp", "assemblies", variant)
}

// The example app's environments: cairn's account and region, and another.
var (
	cdkHome  = target.Target{Account: "000000000000", Region: "us-east-1"}
	cdkOther = target.Target{Account: "111111111111", Region: "eu-west-1"}
)

// executedIn lists the ids of the change sets executed in each place, oldest first.
func executedIn(t *testing.T, em *awslocal.Emulator) []string {
	t.Helper()
	var ids []string
	for _, at := range []target.Target{cdkHome, cdkOther} {
		p, err := em.Place(at.Account, at.Region)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range p.CloudFormation().ExecutedChangeSets() {
			ids = append(ids, x.ChangeSetID)
		}
	}
	return ids
}

// cfnCallsAnywhere counts the CloudFormation calls of every place.
func cfnCallsAnywhere(em *awslocal.Emulator) int {
	n := 0
	for k, v := range em.Calls() {
		if strings.HasPrefix(k, "cloudformation.") {
			n += v
		}
	}
	return n
}

// stacksIn lists the live stacks of a place by name.
func stacksIn(t *testing.T, em *awslocal.Emulator, at target.Target) []string {
	t.Helper()
	cfg, err := em.AWSConfigAt(context.Background(), at.Account, at.Region)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range liveStacks(t, cloudformation.NewFromConfig(cfg)) {
		if name != localcairn.CDKToolkitStack {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// handlerCode is where the Service stack's function reads its code from.
func handlerCode(t *testing.T, em *awslocal.Emulator, stack string) awslocal.FunctionCode {
	t.Helper()
	cfg, err := em.AWSConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := cloudformation.NewFromConfig(cfg).DescribeStackResources(context.Background(), &cloudformation.DescribeStackResourcesInput{StackName: aws.String(stack)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.StackResources {
		if aws.ToString(r.ResourceType) == "AWS::Lambda::Function" {
			return functionCode(t, em, aws.ToString(r.PhysicalResourceId))
		}
	}
	t.Fatalf("stack %s has no function", stack)
	return awslocal.FunctionCode{}
}

// secondSynth copies an assembly as another synth of the same app leaves it: with its
// construct tree, metadata files holding the jsii kernel's temporary paths, the CDK CLI's
// lock files and its performance counters.
func secondSynth(t *testing.T, variant string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cdk.out")
	if err := os.CopyFS(dir, os.DirFS(cdkApp(variant))); err != nil {
		t.Fatal(err)
	}
	for p, body := range map[string]string{
		"tree.json": `{"version":"tree-0.1","tree":{"id":"App","path":""}}`,
		"assembly-Dev/DevServiceED593074.metadata.json": `{"/Dev/Service":[{"type":"aws:cdk:warning","data":"x","trace":["at /tmp/jsii-kernel-Zq81/lib.js:1:2"]}]}`,
		"synth.lock":                "4242",
		"read.4242.1.lock":          "4242",
		"performance-counters.json": `{"counters":{"synth":{"count":1,"total":1234.5}}}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCDKApp deploys the example CDK app through the CLI, from its synthesized assemblies,
// into the emulator bootstrapped as `cdk bootstrap --trust CAIRN_ACCOUNT` does in both of
// its environments: plan and approve (exactly the planned change sets run, the function's
// code published first), a code change in the function's asset planned on a pull request
// and applied on merge from another synth of the same app (the content hash finds the
// plan: one stack updated), the audit stack dropped from the app (deleted by the next
// push), the stage renamed (the old stage's stacks deleted, dependents first, the new
// ones created), and an image asset nobody published (refused before any CloudFormation
// call, naming the asset and the command that publishes it).
func TestCDKApp(t *testing.T) {
	em, _ := deployEmulator(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	ctx := context.Background()
	if err := localcairn.BootstrapCDK(ctx, em, []target.Target{cdkHome, cdkOther}, "", cdkHome.Account, time.Minute); err != nil {
		t.Fatal(err)
	}
	if out := cairnOK(t, "validate", cdkApp("base"), "--deployment", "orders"); !strings.Contains(out, `: ok: 3 stacks in namespace "orders", 1 dependencies`) {
		t.Fatalf("validate: %s", out)
	}
	if out := cairnOK(t, "graph", cdkApp("base")); !regexp.MustCompile(`(?m)^  3\. Dev/Service +Dev-Service .*<- Dev/Data$`).MatchString(out) {
		t.Errorf("graph:\n%s", out)
	}

	// 1. Plan: a change set per stack, none executed.
	out := cairnOK(t, append([]string{"plan", cdkApp("base"), "--deployment", "orders"}, followFlags...)...)
	id := regexp.MustCompile(`cairn approve orders (\S+)`).FindStringSubmatch(out)
	if id == nil || len(executedIn(t, em)) != 0 {
		t.Fatalf("plan:\n%s\n(executed %v)", out, executedIn(t, em))
	}
	// Dev/Service imports Dev/Data's export: its change set can only be made once Dev/Data
	// exists, at apply (the plan says so).
	planned, atApply := plannedChangeSets(t, "orders", id[1])
	if len(planned) != 2 || !slices.Equal(atApply, []string{"Dev/Service"}) {
		t.Fatalf("planned change sets %v and %v created at apply; want Audit's and Dev/Data's, and Dev/Service at apply", planned, atApply)
	}

	// 2. Approve: exactly the planned change sets run, in both environments, and the one
	// the plan said is made at apply.
	created := cfnCalls(em, "CreateChangeSet")
	if out := cairnOK(t, append([]string{"approve", "orders", id[1]}, followFlags...)...); !strings.Contains(out, ": 3 created, 0 updated, 0 deleted") {
		t.Fatalf("approve:\n%s", out)
	}
	executed := executedIn(t, em)
	for _, cs := range planned {
		if !slices.Contains(executed, cs) {
			t.Errorf("the planned change set %s was not executed", cs)
		}
	}
	if len(executed) != 3 || cfnCalls(em, "CreateChangeSet")-created != 1 {
		t.Fatalf("approve executed %v and created %d change set(s); want the planned %v and Dev/Service's", executed, cfnCalls(em, "CreateChangeSet")-created, planned)
	}
	if got := stacksIn(t, em, cdkHome); !slices.Equal(got, []string{"Dev-Data", "Dev-Service"}) {
		t.Errorf("stacks in cairn's account and region: %v", got)
	}
	if got := stacksIn(t, em, cdkOther); !slices.Equal(got, []string{"orders-audit"}) {
		t.Errorf("stacks in 111111111111, eu-west-1: %v", got)
	}
	v1 := handlerCode(t, em, "Dev-Service")
	if v1.S3Bucket != "cdk-hnb659fds-assets-000000000000-us-east-1" || v1.CodeSha256 == "" {
		t.Fatalf("the function's code %+v: want the asset published to the CDK staging bucket", v1)
	}

	// 3. A code change in the function's asset, planned on the pull request; applied on
	// merge from another synth of the same app, which the content hash finds.
	out = cairnOK(t, append([]string{"plan", cdkApp("code-v2"), "--deployment", "orders"}, followFlags...)...)
	for _, re := range []string{`(?m)^Dev/Service +Dev-Service +update `, `(?m)^  Modify +Handler886CB40B +AWS::Lambda::Function`, `(?m)^Dev/Data +Dev-Data +none$`, `(?m)^Audit +orders-audit \(111111111111, eu-west-1\) +none$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("the plan of the code change lacks a line matching %s:\n%s", re, out)
		}
	}
	// Every CDK template has BootstrapVersion, left at its Default; DescribeStacks lists it,
	// the run gives none: no change, so the plan shows none.
	if strings.Contains(out, "BootstrapVersion") {
		t.Errorf("the plan of the code change shows a parameter left at its template default:\n%s", out)
	}
	before := len(executedIn(t, em))
	out = cairnOK(t, append([]string{"apply", secondSynth(t, "code-v2"), "--deployment", "orders"}, followFlags...)...)
	if !strings.Contains(out, ": 0 created, 1 updated, 0 deleted, 2 unchanged") {
		t.Fatalf("apply of the code change:\n%s", out)
	}
	if n := len(executedIn(t, em)) - before; n != 1 {
		t.Errorf("%d change sets executed for the code change, want the Service stack's", n)
	}
	if v2 := handlerCode(t, em, "Dev-Service"); v2.S3Key == v1.S3Key || v2.CodeSha256 == v1.CodeSha256 {
		t.Errorf("the function's code is %+v after the change, was %+v", v2, v1)
	}
	// The two synths are one content: applying the first after the second applied it has
	// nothing to do.
	if out := cairnOK(t, "apply", cdkApp("code-v2"), "--deployment", "orders"); !strings.Contains(out, "is already applied") {
		t.Errorf("apply of the first synth after the second's:\n%s", out)
	}

	// 4. The audit stack removed from the app: `cairn diff` says so, offline, and the next
	// push deletes it, in its account.
	out, code := cairnRun(t, "diff", cdkApp("no-audit"), "--deployment", "orders")
	if code != 1 || !strings.Contains(out, "stack Audit (orders-audit): applied, no longer in the bundle: the next run deletes it") || !strings.Contains(out, "0 changed, 0 new, 1 removed, 2 unchanged") {
		t.Errorf("diff exited %d:\n%s", code, out)
	}
	if out := cairnOK(t, append([]string{"push", cdkApp("no-audit"), "--deployment", "orders"}, followFlags...)...); !strings.Contains(out, ": 0 created, 0 updated, 1 deleted, 2 unchanged") {
		t.Fatalf("push without the audit stack:\n%s", out)
	}
	if got := stacksIn(t, em, cdkOther); len(got) != 0 {
		t.Errorf("stacks left in 111111111111, eu-west-1: %v", got)
	}

	// 5. The stage renamed: the new stage's stacks created, the old one's deleted.
	out = cairnOK(t, append([]string{"push", cdkApp("stage-test"), "--deployment", "orders"}, followFlags...)...)
	if !strings.Contains(out, ": 2 created, 0 updated, 2 deleted, 0 unchanged") {
		t.Fatalf("push of the renamed stage:\n%s", out)
	}
	if svc, data := deletedAt(t, em, "Dev-Service"), deletedAt(t, em, "Dev-Data"); !svc.Before(data) {
		t.Errorf("Dev-Service (importing Dev-Data's export) deleted at %s, Dev-Data at %s: want dependents first", svc, data)
	}
	if got := stacksIn(t, em, cdkHome); !slices.Equal(got, []string{"Test-Data", "Test-Service"}) {
		t.Errorf("stacks after the rename: %v", got)
	}

	// 6. An image asset nobody published: refused before any CloudFormation call.
	calls := cfnCallsAnywhere(em)
	out, code = cairnRun(t, append([]string{"push", cdkApp("image"), "--deployment", "orders"}, followFlags...)...)
	if code != 1 || !strings.Contains(out, "found before any CloudFormation call; nothing was changed") ||
		!regexp.MustCompile(`image asset Worker \([0-9a-f]{64}\) of stack Test/Service is not in ECR repository cdk-hnb659fds-container-assets-000000000000-us-east-1 \(us-east-1\) with tag [0-9a-f]{64}: cairn does not build Docker images; publish it before the push, in CI: cd cdk.out && npx cdk-assets publish --path assembly-Test/TestServiceAAE03A31.assets.json [0-9a-f]{64}`).MatchString(out) {
		t.Fatalf("push of an unpublished image exited %d:\n%s", code, out)
	}
	if n := cfnCallsAnywhere(em) - calls; n != 0 {
		t.Errorf("%d CloudFormation call(s) for a push refused before any", n)
	}
	t.Logf("refused:\n%s", out)
	// The same for a deployment's first push, whose graph does not exist yet.
	calls = cfnCallsAnywhere(em)
	if out, code := cairnRun(t, append([]string{"push", cdkApp("image"), "--deployment", "orders-images"}, followFlags...)...); code != 1 || !strings.Contains(out, "image asset Worker") {
		t.Fatalf("first push of an unpublished image exited %d:\n%s", code, out)
	}
	if n := cfnCallsAnywhere(em) - calls; n != 0 {
		t.Errorf("%d CloudFormation call(s) for a first push refused before any", n)
	}
}

// plannedChangeSets returns the change set ids of a plan's changing stacks, and the stacks
// whose change sets are created at apply.
func plannedChangeSets(t *testing.T, deployment, id string) (ids, atApply []string) {
	t.Helper()
	var p plan.Document
	if err := json.Unmarshal([]byte(cairnOK(t, "plans", deployment, id, "--format", "json")), &p); err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Changing() {
		if s.CreatedAtApply {
			atApply = append(atApply, s.Name)
			continue
		}
		ids = append(ids, s.ChangeSetID)
	}
	return ids, atApply
}

// TestLocalUpCDKBootstrap: `cairn local up --cdk-bootstrap --cdk-qualifier Q` makes the
// CDKToolkit stack of qualifier Q, as `cdk bootstrap --qualifier Q` does.
func TestLocalUpCDKBootstrap(t *testing.T) {
	keepEnv(t)
	exports, stop := localUp(t, "--dir", "", "--cdk-bootstrap", "--cdk-qualifier", "orders")
	defer stop()
	t.Setenv("AWS_CA_BUNDLE", "")
	for k, v := range exports {
		t.Setenv(k, v)
	}
	cfg, err := awsclient.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st, err := cloudformation.NewFromConfig(cfg).DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String("CDKToolkit")})
	if err != nil {
		t.Fatal(err)
	}
	if got := outputsOf(st.Stacks[0]); got["BucketName"] != "cdk-orders-assets-000000000000-us-east-1" || got["ImageRepositoryName"] != "cdk-orders-container-assets-000000000000-us-east-1" || got["BootstrapVersion"] != "30" {
		t.Errorf("CDKToolkit's outputs %v", got)
	}
	p, err := ssm.NewFromConfig(cfg).GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String("/cdk-bootstrap/orders/version")})
	if err != nil || aws.ToString(p.Parameter.Value) != "30" {
		t.Errorf("the version parameter: %+v %v", p, err)
	}
}

// deletedAt is when the stack of cairn's account and region named name was deleted.
func deletedAt(t *testing.T, em *awslocal.Emulator, name string) time.Time {
	t.Helper()
	cfg, err := em.AWSConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out, err := cloudformation.NewFromConfig(cfg).ListStacks(context.Background(), &cloudformation.ListStacksInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range out.StackSummaries {
		if aws.ToString(s.StackName) == name && s.DeletionTime != nil {
			return *s.DeletionTime
		}
	}
	t.Fatalf("stack %s was not deleted", name)
	return time.Time{}
}

// TestCDKAppNotBootstrapped: an app pushed to environments without the CDK bootstrap is
// refused before any CloudFormation call with one message per environment, naming it and
// what bootstraps it (cdk bootstrap, or cairn local up --cdk-bootstrap), not the errors of
// the roles the bootstrap would have made.
func TestCDKAppNotBootstrapped(t *testing.T) {
	em, _ := deployEmulator(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	calls := cfnCallsAnywhere(em)
	out, code := cairnRun(t, append([]string{"push", cdkApp("base"), "--deployment", "orders"}, followFlags...)...)
	t.Logf("exit %d:\n%s", code, out)
	if code != 1 || strings.Count(out, "error: ") != 2 || strings.Contains(out, "file-publishing-role") || strings.Contains(out, "did not load") {
		t.Fatalf("want exactly one error per environment, no role errors of the assets, no 'did not load'")
	}
	for _, want := range []string{
		"error: environment aws://000000000000/us-east-1 is not bootstrapped for the CDK (stacks Dev/Data, Dev/Service: ",
		"bootstrap it with `cdk bootstrap aws://000000000000/us-east-1 --trust 000000000000`, or, against cairn's local emulator, start it with `cairn local up --cdk-bootstrap`\n",
		"error: environment aws://111111111111/eu-west-1 is not bootstrapped for the CDK (stack Audit: ",
		"bootstrap it with `cdk bootstrap aws://111111111111/eu-west-1 --trust 000000000000`, or, against cairn's local emulator, start it with `cairn local up --cdk-bootstrap --targets 111111111111:eu-west-1`\n",
		"next: the CDK bootstrap is missing in aws://000000000000/us-east-1, aws://111111111111/eu-west-1: bootstrap as the errors above say, then deploy again: `cairn push ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal lacks %q", want)
		}
	}
	if n := cfnCallsAnywhere(em) - calls; n != 0 {
		t.Errorf("%d CloudFormation call(s) for a push refused before any", n)
	}
}
