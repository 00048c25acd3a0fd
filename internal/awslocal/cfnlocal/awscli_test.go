package cfnlocal

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/cairn-dev/cairn/internal/clock"
)

func clearChangeSets(t *testing.T, e *env, stack string) {
	t.Helper()
	ctx := context.Background()
	out, err := e.cfn.ListChangeSets(ctx, &cloudformation.ListChangeSetsInput{StackName: aws.String(stack)})
	if err != nil {
		return // no stack yet
	}
	for _, cs := range out.Summaries {
		if _, err := e.cfn.DeleteChangeSet(ctx, &cloudformation.DeleteChangeSetInput{ChangeSetName: cs.ChangeSetId}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAWSCLI drives the emulator with the AWS CLI's own commands, including
// `cloudformation deploy` (change sets and waiters) and its empty change set handling.
func TestAWSCLI(t *testing.T) {
	cli, err := exec.LookPath("aws")
	if err != nil {
		t.Skip("the AWS CLI is not installed")
	}
	if testing.Short() {
		t.Skip("runs the AWS CLI several times")
	}
	e := newEnv(t, func(o *Options) {
		// real time, with operations so short that the CLI's first poll sees them done
		o.Clock, o.ResourceDelay, o.ChangeSetDelay = clock.Real, time.Nanosecond, time.Nanosecond
	})
	dir := t.TempDir()
	tpl := filepath.Join(dir, "network.yaml")
	if err := os.WriteFile(tpl, []byte(readFixture(t, "network.yaml")), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(cli, append([]string{"--endpoint-url", e.srv.URL, "--region", "us-east-1", "--output", "json"}, args...)...)
		cmd.Env = []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_PAGER=", "HOME=" + dir}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "HOME=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	tests := []struct {
		name    string
		args    []string
		wantErr bool
		want    string
	}{
		{"deploy creates", []string{"cloudformation", "deploy", "--template-file", tpl, "--stack-name", "cli", "--parameter-overrides", "Env=prod"}, false, "Successfully created/updated stack - cli"},
		{"empty change set fails without the flag", []string{"cloudformation", "deploy", "--template-file", tpl, "--stack-name", "cli", "--parameter-overrides", "Env=prod"}, true, "No changes to deploy"},
		{"empty change set with the flag", []string{"cloudformation", "deploy", "--template-file", tpl, "--stack-name", "cli", "--parameter-overrides", "Env=prod", "--no-fail-on-empty-changeset"}, false, "No changes to deploy"},
		{"deploy updates", []string{"cloudformation", "deploy", "--template-file", tpl, "--stack-name", "cli", "--parameter-overrides", "Env=dev"}, false, "Successfully created/updated stack - cli"},
		{"describe-stacks", []string{"cloudformation", "describe-stacks", "--stack-name", "cli"}, false, `"StackStatus": "UPDATE_COMPLETE"`},
		{"describe-stack-events", []string{"cloudformation", "describe-stack-events", "--stack-name", "cli"}, false, `"ResourceStatus": "UPDATE_COMPLETE"`},
		{"list-exports", []string{"cloudformation", "list-exports"}, false, `"Name": "cli-VpcId"`},
		{"missing stack", []string{"cloudformation", "describe-stacks", "--stack-name", "nope"}, true, "Stack with id nope does not exist"},
		// what `cdk deploy` runs before every deploy of an existing stack
		{"delete a change set the stack does not have", []string{"cloudformation", "delete-change-set", "--stack-name", "cli", "--change-set-name", "cdk-deploy-change-set"}, false, ""},
		{"delete a change set of a missing stack", []string{"cloudformation", "delete-change-set", "--stack-name", "nope", "--change-set-name", "cdk-deploy-change-set"}, true, "Stack [nope] does not exist"},
	}
	for _, tc := range tests {
		if tc.args[1] == "deploy" {
			// the CLI names change sets by the second; runs this fast would reuse a name
			clearChangeSets(t, e, "cli")
		}
		out, err := run(tc.args...)
		if (err != nil) != tc.wantErr || !strings.Contains(out, tc.want) {
			t.Fatalf("%s: err=%v output:\n%s", tc.name, err, out)
		}
	}
	execd := e.svc.ExecutedChangeSets()
	if len(execd) != 2 {
		t.Fatalf("executed change sets = %+v", execd)
	}
	out, err := run("cloudformation", "describe-change-set", "--stack-name", "cli", "--change-set-name", execd[1].ChangeSetID)
	if err != nil {
		t.Fatalf("describe-change-set: %v\n%s", err, out)
	}
	var cs struct {
		ExecutionStatus string
		Changes         []struct {
			ResourceChange struct{ Action, LogicalResourceId string }
		}
	}
	if err := json.Unmarshal([]byte(out), &cs); err != nil || cs.ExecutionStatus != "EXECUTE_COMPLETE" || len(cs.Changes) == 0 {
		t.Fatalf("describe-change-set: %v %s", err, out)
	}
}
