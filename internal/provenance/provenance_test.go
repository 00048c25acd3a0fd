package provenance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes a work tree with one commit on branch main and an origin remote, and
// returns its HEAD.
func gitRepo(t *testing.T, dir string) string {
	t.Helper()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte("namespace: p\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-q", "-m", "c")
	git("remote", "add", "origin", "https://example.com/p.git")
	return git("rev-parse", "HEAD")
}

func TestDetect(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	head := gitRepo(t, repo)
	event := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(event, []byte(`{"action": "synchronize", "number": 7, "pull_request": {"number": 7, "head": {"ref": "feature", "sha": "89abcdef0123456789abcdef0123456789abcdef"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	actions := map[string]string{
		"GITHUB_ACTIONS": "true", "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567", "GITHUB_REF": "refs/pull/7/merge",
		"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "shop/infra", "GITHUB_RUN_ID": "42",
		"GITHUB_HEAD_REF": "feature", "GITHUB_EVENT_PATH": event,
	}
	tests := []struct {
		name string
		path string
		env  map[string]string
		pr   int
		want Source
	}{
		{name: "outside git", path: t.TempDir(), want: Source{}},
		{name: "a work tree", path: repo, want: Source{Commit: head, Ref: "refs/heads/main", Remote: "https://example.com/p.git"}},
		{name: "a file in a work tree, --pr", path: filepath.Join(repo, "cairn.yaml"), pr: 12,
			want: Source{Commit: head, Ref: "refs/heads/main", Remote: "https://example.com/p.git", PullRequest: 12}},
		{name: "GitHub variables without GITHUB_ACTIONS are not read", path: t.TempDir(), env: map[string]string{"GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567"}, want: Source{}},
		{name: "a pull request's job", path: repo, env: actions, want: Source{
			Commit: "0123456789abcdef0123456789abcdef01234567", Ref: "refs/pull/7/merge", Remote: "https://example.com/p.git",
			PullRequest: 7, HeadRef: "feature", HeadCommit: "89abcdef0123456789abcdef0123456789abcdef", RunURL: "https://github.com/shop/infra/actions/runs/42"}},
		{name: "a pull request's job outside git, --pr wins", path: t.TempDir(), env: actions, pr: 8, want: Source{
			Commit: "0123456789abcdef0123456789abcdef01234567", Ref: "refs/pull/7/merge", Remote: "https://github.com/shop/infra",
			PullRequest: 8, HeadRef: "feature", HeadCommit: "89abcdef0123456789abcdef0123456789abcdef", RunURL: "https://github.com/shop/infra/actions/runs/42"}},
		{name: "a push to main", path: t.TempDir(), env: map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_SHA": "fedcba9876543210fedcba9876543210fedcba98", "GITHUB_REF": "refs/heads/main",
			"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "shop/infra"},
			want: Source{Commit: "fedcba9876543210fedcba9876543210fedcba98", Ref: "refs/heads/main", Remote: "https://github.com/shop/infra"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Detect(tt.path, Options{PullRequest: tt.pr, Getenv: func(k string) string { return tt.env[k] }})
			if got != tt.want {
				t.Errorf("Detect = %+v\nwant     %+v", got, tt.want)
			}
		})
	}
}

func TestMetadataRoundTrip(t *testing.T) {
	tests := []struct {
		src  Source
		want map[string]string
	}{
		{Source{}, nil},
		{Source{Commit: "0123456789abcdef", Remote: "https://example.com/p.git"}, map[string]string{"git-ref": "0123456789abcdef", "git-remote": "https://example.com/p.git"}},
		{Source{Commit: "abc", Ref: "refs/heads/été 100%", PullRequest: 3, HeadRef: "été", HeadCommit: "def", RunURL: "https://ci/1"},
			map[string]string{"git-ref": "abc", "git-ref-name": "refs/heads/%C3%A9t%C3%A9 100%25", "pull-request": "3", "pull-request-head": "%C3%A9t%C3%A9", "pull-request-head-sha": "def", "ci-run-url": "https://ci/1"}},
		// The apply job's plan of a merged pull request's content.
		{Source{Commit: "abc", Ref: "refs/heads/main", PullRequest: 7, Merged: true},
			map[string]string{"git-ref": "abc", "git-ref-name": "refs/heads/main", "pull-request": "7", "pull-request-merged": "true"}},
	}
	for _, tt := range tests {
		m := tt.src.Metadata()
		if len(m) != len(tt.want) {
			t.Errorf("%+v: metadata %v, want %v", tt.src, m, tt.want)
		}
		for k, v := range tt.want {
			if m[k] != v {
				t.Errorf("%+v: metadata %s = %q, want %q", tt.src, k, m[k], v)
			}
		}
		// S3 may return keys in another case.
		upper := map[string]string{}
		for k, v := range m {
			upper[strings.ToUpper(k[:1])+k[1:]] = v
		}
		if back := FromMetadata(upper); back != tt.src {
			t.Errorf("FromMetadata(%v) = %+v, want %+v", upper, back, tt.src)
		}
	}
	if s := FromMetadata(map[string]string{"pull-request": "x", "git-ref": "%zz"}); s != (Source{Commit: "%zz"}) {
		t.Errorf("unparsable metadata: %+v", s)
	}
	if s := FromMetadata(map[string]string{"pull-request-merged": "yes"}); s.Merged {
		t.Errorf("merged is only \"true\": %+v", s)
	}
}

func TestMatchesAndString(t *testing.T) {
	s := Source{Commit: "0123456789abcdef0123456789abcdef01234567", Ref: "refs/pull/7/merge", PullRequest: 7, HeadRef: "feature", HeadCommit: "89abcdef0123456789abcdef0123456789abcdef"}
	for sha, want := range map[string]bool{
		"0123456": true, "0123456789ABCDEF": true, "89abcdef01": true, s.Commit: true,
		"012345": false, "1234567": false, "": false,
	} {
		if got := s.Matches(sha); got != want {
			t.Errorf("Matches(%q) = %v, want %v", sha, got, want)
		}
	}
	if got, want := s.String(), "commit 0123456789ab (refs/pull/7/merge), pull request #7 (feature, head 89abcdef0123)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	merged := Source{Commit: s.Commit, Ref: "refs/heads/main", PullRequest: 7, Merged: true}
	if got, want := merged.String(), "commit 0123456789ab (refs/heads/main), pull request #7, merged"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// FuzzMetadata: whatever a work tree or CI says, its metadata is ASCII and reads back as
// the same Source; metadata of any content never makes FromMetadata fail.
func FuzzMetadata(f *testing.F) {
	f.Add("0123456789abcdef", "refs/heads/été 100%", "https://example.com/p.git", 7, "feature", "%zz")
	f.Add("", "", "", 0, "", "")
	f.Fuzz(func(t *testing.T, commit, ref, remote string, pr int, head, run string) {
		s := Source{Commit: commit, Ref: ref, Remote: remote, PullRequest: max(pr, 0), HeadRef: head, HeadCommit: commit, RunURL: run, Merged: pr%2 == 1}
		m := s.Metadata()
		for k, v := range m {
			for i := 0; i < len(v); i++ {
				if v[i] < 0x20 || v[i] > 0x7e {
					t.Fatalf("metadata %s = %q is not printable ASCII", k, v)
				}
			}
		}
		if back := FromMetadata(m); back != s {
			t.Fatalf("FromMetadata(Metadata(%+v)) = %+v", s, back)
		}
		FromMetadata(map[string]string{CommitMetadata: commit, PullRequestMetadata: ref, RefMetadata: run})
	})
}
