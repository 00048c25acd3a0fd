package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

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

// TestREADMEIsShort: the README stays an entry (the two commands, what cairn is, the quick
// tour, links) under 220 lines; a topic gets its page in docs/.
func TestREADMEIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) >= 220 {
		t.Errorf("README.md has %d lines, want under 220: move the topic to its page in docs/ (docs/README.md lists them)", len(lines))
	}
	first := strings.Join(lines[:min(40, len(lines))], "\n")
	for _, want := range []string{"make demo", "make test"} {
		if !strings.Contains(first, want) {
			t.Errorf("README.md's first 40 lines do not show %q", want)
		}
	}
}

// TestDocsLinks: every relative link of README.md, infra/README.md and docs/ names a file
// of the repository and, with #anchor, a heading of that page (as GitHub spells anchors).
func TestDocsLinks(t *testing.T) {
	pages := []string{"README.md", "infra/README.md"}
	for _, glob := range []string{"docs/*.md", "docs/commands/*.md"} {
		more, err := filepath.Glob(filepath.Join(repoRoot, glob))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range more {
			rel, _ := filepath.Rel(repoRoot, m)
			pages = append(pages, filepath.ToSlash(rel))
		}
	}
	if len(pages) < 15 {
		t.Fatalf("found only %d pages: %v", len(pages), pages)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, page := range pages {
		b, err := os.ReadFile(filepath.Join(repoRoot, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(withoutCode(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = filepath.ToSlash(filepath.Join(filepath.Dir(page), file))
			}
			text, err := os.ReadFile(filepath.Join(repoRoot, dest))
			if err != nil {
				if info, serr := os.Stat(filepath.Join(repoRoot, dest)); serr == nil && info.IsDir() && anchor == "" {
					continue
				}
				t.Errorf("%s links to %s, which does not exist", page, target)
				continue
			}
			if anchor != "" && !slices.Contains(anchors(string(text)), anchor) {
				t.Errorf("%s links to %s: %s has no heading #%s", page, target, dest, anchor)
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked only %d links", checked)
	}
}

// codeSpan is a Markdown code span, where a ](...) is not a link.
var codeSpan = regexp.MustCompile("`[^`]*`")

// withoutCode is Markdown text without its fenced code blocks and code spans.
func withoutCode(s string) string {
	var out []string
	fence := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
			continue
		}
		if !fence {
			out = append(out, codeSpan.ReplaceAllString(line, "x"))
		}
	}
	return strings.Join(out, "\n")
}

// anchors are the anchors GitHub gives the headings of a Markdown page: lower case,
// punctuation dropped, spaces as hyphens, a repeated one numbered.
func anchors(s string) []string {
	var out []string
	seen := map[string]int{}
	fence := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(text, " ") {
			continue
		}
		var a strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(text)) {
			switch {
			case r == ' ':
				a.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				a.WriteRune(r)
			}
		}
		slug := a.String()
		if n := seen[slug]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", slug, n))
		} else {
			out = append(out, slug)
		}
		seen[slug]++
	}
	return out
}
