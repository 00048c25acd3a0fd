package state_test

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/cairn-dev/cairn/internal/state"
)

// FuzzDecode feeds arbitrary bytes to the state document decoder: it must never panic,
// Validate must never panic on what it accepts, and an accepted document must survive
// encoding and decoding unchanged.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"testdata/state-v1.json", "testdata/state-v2.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"schema_version":1,"stacks":{"a":null,"b":{"name":"b","requires":["b","a"]}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		g, err := state.Decode(body)
		if err != nil {
			return
		}
		_ = g.Validate()
		again, err := json.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		g2, err := state.Decode(again)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", again, err)
		}
		if !reflect.DeepEqual(g, g2) {
			t.Fatalf("round trip changed the document:\n%+v\n%+v", g, g2)
		}
	})
}
