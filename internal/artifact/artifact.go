// Package artifact builds the local artifacts a bundle's templates name — Lambda code and
// layers, API, state machine and GraphQL definitions, scripts, included snippets — into the
// objects `aws cloudformation package` would upload: a folder zipped deterministically
// (bundle.WriteZip: sorted entries, fixed times and modes), a file as it is, or zipped when
// the property needs a zip and the file is not one. Objects are addressed by the sha256 of
// their bytes, so the same content always gives the same address, and an artifact that
// did not change is neither uploaded again nor a reason to update a stack.
//
// Building never holds an artifact whole in memory: a digest streams the object through
// sha256, and an upload streams it into a temporary file first.
package artifact

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
	"sync"

	"github.com/cairn-dev/cairn/internal/bundle"
)

// Source is a local artifact of a bundle: a file or folder, and whether the property
// naming it takes a zip (Lambda code and layers, CodeCommit's initial code).
type Source struct {
	// Path is bundle-relative, clean and slash-separated; "." is the bundle's root.
	Path string
	Zip  bool
}

// Info is what Stat learns of a source without building it.
type Info struct {
	Dir bool
	// Files counts the regular files (1 for a file).
	Files int
	// Size is the file's size, or the folder's files' sizes summed.
	Size int64
	// Unzipped is what the object holds once unzipped: Size, or for a zip file the sizes
	// its entries have uncompressed (as its central directory says).
	Unzipped int64
	// IsZip says the file is a zip archive.
	IsZip bool
}

// Stat looks at src in fsys. A missing path is an error wrapping fs.ErrNotExist.
func Stat(fsys fs.FS, src Source) (Info, error) {
	st, err := fs.Stat(fsys, src.Path)
	if err != nil {
		return Info{}, err
	}
	if !st.IsDir() {
		info := Info{Files: 1, Size: st.Size(), Unzipped: st.Size()}
		if !st.Mode().IsRegular() {
			return Info{}, fmt.Errorf("%s is not a regular file", src.Path)
		}
		if info.IsZip, err = isZip(fsys, src.Path); err != nil {
			return Info{}, err
		}
		if info.IsZip {
			if info.Unzipped, err = unzippedSize(fsys, src.Path, st.Size()); err != nil {
				return Info{}, err
			}
		}
		return info, nil
	}
	info := Info{Dir: true}
	err = fs.WalkDir(fsys, src.Path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symlink: bundles hold regular files only", p)
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		info.Files++
		info.Size += fi.Size()
		return nil
	})
	info.Unzipped = info.Size
	return info, err
}

// zipMagic begins every zip archive: a local file header, or the end of an empty archive.
var zipMagic = [][]byte{[]byte("PK\x03\x04"), []byte("PK\x05\x06")}

func isZip(fsys fs.FS, name string) (bool, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, 4)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	for _, m := range zipMagic {
		if n == 4 && bytes.Equal(head, m) {
			return true, nil
		}
	}
	return false, nil
}

// unzippedSize sums a zip file's entries' uncompressed sizes from its central directory
// (what Lambda will unpack), reading the file in place when fsys gives random access and
// through a temporary file otherwise (a file of a zip bundle is a stream).
func unzippedSize(fsys fs.FS, name string, size int64) (int64, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	ra, ok := f.(io.ReaderAt)
	if !ok {
		tmp, err := os.CreateTemp("", "cairn-artifact-*.zip")
		if err != nil {
			return 0, err
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		if size, err = io.Copy(tmp, f); err != nil {
			return 0, err
		}
		ra = tmp
	}
	zr, err := zip.NewReader(ra, size)
	if err != nil {
		return 0, fmt.Errorf("%s looks like a zip but does not read as one: %v", name, err)
	}
	var total int64
	for _, e := range zr.File {
		total += int64(e.UncompressedSize64)
	}
	return total, nil
}

// Digest identifies an artifact as stored: the sha256 (hex) of the object's bytes, its
// extension (bucket.AssetKey's EXT: "zip" for what is zipped, else the file's own, "" for
// none) and its size.
type Digest struct {
	SHA256 string `json:"sha256"`
	Ext    string `json:"ext,omitempty"`
	Size   int64  `json:"size"`
	// Dir says the object is a folder, zipped.
	Dir bool `json:"dir,omitempty"`
}

// Write writes the object of src to w — a folder as a deterministic zip, a file zipped
// (under its base name) when src.Zip and it is not a zip already, else the file as it is —
// and returns its digest.
func Write(fsys fs.FS, src Source, w io.Writer) (Digest, error) {
	st, err := fs.Stat(fsys, src.Path)
	if err != nil {
		return Digest{}, err
	}
	h := sha256.New()
	cw := &counter{w: io.MultiWriter(w, h)}
	d := Digest{Ext: "zip", Dir: st.IsDir()}
	switch {
	case st.IsDir():
		err = bundle.WriteZip(cw, fsys, src.Path)
	default:
		var zipped bool
		if zipped, err = isZip(fsys, src.Path); err != nil {
			return Digest{}, err
		}
		if src.Zip && !zipped {
			err = bundle.WriteFileZip(cw, fsys, src.Path)
			break
		}
		d.Ext = Ext(src.Path)
		var f fs.File
		if f, err = fsys.Open(src.Path); err != nil {
			return Digest{}, err
		}
		_, err = io.Copy(cw, f)
		f.Close()
	}
	if err != nil {
		return Digest{}, fmt.Errorf("build %s: %w", src.Path, err)
	}
	d.SHA256, d.Size = hex.EncodeToString(h.Sum(nil)), cw.n
	return d, nil
}

// Ext is the extension a file is stored with: its own, lower case, when it is short and
// plain (letters and digits), else none.
func Ext(name string) string {
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(name), "."))
	if len(ext) > 10 || strings.Trim(ext, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		return ""
	}
	return ext
}

type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Set is the artifacts of one bundle: each source is digested at most once, however many
// templates and stacks name it, and only when asked (validating a bundle builds nothing).
// It is safe for concurrent use.
type Set struct {
	fsys    fs.FS
	mu      sync.Mutex
	digests map[Source]func() (Digest, error)
}

// NewSet returns the artifact set of the bundle files fsys.
func NewSet(fsys fs.FS) *Set {
	return &Set{fsys: fsys, digests: map[Source]func() (Digest, error){}}
}

// Digest returns the digest of src's object, building it (into sha256 only) the first time.
func (s *Set) Digest(src Source) (Digest, error) {
	s.mu.Lock()
	f, ok := s.digests[src]
	if !ok {
		f = sync.OnceValues(func() (Digest, error) { return Write(s.fsys, src, io.Discard) })
		s.digests[src] = f
	}
	s.mu.Unlock()
	return f()
}

// Stat is Stat of src in the set's bundle.
func (s *Set) Stat(src Source) (Info, error) { return Stat(s.fsys, src) }

// Object is a built artifact ready to upload: its digest and its bytes in a temporary
// file, removed by Close.
type Object struct {
	Digest
	file *os.File
}

// Body returns the object's bytes from their start, for an upload (seekable, so the SDK
// can sign and retry it).
func (o *Object) Body() (io.ReadSeeker, error) {
	if _, err := o.file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return o.file, nil
}

// Close removes the temporary file.
func (o *Object) Close() error {
	err := o.file.Close()
	if rmErr := os.Remove(o.file.Name()); err == nil {
		err = rmErr
	}
	return err
}

// Build builds src into a temporary file. Its digest must be want's: the bundle is
// immutable, so another means the object is not what was planned, and nothing is uploaded.
func (s *Set) Build(src Source, want Digest) (*Object, error) {
	f, err := os.CreateTemp("", "cairn-artifact-*")
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", src.Path, err)
	}
	o := &Object{file: f}
	if o.Digest, err = Write(s.fsys, src, f); err != nil {
		o.Close()
		return nil, err
	}
	if want.SHA256 != "" && o.SHA256 != want.SHA256 {
		o.Close()
		return nil, fmt.Errorf("build %s: it built to sha256 %s, not the %s planned: the bundle changed under cairn", src.Path, o.SHA256, want.SHA256)
	}
	return o, nil
}
