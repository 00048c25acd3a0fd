package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
)

// localEnv runs `cairn local env --dir DIR` and returns the environment it prints, as
// `eval "$(cairn local env)"` sets it.
func localEnv(t *testing.T, dir string) map[string]string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"local", "env", "--dir", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("local env: exit %d, stderr %s", code, stderr.String())
	}
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		kv, _ := strings.CutPrefix(line, "export ")
		k, v, _ := strings.Cut(kv, "=")
		env[k] = strings.Trim(v, "'")
	}
	if env["AWS_ENDPOINT_URL"] == "" {
		t.Fatalf("local env printed no AWS_ENDPOINT_URL:\n%s", stdout.String())
	}
	return env
}

// toolEnv is the environment a user's shell gives a tool after `eval "$(cairn local env)"`:
// this process's, without AWS settings of its own (profiles, a CA bundle, other
// endpoints), with a home of its own (no ~/.aws, ~/.cdk or ~/.aws-sam of the machine's),
// and the exports of local env.
func toolEnv(t testing.TB, exports map[string]string) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "CAIRN_") || strings.HasPrefix(k, "CDK_") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+t.TempDir(), "CDK_DISABLE_CLI_TELEMETRY=true", "SAM_CLI_TELEMETRY=0", "NODE_NO_WARNINGS=1")
	for k, v := range exports {
		env = append(env, k+"="+v)
	}
	return env
}

// runTool runs a command line of a real tool in dir with env, and fails the test with its
// output when it fails.
func runTool(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	t.Logf("$ %s\n%s", strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// describeStack describes a stack by name through the SDK, against the emulator local up
// serves; ok is false when no live stack has the name.
func describeStack(t *testing.T, cfn *cloudformation.Client, name string) (cfntypes.Stack, bool) {
	t.Helper()
	out, err := cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return cfntypes.Stack{}, false
		}
		t.Fatal(err)
	}
	return out.Stacks[0], out.Stacks[0].StackStatus != cfntypes.StackStatusDeleteComplete
}

// stackResources lists a stack's resources as type by logical id.
func stackResources(t *testing.T, cfn *cloudformation.Client, name string) map[string]string {
	t.Helper()
	out, err := cfn.DescribeStackResources(context.Background(), &cloudformation.DescribeStackResourcesInput{StackName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, r := range out.StackResources {
		m[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.ResourceType)
	}
	return m
}

// originalTemplate is the template a stack was last given (a packaged SAM template names
// its code's S3 location).
func originalTemplate(t *testing.T, cfn *cloudformation.Client, name string) string {
	t.Helper()
	out, err := cfn.GetTemplate(context.Background(), &cloudformation.GetTemplateInput{StackName: aws.String(name), TemplateStage: cfntypes.TemplateStageOriginal})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.TemplateBody)
}

func tagsOf(s cfntypes.Stack) map[string]string {
	m := map[string]string{}
	for _, tag := range s.Tags {
		m[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	return m
}

// TestRealCDKCLIAgainstLocalUp runs the real CDK CLI, as a user does, against `cairn
// local up --cdk-bootstrap`: `cdk deploy --app cdk.out` of a CDK app's assembly
// (testdata/apps/cdk-workflow: a function whose code is a file asset, a state machine
// calling it) creates the stack with its assets published; a second `cdk deploy`, with a tag,
// updates the existing stack (the CLI first deletes a change set the stack does not have,
// which CloudFormation accepts); `cdk destroy --force` deletes it. Each is checked through
// the SDK. It skips where the CDK CLI is not installed (npm install -g aws-cdk).
func TestRealCDKCLIAgainstLocalUp(t *testing.T) {
	cdk, err := exec.LookPath("cdk")
	if err != nil {
		t.Skip("the CDK CLI is not installed (npm install -g aws-cdk)")
	}
	keepEnv(t)
	t.Setenv("AWS_CA_BUNDLE", "")
	dir := t.TempDir()
	_, stop := localUp(t, "--dir", dir, "--cdk-bootstrap")
	defer stop()
	exports := localEnv(t, dir)
	env := toolEnv(t, exports)
	app := realApp(t, "cdk-workflow")
	cfn := cfnClient(t)
	const stack = "WorkflowStack"
	const machine = "arn:aws:states:us-east-1:000000000000:stateMachine:cairn-order-workflow"

	// 1. Create.
	out := runTool(t, app, env, cdk, "deploy", "--app", "cdk.out", "--require-approval", "never", "--no-notices")
	if !strings.Contains(out, "WorkflowStack.StateMachineArn = "+machine) {
		t.Errorf("cdk deploy does not print the stack's output")
	}
	st, ok := describeStack(t, cfn, stack)
	if !ok || st.StackStatus != cfntypes.StackStatusCreateComplete || outputsOf(st)["StateMachineArn"] != machine {
		t.Fatalf("after cdk deploy: %s, outputs %v", st.StackStatus, outputsOf(st))
	}
	res := stackResources(t, cfn, stack)
	functions := 0
	for _, typ := range res {
		if typ == "AWS::Lambda::Function" {
			functions++
		}
	}
	if functions != 1 || res["Workflow193EF7C1"] != "AWS::StepFunctions::StateMachine" {
		t.Errorf("resources after cdk deploy: %v", res)
	}
	// The CLI published the function's code and the template to the CDK staging bucket.
	cfg, err := awsclient.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{workflowCodeKey, workflowTemplateKey} {
		if _, err := awsclient.S3(cfg).HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(cdkStaging), Key: aws.String(key)}); err != nil {
			t.Errorf("the asset %s is not in the CDK staging bucket: %v", key, err)
		}
	}

	// 2. Update the existing stack: the CLI deletes its change set name first, which the
	// stack does not have.
	var calls map[string]int
	emulatorGet(t, "/_local/calls", &calls)
	deleted := calls["cloudformation.DeleteChangeSet"]
	runTool(t, app, env, cdk, "deploy", "--app", "cdk.out", "--require-approval", "never", "--no-notices", "--tags", "team=real-cli")
	emulatorGet(t, "/_local/calls", &calls)
	if calls["cloudformation.DeleteChangeSet"] == deleted {
		t.Errorf("the CDK CLI called DeleteChangeSet %d times in all: the update did not go through it", deleted)
	}
	st, _ = describeStack(t, cfn, stack)
	if st.StackStatus != cfntypes.StackStatusUpdateComplete || tagsOf(st)["team"] != "real-cli" {
		t.Fatalf("after the second cdk deploy: %s, tags %v", st.StackStatus, tagsOf(st))
	}

	// 3. Destroy.
	runTool(t, app, env, cdk, "destroy", "--app", "cdk.out", "--force", "--no-notices")
	if st, ok := describeStack(t, cfn, stack); ok {
		t.Errorf("after cdk destroy the stack is %s", st.StackStatus)
	}
}

// TestRealSAMCLIAgainstLocalUp runs the real SAM CLI, as a user does, against `cairn local
// up`: `sam deploy` of a SAM app (testdata/apps/sam-schedule: a schedule invoking a
// function, a dead-letter queue; its code packaged by the CLI into the bucket --resolve-s3
// makes) creates the stack, a second
// `sam deploy` after a one-line code change updates it, `sam delete` deletes it; each
// checked through the SDK. It skips where the SAM CLI is not installed (pip install
// aws-sam-cli).
func TestRealSAMCLIAgainstLocalUp(t *testing.T) {
	sam, err := exec.LookPath("sam")
	if err != nil {
		t.Skip("the SAM CLI is not installed (pip install aws-sam-cli)")
	}
	keepEnv(t)
	t.Setenv("AWS_CA_BUNDLE", "")
	dir := t.TempDir()
	_, stop := localUp(t, "--dir", dir)
	defer stop()
	env := toolEnv(t, localEnv(t, dir))
	app := realApp(t, "sam-schedule")
	cfn := cfnClient(t)
	const stack = "sam-schedule"
	deploy := []string{sam, "deploy", "--template-file", "template.yaml", "--stack-name", stack, "--resolve-s3",
		"--capabilities", "CAPABILITY_IAM", "--no-confirm-changeset", "--no-fail-on-empty-changeset", "--region", "us-east-1"}

	// 1. Create.
	runTool(t, app, env, deploy...)
	st, ok := describeStack(t, cfn, stack)
	if !ok || st.StackStatus != cfntypes.StackStatusCreateComplete {
		t.Fatalf("after sam deploy: %s", st.StackStatus)
	}
	outputs := outputsOf(st)
	if outputs["ScheduleArn"] != "arn:aws:scheduler:us-east-1:000000000000:schedule/default/sam-schedule-tick" || !strings.HasSuffix(outputs["DeadLetterQueueUrl"], "/000000000000/sam-schedule-tick-dlq") {
		t.Errorf("outputs after sam deploy: %v", outputs)
	}
	if res := stackResources(t, cfn, stack); res["TickSchedule"] != "AWS::Scheduler::Schedule" || res["TickFunction"] != "AWS::Lambda::Function" || res["TickDeadLetterQueue"] != "AWS::SQS::Queue" {
		t.Errorf("resources after sam deploy: %v", res)
	}
	before := originalTemplate(t, cfn, stack)

	// 2. A one-line code change updates the existing stack.
	edit(t, app, "src/tick/app.py", "import json", "import json  # touched")
	runTool(t, app, env, deploy...)
	st, _ = describeStack(t, cfn, stack)
	if after := originalTemplate(t, cfn, stack); st.StackStatus != cfntypes.StackStatusUpdateComplete || after == before {
		t.Fatalf("after the second sam deploy: %s, the template naming the code unchanged:\n%s", st.StackStatus, after)
	}

	// 3. Delete.
	runTool(t, app, env, sam, "delete", "--stack-name", stack, "--no-prompts", "--region", "us-east-1")
	if st, ok := describeStack(t, cfn, stack); ok {
		t.Errorf("after sam delete the stack is %s", st.StackStatus)
	}
}
