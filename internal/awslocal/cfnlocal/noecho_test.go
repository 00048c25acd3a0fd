package cfnlocal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

const noEchoTemplate = `Parameters:
  Secret: {Type: String, NoEcho: true}
  Plain: {Type: String, Default: visible}
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      Tags: [{Key: token, Value: !Sub "Bearer ${Secret}"}, {Key: plain, Value: !Ref Plain}]
Outputs:
  Echo: {Value: !Ref Secret}
`

// NoEcho values are "****" in every describe call (stacks, change sets, stack events and
// their notifications), as AWS shows them; on disk they are sealed, and the emulator
// started again on the same folder unseals them (an update with UsePreviousValue works).
// Outputs are shown as given, as AWS documents.
func TestNoEchoValuesAreMaskedAndSealed(t *testing.T) {
	const secret = "hunter2-s3cr3t<&>"
	dir := t.TempDir()
	e := newEnv(t, func(o *Options) { o.Dir = dir })
	ctx := context.Background()
	cs := e.settledChangeSet(&cloudformation.CreateChangeSetInput{StackName: aws.String("secret"), ChangeSetName: aws.String("c1"),
		ChangeSetType: types.ChangeSetTypeCreate, TemplateBody: aws.String(noEchoTemplate),
		NotificationARNs: []string{"arn:aws:sns:us-east-1:000000000000:events"},
		Parameters:       sdkParams(map[string]string{"Secret": secret})})
	if got := paramMap(cs.Parameters); got["Secret"] != "****" {
		t.Errorf("DescribeChangeSet parameters %v, want Secret masked", got)
	}
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{ChangeSetName: cs.ChangeSetId}); err != nil {
		t.Fatal(err)
	}
	st := e.settle("secret")
	if got := paramMap(st.Parameters); got["Secret"] != "****" {
		t.Errorf("DescribeStacks parameters %v, want Secret masked", got)
	}
	if out := outputs(st); out["Echo"] != secret {
		t.Errorf("output %q: outputs are shown as given", out["Echo"])
	}
	sawProps := false
	for _, ev := range e.allEvents("secret") {
		p := aws.ToString(ev.ResourceProperties)
		if strings.Contains(p, "hunter2") {
			t.Errorf("stack event %s shows the secret: %s", eventLine(ev), p)
		}
		sawProps = sawProps || strings.Contains(p, `Bearer ****`)
	}
	if !sawProps {
		t.Error("no stack event shows the masked property")
	}
	for _, p := range e.published() {
		if strings.Contains(p.Message, "hunter2") {
			t.Errorf("notification shows the secret: %s", p.Message)
		}
	}

	// on disk, sealed
	if err := e.svc.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	sealed := false
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("hunter2")) {
			t.Errorf("%s holds the secret in clear", filepath.Base(f))
		}
		sealed = sealed || bytes.Contains(b, []byte("{{cairn:sealed:"))
	}
	if !sealed {
		t.Errorf("no state file under %s holds a sealed value: %v", dir, files)
	}

	// started again on the folder, it has the value: an update with UsePreviousValue keeps it
	e2 := newEnv(t, func(o *Options) { o.Dir = dir })
	if out := outputs(e2.stack("secret")); out["Echo"] != secret {
		t.Fatalf("after a restart the output is %q", out["Echo"])
	}
	if _, err := e2.cfn.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("secret"), UsePreviousTemplate: aws.Bool(true),
		Parameters: []types.Parameter{{ParameterKey: aws.String("Secret"), UsePreviousValue: aws.Bool(true)}, {ParameterKey: aws.String("Plain"), ParameterValue: aws.String("changed")}}}); err != nil {
		t.Fatal(err)
	}
	st = e2.settle("secret")
	if st.StackStatus != types.StackStatusUpdateComplete || outputs(st)["Echo"] != secret {
		t.Errorf("update with UsePreviousValue: %s, output %q", st.StackStatus, outputs(st)["Echo"])
	}
}

func paramMap(ps []types.Parameter) map[string]string {
	out := map[string]string{}
	for _, p := range ps {
		out[aws.ToString(p.ParameterKey)] = aws.ToString(p.ParameterValue)
	}
	return out
}
