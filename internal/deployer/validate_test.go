package deployer_test

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/run"
)

// TestInvalidTemplateMakesNoCloudFormationCall: a bundle whose template CloudFormation
// would refuse fails its run before the first CloudFormation call, with every problem in
// the run document.
func TestInvalidTemplateMakesNoCloudFormationCall(t *testing.T) {
	w := newWorld(t, worldOptions{})
	dir := copyBundle(t, "../../testdata/bundles/invalid/template-spec")
	before := w.cfnCalls()
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.RunFailed || !strings.Contains(doc.Run.Reason, "invalid bundle: 6 error(s); nothing was changed") {
		t.Fatalf("run %s (%s), want failed as an invalid bundle", doc.Run.Status, doc.Run.Reason)
	}
	errs := strings.Join(doc.Errors, "\n")
	for _, want := range []string{
		`templates/queue.yaml:13:5: Resources.Dlq.Type: unknown resource type "AWS::SQS::Queu" (did you mean "AWS::SQS::Queue"?)`,
		`templates/queue.yaml:11:7: Resources.Queue.Properties.VisibiltyTimeout: unknown property "VisibiltyTimeout"`,
		`cairn.yaml:10:5: stacks[1].capabilities: stack service: capabilities [CAPABILITY_IAM] do not cover CAPABILITY_NAMED_IAM`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("run errors lack %q:\n%s", want, errs)
		}
	}
	if after := w.cfnCalls(); !maps.Equal(before, after) {
		t.Errorf("CloudFormation calls %v -> %v, want none", before, after)
	}
	if live := w.stacks(); len(live) != 0 {
		t.Errorf("stacks exist: %v", live)
	}
}

// TestRuntimesJudgedOnTheDeployersClock: the deployer judges Lambda runtimes on its own
// clock's date (config.LoadOptions.Today): a function on nodejs20.x deploys the day before
// AWS blocks creating functions with it (2027-02-01), and the same bundle fails validation
// on that day, before any CloudFormation call. Each world's clock is set to its day, so the
// test holds whatever the date it runs.
func TestRuntimesJudgedOnTheDeployersClock(t *testing.T) {
	files := map[string]string{
		"cairn.yaml": "namespace: shop\nstacks:\n  - name: fn\n    template_path: templates/fn.yaml\n",
		"templates/fn.yaml": `AWSTemplateFormatVersion: "2010-09-09"
Resources:
  Role:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument:
        Version: "2012-10-17"
        Statement:
          - {Effect: Allow, Principal: {Service: lambda.amazonaws.com}, Action: sts:AssumeRole}
  Fn:
    Type: AWS::Lambda::Function
    Properties:
      Role: !GetAtt Role.Arn
      Runtime: nodejs20.x
      Handler: index.handler
      Code: {ZipFile: "exports.handler = async () => ({})"}
`,
	}
	dir := t.TempDir()
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("the day before the block", func(t *testing.T) {
		w := newWorld(t, worldOptions{})
		w.clk.Set(time.Date(2027, 1, 31, 12, 0, 0, 0, time.UTC))
		doc := w.wait("shop", w.push("shop", dir))
		if doc.Run.Status != run.Succeeded {
			t.Fatalf("run %s (%s) %q, want succeeded: AWS creates nodejs20.x functions until 2027-02-01", doc.Run.Status, doc.Run.Reason, doc.Errors)
		}
	})
	t.Run("the day of the block", func(t *testing.T) {
		w := newWorld(t, worldOptions{})
		w.clk.Set(time.Date(2027, 2, 1, 12, 0, 0, 0, time.UTC))
		before := w.cfnCalls()
		doc := w.wait("shop", w.push("shop", dir))
		want := "templates/fn.yaml:14:16: Resources.Fn.Properties.Runtime: Lambda runtime nodejs20.x is deprecated: AWS blocked creating functions with it on 2027-02-01, and blocks updating them on 2027-03-03: move to nodejs24.x"
		if doc.Run.Status != run.RunFailed || len(doc.Errors) != 1 || !strings.HasSuffix(doc.Errors[0], want) {
			t.Fatalf("run %s (%s) with errors %q, want failed with %q", doc.Run.Status, doc.Run.Reason, doc.Errors, want)
		}
		if after := w.cfnCalls(); !maps.Equal(before, after) {
			t.Errorf("CloudFormation calls %v -> %v, want none", before, after)
		}
	})
}

// TestIAMWithoutCapabilitiesDeploys: a stack with IAM resources and no capabilities key is
// granted what its template needs (here CAPABILITY_NAMED_IAM for a named role), deploys,
// and its report says what was granted.
func TestIAMWithoutCapabilitiesDeploys(t *testing.T) {
	w := newWorld(t, worldOptions{})
	dir := t.TempDir()
	files := map[string]string{
		"cairn.yaml": "namespace: shop\nstacks:\n  - name: worker\n    template_path: templates/worker.yaml\n  - name: topic\n    template_path: templates/topic.yaml\n",
		"templates/worker.yaml": `AWSTemplateFormatVersion: "2010-09-09"
Resources:
  Role:
    Type: AWS::IAM::Role
    Properties:
      RoleName: !Sub "${AWS::StackName}-worker"
      AssumeRolePolicyDocument:
        Version: "2012-10-17"
        Statement:
          - {Effect: Allow, Principal: {Service: lambda.amazonaws.com}, Action: sts:AssumeRole}
Outputs:
  RoleArn: {Value: !GetAtt Role.Arn}
`,
		"templates/topic.yaml": "AWSTemplateFormatVersion: \"2010-09-09\"\nResources:\n  Topic: {Type: AWS::SNS::Topic}\n",
	}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("run %s (%s); stacks %v", doc.Run.Status, doc.Run.Reason, phases(doc))
	}
	if st := w.stacks()["shop-worker"]; !strings.HasSuffix(string(st.StackStatus), "_COMPLETE") || len(st.Capabilities) != 1 || st.Capabilities[0] != "CAPABILITY_NAMED_IAM" {
		t.Errorf("shop-worker: %s, capabilities %v, want CREATE_COMPLETE with exactly CAPABILITY_NAMED_IAM", st.StackStatus, st.Capabilities)
	}
	if st := w.stacks()["shop-topic"]; len(st.Capabilities) != 0 {
		t.Errorf("shop-topic was granted %v, want nothing", st.Capabilities)
	}
	report := w.object("runs/shop/" + doc.Run.ID + ".md")
	if !strings.Contains(report, "- worker (shop-worker): create — new stack; capabilities: CAPABILITY_NAMED_IAM (granted: the template needs it)") {
		t.Errorf("report does not show the granted capability:\n%s", report)
	}
}
