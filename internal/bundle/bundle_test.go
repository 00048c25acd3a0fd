package bundle

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

const webshop = "../../testdata/bundles/webshop"

// zipOf builds a zip from entries in order; a name ending in / is a directory, and
// modes lets a test mark an entry as a symlink.
func zipOf(t testing.TB, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		if e.mode != 0 {
			h.SetMode(e.mode)
		}
		if e.raw != nil {
			h.CRC32, h.UncompressedSize64 = uint32(e.raw.crc), e.raw.usize
			h.CompressedSize64 = uint64(len(e.raw.data))
			w, err := zw.CreateRaw(h)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(e.raw.data); err != nil {
				t.Fatal(err)
			}
			continue
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type entry struct {
	name string
	body []byte
	mode fs.FileMode
	raw  *rawBody // pre-compressed body, to build large zips quickly
}

// rawBody is a deflated body with its header facts.
type rawBody struct {
	data       []byte
	crc, usize uint64
}

// zeros deflates n zero bytes once, so tests can put many large entries in a zip cheaply.
func zeros(t testing.TB, n int) *rawBody {
	t.Helper()
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &rawBody{data: buf.Bytes(), crc: uint64(crc32.ChecksumIEEE(make([]byte, n))), usize: uint64(n)}
}

func file(name, body string) entry { return entry{name: name, body: []byte(body)} }

func TestOpenDirectory(t *testing.T) {
	b, err := Open(webshop)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(webshop, "cairn.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Config, want) {
		t.Error("Config is not the content of cairn.yaml")
	}
	if b.ConfigFile != filepath.Join(webshop, "cairn.yaml") {
		t.Errorf("ConfigFile = %q", b.ConfigFile)
	}
	tmpl, err := fs.ReadFile(b.FS, "templates/network.yaml")
	if err != nil || !bytes.Contains(tmpl, []byte("AWS::EC2::VPC")) {
		t.Errorf("read templates/network.yaml: %v", err)
	}
	z, err := Zip(webshop)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(z); b.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("SHA256 = %s, want the digest of Zip(dir)", b.SHA256)
	}
}

func TestOpenDirectoryRefusesEscapingSymlink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(outside, []byte("Resources: {}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte("stacks: []"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir)
	if err == nil || !strings.Contains(err.Error(), "link.yaml is a symlink") {
		t.Fatalf("Open = %v, want a symlink error", err)
	}
}

func TestOpenDirectoryWithoutConfig(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(dir)
	want := "bundle " + dir + ": no cairn.yaml (nor a CDK cloud assembly's manifest.json) at its root: write one for its templates with `cairn init " + dir + "`, or pass a single-file config"
	if err == nil || err.Error() != want {
		t.Fatalf("Open = %v, want %q", err, want)
	}
}

func TestOpenZipAndSingleFile(t *testing.T) {
	dir := t.TempDir()
	z, err := Zip(webshop)
	if err != nil {
		t.Fatal(err)
	}
	zipPath := filepath.Join(dir, "shop.zip")
	if err := os.WriteFile(zipPath, z, 0o644); err != nil {
		t.Fatal(err)
	}
	zb, err := Open(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(webshop)
	if err != nil {
		t.Fatal(err)
	}
	if zb.SHA256 != db.SHA256 {
		t.Errorf("zip of the directory has sha256 %s, the directory %s", zb.SHA256, db.SHA256)
	}
	for _, name := range []string{"cairn.yaml", "templates/service.yaml", "templates/edge.yaml"} {
		a, errA := fs.ReadFile(zb.FS, name)
		b, errB := fs.ReadFile(db.FS, name)
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between zip and directory (%v, %v)", name, errA, errB)
		}
	}
	if err := fs.WalkDir(zb.FS, ".", func(string, fs.DirEntry, error) error { return nil }); err != nil {
		t.Errorf("walk zip bundle: %v", err)
	}
	entries, err := fs.ReadDir(zb.FS, "templates")
	if err != nil || len(entries) != 5 {
		t.Errorf("ReadDir(templates) = %d entries, %v; want 5", len(entries), err)
	}

	single := filepath.Join(dir, "shop.yaml")
	cfg := "namespace: shop\nstacks: []\n"
	if err := os.WriteFile(single, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := Open(single)
	if err != nil {
		t.Fatal(err)
	}
	if !sb.SingleFile || string(sb.Config) != cfg || sb.ConfigFile != single {
		t.Errorf("single-file bundle = %+v", sb)
	}
	if _, err := fs.ReadFile(sb.FS, "templates/x.yaml"); err == nil {
		t.Error("a single-file bundle has no other files")
	}
}

// TestZipIsDeterministic: two checkouts of the same content, with other file times and
// permissions (a CI runner's checkout of a merge and a pull request's, under another
// umask), zip to the same bytes and the same sha256, which is how `cairn apply` finds the
// plan made for that content. Whether a file is executable is content: it is kept.
func TestZipIsDeterministic(t *testing.T) {
	checkout := func(when time.Time, mode fs.FileMode) string {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(webshop)); err != nil {
			t.Fatal(err)
		}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == dir {
				return err
			}
			if !d.IsDir() {
				if err := os.Chmod(p, mode); err != nil {
					return err
				}
			}
			return os.Chtimes(p, when, when)
		})
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a := checkout(time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC), 0o644)
	b := checkout(time.Date(2026, 11, 30, 12, 0, 0, 0, time.Local), 0o660)
	za, err := Zip(a)
	if err != nil {
		t.Fatal(err)
	}
	zb, err := Zip(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(za, zb) {
		t.Error("zips of the same content with other file times and permissions differ")
	}
	// An executable file stays executable (a Lambda custom runtime's bootstrap), and is
	// another content.
	if err := os.Chmod(filepath.Join(b, ConfigName), 0o750); err != nil {
		t.Fatal(err)
	}
	zx, err := Zip(b)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(zx, za) {
		t.Error("making a file executable kept the zip's bytes")
	}
	zr, err := zip.NewReader(bytes.NewReader(zx), int64(len(zx)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		want := fs.FileMode(0o644)
		if f.Name == ConfigName {
			want = 0o755
		}
		if f.Mode() != want || !f.Modified.Equal(zipTime) {
			t.Errorf("%s: mode %v, time %v; want %v, %v", f.Name, f.Mode(), f.Modified, want, zipTime)
		}
	}
	if err := os.Chmod(filepath.Join(b, ConfigName), 0o644); err != nil {
		t.Fatal(err)
	}
	ba, err := Open(a)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := Open(b)
	if err != nil {
		t.Fatal(err)
	}
	if ba.SHA256 != bb.SHA256 || ba.SHA256 != digest(za) {
		t.Errorf("sha256 %s and %s of the same content differ (zip %s)", ba.SHA256, bb.SHA256, digest(za))
	}
	// One more byte in one file is another bundle.
	if err := os.WriteFile(filepath.Join(b, ConfigName), append(bb.Config, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := Open(b); err != nil || changed.SHA256 == ba.SHA256 {
		t.Errorf("a changed config kept the digest %s: %v", ba.SHA256, err)
	}
}

func TestZipLeavesOutVersionControlAndLocalState(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(webshop)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".git/HEAD", ".git/objects/ab/cdef", ".cairn/local/s3/journal.jsonl", "templates/.git/x"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Zip(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Zip(webshop)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		b, _ := FromZip(got)
		t.Fatalf("zip differs from the tree without .git and .cairn; bundle %v", b)
	}
}

// smallLimits lowers the zip limits for a test, so exceeding them is cheap; the checks are
// the same whatever the numbers.
func smallLimits(t *testing.T) {
	saved := limits
	limits.entries, limits.file, limits.total = 2000, 8<<20, 64<<20
	t.Cleanup(func() { limits = saved })
}

func TestFromZipRefuses(t *testing.T) {
	smallLimits(t)
	config := file("cairn.yaml", "stacks: []")
	full := zeros(t, int(limits.file))
	many := []entry{config}
	for i := range int(limits.entries) {
		many = append(many, file("templates/t"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+"/"+string(rune('a'+i/26%26))+".yaml", "x"))
	}
	var overTotal []entry
	overTotal = append(overTotal, config)
	for i := range limits.total/limits.file + 1 {
		overTotal = append(overTotal, entry{name: "big/" + string(rune('a'+i)) + ".bin", raw: full})
	}
	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"traversal", zipOf(t, []entry{config, file("../evil.yaml", "x")}), `zip entry "../evil.yaml" leaves the bundle root (path traversal)`},
		{"inner traversal", zipOf(t, []entry{config, file("templates/../../evil.yaml", "x")}), `zip entry "templates/../../evil.yaml" leaves the bundle root (path traversal)`},
		{"absolute", zipOf(t, []entry{config, file("/etc/passwd", "x")}), `zip entry "/etc/passwd" has an absolute path: entries must be relative to the bundle root`},
		{"drive letter", zipOf(t, []entry{config, file("C:/evil.yaml", "x")}), `zip entry "C:/evil.yaml" has an absolute path: entries must be relative to the bundle root`},
		{"backslash", zipOf(t, []entry{config, file(`..\evil.yaml`, "x")}), `zip entry "..\\evil.yaml" contains a backslash: use / to separate directories`},
		{"symlink", zipOf(t, []entry{config, {name: "templates/app.yaml", body: []byte("/etc/passwd"), mode: fs.ModeSymlink | 0o777}}), `zip entry "templates/app.yaml" is a symlink: bundles hold regular files only`},
		{"duplicate", zipOf(t, []entry{config, file("templates/a.yaml", "1"), file("templates/a.yaml", "2")}), `zip entry "templates/a.yaml" appears more than once`},
		{"duplicate after cleaning", zipOf(t, []entry{config, file("templates/a.yaml", "1"), file("templates/./a.yaml", "2")}), `zip entry "templates/./a.yaml" appears more than once`},
		{"file and directory", zipOf(t, []entry{config, file("templates", "1"), file("templates/a.yaml", "2")}), `zip entry "templates" is both a file and the directory of "templates/a.yaml"`},
		{"too many entries", zipOf(t, many), "zip has 2001 entries, more than the limit of 2000"},
		{"bomb", zipOf(t, []entry{config, {name: "bomb.bin", raw: zeros(t, int(limits.file)+1)}}), `zip entry "bomb.bin" expands to more than 8388608 bytes (zip bomb?)`},
		{"total", zipOf(t, overTotal), `zip entry "big/h.bin": bundle expands to more than 67108864 bytes (zip bomb?)`},
		{"no config", zipOf(t, []entry{file("templates/a.yaml", "x")}), "zip has no cairn.yaml (nor a CDK cloud assembly's manifest.json) at its root"},
		{"not a zip", []byte("namespace: shop\n"), "not a readable zip: zip: not a valid zip file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromZip(tt.data)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("FromZip = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestFromZipIgnoresLyingHeaders checks that a header claiming a small size does not let
// a large entry through: limits count the bytes actually decompressed.
func TestFromZipIgnoresLyingHeaders(t *testing.T) {
	smallLimits(t)
	data := zipOf(t, []entry{file("cairn.yaml", "stacks: []"), file("bomb.bin", strings.Repeat("A", int(limits.file)+10))})
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite the uncompressed size in the central directory to 1 byte.
	f := zr.File[1]
	var claimed [4]byte
	claimed[0] = byte(f.UncompressedSize64)
	claimed[1] = byte(f.UncompressedSize64 >> 8)
	claimed[2] = byte(f.UncompressedSize64 >> 16)
	claimed[3] = byte(f.UncompressedSize64 >> 24)
	idx := bytes.LastIndex(data, append([]byte{}, claimed[:]...))
	if idx < 0 {
		t.Fatal("size not found in central directory")
	}
	forged := bytes.Clone(data)
	copy(forged[idx:], []byte{1, 0, 0, 0})
	_, err = FromZip(forged)
	if err == nil {
		t.Fatal("FromZip accepted an entry larger than its header claims")
	}
}

func TestFromZipReadsBundle(t *testing.T) {
	data := zipOf(t, []entry{
		{name: "templates/"},
		file("cairn.yaml", "namespace: shop\n"),
		file("./templates/app.yaml", "Resources: {}"),
	})
	b, err := FromZip(data)
	if err != nil {
		t.Fatal(err)
	}
	if string(b.Config) != "namespace: shop\n" || b.ConfigFile != "cairn.yaml" {
		t.Errorf("bundle = %+v", b)
	}
	got, err := fs.ReadFile(b.FS, "templates/app.yaml")
	if err != nil || string(got) != "Resources: {}" {
		t.Errorf("templates/app.yaml = %q, %v", got, err)
	}
	if sum := sha256.Sum256(data); b.SHA256 != hex.EncodeToString(sum[:]) {
		t.Error("SHA256 is not the digest of the zip bytes")
	}
}

// FuzzZip feeds arbitrary bytes to the zip reader: it must never panic, and whatever it
// accepts must be readable within the limits. Seeds come from testdata/fuzz/FuzzZip at
// the repository root.
func FuzzZip(f *testing.F) {
	seeds, err := filepath.Glob("../../testdata/fuzz/FuzzZip/*")
	if err != nil {
		f.Fatal(err)
	}
	if len(seeds) == 0 {
		f.Fatal("no seeds in testdata/fuzz/FuzzZip")
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := FromZip(data)
		if err != nil {
			return
		}
		var total int
		err = fs.WalkDir(b.FS, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			body, err := fs.ReadFile(b.FS, p)
			total += len(body)
			return err
		})
		if err != nil {
			t.Fatalf("walk accepted bundle: %v", err)
		}
		if total > MaxTotalSize {
			t.Fatalf("accepted %d bytes, more than MaxTotalSize", total)
		}
	})
}

// TestZipBundleIsReadLazily: reading a zip bundle that carries a large artifact keeps
// none of it in memory; only a file opened is decompressed, as it is read.
func TestZipBundleIsReadLazily(t *testing.T) {
	const size = 64 << 20
	data := zipOf(t, []entry{file("cairn.yaml", "stacks: []"), {name: "src/big.bin", raw: zeros(t, size)}})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b, err := FromZip(data)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > size/8 {
		t.Errorf("reading the bundle allocated %d bytes for a %d-byte entry", grew, size)
	}
	info, err := fs.Stat(b.FS, "src/big.bin")
	if err != nil || info.Size() != size {
		t.Fatalf("stat: %v, %v", info, err)
	}
	f, err := b.FS.Open("src/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := io.Copy(io.Discard, f)
	if err != nil || n != size {
		t.Errorf("read %d bytes, %v; want %d", n, err, size)
	}
	if _, err := ReadFile(b.FS, "src/big.bin"); err == nil || !strings.Contains(err.Error(), "more than 8388608 bytes") {
		t.Errorf("ReadFile of a file over MaxReadSize: %v", err)
	}
}

// TestZipConfigKeptFromCounting checks the config FromZip keeps from counting its size is
// the file, up to ReadFile's limit, and that one over it is refused as ReadFile refuses it.
func TestZipConfigKeptFromCounting(t *testing.T) {
	for _, tc := range []struct {
		size    int
		wantErr string
	}{
		{size: 0},
		{size: 100},
		{size: MaxReadSize},
		{size: MaxReadSize + 1, wantErr: "cairn.yaml is more than 8388608 bytes"},
	} {
		config := bytes.Repeat([]byte("a: b\n"), tc.size/5+1)[:tc.size]
		b, err := FromZip(zipOf(t, []entry{{name: "templates/t.yaml", body: []byte("x")}, {name: ConfigName, body: config}}))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%d bytes: error %v, want %q", tc.size, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%d bytes: %v", tc.size, err)
		}
		if !bytes.Equal(b.Config, config) || b.Config == nil || b.ConfigFile != ConfigName {
			t.Errorf("%d bytes: config %d bytes (nil %v) from %q", tc.size, len(b.Config), b.Config == nil, b.ConfigFile)
		}
	}
}
