package main

import (
	"bytes"
	"cmp"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
)

// TestFailureReasonQuotingASecretIsNotPrinted: CloudFormation fails a resource of a stack
// holding a secret (a SecureString through a NoEcho parameter) with a reason that quotes
// it. Neither push --json (the follow --json stream), follow --json of the run, nor push
// --wait prints the secret; they print the run's reason, masked.
func TestFailureReasonQuotingASecretIsNotPrinted(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond)
	t.Setenv("CAIRN_BUCKET", localBucket)
	const secret = "Pr1nted-Secret-0006"
	putSecureString(t, "/cli/quoted", secret)
	dir := t.TempDir()
	for name, body := range map[string]string{
		"cairn.yaml": "namespace: cli\nstacks:\n  - name: app\n    template_path: app.yaml\n    parameters: {Password: \"${ssm /cli/quoted}\"}\n",
		"app.yaml":   "Parameters:\n  Password: {Type: String, NoEcho: true}\nResources:\n  Kept: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: !Sub \"admin:${Password}\"}}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fault := func() {
		t.Helper()
		resp, err := http.Post(os.Getenv("AWS_ENDPOINT_URL")+"/_local/cloudformation/faults", "application/json",
			strings.NewReader(`{"stack":"cli-app","logicalId":"Kept","operation":"CREATE","reason":"Value admin:`+secret+` is not valid","count":1}`))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("inject fault: %v %v", err, resp)
		}
		resp.Body.Close()
	}
	fault()
	code, out, errOut := runCLI(t, append([]string{"push", dir, "--deployment", "cli", "--json"}, followArgs...)...)
	if code == 0 || !strings.Contains(out, "admin:****") {
		t.Errorf("push --json: exit %d, want a failure with the reason masked:\n%s%s", code, out, errOut)
	}
	var runID string
	for _, e := range decodeEvents(t, out) {
		runID = cmp.Or(runID, e.Run)
	}
	code, followed, followErr := runCLI(t, append([]string{"follow", "cli", runID, "--json"}, followArgs...)...)
	if code == 0 || !strings.Contains(followed, "admin:****") {
		t.Errorf("follow --json: exit %d, want the failure with the reason masked:\n%s%s", code, followed, followErr)
	}
	fault()
	var stdout, stderr bytes.Buffer
	code = run(append([]string{"push", dir, "--deployment", "cli", "--wait"}, followArgs...), &stdout, &stderr)
	if code == 0 || !strings.Contains(stdout.String(), "admin:****") {
		t.Errorf("push --wait: exit %d, want a failure with the reason masked:\n%s%s", code, stdout.String(), stderr.String())
	}
	for what, text := range map[string]string{"push --json": out + errOut, "follow --json": followed + followErr, "push --wait": stdout.String() + stderr.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("%s prints the secret:\n%s", what, text)
		}
	}
}

// putSecureString puts SSM parameter name, a SecureString of value, where the CLI's
// environment points (the emulator).
func putSecureString(t *testing.T, name, value string) {
	t.Helper()
	cfg, err := awsclient.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ssm.NewFromConfig(cfg).PutParameter(context.Background(), &ssm.PutParameterInput{Name: aws.String(name),
		Type: ssmtypes.ParameterTypeSecureString, Value: aws.String(value)}); err != nil {
		t.Fatal(err)
	}
}
