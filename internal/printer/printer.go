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
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
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

// Fprintf is fmt.Fprintf with every string (or string-kinded), []byte, []string and fmt.Stringer
// argument printed through Text, and every error through Sentence (an error is cairn's
// sentence around values, which reads better escaped in place than quoted whole); %q,
// %x and %X print the value as fmt does, which escapes it already. The format is cairn's
// own text and is printed as written: it must not hold untrusted text (pass it as an
// argument).
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
// diff), ending it with a newline when it has none. A line keeps its indentation of
// spaces and tabs, which is cairn's; in the rest every character Text would escape is
// escaped where it stands (\x1b, \u202e, \t, \xff), and a line that would start with
// "::" is quoted whole, so a value inside it that carried a line break or an escape
// sequence cannot forge a line or reach the terminal.
func Lines(w io.Writer, text string) error {
	var b strings.Builder
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		rest := strings.TrimLeft(line, " \t")
		b.WriteString(line[:len(line)-len(rest)])
		b.WriteString(Sentence(rest))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// escape writes s with every character Text would escape written as Go writes it in a
// quoted string.
func escape(b *strings.Builder, s string) {
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				fmt.Fprintf(b, `\x%02x`, s[i])
				continue
			}
			b.WriteRune(r)
		case r == ' ' || unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
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
	switch w := v.(type) {
	case nil:
		return v
	case string:
		return printed{w, Text, v}
	case error:
		return printed{w.Error(), Sentence, v}
	case fmt.Stringer:
		return printed{w.String(), Text, v}
	case []string:
		return texts(w)
	case []byte:
		return printed{string(w), Text, v}
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.Kind() == reflect.String:
		return printed{rv.String(), Text, v}
	case rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.String:
		s := make([]string, rv.Len())
		for i := range s {
			s[i] = rv.Index(i).String()
		}
		return texts(s)
	}
	return v
}

// printed is an argument's text s printed through show (Text, or Sentence for an error)
// by %s and %v, with their width, precision and flags; as fmt prints s by %q, %x and %X,
// which escape it; and as fmt prints the argument itself by any other verb (%d of a
// Stringer that is a number).
type printed struct {
	s    string
	show func(string) string
	arg  any
}

func (p printed) Format(f fmt.State, verb rune) {
	switch verb {
	case 's', 'v':
		fmt.Fprintf(f, fmt.FormatString(f, verb), p.show(p.s))
	case 'q', 'x', 'X':
		fmt.Fprintf(f, fmt.FormatString(f, verb), p.s)
	default:
		fmt.Fprintf(f, fmt.FormatString(f, verb), p.arg)
	}
}

// Sentence is s, a sentence of cairn's holding values (an error), on one line: every
// character Text would escape is escaped where it stands (\n, \x1b, \u202e, \xff),
// and s is quoted whole (Text) when it would start a line with "::". Unlike Text it does
// not tell every two sentences apart (a backslash stays as it is): it is for messages
// that quote their values (%q) or whose values are checked names.
func Sentence(s string) string {
	if strings.HasPrefix(strings.TrimLeft(s, " "), "::") {
		return Text(s)
	}
	var b strings.Builder
	escape(&b, s)
	return b.String()
}

// texts is a list of strings, each printed as a value.
type texts []string

func (t texts) Format(f fmt.State, verb rune) {
	vs := make([]printed, len(t))
	for i, s := range t {
		vs[i] = printed{s, Text, s}
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), vs)
}

// JSON makes encoded JSON (as json.Marshal or MarshalIndent gives it) safe to show on a
// terminal as well as to parse: every character of its strings that Text would escape
// and encoding/json leaves raw (DEL, C1 controls, bidirectional overrides, separators)
// becomes its \u escape, which a JSON reader reads back as the same string. Line breaks
// and tabs are kept: encoding/json escapes them inside strings, so raw they are only
// the indentation between tokens.
func JSON(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == ' ' || r == '\n' || r == '\t' || r == '\r' || (unicode.IsPrint(r) && !(r == utf8.RuneError && n == 1)):
			out = append(out, b[:n]...)
		default:
			if r1, r2 := utf16.EncodeRune(r); r1 != unicode.ReplacementChar {
				out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		}
		b = b[n:]
	}
	return out
}

// WriteJSON prints v as JSON through JSON, indented by indent ("" for one line), and a
// newline: the JSON output of the CLI's commands.
func WriteJSON(w io.Writer, v any, indent string) error {
	var b []byte
	var err error
	if indent == "" {
		b, err = json.Marshal(v)
	} else {
		b, err = json.MarshalIndent(v, "", indent)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(append(JSON(b), '\n'))
	return err
}
