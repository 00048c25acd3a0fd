// Package statefile keeps an emulated service's state in one JSON file under the
// emulator's --dir. The file is always written whole, to a temporary file renamed over it,
// so an emulator killed while writing finds its last complete state when it starts again
// on the same --dir.
package statefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// Read loads the state at path into v. A missing file is no error: the service starts
// empty. A file that does not decode is refused, naming it, rather than silently replaced.
func Read(path string, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read state %s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("state %s is corrupt (%v): fix or delete the file", path, err)
	}
	return nil
}

// Write stores v as JSON at path, atomically, with permissions perm (0o600 for state that
// holds credentials or secrets). The directory is made when missing.
func Write(path string, v any, perm os.FileMode) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// File is one service's state file, Name under Dir; with no Dir (an emulator without
// --dir) nothing is read or written. Service names the service in errors and logs.
type File struct {
	Dir, Name, Service string
	Perm               os.FileMode
	Logger             *slog.Logger
}

// Path is where the state is kept.
func (f File) Path() string { return filepath.Join(f.Dir, f.Name) }

// Load reads the state into v (see Read).
func (f File) Load(v any) error {
	if f.Dir == "" {
		return nil
	}
	if err := Read(f.Path(), v); err != nil {
		return fmt.Errorf("%s: %w", f.Service, err)
	}
	return nil
}

// Save writes v as the state (see Write).
func (f File) Save(v any) error {
	if f.Dir == "" {
		return nil
	}
	if err := Write(f.Path(), v, f.Perm); err != nil {
		return fmt.Errorf("%s: save state: %w", f.Service, err)
	}
	return nil
}

// Persist is Save after a change the caller cannot undo: a failure is logged, and the
// change stands in memory.
func (f File) Persist(v any) {
	if err := f.Save(v); err != nil && f.Logger != nil {
		f.Logger.Error(f.Service+": state will not survive a restart", "err", err)
	}
}
