package bundle

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"
)

// Limits on what a zip bundle may hold. A bundle may carry the code its templates name
// (Lambda functions and layers, packaged as `aws cloudformation package` does), so the
// limits leave room for a function's 250 MB of unzipped code, and are small enough that a
// crafted zip cannot exhaust memory or disk: the zip is read entry by entry, never
// decompressed whole into memory, and sizes are counted while decompressing; the sizes a
// zip header claims are never trusted.
const (
	// MaxZipSize is the largest zip accepted, in bytes (256 MiB).
	MaxZipSize = 256 << 20
	// MaxEntries is the largest number of entries (files and directories) in a zip: a
	// function's dependencies (node_modules) hold many small files.
	MaxEntries = 100_000
	// MaxFileSize is the largest uncompressed size of one file, in bytes (256 MiB, above
	// Lambda's 250 MB of unzipped code).
	MaxFileSize = 256 << 20
	// MaxTotalSize is the largest uncompressed size of all files together, in bytes (1 GiB).
	MaxTotalSize = 1 << 30
	// MaxReadSize is the largest file cairn reads into memory itself: the config, its
	// templates (CloudFormation takes 1 MB), var files and ${file} lookups. Code and other
	// artifacts are streamed, never read whole.
	MaxReadSize = 8 << 20
)

// limits are the limits in force: the constants, lowered by tests so that exceeding them
// stays cheap.
var limits = struct{ entries, file, total int64 }{MaxEntries, MaxFileSize, MaxTotalSize}

// FromZip reads a zip bundle held in memory; see FromZipReader.
func FromZip(data []byte) (*Bundle, error) {
	if len(data) > MaxZipSize {
		return nil, fmt.Errorf("zip is %d bytes, more than the limit of %d", len(data), MaxZipSize)
	}
	b, err := FromZipReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	b.SHA256 = digest(data)
	return b, nil
}

// FromZipReader reads a zip bundle of size bytes from r. It refuses entries whose names
// are absolute or leave the root, symlinks and other non-regular files, duplicate names,
// and archives beyond the limits above, naming the offending entry. Every entry is
// decompressed once to count its true size; the bundle's files are decompressed again
// when opened, one at a time, so a bundle of code never sits whole in memory, except the
// config, which is read whole anyway and kept from the first pass. The Bundle's
// SHA256 is left for the caller (FromZip and Open set it).
func FromZipReader(r io.ReaderAt, size int64) (*Bundle, error) {
	if size > MaxZipSize {
		return nil, fmt.Errorf("zip is %d bytes, more than the limit of %d", size, MaxZipSize)
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("not a readable zip: %w", err)
	}
	if int64(len(zr.File)) > limits.entries {
		return nil, fmt.Errorf("zip has %d entries, more than the limit of %d", len(zr.File), limits.entries)
	}
	files := zipFS{files: map[string]zipEntry{}, dirs: map[string][]fs.DirEntry{}}
	dirs := map[string]bool{}
	var total int64
	var config []byte // cairn.yaml, kept while counting
	for _, f := range zr.File {
		name, err := entryName(f.Name)
		if err != nil {
			return nil, err
		}
		mode := f.Mode()
		if mode&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("zip entry %q is a symlink: bundles hold regular files only", f.Name)
		}
		if mode.IsDir() {
			if _, ok := files.files[name]; ok {
				return nil, fmt.Errorf("zip entry %q is both a file and a directory", f.Name)
			}
			dirs[name] = true
			continue
		}
		if !mode.IsRegular() {
			return nil, fmt.Errorf("zip entry %q is not a regular file (mode %v)", f.Name, mode)
		}
		if _, ok := files.files[name]; ok || dirs[name] {
			return nil, fmt.Errorf("zip entry %q appears more than once", f.Name)
		}
		var keep *keeper
		if name == ConfigName {
			keep = &keeper{b: make([]byte, 0, min(f.UncompressedSize64, MaxReadSize)+1)}
		}
		n, err := countEntry(f, limits.total-total, keep)
		if err != nil {
			return nil, err
		}
		if keep != nil {
			config = keep.b
		}
		total += n
		files.files[name] = zipEntry{f: f, size: n, mode: mode}
	}
	// A file may not also be a parent directory of another file ("a" and "a/b").
	for name := range files.files {
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if _, ok := files.files[dir]; ok {
				return nil, fmt.Errorf("zip entry %q is both a file and the directory of %q", dir, name)
			}
		}
	}
	files.index()
	name := ConfigName
	if config == nil {
		config, name, err = readConfig(files)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("zip has no %s (nor a CDK cloud assembly's %s) at its root", ConfigName, AssemblyManifest)
	}
	if err != nil {
		return nil, err
	}
	return &Bundle{ConfigFile: name, Config: config, FS: files}, nil
}

// ReadFile reads a file of a bundle that cairn reads whole (config, template, var file,
// ${file} lookup), refusing one over MaxReadSize.
func ReadFile(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(0)
	if info, err := f.Stat(); err == nil {
		if info.IsDir() {
			return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("is a directory")}
		}
		size = info.Size()
	}
	body, err := readAll(io.LimitReader(f, MaxReadSize+1), size)
	if err != nil {
		return nil, err
	}
	if len(body) > MaxReadSize {
		return nil, fmt.Errorf("%s is more than %d bytes: cairn reads configs, templates and ${file} files of at most %d MiB", name, MaxReadSize, MaxReadSize>>20)
	}
	return body, nil
}

// readAll is io.ReadAll into a buffer of the size the file says it has (at most the read
// limit, so a zip entry claiming more costs nothing), which a large config then fills
// once instead of growing into it through copies.
func readAll(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 || size > MaxReadSize {
		return io.ReadAll(r)
	}
	// One byte more than the size: reading to the end then needs no growth.
	b := make([]byte, 0, size+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // longer than it said: grow as io.ReadAll does
		}
	}
}

// entryName checks a zip entry name and returns it as a clean fs.FS path.
func entryName(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("zip entry with an empty name")
	}
	if strings.Contains(raw, `\`) {
		return "", fmt.Errorf("zip entry %q contains a backslash: use / to separate directories", raw)
	}
	if strings.HasPrefix(raw, "/") || (len(raw) >= 2 && raw[1] == ':') {
		return "", fmt.Errorf("zip entry %q has an absolute path: entries must be relative to the bundle root", raw)
	}
	name := strings.TrimSuffix(raw, "/")
	for _, elem := range strings.Split(name, "/") {
		if elem == ".." {
			return "", fmt.Errorf("zip entry %q leaves the bundle root (path traversal)", raw)
		}
	}
	name = path.Clean(name)
	if !fs.ValidPath(name) || name == "." {
		return "", fmt.Errorf("zip entry %q is not a valid path", raw)
	}
	return name, nil
}

// countEntry decompresses one entry without keeping it, and returns its true size,
// stopping as soon as it exceeds the per-file limit or the remaining total budget.
func countEntry(f *zip.File, budget int64, keep *keeper) (int64, error) {
	limit := min(limits.file, budget)
	rc, err := f.Open()
	if err != nil {
		return 0, fmt.Errorf("zip entry %q: %w", f.Name, err)
	}
	defer rc.Close()
	w := io.Discard
	if keep != nil {
		w = keep
	}
	n, err := io.Copy(w, io.LimitReader(rc, limit+1))
	if err != nil {
		return 0, fmt.Errorf("zip entry %q: %w", f.Name, err)
	}
	if n > limit {
		if limit < limits.file {
			return 0, fmt.Errorf("zip entry %q: bundle expands to more than %d bytes (zip bomb?)", f.Name, limits.total)
		}
		return 0, fmt.Errorf("zip entry %q expands to more than %d bytes (zip bomb?)", f.Name, limits.file)
	}
	return n, nil
}

// keeper keeps what is written to it up to MaxReadSize bytes (ReadFile's limit), and
// nothing (b nil) when more is written: ReadFile then reads the file again, and refuses it.
type keeper struct{ b []byte }

func (k *keeper) Write(p []byte) (int, error) {
	if k.b != nil {
		if len(k.b)+len(p) > MaxReadSize {
			k.b = nil
		} else {
			k.b = append(k.b, p...)
		}
	}
	return len(p), nil
}

// zipTime is the modification time of every entry WriteZip writes, so the archive depends
// only on file names, contents and whether they are executable (1980-01-01 is the earliest
// time a zip can hold).
var zipTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// assemblyNoise reports whether the file p is one a CDK cloud assembly holds beside its
// manifest.json that nothing deploys and that differs between two synths of the same app,
// so that the content hash of an assembly (its bundle's sha256, by which `cairn apply`
// finds the reviewed plan) is the same for the same app: tree.json (the construct tree,
// with library versions and construct metadata), the stacks' additional metadata files
// (*.metadata.json: construct metadata with stack traces through the jsii kernel's
// temporary folder), and what the CDK CLI writes there of its own run: its lock files
// (synth.lock, read.PID.N.lock: *.lock) and its timings (performance-counters.json).
func assemblyNoise(fsys fs.FS, p string) bool {
	name := path.Base(p)
	if name != "tree.json" && name != "performance-counters.json" && !strings.HasSuffix(name, ".metadata.json") && !strings.HasSuffix(name, ".lock") {
		return false
	}
	st, err := fs.Stat(fsys, path.Join(path.Dir(p), AssemblyManifest))
	return err == nil && st.Mode().IsRegular()
}

// skipDirs are folders WriteZip leaves out: version control and cairn's local state are
// never part of a deployment (pushing a repository root must not upload .git).
var skipDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".cairn": true}

// Excluded reports whether the bundle path p (slash-separated, relative to the bundle's
// root) lies in a folder no bundle holds (.git, .hg, .svn, .cairn): WriteZip leaves those
// out, so a pushed bundle never has them, and a path there (a template's CodeUri: ../.git/)
// would name something only the machine that validates a folder sees. Validation and the
// deployer both refuse such a path with this one rule.
func Excluded(p string) bool {
	for _, e := range strings.Split(path.Clean(p), "/") {
		if skipDirs[e] {
			return true
		}
	}
	return false
}

// checkSizes refuses a folder of fsys under root whose regular files (those WriteZip
// would write) hold more than a bundle may: one file beyond the per-file limit or all of
// them beyond the total, as a zip bundle is refused. It only looks at sizes (lstat), never
// opens a file, so a huge or sparse file is refused at once instead of being read whole
// into a digest first.
func checkSizes(fsys fs.FS, root string) error {
	var total int64
	return fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && skipDirs[d.Name()] {
			return fs.SkipDir
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > limits.file {
			return fmt.Errorf("%s is %d bytes, more than the limit of %d for one file of a bundle: move it out of the bundle's folder (a build output, a dump), or make it smaller", p, info.Size(), limits.file)
		}
		if total += info.Size(); total > limits.total {
			return fmt.Errorf("the files up to %s hold more than %d bytes, the limit of a bundle: move what the stacks do not need out of the bundle's folder", p, limits.total)
		}
		return nil
	})
}

// Zip archives the regular files under dir into a deterministic zip (see WriteZip),
// refusing a folder beyond the bundle's size limits before reading any file.
func Zip(dir string) ([]byte, error) {
	var buf bytes.Buffer
	if err := checkSizes(os.DirFS(dir), "."); err != nil {
		return nil, fmt.Errorf("zip bundle %s: %w", dir, err)
	}
	if err := WriteZip(&buf, os.DirFS(dir), "."); err != nil {
		return nil, fmt.Errorf("zip bundle %s: %w", dir, err)
	}
	return buf.Bytes(), nil
}

// WriteZip writes the regular files under root of fsys to w as a deterministic zip:
// entries in lexical order, named relative to root, every time fixed and every mode
// 0644, or 0755 for a file its owner may execute (a Lambda custom runtime's bootstrap must
// stay executable), so the same tree always gives the same bytes and digest, whatever the
// checkout's file times and umask. It refuses symlinks, which would not mean the same
// thing once zipped, and leaves out skipDirs and the files of a cloud assembly that
// change from one synthesis of the same app to the next (assemblyNoise). It is the one
// zip cairn makes of a folder: a bundle's, and a code folder a template names.
func WriteZip(w io.Writer, fsys fs.FS, root string) error {
	zw := zip.NewWriter(w)
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && skipDirs[d.Name()] {
			return fs.SkipDir
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		if root == "." {
			rel = p
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symlink: bundles hold regular files only", p)
		}
		if d.IsDir() || !d.Type().IsRegular() || assemblyNoise(fsys, p) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return addFile(zw, fsys, p, rel, info.Mode())
	})
	if err != nil {
		return err
	}
	return zw.Close()
}

// WriteFileZip writes a zip holding the one file name of fsys, under its base name, as
// WriteZip would (what `aws cloudformation package` does with a file a property needs
// zipped).
func WriteFileZip(w io.Writer, fsys fs.FS, name string) error {
	info, err := fs.Stat(fsys, name)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(w)
	if err := addFile(zw, fsys, name, path.Base(name), info.Mode()); err != nil {
		return err
	}
	return zw.Close()
}

func addFile(zw *zip.Writer, fsys fs.FS, name, entry string, mode fs.FileMode) error {
	h := &zip.FileHeader{Name: entry, Method: zip.Deflate, Modified: zipTime}
	h.SetMode(NormalMode(mode))
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// NormalMode is the mode a deterministic zip records for a file of mode m: 0755 when its
// owner may execute it, else 0644.
func NormalMode(m fs.FileMode) fs.FileMode {
	if m&0o100 != 0 {
		return 0o755
	}
	return 0o644
}

// Digest is the sha256 (hex) a deterministic zip of the folder root of fsys would have,
// computed without holding the zip.
func Digest(fsys fs.FS, root string) (string, error) {
	if err := checkSizes(fsys, root); err != nil {
		return "", err
	}
	h := sha256.New()
	if err := WriteZip(h, fsys, root); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// WithFile returns the zip data with the file name holding body: replaced when the zip
// has it, added otherwise (as push --var-file stores its var file as VarsName).
func WithFile(data []byte, name string, body []byte) ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("not a readable zip: %w", err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		if f.Name == name {
			continue
		}
		if err := zw.Copy(f); err != nil {
			return nil, err
		}
	}
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: zipTime}
	h.SetMode(0o644)
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = w.Write(body)
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
