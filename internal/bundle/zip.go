package bundle

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Limits on what a zip bundle may hold. A bundle is a config and some templates
// (CloudFormation caps a template body at 1 MB), so these are generous for real bundles
// and small enough that a crafted zip cannot exhaust memory. Sizes are counted while
// reading the decompressed data; the sizes a zip header claims are never trusted.
const (
	// MaxZipSize is the largest zip accepted, in bytes.
	MaxZipSize = 64 << 20
	// MaxEntries is the largest number of entries (files and directories) in a zip.
	MaxEntries = 2000
	// MaxFileSize is the largest uncompressed size of one file, in bytes.
	MaxFileSize = 8 << 20
	// MaxTotalSize is the largest uncompressed size of all files together, in bytes.
	MaxTotalSize = 64 << 20
)

// FromZip reads a zip bundle from memory. It refuses entries whose names are absolute or
// leave the root, symlinks and other non-regular files, duplicate names, and archives
// beyond the limits above, naming the offending entry.
func FromZip(data []byte) (*Bundle, error) {
	if len(data) > MaxZipSize {
		return nil, fmt.Errorf("zip is %d bytes, more than the limit of %d", len(data), MaxZipSize)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("not a readable zip: %w", err)
	}
	if len(zr.File) > MaxEntries {
		return nil, fmt.Errorf("zip has %d entries, more than the limit of %d", len(zr.File), MaxEntries)
	}
	files := memFS{}
	dirs := map[string]bool{}
	var total int64
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
			if _, ok := files[name]; ok {
				return nil, fmt.Errorf("zip entry %q is both a file and a directory", f.Name)
			}
			dirs[name] = true
			continue
		}
		if !mode.IsRegular() {
			return nil, fmt.Errorf("zip entry %q is not a regular file (mode %v)", f.Name, mode)
		}
		if _, ok := files[name]; ok || dirs[name] {
			return nil, fmt.Errorf("zip entry %q appears more than once", f.Name)
		}
		body, err := readEntry(f, MaxTotalSize-total)
		if err != nil {
			return nil, err
		}
		total += int64(len(body))
		files[name] = body
	}
	// A file may not also be a parent directory of another file ("a" and "a/b").
	for name := range files {
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if _, ok := files[dir]; ok {
				return nil, fmt.Errorf("zip entry %q is both a file and the directory of %q", dir, name)
			}
		}
	}
	config, ok := files[ConfigName]
	if !ok {
		return nil, fmt.Errorf("zip has no %s at its root", ConfigName)
	}
	return &Bundle{
		ConfigFile: ConfigName,
		Config:     config,
		FS:         files,
		SHA256:     digest(data),
	}, nil
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

// readEntry decompresses one entry, stopping as soon as it exceeds the per-file limit or
// the remaining total budget.
func readEntry(f *zip.File, budget int64) ([]byte, error) {
	limit := min(int64(MaxFileSize), budget)
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("zip entry %q: %w", f.Name, err)
	}
	defer rc.Close()
	body, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("zip entry %q: %w", f.Name, err)
	}
	if int64(len(body)) > limit {
		if limit < MaxFileSize {
			return nil, fmt.Errorf("zip entry %q: bundle expands to more than %d bytes (zip bomb?)", f.Name, MaxTotalSize)
		}
		return nil, fmt.Errorf("zip entry %q expands to more than %d bytes (zip bomb?)", f.Name, MaxFileSize)
	}
	return body, nil
}

// zipTime is the modification time of every entry Zip writes, so the archive depends only
// on file names and contents (1980-01-01 is the earliest time a zip can hold).
var zipTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// skipDirs are folders Zip leaves out: version control and cairn's local state are never
// part of a deployment (pushing a repository root must not upload .git).
var skipDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".cairn": true}

// Zip archives the regular files under dir into a deterministic zip: entries in lexical
// order, fixed times and modes, so the same tree always gives the same bytes and digest.
// It refuses symlinks, which would not mean the same thing once zipped, and leaves out
// skipDirs.
func Zip(dir string) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if d.IsDir() && rel != "." && skipDirs[d.Name()] {
			return filepath.SkipDir
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return fmt.Errorf("bundle %s: %s is a symlink: bundles hold regular files only", dir, rel)
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h := &zip.FileHeader{Name: filepath.ToSlash(rel), Method: zip.Deflate, Modified: zipTime}
		h.SetMode(0o644)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("zip bundle: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("zip bundle: %w", err)
	}
	return buf.Bytes(), nil
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
