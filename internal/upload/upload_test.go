package upload_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/upload"
)

const topic = "Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n"

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPrepareDirectoryInGit(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"cairn.yaml": "namespace: up\nstacks:\n  - name: topic\n    template_path: topic.yaml\n", "topic.yaml": topic})
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "bundle")
	git("remote", "add", "origin", "https://example.com/up.git")
	t.Setenv("GITHUB_ACTIONS", "")
	b, err := upload.Prepare(dir, "up", upload.Options{Source: provenance.Options{PullRequest: 7}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"git-ref": git("rev-parse", "HEAD"), "git-ref-name": git("symbolic-ref", "HEAD"), "git-remote": "https://example.com/up.git", "pull-request": "7"}
	if !maps.Equal(b.Metadata, want) {
		t.Errorf("metadata %v, want %v", b.Metadata, want)
	}
	if sum := sha256.Sum256(b.Zip); b.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("SHA256 %s is not the zip's", b.SHA256)
	}
	zb, err := bundle.FromZip(b.Zip)
	if err != nil || !strings.Contains(string(zb.Config), "namespace: up") {
		t.Fatalf("zip: %v", err)
	}
}

func TestPrepareSingleFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"shop.yaml": "namespace: up\nstacks:\n  - name: topic\n    template_body: |\n      Resources:\n        Topic:\n          Type: AWS::SNS::Topic\n"})
	t.Setenv("GITHUB_ACTIONS", "")
	b, err := upload.Prepare(filepath.Join(dir, "shop.yaml"), "up", upload.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Metadata != nil {
		t.Errorf("metadata %v outside a git work tree", b.Metadata)
	}
	zb, err := bundle.FromZip(b.Zip)
	if err != nil || zb.ConfigFile != bundle.ConfigName {
		t.Fatalf("a single file travels as the cairn.yaml of a zip: %v %v", zb, err)
	}
}

func TestPrepareRefusesAnInvalidConfig(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"cairn.yaml": "namespace: up\ncolour: red\nstacks:\n  - name: topic\n    template_path: topic.yaml\n", "topic.yaml": topic})
	_, err := upload.Prepare(dir, "up", upload.Options{})
	var errs config.Errors
	if !errors.As(err, &errs) || len(errs) != 1 || !strings.Contains(errs[0].Error(), "colour") {
		t.Fatalf("Prepare = %v, want the located config error", err)
	}
}

func TestPrepareWithVarFile(t *testing.T) {
	dir := t.TempDir()
	cfg := "namespace: up\nvariables: {env: dev}\nstacks:\n  - name: topic\n    template_path: topic.yaml\n    tags: {env: \"${var env}\"}\n"
	write(t, dir, map[string]string{"cairn.yaml": cfg, "topic.yaml": topic, bundle.VarsName: "env: stale\n"})
	vars := filepath.Join(t.TempDir(), "prod.yaml")
	write(t, filepath.Dir(vars), map[string]string{"prod.yaml": "env: prod\n"})
	b, err := upload.Prepare(dir, "up", upload.Options{VarFile: vars})
	if err != nil {
		t.Fatal(err)
	}
	zb, err := bundle.FromZip(b.Zip)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := fs.ReadFile(zb.FS, bundle.VarsName)
	if err != nil || string(stored) != "env: prod\n" {
		t.Fatalf("the zip's %s = %q, %v: want the --var-file", bundle.VarsName, stored, err)
	}
	c, err := config.Load(zb)
	if err != nil {
		t.Fatal(err)
	}
	if tags, err := config.ResolveTags(c.Stack("topic"), config.Values{}); err != nil || tags["env"] != "prod" {
		t.Errorf("the pushed bundle alone resolves env to %q (%v), want prod", tags["env"], err)
	}

	write(t, filepath.Dir(vars), map[string]string{"prod.yaml": "env: [a, b]\n"})
	_, err = upload.Prepare(dir, "up", upload.Options{VarFile: vars})
	var errs config.Errors
	if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Error() != vars+":1:6: env: must be a string, number or boolean (a variable holds text), got a list" {
		t.Errorf("Prepare with a var file = %v, want the error located in the var file", err)
	}
	if _, err := upload.Prepare(dir, "up", upload.Options{VarFile: filepath.Join(dir, "nope.yaml")}); err == nil || !strings.Contains(err.Error(), "--var-file") {
		t.Errorf("a missing var file: %v", err)
	}
}
