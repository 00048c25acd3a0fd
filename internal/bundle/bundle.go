// Package bundle reads deployment bundles: a directory, a zip archive, or a single YAML
// file, each holding a cairn.yaml config and the templates it names; or a CDK cloud
// assembly (a cdk.out folder, or a zip of one), which holds a manifest.json instead.
//
// A bundle arrives from outside (an S3 upload), so reading one never trusts it: a zip may
// not escape its root, hold links or duplicate names, or expand beyond the documented limits.
package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ConfigName is the name of the config file at the root of a directory or zip bundle.
const ConfigName = "cairn.yaml"

// AssemblyManifest is the file at the root of a CDK cloud assembly (cdk.out): a folder or
// zip holding it and no cairn.yaml is a bundle too, whose stacks the assembly gives
// (internal/assembly reads it).
const AssemblyManifest = "manifest.json"

// VarsName is the var file at the root of a bundle: the values of ${var} lookups that
// `cairn push --var-file` and `cairn plan --var-file` store with the config, so a run is
// reproducible from its bundle alone.
const VarsName = "cairn.vars.yaml"

// Bundle is a loaded deployment bundle.
type Bundle struct {
	// Path is where the bundle was read from ("" for a bundle built from bytes).
	Path string
	// ConfigFile names the config in messages: the path a user can open when possible.
	ConfigFile string
	// Config is the content of cairn.yaml (or of the single YAML file); nil for a cloud
	// assembly without a cairn.yaml, whose ConfigFile is its manifest.json.
	Config []byte
	// FS gives the bundle's files by bundle-relative, slash-separated path. A single-file
	// bundle has no other files: its templates are inline.
	FS fs.FS
	// SHA256 is the hex sha256 of the bundle: of the zip or YAML bytes as given, and for a
	// directory of its deterministic zip (see Zip), so the same content has the same digest
	// however it is shipped as a directory or zipped by Zip.
	SHA256 string
	// SingleFile reports whether the bundle is one YAML file with inline templates.
	SingleFile bool
}

// Location is the bundle a path names: a file named cairn.yaml names its folder (its
// templates are beside it), any other path itself.
func Location(path string) string {
	if filepath.Base(path) == ConfigName {
		if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() {
			return filepath.Dir(path)
		}
	}
	return path
}

// Open reads the bundle at path: a directory holding cairn.yaml (or that cairn.yaml
// itself, see Location), a file ending in .zip, or any other file taken as a single YAML
// config with inline template bodies.
func Open(path string) (*Bundle, error) {
	path = Location(path)
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open bundle: %w", err)
	}
	switch {
	case info.IsDir():
		return openDir(path)
	case strings.EqualFold(filepath.Ext(path), ".zip"):
		return openZip(path, info.Size())
	default:
		if info.Size() > MaxReadSize {
			return nil, fmt.Errorf("bundle %s: file is %d bytes, more than the limit of %d", path, info.Size(), MaxReadSize)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("open bundle: %w", err)
		}
		b := FromYAML(path, data)
		b.Path = path
		return b, nil
	}
}

// FromYAML makes a single-file bundle from config bytes; name is used in messages.
func FromYAML(name string, data []byte) *Bundle {
	return &Bundle{
		ConfigFile: name,
		Config:     data,
		FS:         memFS{},
		SHA256:     digest(data),
		SingleFile: true,
	}
}

func openDir(dir string) (*Bundle, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open bundle: %w", err)
	}
	// The root stays open for the life of the bundle: its FS refuses paths and symlinks
	// that leave the directory.
	fsys := root.FS()
	config, name, err := readConfig(fsys)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("bundle %s: no %s (nor a CDK cloud assembly's %s) at its root: write one for its templates with `cairn init %s`, or pass a single-file config", dir, ConfigName, AssemblyManifest, dir)
		}
		return nil, fmt.Errorf("bundle %s: read %s: %w", dir, name, err)
	}
	sum, err := Digest(os.DirFS(dir), ".")
	if err != nil {
		return nil, fmt.Errorf("zip bundle %s: %w", dir, err)
	}
	return &Bundle{
		Path:       dir,
		ConfigFile: filepath.Join(dir, name),
		Config:     config,
		FS:         fsys,
		SHA256:     sum,
	}, nil
}

// readConfig reads the bundle's cairn.yaml, and names it; a bundle without one that holds
// a cloud assembly's manifest.json at its root has no config (nil) and is named by the
// manifest. Neither is an error wrapping fs.ErrNotExist.
func readConfig(fsys fs.FS) ([]byte, string, error) {
	config, err := ReadFile(fsys, ConfigName)
	if !errors.Is(err, fs.ErrNotExist) {
		return config, ConfigName, err
	}
	if st, serr := fs.Stat(fsys, AssemblyManifest); serr == nil && st.Mode().IsRegular() {
		return nil, AssemblyManifest, nil
	}
	return nil, ConfigName, err
}

// openZip reads a zip bundle from its file, which stays open for the life of the bundle:
// entries are decompressed when read, never all at once.
func openZip(path string, size int64) (*Bundle, error) {
	if size > MaxZipSize {
		return nil, fmt.Errorf("bundle %s: zip is %d bytes, more than the limit of %d", path, size, MaxZipSize)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open bundle: %w", err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		f.Close()
		return nil, fmt.Errorf("open bundle: %w", err)
	}
	b, err := FromZipReader(f, size)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	b.Path = path
	b.ConfigFile = filepath.Join(path, b.ConfigFile)
	b.SHA256 = hex.EncodeToString(h.Sum(nil))
	return b, nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
