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
