package template

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse parses and checks arbitrary templates: no panic, no hang on aliases, and every
// problem located at a real position. Seeds come from testdata/fuzz/FuzzParse at the
// repository root.
func FuzzParse(f *testing.F) {
	seeds, err := filepath.Glob("../../testdata/fuzz/FuzzParse/*")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata/fuzz/FuzzParse (%v)", err)
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 64<<10 {
			return
		}
		tmpl, err := Parse(body)
		if err != nil {
			return
		}
		for _, p := range tmpl.Check() {
			if p.Line < 1 || p.Col < 1 || p.Msg == "" || p.Path == "" {
				t.Fatalf("problem without a position, path or message: %+v", p)
			}
		}
		for _, n := range tmpl.Needs() {
			if n.Capability == "" || n.Why == "" {
				t.Fatalf("need without a capability or reason: %+v", n)
			}
		}
		values := map[string]string{}
		for name, p := range tmpl.Parameters {
			values[name] = p.Default
		}
		_ = tmpl.CheckParameters(values)
		_ = tmpl.Exports("stack")
	})
}
