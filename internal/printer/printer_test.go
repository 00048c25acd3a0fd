package printer

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "shop-vpc", "shop-vpc"},
		{"spaces and unicode", "Resource creation cancelled — ünïcode", "Resource creation cancelled — ünïcode"},
		{"pattern with backslashes", `^[a-z]\d+$`, `^[a-z]\d+$`},
		{"empty", "", ""},
		{"newline forging a workflow command", "failed\n::error::pwned", `"failed\n::error::pwned"`},
		{"carriage return", "ok\r::add-mask::x", `"ok\r::add-mask::x"`},
		{"workflow command at the start", "::error::pwned", `"::error::pwned"`},
		{"workflow command after spaces", "  ::add-mask::x", `"  ::add-mask::x"`},
		{"clear screen", "\x1b[2J\x1b[H", `"\x1b[2J\x1b[H"`},
		{"OSC 8 link", "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", `"\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"`},
		{"right-to-left override", "abc\u202Etxt.exe", `"abc\u202etxt.exe"`},
		{"NUL", "a\x00b", `"a\x00b"`},
		{"DEL", "a\x7fb", `"a\x7fb"`},
		{"C1 CSI", "a\u009b2Jb", `"a\u009b2Jb"`},
		{"tab", "a\tb", `"a\tb"`},
		{"line separator", "a\u2028b", `"a\u2028b"`},
		{"not UTF-8", "a\xffb", `"a\xffb"`},
		{"starts with a quote", `"quoted"`, `"\"quoted\""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.in); got != tc.want {
				t.Errorf("Text(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

type phase string

func TestFprintf(t *testing.T) {
	evil := "x\n::error::y"
	for _, tc := range []struct {
		name, format string
		args         []any
		want         string
	}{
		{"string", "reason: %s\n", []any{evil}, "reason: \"x\\n::error::y\"\n"},
		{"width", "[%-6s]", []any{"a\x1b"}, `["a\x1b"]`},
		{"width of a plain value", "[%-6s]", []any{"ab"}, "[ab    ]"},
		{"error", "cairn: %v", []any{errors.New(evil)}, `cairn: x\n::error::y`},
		{"error quoting a value", "cairn: %v", []any{errors.New(`"../x" is not a pool name`)}, `cairn: "../x" is not a pool name`},
		{"error that is a workflow command", "%v", []any{errors.New("::add-mask::x")}, `"::add-mask::x"`},
		{"stringer", "%s", []any{stringer("\x1b[2J")}, `"\x1b[2J"`},
		{"string kind", "%s", []any{phase("a\nb")}, `"a\nb"`},
		{"bytes", "%s", []any{[]byte("a\x1b[2J")}, `"a\x1b[2J"`},
		{"list", "%v", []any{[]string{"a", "b\nc"}}, `[a "b\nc"]`},
		{"quoted verb", "%q", []any{"a\nb"}, `"a\nb"`},
		{"numbers untouched", "%d %.1f", []any{3, 1.5}, "3 1.5"},
		{"a number that is a Stringer", "%d %s", []any{time.Second, time.Second}, "1000000000 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			Fprintf(&b, tc.format, tc.args...)
			if b.String() != tc.want {
				t.Errorf("Fprintf(%q) = %q, want %q", tc.format, b.String(), tc.want)
			}
		})
	}
}

func TestLines(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "export A='1'\nexport B=2\n", "export A='1'\nexport B=2\n"},
		{"a last line without newline", "a\nb", "a\nb\n"},
		{"indentation kept", "digraph {\n\t\"a\" -> \"b\";\n}\n", "digraph {\n\t\"a\" -> \"b\";\n}\n"},
		{"escape sequences", "B=\x1b[2J\x1b]8;;https://evil\x07x\u202e\x00\xff\n", "B=\\x1b[2J\\x1b]8;;https://evil\\ax\\u202e\\x00\\xff\n"},
		{"workflow command", "ok\n  ::add-mask::x\n", "ok\n  \"::add-mask::x\"\n"},
		{"carriage return", "a\r::error::x\n", "a\\r::error::x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Lines(&b, tc.in); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("Lines(%q) = %q, want %q", tc.in, b.String(), tc.want)
			}
		})
	}
}

func TestWriteJSON(t *testing.T) {
	v := map[string]any{"reason": "a\n\x1b[2J\u202e\x7f<b>", "n": []int{1}}
	var b bytes.Buffer
	if err := WriteJSON(&b, v, "  "); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"n\": [\n    1\n  ],\n  \"reason\": \"a\\n\\u001b[2J\\u202e\\u007f\\u003cb\\u003e\"\n}\n"
	if b.String() != want {
		t.Errorf("WriteJSON = %q, want %q", b.String(), want)
	}
	var back map[string]any
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back["reason"] != v["reason"] {
		t.Errorf("reads back as %q (%v), want %q", back["reason"], err, v["reason"])
	}
}

func TestJSON(t *testing.T) {
	in := []byte(`{"reason":"a\n\u001b` + "\u202e\x7f\u0085\U000E0001" + `ü"}`)
	want := `{"reason":"a\n\u001b\u202e\u007f\u0085\udb40\udc01ü"}`
	if got := string(JSON(in)); got != want {
		t.Errorf("JSON(%s) = %s, want %s", in, got, want)
	}
}

// FuzzText checks Text's promise on any string: one line of printable characters, never
// starting a line with "::", and distinct values stay distinct (Text is undone by
// strconv.Unquote when it quoted, by nothing when it did not); Sentence of it is one
// printable line, and Lines of it as many lines as it has, each printable past its
// indentation, none starting with "::". Seeds live in
// testdata/fuzz/FuzzText at the repository root, one value a file.
func FuzzText(f *testing.F) {
	seeds, err := filepath.Glob("../../testdata/fuzz/FuzzText/*")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata/fuzz/FuzzText: %v", err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Text(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Text(%q) = %q: not UTF-8", s, got)
		}
		for _, r := range got {
			if r != ' ' && !unicode.IsPrint(r) {
				t.Fatalf("Text(%q) = %q holds %U", s, got, r)
			}
		}
		if strings.HasPrefix(strings.TrimLeft(got, " "), "::") {
			t.Fatalf("Text(%q) = %q starts a line with ::", s, got)
		}
		back := got
		if strings.HasPrefix(got, `"`) {
			if back, err = strconv.Unquote(got); err != nil {
				t.Fatalf("Text(%q) = %q: %v", s, got, err)
			}
		}
		if back != s {
			t.Fatalf("Text(%q) = %q reads back as %q: two values would print alike", s, got, back)
		}
		// A sentence (an error) is one line too, escaped in place.
		checkLine(t, "Sentence", s, Sentence(s), false)
		// Text of lines keeps its lines, each one line, its indentation aside.
		var b bytes.Buffer
		if err := Lines(&b, s); err != nil {
			t.Fatal(err)
		}
		in, out := 0, strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		for range strings.Lines(s) {
			in++
		}
		if in == 0 && b.Len() == 0 {
			return
		}
		if len(out) != in {
			t.Fatalf("Lines(%q) = %q: %d lines, want %d", s, b.String(), len(out), in)
		}
		for _, l := range out {
			checkLine(t, "Lines", s, l, true)
		}
	})
}

// checkLine fails unless line (what f printed of s) is printable, tabs of its
// indentation aside when indented, and does not start with "::" past its indentation.
func checkLine(t *testing.T, f, s, line string, indented bool) {
	t.Helper()
	rest := line
	if indented {
		rest = strings.TrimLeft(line, " \t")
	}
	for _, r := range rest {
		if r != ' ' && !unicode.IsPrint(r) {
			t.Fatalf("%s(%q) printed %q, which holds %U", f, s, line, r)
		}
	}
	if strings.HasPrefix(strings.TrimLeft(rest, " "), "::") {
		t.Fatalf("%s(%q) printed %q, a line starting with ::", f, s, line)
	}
}
