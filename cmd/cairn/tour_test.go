package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/cmd/cairn/tour"
)

// repoRoot is the repository, seen from this package's directory.
const repoRoot = "../.."

// quickTour returns the lines of the README's quick tour (tour.Read).
func quickTour(t *testing.T) []string {
	t.Helper()
	lines, err := tour.Read(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestEveryDocumentedCommandIsRun: each command the command table of docs/cli.md names
// exists, and some test of this package (or the README's quick tour) runs it as a user
// types it.
func TestEveryDocumentedCommandIsRun(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	var documented [][]string
	span := regexp.MustCompile("`cairn ([^`]+)`")
	for _, line := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(line, "| `cairn ") {
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
		for _, m := range span.FindAllStringSubmatch(cell, -1) {
			documented = append(documented, commandPaths(m[1])...)
		}
	}
	if len(documented) < 15 {
		t.Fatalf("found only %d commands in the table of docs/cli.md: %v", len(documented), documented)
	}

	// What the tests run: the leading words of string-slice literals, and the tour's lines.
	ran := map[string]bool{}
	sources, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	literal := regexp.MustCompile(`\{\s*"([a-z][a-z-]*)"(?:\s*,\s*"([a-z][a-z-]*)")?`)
	for _, f := range sources {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range literal.FindAllStringSubmatch(string(b), -1) {
			ran[m[1]], ran[m[1]+" "+m[2]] = true, true
		}
	}
	for _, line := range quickTour(t) {
		if f := strings.Fields(strings.ReplaceAll(line, `"$(`, " ")); len(f) >= 2 && f[0] == "bin/cairn" {
			ran[f[1]] = true
			if len(f) >= 3 {
				ran[f[1]+" "+f[2]] = true
			}
		}
	}

	root := newRootCmd(io.Discard, io.Discard)
	for _, path := range documented {
		c, rest, err := root.Find(path)
		if err != nil || len(rest) > 0 || c.Name() != path[len(path)-1] {
			t.Errorf("docs/cli.md names `cairn %s`, which the CLI does not have", strings.Join(path, " "))
			continue
		}
		if !ran[strings.Join(path, " ")] {
			t.Errorf("no test runs `cairn %s`, which docs/cli.md names", strings.Join(path, " "))
		}
	}
}

// commandPaths reads the command words of a usage like "state show\|history NAMESPACE KEY"
// (the table escapes | as \|): [state show] and [state history].
func commandPaths(usage string) [][]string {
	paths := [][]string{nil}
	for _, w := range strings.Fields(usage) {
		alts := strings.Split(strings.ReplaceAll(w, `\|`, "|"), "|")
		if !regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(alts[0]) {
			break
		}
		var next [][]string
		for _, p := range paths {
			for _, a := range alts {
				next = append(next, append(append([]string(nil), p...), a))
			}
		}
		paths = next
	}
	return paths
}
