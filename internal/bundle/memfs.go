package bundle

import (
	"archive/zip"
	"bytes"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

// memFS is a read-only fs.FS over file contents keyed by clean slash-separated paths;
// directories are implied by the files beneath them.
type memFS map[string][]byte

func (m memFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if data, ok := m[name]; ok {
		return &memFile{info: memInfo{name: path.Base(name), size: int64(len(data))}, r: bytes.NewReader(data)}, nil
	}
	prefix := name + "/"
	if name == "." {
		prefix = ""
	}
	seen := map[string]bool{}
	var entries []fs.DirEntry
	for p, data := range m {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		child, _, isDir := strings.Cut(rest, "/")
		if seen[child] {
			continue
		}
		seen[child] = true
		info := memInfo{name: child, size: int64(len(data)), dir: isDir}
		if isDir {
			info.size = 0
		}
		entries = append(entries, fs.FileInfoToDirEntry(info))
	}
	if entries == nil && name != "." {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return &memDir{info: memInfo{name: path.Base(name), dir: true}, entries: entries}, nil
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return zipTime }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}

type memFile struct {
	info memInfo
	r    *bytes.Reader
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *memFile) Close() error               { return nil }

type memDir struct {
	info    memInfo
	entries []fs.DirEntry
}

func (d *memDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: fs.ErrInvalid}
}
func (d *memDir) Close() error { return nil }

// ReadDir implements fs.ReadDirFile.
func (d *memDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n]
	d.entries = d.entries[n:]
	return out, nil
}

// zipFS is a read-only fs.FS over the entries of a zip, checked by FromZipReader: a file
// is decompressed when opened, so the bundle is never held whole in memory.
type zipFS struct {
	files map[string]zipEntry
	dirs  map[string][]fs.DirEntry // by directory ("." the root), sorted
}

type zipEntry struct {
	f    *zip.File
	size int64 // counted while decompressing, never the header's claim
	mode fs.FileMode
}

// index lists every directory's entries, directories implied by the files beneath them.
func (z zipFS) index() {
	seen := map[string]bool{}
	for name, e := range z.files {
		child, dir := name, path.Dir(name)
		z.dirs[dir] = append(z.dirs[dir], fs.FileInfoToDirEntry(zipInfo{name: path.Base(name), size: e.size, mode: e.mode}))
		for dir != "." {
			child, dir = dir, path.Dir(dir)
			if seen[child] {
				break
			}
			seen[child] = true
			z.dirs[dir] = append(z.dirs[dir], fs.FileInfoToDirEntry(memInfo{name: path.Base(child), dir: true}))
		}
	}
	for _, entries := range z.dirs {
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	}
}

func (z zipFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if e, ok := z.files[name]; ok {
		rc, err := e.f.Open()
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &zipFile{info: zipInfo{name: path.Base(name), size: e.size, mode: e.mode}, rc: rc, left: e.size}, nil
	}
	entries, ok := z.dirs[name]
	if !ok && name != "." {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memDir{info: memInfo{name: path.Base(name), dir: true}, entries: slices.Clone(entries)}, nil
}

type zipInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (i zipInfo) Name() string       { return i.name }
func (i zipInfo) Size() int64        { return i.size }
func (i zipInfo) ModTime() time.Time { return zipTime }
func (i zipInfo) IsDir() bool        { return false }
func (i zipInfo) Sys() any           { return nil }
func (i zipInfo) Mode() fs.FileMode  { return i.mode.Perm() &^ 0o222 }

// zipFile streams one entry, never past the size counted when the bundle was read (an
// entry cannot grow between two reads of the same bytes, but a reader must not trust that).
type zipFile struct {
	info zipInfo
	rc   io.ReadCloser
	left int64
}

func (f *zipFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *zipFile) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.rc.Read(p)
	f.left -= int64(n)
	return n, err
}
func (f *zipFile) Close() error { return f.rc.Close() }
