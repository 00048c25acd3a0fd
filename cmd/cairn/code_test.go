package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/artifact"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/benchbundle"
	"github.com/cairn-dev/cairn/internal/template"
)

// cfnWrites are the CloudFormation calls that change something.
var cfnWrites = []string{"CreateChangeSet", "ExecuteChangeSet", "DeleteChangeSet", "CreateStack", "UpdateStack", "DeleteStack",
	"SetStackPolicy", "UpdateTerminationProtection", "ContinueUpdateRollback", "RollbackStack"}

// TestPushCarriesCode: a bundle whose templates name local code (a SAM function with
// CodeUri: src/ and a layer, a function with Code: ./dist/fn.zip, a state machine with its
// definition in a file) is pushed through the CLI: the code is packaged into cairn's bucket,
// content addressed, and the functions read it from there. One source file changed makes
// exactly the stack naming it update, its function's code now at the new hash, and the
// plan, the pull-request comment and `cairn diff` say which code changed. Pushing the same
// content again makes no CloudFormation write and stores no artifact.
func TestPushCarriesCode(t *testing.T) {
	em, s3c := deployEmulator(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	ctx := context.Background()
	dir := copyBundle(t, "code")
	if out := cairnOK(t, "validate", dir); !strings.Contains(out, ": ok: 3 stacks") {
		t.Fatalf("validate: %s", out)
	}
	if out := cairnOK(t, append([]string{"push", dir, "--deployment", "code"}, followFlags...)...); !strings.Contains(out, ": 3 created, 0 updated,") {
		t.Fatalf("push:\n%s", out)
	}
	handler := functionCode(t, em, "code-orders-handler")
	if handler.S3Bucket != localBucket || !regexp.MustCompile(`^assets/[0-9a-f]{64}\.zip$`).MatchString(handler.S3Key) {
		t.Fatalf("the SAM function's code is %+v, want assets/SHA256.zip in cairn's bucket", handler)
	}
	// the prebuilt zip is stored as it is: its key is its own sha256
	zipped, err := os.ReadFile(filepath.Join(dir, "worker/dist/fn.zip"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(zipped)
	if worker := functionCode(t, em, "code-worker-worker"); worker.S3Key != "assets/"+hex.EncodeToString(sum[:])+".zip" {
		t.Errorf("the worker's code is %+v, want dist/fn.zip as it is, at its sha256", worker)
	}
	// every key is the sha256 of its object (the state machine's definition and the layer too)
	assets := assetVersions(t, s3c)
	if len(assets) != 4 {
		t.Errorf("%d objects under assets/, want the handler's code, the layer, the worker's zip and the definition: %v", len(assets), assets)
	}
	for key := range assets {
		o, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(localBucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if _, err := io.Copy(h, o.Body); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(key, "assets/"+hex.EncodeToString(h.Sum(nil))) {
			t.Errorf("%s is not addressed by its content", key)
		}
	}

	// One source file changes.
	edit(t, dir, "orders/src/app.py", "greeting(\"orders\")", "greeting(\"orders v2\")")
	codeChanged := regexp.MustCompile(`code changed \(orders/src/, sha256 [0-9a-f]{12}… → [0-9a-f]{12}…\)`)
	out, code := cairnRun(t, "diff", dir, "--deployment", "code")
	if code != 1 || !codeChanged.MatchString(out) || strings.Contains(out, "stack worker") || strings.Contains(out, "stack flow") {
		t.Errorf("diff exited %d:\n%s\nwant exit 1 and the orders stack's code changed, only", code, out)
	}
	t.Logf("cairn diff:\n%s", out)
	resetCalls(t, em)
	before := assetVersions(t, s3c)
	out = cairnOK(t, append([]string{"push", dir, "--deployment", "code"}, followFlags...)...)
	if !strings.Contains(out, ": 0 created, 1 updated,") {
		t.Fatalf("push after a source change:\n%s", out)
	}
	if updated := cfnCalls(em, "ExecuteChangeSet"); updated != 1 {
		t.Errorf("%d change sets executed, want the orders stack's alone", updated)
	}
	after := functionCode(t, em, "code-orders-handler")
	t.Logf("the handler's code: %s (CodeSha256 %s) after the change, %s (%s) before", after.S3Key, after.CodeSha256, handler.S3Key, handler.CodeSha256)
	if after.S3Key == handler.S3Key || after.CodeSha256 == handler.CodeSha256 || !strings.HasPrefix(after.S3Key, "assets/") {
		t.Errorf("the handler's code is %+v after the change, was %+v", after, handler)
	}
	added := newKeys(before, assetVersions(t, s3c))
	if len(added) != 1 || added[0] != after.S3Key {
		t.Errorf("artifacts stored by the push: %v, want the new code only, %s", added, after.S3Key)
	}

	// The layer changes, through a reviewed plan: its comment says which code changed.
	edit(t, dir, "orders/layer/python/shared.py", `"hello from "`, `"hello again from "`)
	out = cairnOK(t, append([]string{"plan", dir, "--deployment", "code", "--format", "md"}, followFlags...)...)
	layerChanged := regexp.MustCompile(`code changed \(orders/layer/, sha256 [0-9a-f]{12}… → [0-9a-f]{12}…\)`)
	if !layerChanged.MatchString(out) || strings.Count(out, "| update |") != 1 {
		t.Errorf("the plan's comment does not say which code changed, for the one stack updated:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "| update |") {
			t.Logf("the plan's comment: %s", line)
		}
	}
	id := regexp.MustCompile("cairn approve code ([0-9a-f-]+)").FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("no plan id in:\n%s", out)
	}
	if out := cairnOK(t, append([]string{"approve", "code", id[1]}, followFlags...)...); !strings.Contains(out, "1 updated") {
		t.Fatalf("approve:\n%s", out)
	}

	// The same content again: nothing written.
	resetCalls(t, em)
	before = assetVersions(t, s3c)
	out = cairnOK(t, append([]string{"push", dir, "--deployment", "code"}, followFlags...)...)
	if !strings.Contains(out, ": 0 created, 0 updated,") {
		t.Fatalf("unchanged push:\n%s", out)
	}
	writes := 0
	for _, w := range cfnWrites {
		writes += cfnCalls(em, w)
	}
	if writes != 0 {
		t.Errorf("an unchanged push made %d CloudFormation writes: %v", writes, em.Calls())
	}
	if added := newKeys(before, assetVersions(t, s3c)); len(added) != 0 {
		t.Errorf("an unchanged push stored artifacts %v", added)
	}
	t.Logf("unchanged re-push: %d CloudFormation writes, %d artifacts stored; s3.PutObject %d (run and state documents)", writes, 0, em.Calls()["s3.PutObject"])
}

func functionCode(t *testing.T, em *awslocal.Emulator, name string) awslocal.FunctionCode {
	t.Helper()
	f, ok := em.Function(name)
	if !ok {
		t.Fatalf("no function %s", name)
	}
	return f.Code
}

// assetVersions counts the versions of each object under assets/ of cairn's bucket: a
// PutObject there makes one more.
func assetVersions(t *testing.T, s3c *s3.Client) map[string]int {
	t.Helper()
	out, err := s3c.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(localBucket), Prefix: aws.String("assets/")})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	for _, v := range out.Versions {
		m[aws.ToString(v.Key)]++
	}
	return m
}

// newKeys lists the writes between two counts: keys with more versions after.
func newKeys(before, after map[string]int) []string {
	var out []string
	for k, n := range after {
		for range n - before[k] {
			out = append(out, k)
		}
	}
	return out
}

func resetCalls(t *testing.T, em *awslocal.Emulator) {
	t.Helper()
	resp, err := http.Post(em.URL()+"/_local/calls/reset", "application/json", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("reset calls: %v %v", resp, err)
	}
	resp.Body.Close()
}

func cfnCalls(em *awslocal.Emulator, action string) int { return em.Calls()["cloudformation."+action] }

// cairnRun runs cairn and returns its standard output and exit code.
func cairnRun(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var stdout, stderr strings.Builder
	code := run(args, &stdout, &stderr)
	return stdout.String() + stderr.String(), code
}

// TestPlanAndPushRefuseNestedFanOut: twenty templates each nesting the next one twice
// would make 2,097,150 nested stacks. `cairn plan` and `cairn push` refuse the bundle at
// once, exit 1, naming the count and CloudFormation's quota, and upload nothing. Set
// CAIRN_HOSTILE_BUNDLE=DIR to keep the generated bundle there (to time the CLI on it with
// /usr/bin/time -v).
func TestPlanAndPushRefuseNestedFanOut(t *testing.T) {
	_, s3c := deployEmulator(t)
	dir := t.TempDir()
	if keep := os.Getenv("CAIRN_HOSTILE_BUNDLE"); keep != "" {
		dir = keep
	}
	if err := benchbundle.WriteFiles(dir, benchbundle.DoublingNested("hostile", 20)); err != nil {
		t.Fatal(err)
	}
	want := "cairn.yaml:4:20: stacks[0].template_path: stack app: template templates/app.yaml makes 2,097,150 nested stacks holding 3,145,726 resources in all (a template nested twice counts twice), more than the 2,500 resources CloudFormation creates, updates or deletes in one operation of a stack and its nested stacks"
	for _, cmd := range []string{"plan", "push"} {
		out, code := cairnRun(t, cmd, dir, "--deployment", "hostile", "--bucket", localBucket)
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("cairn %s exited %d:\n%s\nwant 1 and %q", cmd, code, out, want)
		}
	}
	out, err := s3c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(localBucket)})
	if err != nil || len(out.Contents) != 0 {
		t.Errorf("the refused bundle left objects in the bucket: %v, %v", out, err)
	}
}

// TestPackagedFormsMatchTheAWSCLI: `aws cloudformation package` (the installed AWS CLI,
// against the emulator's S3) and cairn package the same templates — the code bundle's and
// one with every kind of packaged property — into the same forms: each property the CLI
// rewrites, cairn rewrites, to an s3:// string where the CLI writes one and to an object
// with the same keys where the CLI writes one.
func TestPackagedFormsMatchTheAWSCLI(t *testing.T) {
	if _, err := exec.LookPath("aws"); err != nil {
		t.Skip("the AWS CLI is not installed (apt-get install awscli)")
	}
	em, s3c := deployEmulator(t)
	if _, err := s3c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("cli-artifacts")}); err != nil {
		t.Fatal(err)
	}
	dir := copyBundle(t, "code")
	for name, body := range map[string]string{
		"every/template.yaml": everyKind,
		"every/src/app.py":    "def handler(e, c): return 1\n", "every/api.yaml": "openapi: 3.0.1\n", "every/sm.json": "{}",
		"every/schema.graphql": "type Query { a: String }\n", "every/req.vtl": "{}", "every/etl.py": "print(1)\n",
		"every/bundle.zip": "", "every/repo/README.md": "x\n", "every/README.md": "x\n", "every/snippet.yaml": "Type: AWS::SNS::Topic\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tpl := range []string{"orders/template.yaml", "worker/template.yaml", "flow/template.yaml", "every/template.yaml"} {
		t.Run(tpl, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "packaged.yaml")
			cmd := exec.Command("aws", "--endpoint-url", em.URL(), "cloudformation", "package", "--template-file", filepath.Join(dir, tpl),
				"--s3-bucket", "cli-artifacts", "--output-template-file", out)
			cmd.Env = append(os.Environ(), "AWS_DEFAULT_REGION=us-east-1", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_PAGER=")
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("aws cloudformation package: %v\n%s", err, b)
			}
			cli, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			body, err := os.ReadFile(filepath.Join(dir, tpl))
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := template.Parse(body)
			if err != nil {
				t.Fatal(err)
			}
			tree := &template.Tree{Template: parsed, Path: tpl, Assets: artifact.NewSet(os.DirFS(dir))}
			p, err := tree.Package(nil, "cairn-assets")
			if err != nil {
				t.Fatal(err)
			}
			theirs, ours := forms(t, cli), forms(t, p.Body)
			if len(theirs) == 0 {
				t.Fatal("the CLI packaged nothing")
			}
			t.Logf("%d properties packaged alike: %v", len(theirs), theirs)
			for at, form := range theirs {
				if ours[at] != form {
					t.Errorf("%s: the CLI packages it as %s, cairn as %q", at, form, ours[at])
				}
			}
			for at, form := range ours {
				if theirs[at] == "" {
					t.Errorf("%s: cairn packages it as %s, the CLI leaves it", at, form)
				}
			}
		})
	}
}

// everyKind names a local artifact in most of the properties the AWS CLI packages.
const everyKind = `Transform: AWS::Serverless-2016-10-31
Metadata:
  AWS::ServerlessRepo::Application: {Name: app, Description: d, Author: a, ReadmeUrl: README.md}
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties: {Handler: app.handler, Runtime: python3.12, CodeUri: src/}
  Layer:
    Type: AWS::Serverless::LayerVersion
    Properties: {ContentUri: src/}
  Api:
    Type: AWS::Serverless::Api
    Properties: {StageName: prod, DefinitionUri: api.yaml}
  Machine:
    Type: AWS::Serverless::StateMachine
    Properties: {DefinitionUri: sm.json}
  Plain:
    Type: AWS::Lambda::Function
    Properties: {Handler: app.handler, Runtime: python3.12, Role: r, Code: src}
  PlainLayer:
    Type: AWS::Lambda::LayerVersion
    Properties: {Content: src}
  Rest:
    Type: AWS::ApiGateway::RestApi
    Properties: {BodyS3Location: api.yaml}
  Schema:
    Type: AWS::AppSync::GraphQLSchema
    Properties: {ApiId: x, DefinitionS3Location: schema.graphql}
  Resolver:
    Type: AWS::AppSync::Resolver
    Properties: {ApiId: x, TypeName: Query, FieldName: a, RequestMappingTemplateS3Location: req.vtl, ResponseMappingTemplateS3Location: req.vtl}
  Sfn:
    Type: AWS::StepFunctions::StateMachine
    Properties: {RoleArn: r, DefinitionS3Location: sm.json}
  Job:
    Type: AWS::Glue::Job
    Properties: {Role: r, Command: {Name: glueetl, ScriptLocation: etl.py}}
  Version:
    Type: AWS::ElasticBeanstalk::ApplicationVersion
    Properties: {ApplicationName: a, SourceBundle: src}
  Repo:
    Type: AWS::CodeCommit::Repository
    Properties: {RepositoryName: r, Code: {S3: repo}}
  Topic:
    Type: AWS::SNS::Topic
    Properties:
      Fn::Transform: {Name: AWS::Include, Parameters: {Location: snippet.yaml}}
`

// forms reads a packaged template's S3 locations: for each property path holding one, "s3"
// for an s3:// string or the object's sorted keys.
func forms(t *testing.T, body []byte) map[string]string {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(body, &doc); err != nil {
		t.Fatalf("packaged template: %v\n%s", err, body)
	}
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case string:
			if strings.HasPrefix(x, "s3://") || strings.HasPrefix(x, "https://") && strings.Contains(x, "/templates/") {
				out[path] = "s3"
			}
		case map[string]any:
			keys := slices.Sorted(maps.Keys(x))
			if slices.Contains(keys, "S3Key") || slices.Contains(keys, "Key") && slices.Contains(keys, "Bucket") {
				for _, k := range []string{"Version", "ObjectVersion", "S3ObjectVersion"} {
					keys = slices.DeleteFunc(keys, func(s string) bool { return s == k })
				}
				out[path] = strings.Join(keys, ",")
				return
			}
			for _, k := range keys {
				walk(path+"."+k, x[k])
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk("", doc)
	return out
}
