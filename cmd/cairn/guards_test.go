package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// guardDir writes a bundle of independent stacks named stacks, with top at the top of its
// cairn.yaml.
func guardDir(t *testing.T, top string, stacks ...string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := "namespace: gd\n" + top + "stacks:\n"
	for _, s := range stacks {
		cfg += "  - name: " + s + "\n    template_path: param.yaml\n    parameters: {Value: " + s + "}\n"
	}
	for name, body := range map[string]string{"cairn.yaml": cfg, "param.yaml": paramTemplate} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDroppedMaxDeletionsIsRefusedThenApproved runs the CLI as typed: a deployment applied
// with deletion_policy.max_deletions 1 is pushed without it and without three of its
// stacks. The push is refused (exit 1) naming the relaxed guard and the plan, then approve
// way through, and deletes nothing; `cairn plan --format md` shows the relaxation in the
// comment, and `cairn approve` of that plan deletes the three stacks.
func TestDroppedMaxDeletionsIsRefusedThenApproved(t *testing.T) {
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	waitArgs := []string{"--wait", "--poll", "20ms", "--timeout", "1m"}
	cairnOK(t, append([]string{"push", guardDir(t, "deletion_policy: {max_deletions: 1}\n", "a", "b", "c", "d"), "--deployment", "gd"}, waitArgs...)...)

	relaxed := guardDir(t, "", "a")
	code, out, errOut := runCLI(t, append([]string{"push", relaxed, "--deployment", "gd"}, waitArgs...)...)
	for _, want := range []string{"guard relaxed: deletion_policy.max_deletions 1 → (none)", "`cairn plan " + relaxed + " --deployment gd`, then `cairn approve gd PLAN_ID`"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Fatalf("push dropping max_deletions: exit %d, want 1 and %q\nstdout:\n%s\nstderr:\n%s", code, want, out, errOut)
		}
	}
	cfn := cfnClient(t)
	for _, name := range []string{"gd-b", "gd-c", "gd-d"} {
		if _, ok := liveStacks(t, cfn)[name]; !ok {
			t.Fatalf("the refused push deleted %s", name)
		}
	}

	comment := cairnOK(t, append([]string{"plan", relaxed, "--deployment", "gd", "--format", "md"}, waitArgs...)...)
	if !strings.Contains(comment, "guard relaxed: deletion_policy.max_deletions 1 → (none)") {
		t.Errorf("the plan comment does not show the relaxation:\n%s", comment)
	}
	id := strings.TrimSpace(cairnOK(t, "plans", "gd", "--latest"))
	cairnOK(t, append([]string{"approve", "gd", id}, waitArgs...)...)
	live := liveStacks(t, cfn)
	for _, name := range []string{"gd-b", "gd-c", "gd-d"} {
		if _, ok := live[name]; ok {
			t.Errorf("the approved plan did not delete %s", name)
		}
	}
	if _, ok := live["gd-a"]; !ok {
		t.Error("gd-a is gone")
	}
}
