// Package printer owns the terminal medium: everything cairn prints to a terminal or a
// CI log (and logs as text) that a template, a config, CloudFormation or CDK controls
// goes through Text, most often by way of Fprintf, Sprintf and Fprintln, which pass
// every string, error and Stringer argument through it while the format (cairn's own
// words) is printed as written.
//
// Such a value must not change how the rest of the output reads: a newline would forge a
// line after it (a GitHub Actions workflow command such as ::error:: or ::add-mask::
// when it starts the line), an escape sequence would clear the screen, move the cursor,
// or make a link (OSC 8), a bidirectional override would reorder what follows. Markdown
// is the report package's medium (report.Text, report.Code), JSON logs slog's.
package printer

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text is s as a terminal shows it on one line: unchanged when every character of it is
// plain (printable, or a space) and it starts neither with a double quote nor, past its
// spaces, with "::"; otherwise quoted as Go quotes a string, so a control character
// (C0, DEL, C1, so every escape sequence), a line or paragraph separator, a
// bidirectional or other invisible formatting character, or a byte that is not UTF-8
// is shown as its escape (\n, \x1b, \u202e, \xff). Distinct values print distinctly:
// a quoted value always starts with a double quote, which a plain one never does.
func Text(s string) string {
	if plain(s) {
		return s
	}
	return strconv.Quote(s)
}

// plain reports whether s prints as itself: see Text.
func plain(s string) bool {
	if strings.HasPrefix(s, `"`) || strings.HasPrefix(strings.TrimLeft(s, " "), "::") {
		return false
	}
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return false
			}
		}
		if r != ' ' && !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// Fprintf is fmt.Fprintf with every string (or string-kinded), []string, error and
// fmt.Stringer argument printed through Text; %q, %x and %X print the value as fmt
// does, which escapes it already. The format is cairn's own text and is printed as
// written: it must not hold untrusted text (pass it as an argument).
func Fprintf(w io.Writer, format string, a ...any) (int, error) {
	return fmt.Fprintf(w, format, args(a)...)
}

// Sprintf is Fprintf to a string.
func Sprintf(format string, a ...any) string {
	return fmt.Sprintf(format, args(a)...)
}

// Fprintln is fmt.Fprintln with the arguments of Fprintf.
func Fprintln(w io.Writer, a ...any) (int, error) {
	return fmt.Fprintln(w, args(a)...)
}

// Lines prints text that cairn composed of lines (a shell snippet, a graph in DOT, a
// diff), ending it with a newline when it has none: each line through Text, so a value
// inside it that carried a line break or an escape cannot forge a line.
func Lines(w io.Writer, text string) error {
	var b strings.Builder
	for line := range strings.Lines(text) {
		b.WriteString(Text(strings.TrimSuffix(line, "\n")))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// args wraps the arguments of a print in what prints them through Text.
func args(a []any) []any {
	out := make([]any, len(a))
	for i, v := range a {
		out[i] = wrap(v)
	}
	return out
}

func wrap(v any) any {
	switch v := v.(type) {
	case nil:
		return v
	case string:
		return value(v)
	case error:
		return value(v.Error())
	case fmt.Stringer:
		return value(v.String())
	case []string:
		return texts(v)
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.Kind() == reflect.String:
		return value(rv.String())
	case rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.String:
		s := make([]string, rv.Len())
		for i := range s {
			s[i] = rv.Index(i).String()
		}
		return texts(s)
	}
	return v
}

// value is a string printed through Text by %s and %v (with their width, precision and
// flags), and as fmt prints it by %q, %x and %X.
type value string

func (v value) Format(f fmt.State, verb rune) {
	switch verb {
	case 'q', 'x', 'X':
		fmt.Fprintf(f, fmt.FormatString(f, verb), string(v))
	default:
		fmt.Fprintf(f, fmt.FormatString(f, verb), Text(string(v)))
	}
}

// texts is a list of strings, each printed as a value.
type texts []string

func (t texts) Format(f fmt.State, verb rune) {
	vs := make([]value, len(t))
	for i, s := range t {
		vs[i] = value(s)
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), vs)
}
