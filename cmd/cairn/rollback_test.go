package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/localcairn"
	"github.com/cairn-dev/cairn/internal/state"
)

const paramTemplate = "Parameters:\n  Value:\n    Type: String\nResources:\n  P:\n    Type: AWS::SSM::Parameter\n    Properties:\n      Type: String\n      Value: !Ref Value\nOutputs:\n  Name:\n    Value: !Ref P\n"

// versionDir writes a bundle of independent stacks a, b (holding value) and, when withC,
// c; each stack named in after depends on the one before it.
func versionDir(t *testing.T, value string, withC bool) string {
	t.Helper()
	dir := t.TempDir()
	cfg := "namespace: rb\ndeletion_policy: {max_deletions: 1}\nstacks:\n" +
		"  - name: a\n    template_path: param.yaml\n    parameters: {Value: " + value + "}\n" +
		"  - name: b\n    template_path: param.yaml\n    parameters: {Value: '${output a::Name}-" + value + "'}\n"
	if withC {
		cfg += "  - name: c\n    template_path: param.yaml\n    parameters: {Value: '${output b::Name}'}\n"
	}
	for name, body := range map[string]string{"cairn.yaml": cfg, "param.yaml": paramTemplate} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func cfnClient(t *testing.T) *cloudformation.Client {
	t.Helper()
	cfg, err := awsclient.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cloudformation.NewFromConfig(cfg)
}

// liveStacks returns the deployments' live stacks by name (cairn's own stack left out).
func liveStacks(t *testing.T, cfn *cloudformation.Client) map[string]cfntypes.Stack {
	t.Helper()
	out := map[string]cfntypes.Stack{}
	p := cloudformation.NewDescribeStacksPaginator(cfn, &cloudformation.DescribeStacksInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Stacks {
			// cairn's own stack (localcairn) is not one of the deployments'.
			if s.StackStatus != cfntypes.StackStatusDeleteComplete && aws.ToString(s.StackName) != localcairn.StackName {
				out[aws.ToString(s.StackName)] = s
			}
		}
	}
	return out
}

func param(s cfntypes.Stack, key string) string {
	for _, p := range s.Parameters {
		if aws.ToString(p.ParameterKey) == key {
			return aws.ToString(p.ParameterValue)
		}
	}
	return ""
}

// TestRollbackRollsForwardToTheEarlierBundle deploys v1, then v2 (changes a and b,
// removes c), then `cairn rollback --to V1_GIT_REF --approve`: the plan shows a and b
// returning and c re-created, and once applied the stacks hold v1's values again.
func TestRollbackRollsForwardToTheEarlierBundle(t *testing.T) {
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	waitArgs := []string{"--wait", "--poll", "20ms", "--timeout", "1m"}
	v1 := versionDir(t, "one", true)
	ref1 := gitInit(t, v1, "https://example.com/rb.git")
	var stdout, stderr bytes.Buffer
	for _, dir := range []string{v1, versionDir(t, "two", false)} {
		stdout.Reset()
		if code := run(append([]string{"push", dir, "--deployment", "rb"}, waitArgs...), &stdout, &stderr); code != 0 {
			t.Fatalf("push exited %d:\n%s\n%s", code, stdout.String(), stderr.String())
		}
	}
	cfn := cfnClient(t)
	want1 := liveStacks(t, cfn)
	if _, ok := want1["rb-c"]; ok {
		t.Fatalf("v2 did not delete rb-c")
	}
	stdout.Reset()
	code := run(append([]string{"rollback", "rb", "--to", ref1[:10], "--approve"}, waitArgs...), &stdout, &stderr)
	out := stdout.String()
	if code != 0 {
		t.Fatalf("rollback exited %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	for _, want := range []string{"git " + ref1, "a  ", "rb-a  update", "rb-b  update", "rb-c  create", "apply run ", "succeeded"} {
		if !strings.Contains(out, want) {
			t.Errorf("rollback output lacks %q:\n%s", want, out)
		}
	}
	live := liveStacks(t, cfn)
	a, b, c := live["rb-a"], live["rb-b"], live["rb-c"]
	if param(a, "Value") != "one" || !strings.HasSuffix(param(b, "Value"), "-one") || c.StackStatus != cfntypes.StackStatusCreateComplete {
		t.Errorf("after rollback: a=%q b=%q c=%s, want v1's values and c re-created", param(a, "Value"), param(b, "Value"), c.StackStatus)
	}
	var bName string
	for _, o := range b.Outputs {
		if aws.ToString(o.OutputKey) == "Name" {
			bName = aws.ToString(o.OutputValue)
		}
	}
	if got := param(c, "Value"); got == "" || got != bName {
		t.Errorf("re-created c reads %q, want b's output Name %q", got, bName)
	}
}

// TestDestroyOnlyThroughApproval plans the deletion of a 3-stack chain: nothing is
// deleted by the plan; the approval deletes every stack, dependents first, and removes
// the emptied graph's state object, saying so.
func TestDestroyOnlyThroughApproval(t *testing.T) {
	s3c := deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	waitArgs := []string{"--wait", "--poll", "20ms", "--timeout", "1m"}
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"push", versionDir(t, "one", true), "--deployment", "rb"}, waitArgs...), &stdout, &stderr); code != 0 {
		t.Fatalf("push exited %d:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	cfn := cfnClient(t)
	stdout.Reset()
	if code := run(append([]string{"destroy", "rb"}, waitArgs...), &stdout, &stderr); code != 0 {
		t.Fatalf("destroy exited %d:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	m := regexp.MustCompile(`plan id: (\S+)`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "! delete stack rb-a") || !strings.Contains(out, "! delete stack rb-c") {
		t.Fatalf("destroy plan:\n%s", out)
	}
	before := liveStacks(t, cfn)
	if len(before) != 3 {
		t.Fatalf("%d stacks left before approval, want all 3", len(before))
	}
	stdout.Reset()
	if code := run(append([]string{"approve", "rb", m[1]}, waitArgs...), &stdout, &stderr); code != 0 {
		t.Fatalf("approve exited %d:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if n := len(liveStacks(t, cfn)); n != 0 {
		t.Errorf("%d stacks left after the approved destroy", n)
	}
	if !strings.Contains(stdout.String(), "state object s3://cairn-000000000000-us-east-1/state/rb/rb.json was removed") {
		t.Errorf("approve output does not say the graph was removed:\n%s", stdout.String())
	}
	if _, err := s3c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(localBucket), Key: aws.String("state/rb/rb.json")}); err == nil {
		t.Errorf("state/rb/rb.json still exists")
	}
	// Dependents first: c's deletion ended before b's began, b's before a's.
	events := map[string]time.Time{}
	for _, name := range []string{"rb-a", "rb-b", "rb-c"} {
		out, err := cfn.DescribeStackEvents(context.Background(), &cloudformation.DescribeStackEventsInput{StackName: before[name].StackId})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range out.StackEvents {
			if aws.ToString(e.LogicalResourceId) == name {
				switch e.ResourceStatus {
				case cfntypes.ResourceStatusDeleteInProgress:
					events[name+" start"] = aws.ToTime(e.Timestamp)
				case cfntypes.ResourceStatusDeleteComplete:
					events[name+" end"] = aws.ToTime(e.Timestamp)
				}
			}
		}
	}
	if events["rb-b start"].Before(events["rb-c end"]) || events["rb-a start"].Before(events["rb-b end"]) || events["rb-a start"].IsZero() {
		t.Errorf("deletions out of order: %v", events)
	}
}

// TestRecoverFromUpdateRollbackFailed leaves a stack in UPDATE_ROLLBACK_FAILED (its
// update and its rollback fail), then `cairn recover` first fails while the resource
// still cannot roll back, and with --skip brings the stack to UPDATE_ROLLBACK_COMPLETE.
func TestRecoverFromUpdateRollbackFailed(t *testing.T) {
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"push", versionDir(t, "one", false), "--deployment", "rb", "--wait", "--poll", "20ms", "--timeout", "1m"}, &stdout, &stderr); code != 0 {
		t.Fatalf("push exited %d:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	endpoint := os.Getenv("AWS_ENDPOINT_URL")
	for _, f := range []string{
		`{"stack":"rb-a","logicalId":"P","operation":"UPDATE","reason":"AccessDenied on ssm:PutParameter","count":1}`,
		`{"stack":"rb-a","logicalId":"P","operation":"UPDATE","reason":"AccessDenied while reverting","duringRollback":true}`,
	} {
		resp, err := http.Post(endpoint+"/_local/cloudformation/faults", "application/json", strings.NewReader(f))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("inject fault: %v %v", err, resp)
		}
		resp.Body.Close()
	}
	cfn := cfnClient(t)
	ctx := context.Background()
	if _, err := cfn.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("rb-a"), UsePreviousTemplate: aws.Bool(true),
		Parameters: []cfntypes.Parameter{{ParameterKey: aws.String("Value"), ParameterValue: aws.String("broken")}}}); err != nil {
		t.Fatal(err)
	}
	waitFor := func(want cfntypes.StackStatus) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if liveStacks(t, cfn)["rb-a"].StackStatus == want {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("rb-a is %s, want %s", liveStacks(t, cfn)["rb-a"].StackStatus, want)
	}
	waitFor(cfntypes.StackStatusUpdateRollbackFailed)
	graph := func() *state.Graph {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run([]string{"state", "show", "rb", "rb", "--json"}, &out, &errOut); code != 0 {
			t.Fatalf("state show exited %d: %s", code, errOut.String())
		}
		g, err := state.Decode(out.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	before := graph()
	if s := before.Stacks["a"]; s == nil || s.Status == "UPDATE_ROLLBACK_COMPLETE" {
		t.Fatalf("graph entry of a before the recovery: %+v", s)
	}

	stdout.Reset()
	code := run([]string{"recover", "rb", "a", "--poll", "10ms", "--timeout", "30s"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stdout.String(), "stack rb-a is UPDATE_ROLLBACK_FAILED") {
		t.Fatalf("recover without skipping exited %d:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if g := graph(); g.Generation != before.Generation || g.Stacks["a"].Status != before.Stacks["a"].Status {
		t.Errorf("a failed recovery wrote the graph: generation %d (was %d), a is %s", g.Generation, before.Generation, g.Stacks["a"].Status)
	}
	stdout.Reset()
	code = run([]string{"recover", "rb", "a", "--skip", "P", "--poll", "10ms", "--timeout", "30s"}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "ContinueUpdateRollback started skipping P") || !strings.Contains(stdout.String(), "stack rb-a is UPDATE_ROLLBACK_COMPLETE: recovered") {
		t.Fatalf("recover --skip P exited %d:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	waitFor(cfntypes.StackStatusUpdateRollbackComplete)
	after := graph()
	recorded := fmt.Sprintf("graph rb/rb generation %d: stack a recorded as UPDATE_ROLLBACK_COMPLETE (was %s), with 1 output(s)", after.Generation, before.Stacks["a"].Status)
	if !strings.Contains(stdout.String(), recorded) {
		t.Errorf("recover output does not say what it recorded (%q):\n%s", recorded, stdout.String())
	}
	live := liveStacks(t, cfn)["rb-a"]
	a := after.Stacks["a"]
	if after.Generation != before.Generation+1 || a.Status != "UPDATE_ROLLBACK_COMPLETE" || a.StackID != aws.ToString(live.StackId) ||
		len(live.Outputs) != 1 || a.Outputs[aws.ToString(live.Outputs[0].OutputKey)] != aws.ToString(live.Outputs[0].OutputValue) {
		t.Errorf("graph after the recovery: generation %d (was %d), a %+v; live outputs %+v", after.Generation, before.Generation, a, live.Outputs)
	}
	if b := after.Stacks["b"]; b == nil || b.Status != before.Stacks["b"].Status || b.UpdatedAt != before.Stacks["b"].UpdatedAt {
		t.Errorf("the recovery changed b's graph entry: %+v, was %+v", b, before.Stacks["b"])
	}
	stdout.Reset()
	if code := run([]string{"recover", "rb", "a"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "needs UPDATE_ROLLBACK_FAILED") {
		t.Errorf("recover of a stable stack exited %d: %s", code, stderr.String())
	}
}
