package statefile_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/awslocal/statefile"
)

func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dir", "state.json")
	for _, v := range []map[string]int{{"a": 1}, {"b": 2}} {
		if err := statefile.Write(path, v, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]int
		if err := json.Unmarshal(b, &got); err != nil || len(got) != 1 || got["a"] != v["a"] || got["b"] != v["b"] {
			t.Fatalf("read back %s (%v), want %v", b, err, v)
		}
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v (%v), want 0600", st.Mode(), err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("the temporary file is left: %v", err)
	}
	if err := statefile.Write(path, func() {}, 0o600); err == nil {
		t.Fatal("a value JSON cannot encode was written")
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	var v map[string]int
	if err := statefile.Read(filepath.Join(dir, "missing.json"), &v); err != nil || v != nil {
		t.Fatalf("a missing file: %v, %v; want no error and nothing read", err, v)
	}
	path := filepath.Join(dir, "state.json")
	if err := statefile.Write(path, map[string]int{"a": 1}, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := statefile.Read(path, &v); err != nil || v["a"] != 1 {
		t.Fatalf("read %v, %v", v, err)
	}
	if err := os.WriteFile(path, []byte("{half"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := statefile.Read(path, &v)
	if err == nil || !strings.HasPrefix(err.Error(), "state "+path+" is corrupt (") || !strings.HasSuffix(err.Error(), "): fix or delete the file") {
		t.Fatalf("a corrupt file: %v", err)
	}
}

// TestFile: without a Dir nothing is read or written; with one, Save and Load round-trip
// at Name with Perm, and a corrupt file is refused naming the service and the file.
func TestFile(t *testing.T) {
	var got map[string]int
	none := statefile.File{Name: "x.json", Service: "x emulator", Perm: 0o600}
	if err := none.Save(map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := none.Load(&got); err != nil || got != nil {
		t.Fatalf("no Dir: Load = %v, %v; want nothing", got, err)
	}
	f := statefile.File{Dir: filepath.Join(t.TempDir(), "state"), Name: "x.json", Service: "x emulator", Perm: 0o600}
	f.Persist(map[string]int{"a": 1})
	if err := f.Load(&got); err != nil || got["a"] != 1 {
		t.Fatalf("Load = %v, %v; want a=1", got, err)
	}
	if fi, err := os.Stat(f.Path()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file %v, %v; want mode 0600", fi, err)
	}
	if err := os.WriteFile(f.Path(), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.Load(&got); err == nil || !strings.HasPrefix(err.Error(), "x emulator: state "+f.Path()+" is corrupt") {
		t.Errorf("corrupt file: %v", err)
	}
}
