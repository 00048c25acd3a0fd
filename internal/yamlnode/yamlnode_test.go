package yamlnode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"pgregory.net/rapid"

	"github.com/cairn-dev/cairn/internal/benchbundle"
)

// same reports where trees a and b differ ("" when they do not): every field yaml.v3
// fills, an empty Content counting as none.
func same(a, b *yaml.Node, at string) string {
	if a == nil || b == nil {
		if a != b {
			return at + ": one is nil"
		}
		return ""
	}
	if a.Kind != b.Kind || a.Style != b.Style || a.Tag != b.Tag || a.Value != b.Value || a.Anchor != b.Anchor ||
		a.Line != b.Line || a.Column != b.Column || a.HeadComment != b.HeadComment || a.LineComment != b.LineComment ||
		a.FootComment != b.FootComment || (a.Alias == nil) != (b.Alias == nil) || len(a.Content) != len(b.Content) {
		return fmt.Sprintf("%s: got {kind %d style %d tag %q value %q at %d:%d, %d children}, yaml.v3 {kind %d style %d tag %q value %q at %d:%d, %d children}",
			at, a.Kind, a.Style, a.Tag, a.Value, a.Line, a.Column, len(a.Content), b.Kind, b.Style, b.Tag, b.Value, b.Line, b.Column, len(b.Content))
	}
	for i := range a.Content {
		if d := same(a.Content[i], b.Content[i], fmt.Sprintf("%s/%d", at, i)); d != "" {
			return d
		}
	}
	return ""
}

// check parses data with Parse and with yaml.v3 and fails on any difference; it returns
// whether the fast path read it.
func check(t *testing.T, data []byte) bool {
	t.Helper()
	var want yaml.Node
	wantErr := yaml.Unmarshal(data, &want)
	got, err := Parse(data)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("Parse(%q): error %v, yaml.v3 %v", data, err, wantErr)
	}
	if err != nil {
		return false
	}
	if d := same(got, &want, "doc"); d != "" {
		t.Fatalf("Parse(%q) differs from yaml.v3 at %s", data, d)
	}
	_, fast := parseBlock(data)
	return fast
}

// TestParseAsYAMLv3 checks the tree of configs in and out of the subset against
// yaml.v3's, and which of them the fast path reads.
func TestParseAsYAMLv3(t *testing.T) {
	for _, tc := range []struct {
		in   string
		fast bool
	}{
		{"namespace: x\nstacks:\n  - name: a\n    template_path: t.yaml\n", true},
		{"namespace: x\nstacks:\n- name: a\n  requires: [b, c]\n- name: b\n", true},
		{"tags: {team: platform, 'a b': \"c d\"}\nmax_concurrency: 4\nenabled: true\nx: ~\ny: null\nz: 1.5\nw: 0x1f\nd: 2001-12-14\nv: -3\n", true},
		{"a:\n  b:\n    c: d\n  e: [1, [2, 3], {f: g}]\n\n\nh: i j  \n", true},
		{"a: ${output stack-00001::Url}\nb: http://x/y\nc: a:b\n- d\n", false}, // an error: yaml.v3's
		{"a: ${output stack-00001::Url}\nb: http://x/y\nc: a:b\n", true},
		{"- a\n- - b\n  - c\n- d: e\n  f: g\n", true},
		{"a: []\nb: {}\nc: \"\"\nd: ''\n", true},
		{"<<: {a: b}\nc: d\n", true},
		{"a: b # comment\n", false},
		{"a: &x b\nc: *x\n", false},
		{"a: !Ref b\n", false},
		{"a: |\n  b\n", false},
		{"a:\n  b\n  c\n", false},  // a multi-line plain scalar
		{"a:\nb: c\n", false},      // an empty value
		{"a: b\n  c: d\n", false},  // an error
		{"a: b: c\n", false},       // an error
		{"a: 'it''s'\n", false},    // an escape
		{"a: \"b\\tc\"\n", false},  // an escape
		{"a: b\na: c\n", true},     // a duplicate key is the loader's to report
		{"a: [b, c,]\n", false},    // a trailing comma
		{"a: [b\n  , c]\n", false}, // a multi-line flow sequence
		{"---\na: b\n", false},
		{"a: b\n...\n", false},
		{"  a: b\n", false},
		{"", false},
		{"\n\n", false},
		{"just text\n", false},
		{"a:\tb\n", false},
		{"a: b\r\nc: d\r\n", false},
		{"a: é\n", false},
		{"a: [b: c]\n", false},
		{"a: {b}\n", false},
		{"a: - b\n", false},
		{"? a\n: b\n", false},
		{"a:\n  - b\n  c: d\n", false},
		{"a:\n- b\n- c\nd: e\n", true},
		{"\"a b\": c\n'd': e\n", true},
		{"a : b\n-x: y\n", true},
	} {
		if fast := check(t, []byte(tc.in)); fast != tc.fast {
			t.Errorf("Parse(%q): fast path %v, want %v", tc.in, fast, tc.fast)
		}
	}
}

// TestParseGeneratedConfig checks the large generated config reads on the fast path, as
// yaml.v3 reads it.
func TestParseGeneratedConfig(t *testing.T) {
	cfg := benchbundle.Config("bench", benchbundle.Stacks(2000))
	if !check(t, []byte(cfg)) {
		t.Error("the generated config is not read on the fast path")
	}
	if !check(t, []byte(benchbundle.Template)) {
		// The template uses tags (!Join): yaml.v3's.
		t.Log("template read by yaml.v3")
	}
}

// FuzzParseAsYAMLv3 checks Parse gives yaml.v3's tree, or yaml.v3's error, for any input.
// Seeds: the repository's config and template corpora (testdata/fuzz/FuzzLoadConfig and
// FuzzParse at its root), and configs in the subset.
func FuzzParseAsYAMLv3(f *testing.F) {
	seeds, err := filepath.Glob("../../testdata/fuzz/FuzzLoadConfig/*")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata/fuzz/FuzzLoadConfig (%v)", err)
	}
	templates, _ := filepath.Glob("../../testdata/fuzz/FuzzParse/*")
	for _, s := range append(seeds, templates...) {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(benchbundle.Config("bench", benchbundle.Stacks(20))))
	f.Add([]byte("a:\n- b\n- c: [d, {e: f}]\n  g: 'h'\n\"i\": -1.5e3\n"))
	f.Add([]byte(strings.Repeat("k: v\n", 3) + "n:\n  m: [1, 2]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		check(t, data)
	})
}

// TestParseGeneratedDocuments draws documents in the subset (block mappings and
// sequences at varied indentation, compact entries, flow collections, plain and quoted
// scalars of every resolved type) and checks that each is read on the fast path, as
// yaml.v3 reads it.
func TestParseGeneratedDocuments(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var b strings.Builder
		genMapping(rt, &b, 0, 3)
		doc := b.String()
		if !check(t, []byte(doc)) {
			rt.Fatalf("not read on the fast path:\n%s", doc)
		}
	})
}

var (
	genKeys    = []string{"a", "name", "template_path", "a b", "-x", "k-1", "\"quoted key\"", "'single'", "x.y", "$k", "a:b", "1", "true", "null"}
	genScalars = []string{"b", "stack-00001", "${output stack-00001::Url}", "http://x/y?a=b", "a:b", "a,b", "a[b]", "a{b}", "a - b", "a  b",
		"1", "-2", "+3", "0x1f", "0o17", "1_000", "1.5", "-1.5e3", ".5", ".inf", "-.Inf", ".NaN", "2001-12-14", "2001-12-14T21:59:43.10-05:00", "12:30", "1.2.3",
		"true", "False", "TRUE", "yes", "no", "on", "off", "y", "n", "null", "Null", "~", "nil", "\"\"", "''", "\"a b: c\"", "'it is'", "\"1\"", "'true'", "<<x", "-a", "a-"}
	genFlowScalars = []string{"b", "stack-00001", "1", "-2", "1.5", "true", "null", "~", "\"a, b\"", "'c]'", "a b", "x.y"}
)

// genMapping writes a block mapping whose keys are at column indent+1.
func genMapping(t *rapid.T, b *strings.Builder, indent, depth int) {
	n := rapid.IntRange(1, 4).Draw(t, "keys")
	for i := range n {
		if i > 0 {
			b.WriteString(strings.Repeat(" ", indent))
		}
		b.WriteString(rapid.SampledFrom(genKeys).Draw(t, "key"))
		b.WriteString(rapid.SampledFrom([]string{":", " :"}).Draw(t, "colon"))
		genValue(t, b, indent, depth)
		if rapid.IntRange(0, 5).Draw(t, "blank") == 0 {
			b.WriteString(rapid.SampledFrom([]string{"\n", "  \n"}).Draw(t, "blank line"))
		}
	}
}

// genValue writes a mapping value: on the line, or a block collection below it.
func genValue(t *rapid.T, b *strings.Builder, indent, depth int) {
	kind := rapid.IntRange(0, 4).Draw(t, "value")
	if depth == 0 {
		kind %= 2
	}
	switch kind {
	case 0:
		b.WriteString(" " + rapid.SampledFrom(genScalars).Draw(t, "scalar") + rapid.SampledFrom([]string{"", " "}).Draw(t, "trailing") + "\n")
	case 1:
		b.WriteString(" " + genFlow(t, 2) + "\n")
	case 2:
		in := indent + rapid.IntRange(1, 4).Draw(t, "indent")
		b.WriteString("\n" + strings.Repeat(" ", in))
		genMapping(t, b, in, depth-1)
	default:
		in := indent + rapid.IntRange(0, 3).Draw(t, "indent")
		b.WriteString("\n")
		genSequence(t, b, in, depth-1)
	}
}

// genSequence writes a block sequence whose dashes are at column indent+1.
func genSequence(t *rapid.T, b *strings.Builder, indent, depth int) {
	n := rapid.IntRange(1, 3).Draw(t, "entries")
	for range n {
		b.WriteString(strings.Repeat(" ", indent) + "-")
		gap := rapid.IntRange(1, 3).Draw(t, "gap")
		b.WriteString(strings.Repeat(" ", gap))
		kind := rapid.IntRange(0, 2).Draw(t, "entry")
		if depth == 0 {
			kind %= 2
		}
		switch kind {
		case 0:
			b.WriteString(rapid.SampledFrom(genScalars).Draw(t, "scalar") + "\n")
		case 1:
			b.WriteString(genFlow(t, 2) + "\n")
		default:
			genMapping(t, b, indent+1+gap, depth-1) // a compact mapping
		}
	}
}

// genFlow returns a one-line flow sequence or mapping.
func genFlow(t *rapid.T, depth int) string {
	n := rapid.IntRange(0, 3).Draw(t, "flow entries")
	mapping := rapid.Bool().Draw(t, "flow mapping")
	sep := rapid.SampledFrom([]string{", ", ",", " , "}).Draw(t, "separator")
	items := make([]string, n)
	for i := range items {
		v := rapid.SampledFrom(genFlowScalars).Draw(t, "flow scalar")
		if depth > 0 && rapid.IntRange(0, 3).Draw(t, "nested") == 0 {
			v = genFlow(t, depth-1)
		}
		if mapping {
			v = rapid.SampledFrom([]string{"k", "name", "\"q\""}).Draw(t, "flow key") + ": " + v
		}
		items[i] = v
	}
	if mapping {
		return "{" + strings.Join(items, sep) + "}"
	}
	return "[" + strings.Join(items, sep) + "]"
}

func BenchmarkParse(b *testing.B) {
	cfg := []byte(benchbundle.Config("bench", benchbundle.Stacks(10_000)))
	b.ReportAllocs()
	b.SetBytes(int64(len(cfg)))
	for b.Loop() {
		if _, err := Parse(cfg); err != nil {
			b.Fatal(err)
		}
	}
}
