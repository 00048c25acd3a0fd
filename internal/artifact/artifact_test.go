package artifact

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/bundle"
)

// checkout writes files (path: body; a path ending in * is executable) under a new folder,
// every file and folder with time when.
func checkout(t *testing.T, files map[string]string, when time.Time) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		mode := fs.FileMode(0o644)
		if n, ok := strings.CutSuffix(name, "*"); ok {
			name, mode = n, 0o755
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, when, when)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

var code = map[string]string{
	"src/app.py":          "def handler(event, context):\n    return 42\n",
	"src/lib/util.py":     "X = 1\n",
	"src/bootstrap*":      "#!/bin/sh\nexec python3 app.py\n",
	"src/data/empty.json": "",
	"dist/fn.zip":         "",
	"statemachine.json":   `{"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}`,
}

// TestFolderZipIsByteIdenticalAcrossCheckouts: the zip of a code folder depends on its
// files' names, contents and executable bits only, so two checkouts with other file times
// give the same bytes, and so the same address and no update.
func TestFolderZipIsByteIdenticalAcrossCheckouts(t *testing.T) {
	a := checkout(t, code, time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC))
	b := checkout(t, code, time.Date(2026, 11, 30, 12, 0, 0, 0, time.Local))
	src := Source{Path: "src", Zip: true}
	var za, zb bytes.Buffer
	da, err := Write(os.DirFS(a), src, &za)
	if err != nil {
		t.Fatal(err)
	}
	db, err := Write(os.DirFS(b), src, &zb)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(za.Bytes(), zb.Bytes()) || da != db {
		t.Fatalf("two checkouts zip differently: %+v, %+v", da, db)
	}
	if sum := sha256.Sum256(za.Bytes()); da.SHA256 != hex.EncodeToString(sum[:]) || da.Size != int64(za.Len()) || da.Ext != "zip" {
		t.Errorf("digest %+v does not describe the %d bytes written", da, za.Len())
	}
	zr, err := zip.NewReader(bytes.NewReader(za.Bytes()), int64(za.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name+" "+f.Mode().String())
		if !f.Modified.Equal(time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("%s: time %v", f.Name, f.Modified)
		}
	}
	want := "app.py -rw-r--r--,bootstrap -rwxr-xr-x,data/empty.json -rw-r--r--,lib/util.py -rw-r--r--"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("entries %s, want %s (sorted, relative to the folder, fixed modes)", got, want)
	}
	// One changed byte is another artifact.
	if err := os.WriteFile(filepath.Join(b, "src/lib/util.py"), []byte("X = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if dc, err := Write(os.DirFS(b), src, io.Discard); err != nil || dc.SHA256 == da.SHA256 {
		t.Errorf("a changed file kept the digest: %v", err)
	}
}

func TestWriteFiles(t *testing.T) {
	dir := checkout(t, code, time.Now())
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	w, _ := zw.Create("index.js")
	io.WriteString(w, "exports.handler = async () => 1;\n")
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "dist/fn.zip"), zipped.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys := os.DirFS(dir)
	for _, tc := range []struct {
		name string
		src  Source
		ext  string
		same []byte // the object is the file as it is
	}{
		{"a zip is uploaded as it is", Source{Path: "dist/fn.zip", Zip: true}, "zip", zipped.Bytes()},
		{"a file that needs no zip is uploaded as it is", Source{Path: "statemachine.json"}, "json", []byte(code["statemachine.json"])},
		{"a file that needs a zip is zipped", Source{Path: "src/app.py", Zip: true}, "zip", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			d, err := Write(fsys, tc.src, &out)
			if err != nil {
				t.Fatal(err)
			}
			if d.Ext != tc.ext {
				t.Errorf("ext %q, want %q", d.Ext, tc.ext)
			}
			if tc.same != nil && !bytes.Equal(out.Bytes(), tc.same) {
				t.Errorf("object is not the file as it is")
			}
			if tc.same == nil {
				zr, err := zip.NewReader(bytes.NewReader(out.Bytes()), int64(out.Len()))
				if err != nil || len(zr.File) != 1 || zr.File[0].Name != "app.py" {
					t.Fatalf("zip of one file: %v, %v", zr, err)
				}
			}
		})
	}
	info, err := Stat(fsys, Source{Path: "dist/fn.zip"})
	if err != nil || !info.IsZip || info.Unzipped != int64(len("exports.handler = async () => 1;\n")) {
		t.Errorf("stat of a zip: %+v, %v", info, err)
	}
	info, err = Stat(fsys, Source{Path: "src"})
	if err != nil || !info.Dir || info.Files != 4 {
		t.Errorf("stat of a folder: %+v, %v", info, err)
	}
	if _, err := Stat(fsys, Source{Path: "nope"}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat of a missing path: %v", err)
	}
}

// TestArtifactsOfAZipBundle: a bundle pushed as a zip gives the same objects as its
// folder, executable bits included, and a zip it carries has its size read.
func TestArtifactsOfAZipBundle(t *testing.T) {
	dir := checkout(t, map[string]string{"cairn.yaml": "stacks: []\n", "src/app.py": code["src/app.py"], "src/bootstrap*": "#!/bin/sh\n"}, time.Now())
	data, err := bundle.Zip(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.FromZip(data)
	if err != nil {
		t.Fatal(err)
	}
	src := Source{Path: "src", Zip: true}
	fromDir, err := NewSet(os.DirFS(dir)).Digest(src)
	if err != nil {
		t.Fatal(err)
	}
	set := NewSet(b.FS)
	fromZip, err := set.Digest(src)
	if err != nil || fromZip != fromDir {
		t.Fatalf("the zip bundle's artifact %+v (%v), the folder's %+v", fromZip, err, fromDir)
	}
	o, err := set.Build(src, fromDir)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := o.Body()
	got, _ := io.ReadAll(body)
	if sum := sha256.Sum256(got); hex.EncodeToString(sum[:]) != fromDir.SHA256 {
		t.Error("the built object's bytes are not its digest's")
	}
	if err := o.Close(); err != nil {
		t.Error(err)
	}
	if _, err := set.Build(src, Digest{SHA256: strings.Repeat("0", 64)}); err == nil || !strings.Contains(err.Error(), "not the 0000") {
		t.Errorf("a build that differs from the plan: %v", err)
	}
}

func TestQuotas(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		info Info
		want string
	}{
		{FunctionCode, Info{Unzipped: MaxLambdaUnzipped}, ""},
		{FunctionCode, Info{Unzipped: MaxLambdaUnzipped + 1}, "the function code holds 262.1 MB (262144001 bytes) unzipped, more than Lambda's 262.1 MB (262144000 bytes) (250 MB)"},
		{LayerContent, Info{Unzipped: 300_000_000}, "the layer holds 300.0 MB"},
		{StateMachineDefinition, Info{Size: MaxStateMachineDefinition + 1}, "more than Step Functions' 1.0 MB (1048576 bytes) (1 MB)"},
		{StateMachineDefinition, Info{Dir: true}, "a state machine definition is a file"},
		{Other, Info{Unzipped: 1 << 40}, ""},
	} {
		err := tc.kind.Check(tc.info)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v %+v: %v, want %q", tc.kind, tc.info, err, tc.want)
		}
	}
}
