package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/upload"
)

// emulatorGet decodes the JSON of a control endpoint of the emulator AWS_ENDPOINT_URL
// points at, as a user of `cairn local` reads it.
func emulatorGet(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := http.Get(os.Getenv("AWS_ENDPOINT_URL") + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// changeSetsCreated is the emulator's count of CreateChangeSet calls.
func changeSetsCreated(t *testing.T) int {
	var calls map[string]int
	emulatorGet(t, "/_local/calls", &calls)
	return calls["cloudformation.CreateChangeSet"]
}

// executedChangeSets lists the ids of the change sets the emulator executed, oldest first.
func executedChangeSets(t *testing.T) []string {
	var got []struct{ ChangeSetID string }
	emulatorGet(t, "/_local/cloudformation/executed-change-sets", &got)
	var ids []string
	for _, x := range got {
		ids = append(ids, x.ChangeSetID)
	}
	return ids
}

// checkout copies the bundle files of dir (not .git) to a new directory, every file and
// folder with the time when: another checkout of the same content.
func checkout(t *testing.T, dir string, when time.Time) string {
	t.Helper()
	out := t.TempDir()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(out, rel), 0o755)
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(out, rel), body, 0o644)
	})
	if err == nil {
		err = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Chtimes(p, when, when)
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestApplyFindsTheReviewedPlanByContent: a plan made in one checkout is applied from
// another checkout of the same content (other file times), executing exactly the planned
// change sets and creating none; applying it again, or content that was never planned,
// is refused with exit 1 and executes nothing. Plans are found by their commit.
func TestApplyFindsTheReviewedPlanByContent(t *testing.T) {
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	t.Setenv("GITHUB_ACTIONS", "")
	waitArgs := []string{"--wait", "--poll", "20ms", "--timeout", "1m"}
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"push", bundleDir(t, ""), "--deployment", "cli"}, waitArgs...), &stdout, &stderr); code != 0 {
		t.Fatalf("push exited %d: %s %s", code, stdout.String(), stderr.String())
	}

	// The pull request's checkout plans.
	pr := bundleDir(t, "  - name: extra\n    template_path: topic.yaml\n")
	commit := gitInit(t, pr, "https://example.com/cli.git")
	stdout.Reset()
	if code := run(append([]string{"plan", pr, "--deployment", "cli", "--pr", "7", "--format", "json"}, waitArgs...), &stdout, &stderr); code != 0 {
		t.Fatalf("plan exited %d: %s %s", code, stdout.String(), stderr.String())
	}
	var p plan.Document
	if err := json.Unmarshal(stdout.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, s := range p.Changing() {
		planned = append(planned, s.ChangeSetID)
	}
	if len(planned) != 1 || planned[0] == "" || p.Bundle.Source.PullRequest != 7 || p.Bundle.Source.Commit != commit || p.Bundle.GitRef != commit {
		t.Fatalf("plan: change sets %v, bundle %+v", planned, p.Bundle)
	}

	// The merge's checkout of the same content, with other file times, applies it.
	merge := checkout(t, pr, time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	created, executed := changeSetsCreated(t), executedChangeSets(t)
	stdout.Reset()
	stderr.Reset()
	if code := run(append([]string{"apply", merge, "--deployment", "cli"}, waitArgs...), &stdout, &stderr); code != 0 {
		t.Fatalf("apply exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	for _, re := range []string{
		`^plan ` + p.ID + ` of deployment cli was made \S+ ago for this content \(bundle sha256 ` + p.Bundle.SHA256[:12] + `\) from commit ` + commit[:12] + ` \(refs/heads/\S+\) of https://example.com/cli.git, pull request #7$`,
		`^approved plan ` + p.ID + ` of deployment cli `,
		`^run \S+ succeeded in \S+: 1 created, 0 updated, 0 deleted, 2 unchanged, 0 failed$`,
	} {
		if !regexp.MustCompile("(?m)" + re).MatchString(stdout.String()) {
			t.Errorf("apply output lacks a line matching %s:\n%s", re, stdout.String())
		}
	}
	newlyExecuted := executedChangeSets(t)[len(executed):]
	t.Logf("during apply: %d change set(s) created, executed %v (planned %v)", changeSetsCreated(t)-created, newlyExecuted, planned)
	if n := changeSetsCreated(t) - created; n != 0 {
		t.Errorf("apply created %d change set(s), want 0", n)
	}
	if !slices.Equal(newlyExecuted, planned) {
		t.Errorf("apply executed %v, want exactly the planned %v", newlyExecuted, planned)
	}

	// Refused at once, exit 1, nothing written or executed.
	more := bundleDir(t, "  - name: extra\n    template_path: topic.yaml\n  - name: more\n    template_path: topic.yaml\n")
	moreSum := sha256Of(t, more)
	// A CI job retried after the apply succeeded: done, exit 0, nothing written.
	before, ran := approvals(t), executedChangeSets(t)
	stdout.Reset()
	stderr.Reset()
	if code := run(append([]string{"apply", merge, "--deployment", "cli"}, waitArgs...), &stdout, &stderr); code != 0 ||
		!wildcard("plan "+p.ID+" of deployment cli, the reviewed plan for this content, was already applied by run * (*): nothing to do\n").MatchString(stdout.String()) {
		t.Errorf("apply again: exit %d\nstdout: %s\nstderr: %s\nwant exit 0, already applied", code, stdout.String(), stderr.String())
	}
	if approvals(t) != before || !slices.Equal(executedChangeSets(t), ran) {
		t.Error("an apply of an applied plan wrote an approval or executed a change set")
	}
	tests := []struct {
		name, path, want string
	}{
		{"content never planned", more, "cairn: no reviewed plan for this content (bundle sha256 " + moreSum + "): plan it on the pull request first (`cairn plan PATH --deployment cli`)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, ran, made := approvals(t), executedChangeSets(t), changeSetsCreated(t)
			stdout.Reset()
			stderr.Reset()
			if code := run(append([]string{"apply", tt.path, "--deployment", "cli"}, waitArgs...), &stdout, &stderr); code != 1 || stdout.Len() != 0 || !wildcard(tt.want+"\n").MatchString(stderr.String()) {
				t.Errorf("exit %d\nstdout: %s\nstderr: %s\nwant stderr matching: %s", code, stdout.String(), stderr.String(), tt.want)
			}
			if approvals(t) != before || !slices.Equal(executedChangeSets(t), ran) || changeSetsCreated(t) != made {
				t.Error("a refused apply wrote an approval, created or executed a change set")
			}
		})
	}

	// Plans are found by the commit they were made from.
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"plans", "cli", "--commit", commit[:7]}, 0, `(?m)^` + p.ID + ` +applied +\S+ +1 stack +…\S+ git ` + commit[:12] + ` #7 +applied at `},
		{[]string{"plans", "cli", "--commit", "7777777"}, 1, "^cairn: deployment cli has no plans made from commit 7777777 \\(see `cairn plans cli`\\)\n$"},
	} {
		stdout.Reset()
		stderr.Reset()
		code := run(tt.args, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if code != tt.code || !regexp.MustCompile(tt.want).MatchString(out) {
			t.Errorf("cairn %s: exit %d\n%s\nwant exit %d and %s", strings.Join(tt.args, " "), code, out, tt.code, tt.want)
		}
	}
}

// sha256Of is the digest cairn records of the bundle at dir.
func sha256Of(t *testing.T, dir string) string {
	t.Helper()
	b, err := prepare(&bytes.Buffer{}, dir, "cli", upload.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b.SHA256
}

// wildcard matches the whole of a text in which each * stands for one word.
func wildcard(text string) *regexp.Regexp {
	parts := strings.Split(text, "*")
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile("^" + strings.Join(parts, `\S+`) + "$")
}
