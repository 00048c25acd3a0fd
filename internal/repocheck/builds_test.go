package repocheck

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// executableMagic are the first bytes of the executables Go builds: ELF (Linux), Mach-O
// (macOS: 32 and 64 bits, either byte order, and universal binaries) and PE (Windows,
// whose DOS header starts MZ).
var executableMagic = []struct {
	format string
	magic  []byte
}{
	{"ELF", []byte{0x7f, 'E', 'L', 'F'}},
	{"Mach-O", []byte{0xfe, 0xed, 0xfa, 0xce}},
	{"Mach-O", []byte{0xfe, 0xed, 0xfa, 0xcf}},
	{"Mach-O", []byte{0xce, 0xfa, 0xed, 0xfe}},
	{"Mach-O", []byte{0xcf, 0xfa, 0xed, 0xfe}},
	{"Mach-O universal", []byte{0xca, 0xfe, 0xba, 0xbe}},
	{"PE", []byte{'M', 'Z'}},
}

// executableFormat returns the executable format of the file at path, or "".
func executableFormat(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 4)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return "", err
	}
	for _, m := range executableMagic {
		if bytes.HasPrefix(head[:n], m.magic) {
			return m.format, nil
		}
	}
	return "", nil
}

// trackedFiles lists the files git tracks in the repository holding this package, or
// skips the test when there is no git checkout to ask.
func trackedFiles(t *testing.T) (root string, files []string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the tracked files cannot be listed")
	}
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): the tracked files cannot be listed", err)
	}
	root = strings.TrimSpace(string(out))
	out, err = exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return root, files
}

// TestNoBuildIsTracked fails when git tracks an executable build (a CLI built into
// cmd/cairn/cairn by `go build` there, a Lambda's bootstrap): builds go to bin/, which
// .gitignore leaves out, and are made by `make build`.
func TestNoBuildIsTracked(t *testing.T) {
	root, files := trackedFiles(t)
	if len(files) == 0 {
		t.Fatal("git ls-files listed no file")
	}
	for _, f := range files {
		format, err := executableFormat(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		if format != "" {
			t.Errorf("%s is an executable build (%s) tracked by git: remove it (git rm --cached %s) and build into bin/ (make build), which is ignored", f, format, f)
		}
	}
}

// TestExecutableFormatKnowsGoBuilds: the check above recognises what go build writes for
// each operating system, and nothing else.
func TestExecutableFormatKnowsGoBuilds(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		head   []byte
		format string
	}{
		{"linux", []byte("\x7fELF\x02\x01\x01\x00"), "ELF"},
		{"darwin-arm64", []byte{0xcf, 0xfa, 0xed, 0xfe, 0x0c, 0x00, 0x00, 0x01}, "Mach-O"},
		{"darwin-universal", []byte{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2}, "Mach-O universal"},
		{"windows.exe", []byte("MZ\x90\x00\x03\x00"), "PE"},
		{"script.sh", []byte("#!/usr/bin/env bash\n"), ""},
		{"template.yaml", []byte("Resources:\n"), ""},
		{"empty", nil, ""},
		{"short", []byte{0x7f}, ""},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, tc.head, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := executableFormat(p)
		if err != nil || got != tc.format {
			t.Errorf("%s: format %q, %v; want %q", tc.name, got, err, tc.format)
		}
	}
}
