package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// updateDocs makes TestCommandReference write docs/commands instead of comparing it
// (make docs).
var updateDocs = flag.Bool("update-docs", false, "rewrite docs/commands from the CLI (make docs does)")

// commandDocs is the command reference, a page per command, seen from the repository.
const commandDocs = "docs/commands"

// writeCommandReference writes the reference of every command of the CLI into dir, a
// Markdown page per command (cairn.md, cairn_push.md, cairn_local_up.md, ...) as cobra's
// doc generator makes it, without the generator's date line so the pages are the same
// on every run.
func writeCommandReference(t *testing.T, dir string) {
	t.Helper()
	// A flag's default shown in the pages must not be the caller's environment.
	t.Setenv("CAIRN_NAMESPACES", "")
	root := newRootCmd(new(bytes.Buffer), new(bytes.Buffer))
	var noDate func(*cobra.Command)
	noDate = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			noDate(sub)
		}
	}
	noDate(root)
	prepend := func(string) string {
		return "<!-- Generated from the CLI by `make docs` (TestCommandReference); do not edit. -->\n\n"
	}
	if err := doc.GenMarkdownTreeCustom(root, dir, prepend, func(name string) string { return name }); err != nil {
		t.Fatal(err)
	}
}

// TestCommandReference: docs/commands is exactly what the CLI's commands generate, so the
// reference never goes stale; `make docs` rewrites it.
func TestCommandReference(t *testing.T) {
	fresh := t.TempDir()
	writeCommandReference(t, fresh)
	committed := filepath.Join(repoRoot, commandDocs)
	if *updateDocs {
		old, _ := filepath.Glob(filepath.Join(committed, "*.md"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(committed, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	want := pageSet(t, fresh)
	if len(want) < 20 {
		t.Fatalf("the generator wrote only %d pages: %v", len(want), want)
	}
	if *updateDocs {
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(committed, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	have := pageSet(t, committed)
	for name, b := range want {
		if got, ok := have[name]; !ok {
			t.Errorf("%s/%s is missing: run make docs", commandDocs, name)
		} else if !bytes.Equal(got, b) {
			t.Errorf("%s/%s is stale (the CLI's commands say otherwise): run make docs", commandDocs, name)
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			t.Errorf("%s/%s names no command of the CLI: run make docs", commandDocs, name)
		}
	}
}

func pageSet(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pages[filepath.Base(f)] = b
	}
	return pages
}
