package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// hostile is text an attacker puts where cairn prints it (a status reason, an
// AllowedPattern, a parameter value): a newline that would start a GitHub workflow
// command, clear screen, an OSC 8 link, a right-to-left override, NUL and DEL.
const hostile = "denied\n::error::forged\r::add-mask::x\x1b[2J\x1b]8;;https://evil.example\x07link\x1b]8;;\x07\u202Eexe.txt\x00\x7fend"

// checkTerminal fails when out (what a command printed) holds a character that is not
// printable but the newline ending a line, or a line a value forged: one that starts
// with "::" (past its spaces, as GitHub's runner reads workflow commands).
func checkTerminal(t *testing.T, what, out string) {
	t.Helper()
	for i, line := range strings.Split(out, "\n") {
		for _, r := range line {
			if r != ' ' && !unicode.IsPrint(r) {
				t.Errorf("%s: line %d holds %U: %q\n%s", what, i+1, r, line, out)
				return
			}
		}
		if strings.HasPrefix(strings.TrimLeft(line, " \t"), "::") {
			t.Errorf("%s: line %d is a forged workflow command: %q\n%s", what, i+1, line, out)
			return
		}
	}
}

// TestHostileTextStaysOnItsLine runs the commands that print what a template, a config or
// CloudFormation says, as typed, with hostile values in each: what they print holds no
// control character and no forged line, and shows the value escaped.
func TestHostileTextStaysOnItsLine(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond)
	t.Setenv("CAIRN_BUCKET", localBucket)
	dir := bundleDir(t, "")
	if code, out, errOut := runCLI(t, append([]string{"push", dir, "--deployment", "cli", "--wait"}, followArgs...)...); code != 0 {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "local", "fault", "cli-param", "P", "--operation", "UPDATE", "--fail", hostile); code != 0 {
		t.Fatalf("local fault: %s", errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "param.yaml"), []byte("Parameters:\n  Value:\n    Type: String\nResources:\n  P:\n    Type: AWS::SSM::Parameter\n    Properties:\n      Type: String\n      Value: !Sub \"${Value}-2\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The reason comes back from CloudFormation's XML, which carries the newline and the
	// override (escapes and NUL become U+FFFD there, as in AWS).
	escaped := `denied\n::error::forged\r::add-mask::x`
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"cairn.yaml": "namespace: cli\nstacks:\n  - name: app\n    template_path: app.yaml\n    parameters:\n      Name: \"nope\\n::error::forged-value\\e[2J\"\n",
		"app.yaml":   "Parameters:\n  Name:\n    Type: String\n    AllowedPattern: \"^[a-z]+$\\n::error::forged\\e[2J\\e]8;;https://evil.example\\aclick\\e]8;;\\a\\u202E\\0\"\nResources:\n  T:\n    Type: AWS::SNS::Topic\n",
	} {
		if err := os.WriteFile(filepath.Join(bad, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A parameter value of the config, as cairn diff shows it.
	valued := bundleDir(t, "")
	if err := os.WriteFile(filepath.Join(valued, "cairn.yaml"), []byte("namespace: cli\nstacks:\n  - name: topic\n    template_path: topic.yaml\n  - name: param\n    template_path: param.yaml\n    parameters:\n      Value: \"x\\n::error::forged-value\\e[2J\\u202E\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string // in stdout or stderr: the value, escaped
	}{
		{"push --wait", append([]string{"push", dir, "--deployment", "cli", "--wait"}, followArgs...), 1, escaped},
		{"follow", append([]string{"follow", "cli"}, followArgs...), 1, escaped},
		{"follow --json", append([]string{"follow", "cli", "--json"}, followArgs...), 1, `denied\n::error::forged`},
		{"status", []string{"status", "cli"}, 0, escaped},
		{"validate", []string{"validate", bad}, 1, `^[a-z]+$\n::error::forged\x1b[2J\x1b]8;;https://evil.example\aclick\x1b]8;;\a\u202e\x00`},
		{"diff", []string{"diff", valued, "--deployment", "cli"}, 1, `"x\n::error::forged-value\x1b[2J\u202e"`},
		{"push of a bundle that does not validate", []string{"push", bad, "--deployment", "cli"}, 1, `\x1b[2J`},
		{"validate of an assembly whose displayName is not a name", []string{"validate", filepath.Join("..", "..", "testdata", "cdkapp", "hostile", "displayname"), "--deployment", "shop"}, 1,
			`manifest.json:1:1: artifacts.App.displayName: displayName "App\n::error::forged\x1b[2J\x1b]8;;https://evil.example\aclick\x1b]8;;\a\u202e" is not a name cairn accepts: each part between slashes of a stack's path, and its CloudFormation stack name, must start with a letter and hold only letters, digits and hyphens, at most 128 characters; rename the stack's construct or its stage (their ids in the CDK app) and synthesize again`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tt.code, out, errOut)
			}
			checkTerminal(t, "stdout", out)
			checkTerminal(t, "stderr", errOut)
			if !strings.Contains(out+errOut, tt.want) {
				t.Errorf("the value is not shown escaped (%s):\n%s%s", tt.want, out, errOut)
			}
		})
	}
}

// TestCompletionOffersOnlyDeploymentNames: completion of a NAME or --deployment offers
// the deployments in the bucket the deployer accepts as names (bucket.CheckDeployment):
// an upload under a key that is not one (a space, a reserved name, a line break forging
// a workflow command, an escape sequence) is not offered, and nothing it prints holds a
// control character.
func TestCompletionOffersOnlyDeploymentNames(t *testing.T) {
	c, s3c := cairnWorld(t)
	for _, key := range []string{"deployments/shop.zip", "plans/web.zip", "deployments/bad name.zip", "deployments/evil\n::error::forged.zip",
		"deployments/active.zip", "plans/sweeps.zip", "plans/.hidden.zip", "deployments/esc\x1b[2J.zip", "deployments/rtl\u202Egnp.zip"} {
		if _, err := s3c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(c.Bucket), Key: aws.String(key), Body: strings.NewReader("x")}); err != nil {
			t.Fatalf("put %q: %v", key, err)
		}
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "status", ""}, []string{"shop", "web", ":4"}},
		{[]string{"__complete", "push", ".", "--deployment", ""}, []string{"shop", "web", ":4"}},
		{[]string{"__complete", "follow", "e"}, []string{":4"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.args...)
			checkTerminal(t, "stdout", out)
			if got := strings.Fields(out); code != 0 || !slices.Equal(got, tt.want) {
				t.Errorf("exit %d, %q, want %q\n%s", code, got, tt.want, errOut)
			}
		})
	}
}
