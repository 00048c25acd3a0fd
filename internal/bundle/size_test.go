package bundle

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// openLog is a folder's FS that records every file opened.
type openLog struct {
	fs.FS
	opened []string
}

func (o *openLog) Open(name string) (fs.File, error) {
	o.opened = append(o.opened, name)
	return o.FS.Open(name)
}

func (o *openLog) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(o.FS, name) }

// TestHugeFileIsRefusedBeforeAnyRead: a folder holding a 12 GB sparse file (a dump, a
// build output) is refused by its size alone, before Digest or Zip read a byte of any file:
// opening a folder bundle (cairn validate, push, plan) used to read the 12 GB through
// sha256 for a minute before the size error. Each case says which file and the limit.
func TestHugeFileIsRefusedBeforeAnyRead(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]int64
		want  string
	}{
		{"one file beyond the per-file limit", map[string]int64{"fn/dump.bin": 12_000_000_000},
			"fn/dump.bin is 12000000000 bytes, more than the limit of 268435456 for one file of a bundle"},
		{"files beyond the total", map[string]int64{"a/1.bin": 200 << 20, "a/2.bin": 200 << 20, "a/3.bin": 200 << 20, "a/4.bin": 200 << 20, "a/5.bin": 200 << 20, "a/6.bin": 200 << 20},
			"the files up to a/6.bin hold more than 1073741824 bytes, the limit of a bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, ConfigName), []byte("namespace: shop\nstacks: []\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for name, size := range tt.files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(p, size); err != nil { // sparse: no block is written
					t.Fatal(err)
				}
			}
			fsys := &openLog{FS: os.DirFS(dir)}
			_, err := Digest(fsys, ".")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Digest: %v, want %q", err, tt.want)
			}
			if files := slices.DeleteFunc(fsys.opened, func(n string) bool { return n == "." }); len(files) > 0 {
				t.Errorf("Digest opened %v before refusing the folder by its sizes", files)
			}
			if _, err := Zip(dir); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Zip: %v, want %q", err, tt.want)
			}
			if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open: %v, want %q", err, tt.want)
			}
		})
	}
}

// TestExcluded: the folders WriteZip leaves out, at any depth, and nothing else.
func TestExcluded(t *testing.T) {
	for p, want := range map[string]bool{
		".git": true, ".git/HEAD": true, "src/.git/config": true, "a/../.hg/x": true, ".cairn/state": true, ".svn": true,
		"src": false, "src/app.py": false, ".github/workflows/ci.yml": false, "git/x": false, ".gitignore": false, ".": false,
	} {
		if got := Excluded(p); got != want {
			t.Errorf("Excluded(%q) = %v, want %v", p, got, want)
		}
	}
}
