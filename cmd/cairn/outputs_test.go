package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestStackOutputsPrinted: as `sam deploy` and `cdk deploy` print a stack's outputs after
// they deploy it, push --wait, approve --wait and apply --wait print the outputs of every
// stack the run deployed, and status those of the stacks as applied: a secret output
// (from a NoEcho parameter fed a SecureString) as ****, a value holding a newline and a workflow command
// through the printer.
func TestStackOutputsPrinted(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond)
	t.Setenv("CAIRN_BUCKET", localBucket)
	const secret = "0utput-Secret-0040"
	putSecureString(t, "/out/password", secret)
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cairn.yaml", "namespace: out\nstacks:\n  - name: app\n    template_path: app.yaml\n    parameters: {Password: \"${ssm /out/password}\", Greeting: hello}\n")
	app := `Parameters:
  Password: {Type: String, NoEcho: true}
  Greeting: {Type: String}
Resources:
  Queue: {Type: AWS::SQS::Queue}
Outputs:
  QueueUrl: {Value: !Ref Queue}
  Login: {Value: !Sub "admin:${Password}"}
  Banner: {Value: !Sub "${Greeting}\n::error::forged"}
`
	write("app.yaml", app)
	check := func(what, out string) {
		t.Helper()
		for _, re := range []string{
			`(?m)^outputs:\n  app \(out-app\):\n    Banner = "hello\\n::error::forged"\n    Login = \*\*\*\*\n    QueueUrl = https?://\S+/out-app-Queue\S*$`,
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("%s does not print the outputs as %s:\n%s", what, re, out)
			}
		}
		if strings.Contains(out, secret) || strings.Contains(out, "\n::error") {
			t.Errorf("%s prints the secret or a forged line:\n%s", what, out)
		}
	}
	check("push --wait", cairnOK(t, append([]string{"push", dir, "--deployment", "out"}, followFlags...)...))
	check("status", cairnOK(t, "status", "out"))

	write("app.yaml", strings.Replace(app, "Queue: {Type: AWS::SQS::Queue}", "Queue: {Type: AWS::SQS::Queue}\n  Other: {Type: AWS::SQS::Queue}", 1))
	out := cairnOK(t, append([]string{"plan", dir, "--deployment", "out"}, followFlags...)...)
	if strings.Contains(out, "outputs:") {
		t.Errorf("a plan run prints outputs of stacks it did not deploy:\n%s", out)
	}
	id := regexp.MustCompile(`cairn approve out (\S+)`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("plan:\n%s", out)
	}
	check("approve --wait", cairnOK(t, append([]string{"approve", "out", id[1]}, followFlags...)...))
}
