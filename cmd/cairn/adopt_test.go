package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
)

// TestAdoptingAStackMadeOutsideCairn: a push naming a stack someone made without cairn is
// refused with the exact command that tags it (every cairn tag with its value, the
// stack's own tags and parameters kept); that command, run as printed with the AWS CLI
// against the emulator, makes the next push adopt the stack (updated in place, its
// parameter's value kept, its tags cairn.yaml's, as the refusal warns).
func TestAdoptingAStackMadeOutsideCairn(t *testing.T) {
	if _, err := exec.LookPath("aws"); err != nil {
		t.Skip("the AWS CLI is not installed (apt-get install awscli)")
	}
	em, _ := deployEmulator(t, 20*time.Millisecond)
	t.Setenv("CAIRN_BUCKET", localBucket)
	ctx := context.Background()
	cfg, err := awsclient.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfn := cloudformation.NewFromConfig(cfg)
	body := "Parameters:\n  Size: {Type: String}\nResources:\n  Q: {Type: AWS::SQS::Queue, Properties: {DelaySeconds: 1}}\nOutputs:\n  Size: {Value: !Ref Size}\n"
	if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("legacy-app"), TemplateBody: aws.String(body),
		Parameters: []cfntypes.Parameter{{ParameterKey: aws.String("Size"), ParameterValue: aws.String("large")}},
		Tags:       []cfntypes.Tag{{Key: aws.String("owner"), Value: aws.String("another team")}}}); err != nil {
		t.Fatal(err)
	}
	describe := func() cfntypes.Stack {
		t.Helper()
		out, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("legacy-app")})
		if err != nil {
			t.Fatal(err)
		}
		return out.Stacks[0]
	}
	settle := func() cfntypes.Stack {
		t.Helper()
		for i := 0; i < 3000; i++ {
			if s := describe(); !strings.HasSuffix(string(s.StackStatus), "_IN_PROGRESS") {
				return s
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("stack legacy-app did not settle")
		return cfntypes.Stack{}
	}
	settle()

	dir := t.TempDir()
	for name, b := range map[string]string{
		"cairn.yaml": "namespace: legacy\ntags: {team: web}\nstacks:\n  - name: app\n    template_path: app.yaml\n    parameters: {Size: large}\n",
		"app.yaml":   body,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, code := cairnRun(t, append([]string{"push", dir, "--deployment", "legacy"}, followFlags...)...)
	t.Logf("refused push (exit %d):\n%s", code, out)
	m := regexp.MustCompile("(?m)^  refused: stack legacy-app exists but cairn did not create it \\(no cairn:\\* tags\\): rename the stack in the config, or adopt it: tag it with cairn:namespace=legacy, cairn:graph-key=legacy, cairn:name=app \\(the command keeps its template, parameters and tags, and adds cairn's\\), then push again: `(aws cloudformation update-stack [^`]+)`; the push that adopts it gives it the tags of cairn.yaml, which lacks owner: add it under tags to keep it$").FindStringSubmatch(out)
	if code != 1 || m == nil {
		t.Fatalf("the push was not refused with the tagging command")
	}
	want := "aws cloudformation update-stack --stack-name legacy-app --use-previous-template --parameters ParameterKey=Size,UsePreviousValue=true --capabilities CAPABILITY_IAM CAPABILITY_NAMED_IAM CAPABILITY_AUTO_EXPAND --tags Key=cairn:namespace,Value=legacy Key=cairn:graph-key,Value=legacy Key=cairn:name,Value=app Key=cairn:bundle-sha256,Value="
	if !strings.HasPrefix(m[1], want) || !strings.HasSuffix(m[1], " 'Key=owner,Value=another team'") {
		t.Errorf("the command %q, want it to start %q and keep the stack's own tag", m[1], want)
	}
	if !strings.Contains(out, "next: the run was refused: a stack of the config exists, but cairn did not create it: tag it to adopt it (or rename the stack in the config), then deploy again: `"+m[1]+"`, then `cairn push ") {
		t.Errorf("next: does not name the command")
	}

	// The command as printed, by the AWS CLI, through a shell.
	cmd := exec.Command("sh", "-c", m[1])
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+em.URL(), "AWS_DEFAULT_REGION=us-east-1", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_PAGER=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", m[1], err, b)
	}
	tagged := settle()
	out = cairnOK(t, append([]string{"push", dir, "--deployment", "legacy"}, followFlags...)...)
	if !strings.Contains(out, ": 0 created, 1 updated, 0 deleted") {
		t.Errorf("the push after tagging does not adopt the stack:\n%s", out)
	}
	after := describe()
	if aws.ToString(after.StackId) != aws.ToString(tagged.StackId) {
		t.Errorf("the stack was replaced")
	}
	tags := map[string]string{}
	for _, tg := range after.Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	if tags["cairn:namespace"] != "legacy" || tags["cairn:name"] != "app" || tags["team"] != "web" {
		t.Errorf("the adopted stack's tags %v", tags)
	}
	if len(after.Parameters) != 1 || aws.ToString(after.Parameters[0].ParameterValue) != "large" {
		t.Errorf("the adopted stack's parameters %v", after.Parameters)
	}
}
