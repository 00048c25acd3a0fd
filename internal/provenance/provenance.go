// Package provenance says where a bundle came from: the git commit, ref and remote of the
// work tree it was read from, and the pull request and CI run that uploaded it. It travels
// as S3 object metadata of the upload, so the deployer records it in the run and the plan
// without trusting anything but the object it reads; `cairn plans NAME --commit SHA` and
// the pull-request comment read it back.
package provenance

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Source is where a bundle came from. Every field is optional.
type Source struct {
	// Commit is the commit checked out (in a pull request's CI job, the merge commit
	// GitHub made of the pull request and its base).
	Commit string `json:"commit,omitempty"`
	// Ref is the ref checked out: refs/heads/main, refs/pull/7/merge.
	Ref    string `json:"ref,omitempty"`
	Remote string `json:"remote,omitempty"`
	// PullRequest is the pull request's number (0: none); HeadRef and HeadCommit its
	// branch and the commit at its head.
	PullRequest int    `json:"pull_request,omitempty"`
	HeadRef     string `json:"head_ref,omitempty"`
	HeadCommit  string `json:"head_commit,omitempty"`
	// Merged says the bundle is the pull request's merged content, uploaded after the
	// merge (the workflow's apply job planning what no reviewed plan covered): a plan of
	// it is applied only by an approval of exactly it, and a plan of the pull request
	// made after it is late.
	Merged bool `json:"merged,omitempty"`
	// RunURL is the CI run that uploaded the bundle.
	RunURL string `json:"run_url,omitempty"`
}

// Metadata keys of an upload. CommitMetadata is "git-ref" because the persistent graph and
// the cairn:git-ref tag have always named the applied commit so.
const (
	CommitMetadata      = "git-ref"
	RemoteMetadata      = "git-remote"
	RefMetadata         = "git-ref-name"
	PullRequestMetadata = "pull-request"
	HeadRefMetadata     = "pull-request-head"
	HeadCommitMetadata  = "pull-request-head-sha"
	MergedMetadata      = "pull-request-merged"
	RunURLMetadata      = "ci-run-url"
)

// IsZero reports whether nothing is known of where the bundle came from.
func (s Source) IsZero() bool { return s == Source{} }

// Metadata is the S3 object metadata carrying s (nil when s is zero). Values are ASCII,
// as S3 metadata must be: other bytes (and %) are percent-encoded.
func (s Source) Metadata() map[string]string {
	if s.IsZero() {
		return nil
	}
	m := map[string]string{}
	for _, f := range s.fieldsOf() {
		if *f.val != "" {
			m[f.key] = encode(*f.val)
		}
	}
	if s.PullRequest > 0 {
		m[PullRequestMetadata] = strconv.Itoa(s.PullRequest)
	}
	if s.Merged {
		m[MergedMetadata] = "true"
	}
	return m
}

// FromMetadata reads a Source from an upload's S3 metadata (keys in any case, as S3
// returns them); what does not parse is left out.
func FromMetadata(meta map[string]string) Source {
	lower := map[string]string{}
	for k, v := range meta {
		lower[strings.ToLower(k)] = v
	}
	var s Source
	for _, f := range s.fieldsOf() {
		*f.val = decode(lower[f.key])
	}
	if n, err := strconv.Atoi(lower[PullRequestMetadata]); err == nil && n > 0 {
		s.PullRequest = n
	}
	s.Merged = lower[MergedMetadata] == "true"
	return s
}

// fieldsOf pairs each string field of s with its metadata key.
func (s *Source) fieldsOf() []struct {
	key string
	val *string
} {
	return []struct {
		key string
		val *string
	}{
		{CommitMetadata, &s.Commit}, {RemoteMetadata, &s.Remote}, {RefMetadata, &s.Ref},
		{HeadRefMetadata, &s.HeadRef}, {HeadCommitMetadata, &s.HeadCommit}, {RunURLMetadata, &s.RunURL},
	}
}

func encode(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 || c > 0x7e || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func decode(v string) string {
	if !strings.Contains(v, "%") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '%' && i+2 < len(v) {
			if n, err := strconv.ParseUint(v[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 2
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// Matches reports whether sha names the commit checked out or the pull request's head
// commit: the whole id or a prefix of at least 7 hex digits, as git abbreviates them.
func (s Source) Matches(sha string) bool {
	sha = strings.ToLower(strings.TrimSpace(sha))
	if len(sha) < 7 {
		return false
	}
	for _, c := range []string{s.Commit, s.HeadCommit} {
		if c != "" && strings.HasPrefix(strings.ToLower(c), sha) {
			return true
		}
	}
	return false
}

// String describes s for people: "commit 0123456789ab (refs/pull/7/merge) of REMOTE, pull
// request #7 (feature, head 89abcdef0123)".
func (s Source) String() string {
	var parts []string
	if s.Commit != "" {
		c := "commit " + short(s.Commit)
		if s.Ref != "" {
			c += " (" + s.Ref + ")"
		}
		parts = append(parts, c)
	} else if s.Ref != "" {
		parts = append(parts, "ref "+s.Ref)
	}
	if s.Remote != "" {
		parts = append(parts, "of "+s.Remote)
	}
	s1 := strings.Join(parts, " ")
	if s.PullRequest > 0 {
		pr := fmt.Sprintf("pull request #%d", s.PullRequest)
		var head []string
		if s.HeadRef != "" {
			head = append(head, s.HeadRef)
		}
		if s.HeadCommit != "" {
			head = append(head, "head "+short(s.HeadCommit))
		}
		if len(head) > 0 {
			pr += " (" + strings.Join(head, ", ") + ")"
		}
		if s.Merged {
			pr += ", merged"
		}
		if s1 != "" {
			s1 += ", "
		}
		s1 += pr
	} else if s.Merged {
		if s1 != "" {
			s1 += ", "
		}
		s1 += "merged content"
	}
	return s1
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// Options are what Detect reads besides the work tree.
type Options struct {
	// PullRequest is the --pr flag (0: none); it overrides what CI says.
	PullRequest int
	// Merged is the --merged flag: the bundle is merged content, planned after the merge.
	Merged bool
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
}

// Detect says where the bundle at path comes from: the git work tree holding it (HEAD,
// its symbolic ref, the origin remote), overridden by what GitHub Actions says of the
// job (GITHUB_SHA, GITHUB_REF, the repository, the run, and the pull request of the
// event), and by opts.PullRequest.
func Detect(path string, opts Options) Source {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	s := fromGit(path)
	if getenv("GITHUB_ACTIONS") == "true" {
		s = fromGitHub(s, getenv)
	}
	if opts.PullRequest > 0 {
		s.PullRequest = opts.PullRequest
	}
	s.Merged = opts.Merged
	return s
}

func fromGit(path string) Source {
	dir := path
	if info, err := os.Stat(path); err == nil && !info.IsDir() {
		dir = filepath.Dir(path)
	}
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	if git("rev-parse", "--is-inside-work-tree") != "true" {
		return Source{}
	}
	return Source{Commit: git("rev-parse", "HEAD"), Ref: git("symbolic-ref", "-q", "HEAD"), Remote: git("remote", "get-url", "origin")}
}

// pullRef is the ref GitHub checks out for a pull request's job.
var pullRef = regexp.MustCompile(`^refs/pull/(\d+)/(merge|head)$`)

// fromGitHub overlays what GitHub Actions' default variables and event payload say.
func fromGitHub(s Source, getenv func(string) string) Source {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&s.Commit, getenv("GITHUB_SHA"))
	set(&s.Ref, getenv("GITHUB_REF"))
	server, repo := strings.TrimSuffix(getenv("GITHUB_SERVER_URL"), "/"), getenv("GITHUB_REPOSITORY")
	if s.Remote == "" && server != "" && repo != "" {
		s.Remote = server + "/" + repo
	}
	if id := getenv("GITHUB_RUN_ID"); server != "" && repo != "" && id != "" {
		s.RunURL = server + "/" + repo + "/actions/runs/" + id
	}
	set(&s.HeadRef, getenv("GITHUB_HEAD_REF"))
	if m := pullRef.FindStringSubmatch(s.Ref); m != nil {
		s.PullRequest, _ = strconv.Atoi(m[1])
	}
	if path := getenv("GITHUB_EVENT_PATH"); path != "" {
		if body, err := os.ReadFile(path); err == nil {
			var ev struct {
				PullRequest *struct {
					Number int `json:"number"`
					Head   struct {
						Ref string `json:"ref"`
						SHA string `json:"sha"`
					} `json:"head"`
				} `json:"pull_request"`
			}
			if json.Unmarshal(body, &ev) == nil && ev.PullRequest != nil {
				if ev.PullRequest.Number > 0 {
					s.PullRequest = ev.PullRequest.Number
				}
				set(&s.HeadRef, ev.PullRequest.Head.Ref)
				set(&s.HeadCommit, ev.PullRequest.Head.SHA)
			}
		}
	}
	return s
}

// Older reports whether commit is an ancestor of than (older, and on its history) in the
// git work tree holding path; known is false when git cannot tell (no work tree, or
// either commit is not in it: a shallow clone). A commit is not older than itself.
func Older(path, commit, than string) (older, known bool) {
	if commit == "" || than == "" || commit == than {
		return false, commit != "" && commit == than
	}
	dir := path
	if info, err := os.Stat(path); err == nil && !info.IsDir() {
		dir = filepath.Dir(path)
	}
	for _, c := range []string{commit, than} {
		if exec.Command("git", "-C", dir, "cat-file", "-e", c+"^{commit}").Run() != nil {
			return false, false
		}
	}
	err := exec.Command("git", "-C", dir, "merge-base", "--is-ancestor", commit, than).Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, true
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return false, true
	}
	return false, false
}
