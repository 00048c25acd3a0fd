package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDiffAgainstWhatIsApplied: `cairn diff` compares a bundle with what a push applied,
// offline: the same bundle exits 0, a changed template and parameter exit 1 with their
// differences, and no change set is created.
func TestDiffAgainstWhatIsApplied(t *testing.T) {
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	dir := bundleDir(t, "")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"push", dir, "--deployment", "cli", "--wait", "--poll", "20ms", "--timeout", "1m"}, &stdout, &stderr); code != 0 {
		t.Fatalf("push exited %d: %s %s", code, stdout.String(), stderr.String())
	}
	changed := bundleDir(t, "")
	if err := os.WriteFile(filepath.Join(changed, "topic.yaml"), []byte("Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n    Properties:\n      DisplayName: shop\nOutputs:\n  Arn:\n    Value: !Ref Topic\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(readFile(t, filepath.Join(changed, "cairn.yaml")), "      Value: ${output topic::Arn}\n", "      Value: ${output topic::Arn}\n  - name: extra\n    template_path: topic.yaml\n", 1)
	if err := os.WriteFile(filepath.Join(changed, "cairn.yaml"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	created := changeSetsCreated(t)
	tests := []struct {
		path string
		code int
		want []string
	}{
		{dir, 0, []string{`^deployment cli: ` + regexp.QuoteMeta(dir) + ` against graph cli/cli at generation \d+ \(bundle version \S+\)$`, `^0 changed, 0 new, 0 removed, 2 unchanged$`}},
		{changed, 1, []string{`^stack topic \(cli-topic\): changed$`, `^--- applied/topic.yaml$`, `^\+\+\+ ` + regexp.QuoteMeta(changed) + `/topic.yaml$`, `^\+    Properties:$`, `^\+      DisplayName: shop$`,
			`^stack extra \(cli-extra\): new, created by the next run$`, `^1 changed, 1 new, 0 removed, 1 unchanged$`}},
	}
	for _, tt := range tests {
		stdout.Reset()
		stderr.Reset()
		code := run([]string{"diff", tt.path, "--deployment", "cli"}, &stdout, &stderr)
		if code != tt.code {
			t.Errorf("diff %s: exit %d, want %d\n%s%s", tt.path, code, tt.code, stdout.String(), stderr.String())
		}
		for _, re := range tt.want {
			if !regexp.MustCompile("(?m)" + re).MatchString(stdout.String()) {
				t.Errorf("diff output lacks a line matching %s:\n%s", re, stdout.String())
			}
		}
	}
	if n := changeSetsCreated(t) - created; n != 0 {
		t.Errorf("diff created %d change set(s)", n)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDiffSeesAVariableChange: a parameter written the same whose ${var} reads another
// value from --var-file (as push stored it) is a difference, shown with both values; the
// same --var-file is none (before: diff reported nothing either way, and took no
// --var-file).
func TestDiffSeesAVariableChange(t *testing.T) {
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	dir := bundleDir(t, "  - name: level\n    template_path: param.yaml\n    parameters:\n      Value: ${var level}\n")
	low, high := filepath.Join(t.TempDir(), "low.yaml"), filepath.Join(t.TempDir(), "high.yaml")
	for path, body := range map[string]string{low: "level: low\n", high: "level: high\n"} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"push", dir, "--deployment", "vars", "--var-file", low, "--wait", "--poll", "20ms", "--timeout", "1m"}, &stdout, &stderr); code != 0 {
		t.Fatalf("push exited %d: %s %s", code, stdout.String(), stderr.String())
	}
	for _, tt := range []struct {
		varFile string
		code    int
		want    string
	}{
		{low, 0, `(?m)^0 changed, 0 new, 0 removed, 3 unchanged$`},
		{high, 1, `(?m)^  ~ Value: \$\{var level\} \(var level = low\) -> \$\{var level\} \(var level = high\)$`},
	} {
		stdout.Reset()
		stderr.Reset()
		if code := run([]string{"diff", dir, "--deployment", "vars", "--var-file", tt.varFile}, &stdout, &stderr); code != tt.code || !regexp.MustCompile(tt.want).MatchString(stdout.String()) {
			t.Errorf("diff --var-file %s: exit %d, want %d and a line matching %s:\n%s%s", filepath.Base(tt.varFile), code, tt.code, tt.want, stdout.String(), stderr.String())
		}
	}
}
