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
// fills (but comments when noComments), an empty Content counting as none.
func same(a, b *yaml.Node, at string, noComments bool) string {
	if a == nil || b == nil {
		if a != b {
			return at + ": one is nil"
		}
		return ""
	}
	comments := func(n *yaml.Node) [3]string {
		if noComments {
			return [3]string{}
		}
		return [3]string{n.HeadComment, n.LineComment, n.FootComment}
	}
	if a.Kind != b.Kind || a.Style != b.Style || a.Tag != b.Tag || a.Value != b.Value || a.Anchor != b.Anchor ||
		a.Line != b.Line || a.Column != b.Column || comments(a) != comments(b) || (a.Alias == nil) != (b.Alias == nil) ||
		len(a.Content) != len(b.Content) {
		return fmt.Sprintf("%s: got {kind %d style %d tag %q value %q at %d:%d, %d children}, yaml.v3 {kind %d style %d tag %q value %q at %d:%d, %d children}",
			at, a.Kind, a.Style, a.Tag, a.Value, a.Line, a.Column, len(a.Content), b.Kind, b.Style, b.Tag, b.Value, b.Line, b.Column, len(b.Content))
	}
	for i := range a.Content {
		if d := same(a.Content[i], b.Content[i], fmt.Sprintf("%s/%d", at, i), noComments); d != "" {
			return d
		}
	}
	return ""
}

// check parses data with Parse, ParseWithoutComments and yaml.v3, and fails on any
// difference (but comments, for ParseWithoutComments); it returns whether the fast path
// read it without and with comments.
func check(t *testing.T, data []byte) (fast, fastWithoutComments bool) {
	t.Helper()
	var want yaml.Node
	wantErr := yaml.Unmarshal(data, &want)
	for _, noComments := range []bool{false, true} {
		got, err := parse(data, noComments)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("parse(%q, without comments %v): error %v, yaml.v3 %v", data, noComments, err, wantErr)
		}
		if err != nil {
			return false, false
		}
		if d := same(got, &want, "doc", noComments); d != "" {
			t.Fatalf("parse(%q, without comments %v) differs from yaml.v3 at %s", data, noComments, d)
		}
	}
	_, fast = parseBlock(data, false)
	_, fastWithoutComments = parseBlock(data, true)
	return fast, fastWithoutComments
}

// TestParseAsYAMLv3 checks the tree of configs in and out of the subset against
// yaml.v3's, and which of them the fast path reads.
func TestParseAsYAMLv3(t *testing.T) {
	for _, tc := range []struct {
		in   string
		fast bool
		// fastWithoutComments: read on the fast path by ParseWithoutComments (as is
		// whatever Parse reads there).
		fastWithoutComments bool
	}{
		{"namespace: x\nstacks:\n  - name: a\n    template_path: t.yaml\n", true, false},
		{"namespace: x\nstacks:\n- name: a\n  requires: [b, c]\n- name: b\n", true, false},
		{"tags: {team: platform, 'a b': \"c d\"}\nmax_concurrency: 4\nenabled: true\nx: ~\ny: null\nz: 1.5\nw: 0x1f\nd: 2001-12-14\nv: -3\n", true, false},
		{"a:\n  b:\n    c: d\n  e: [1, [2, 3], {f: g}]\n\n\nh: i j  \n", true, false},
		{"a: ${output stack-00001::Url}\nb: http://x/y\nc: a:b\n- d\n", false, false}, // an error: yaml.v3's
		{"a: ${output stack-00001::Url}\nb: http://x/y\nc: a:b\n", true, false},
		{"- a\n- - b\n  - c\n- d: e\n  f: g\n", true, false},
		{"a: []\nb: {}\nc: \"\"\nd: ''\n", true, false},
		{"<<: {a: b}\nc: d\n", true, false},
		{"a: b # comment\n", false, true},
		{"# head\na: b#c # line\n  # indented\nd: # on the key\n  - e # entry\n  # between\n  - [f] # flow\n  - 'g # h' # quoted\n# foot\n", false, true},
		{"a: [b, # c\n  d]\n", false, false},     // a comment in a flow collection
		{"a: [b]# c\n", false, false},            // no space before '#': an error
		{"a: #c\nb: d\n", false, false},          // an empty value
		{"a #b: c\n", false, false},              // a key cut by a comment: an error
		{"- a #b: c\n- \"d\" #e\n", false, true}, // a comment after entries
		{"# `cairn local up` — and é, 日本, 😀\na: b # «c»\n", false, true},
		{"# a\u2028b: c\na: b\n", false, false}, // a line break yaml.v3 knows in a comment
		{"# a\u0085b\na: b\n", false, false},
		{"# a\x01\na: b\n", false, false},  // a control character: yaml.v3 refuses it
		{"# a\xffb\na: b\n", false, false}, // invalid UTF-8
		{"# a\tb\na: b\n", false, false},
		{"a: b\t# c\n", false, false},
		{"a: x&y\nb: x*y|z>w%@`!\nc: 'd\\e'\n", true, false},
		{"a: \"d\\e\"\n", false, false},
		{"a: &x b\n", false, false},
		{"a: [&x b]\n", false, false},
		{"&a b: c\n", false, false},
		{"a: \"é\"\n", false, false},
		{"\ufeffa: b\n", false, false},
		{"a: &x b\nc: *x\n", false, false},
		{"a: !Ref b\n", false, false},
		{"a: |\n  b\n", false, false},
		{"a:\n  b\n  c\n", false, false},  // a multi-line plain scalar
		{"a:\nb: c\n", false, false},      // an empty value
		{"a: b\n  c: d\n", false, false},  // an error
		{"a: b: c\n", false, false},       // an error
		{"a: 'it''s'\n", false, false},    // an escape
		{"a: \"b\\tc\"\n", false, false},  // an escape
		{"a: b\na: c\n", true, false},     // a duplicate key is the loader's to report
		{"a: [b, c,]\n", false, false},    // a trailing comma
		{"a: [b\n  , c]\n", false, false}, // a multi-line flow sequence
		{"---\na: b\n", false, false},
		{"a: b\n...\n", false, false},
		{"  a: b\n", false, false},
		{"", false, false},
		{"\n\n", false, false},
		{"just text\n", false, false},
		{"a:\tb\n", false, false},
		{"a: b\r\nc: d\r\n", false, false},
		{"a: é\n", false, false},
		{"a: [b: c]\n", false, false},
		{"a: {b}\n", false, false},
		{"a: - b\n", false, false},
		{"? a\n: b\n", false, false},
		{"a:\n  - b\n  c: d\n", false, false},
		{"a:\n- b\n- c\nd: e\n", true, false},
		{"a:\n  b\nc:\n    - d\n    -   e: f\n        g: h\n", true, false}, // a scalar below its key; deeper entries
		{"\"a b\": c\n'd': e\n", true, false},
		{"a : b\n-x: y\n", true, false},
	} {
		fast, fastWithoutComments := check(t, []byte(tc.in))
		if fast != tc.fast || fastWithoutComments != (tc.fast || tc.fastWithoutComments) {
			t.Errorf("Parse(%q): fast path %v (%v without comments), want %v (%v)", tc.in, fast, fastWithoutComments, tc.fast, tc.fast || tc.fastWithoutComments)
		}
	}
}

// TestParseLimits checks keys near libyaml's limit on an implicit key (1024 characters to
// its ':') and nesting past the parser's depth (yaml.v3 refuses past 10,000; the parser
// recurses, so it must not follow a hostile document down) read as yaml.v3 reads them.
func TestParseLimits(t *testing.T) {
	for _, n := range []int{maxKey - 2, 1021, 1022, 1023, 1100} {
		for _, k := range []string{strings.Repeat("x", n), `"` + strings.Repeat("x", n) + `"`, "'" + strings.Repeat("x", n) + "'", strings.Repeat("x", n/2) + strings.Repeat(" ", n/2)} {
			for _, doc := range []string{k + ": v\n", "a:\n  " + k + ": v\n", "- " + k + ": v\n", "a: {" + k + ": v}\n", "a: [" + k + "]\n"} {
				fast, _ := check(t, []byte(doc))
				if want := n <= maxKey-2 || strings.HasPrefix(doc, "a: ["); fast != want {
					t.Errorf("a key of %d characters in %.20q...: fast path %v, want %v", len(k), doc, fast, want)
				}
			}
		}
	}
	for _, n := range []int{maxDepth - 1, maxDepth, 20_000, 200_000} {
		for _, doc := range []string{
			"a: " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n",
			"a: " + strings.Repeat("{b: ", n) + "c" + strings.Repeat("}", n) + "\n",
			strings.Repeat("- ", n) + "a\n",
		} {
			if fast, _ := check(t, []byte(doc)); fast != (n < maxDepth) {
				t.Errorf("nesting %d deep in %.10q...: fast path %v", n, doc, fast)
			}
		}
	}
}

// TestParseGeneratedConfig checks the large generated config reads on the fast path, as
// yaml.v3 reads it.
func TestParseGeneratedConfig(t *testing.T) {
	cfg := benchbundle.Config("bench", benchbundle.Stacks(2000))
	if fast, _ := check(t, []byte(cfg)); !fast {
		t.Error("the generated config is not read on the fast path")
	}
	check(t, []byte(benchbundle.Template)) // with tags (!Join): yaml.v3's
}

// TestRepositoryConfigs checks the example configs in testdata/bundles, written by hand
// with comments, are read on the fast path without their comments, as yaml.v3 reads them.
func TestRepositoryConfigs(t *testing.T) {
	files, err := filepath.Glob("../../testdata/bundles/*/cairn.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs in testdata/bundles (%v)", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, fast := check(t, data); !fast {
			t.Errorf("%s is not read on the fast path", f)
		}
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
		fast, fastWithoutComments := check(t, []byte(doc))
		if !fastWithoutComments || !fast && !strings.Contains(doc, "#") {
			rt.Fatalf("not read on the fast path (%v, %v without comments):\n%s", fast, fastWithoutComments, doc)
		}
	})
}

var (
	genKeys    = []string{"a", "name", "template_path", "a b", "-x", "k-1", "\"quoted key\"", "'single'", "x.y", "$k", "a:b", "1", "true", "null"}
	genScalars = []string{"b", "stack-00001", "${output stack-00001::Url}", "http://x/y?a=b", "a:b", "a,b", "a[b]", "a{b}", "a - b", "a  b",
		"1", "-2", "+3", "0x1f", "0o17", "1_000", "1.5", "-1.5e3", ".5", ".inf", "-.Inf", ".NaN", "2001-12-14", "2001-12-14T21:59:43.10-05:00", "12:30", "1.2.3",
		"true", "False", "TRUE", "yes", "no", "on", "off", "y", "n", "null", "Null", "~", "nil", "\"\"", "''", "\"a b: c\"", "'it is'", "\"1\"", "'true'", "<<x", "-a", "a-", "a#b", "'c # d'", "\"#e\"", "x&y", "a*b", "50%", "a|b>c", "a!b", "'d\\e'"}
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
			b.WriteString(rapid.SampledFrom([]string{"\n", "  \n", "# a comment\n", "      # deeper\n", " #\n"}).Draw(t, "blank line"))
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
		b.WriteString(" " + rapid.SampledFrom(genScalars).Draw(t, "scalar") + rapid.SampledFrom([]string{"", " "}).Draw(t, "trailing") + genComment(t) + "\n")
	case 1:
		b.WriteString(" " + genFlow(t, 2) + genComment(t) + "\n")
	case 2:
		in := indent + rapid.IntRange(1, 4).Draw(t, "indent")
		b.WriteString(genComment(t) + "\n" + strings.Repeat(" ", in))
		genMapping(t, b, in, depth-1)
	default:
		in := indent + rapid.IntRange(0, 3).Draw(t, "indent")
		b.WriteString(genComment(t) + "\n")
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
			b.WriteString(rapid.SampledFrom(genScalars).Draw(t, "scalar") + genComment(t) + "\n")
		case 1:
			b.WriteString(genFlow(t, 2) + genComment(t) + "\n")
		default:
			genMapping(t, b, indent+1+gap, depth-1) // a compact mapping
		}
	}
}

// genComment returns nothing, or a comment to end a line with.
func genComment(t *rapid.T) string {
	return rapid.SampledFrom([]string{"", "", "", " # note", "   #x: y", " #", " # `cairn push` — é &a *b !c |d >e"}).Draw(t, "comment")
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
