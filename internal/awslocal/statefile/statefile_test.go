package statefile_test

import (
	"encoding/json"
	"os"
	"path/filepath"
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
