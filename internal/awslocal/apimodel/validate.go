package apimodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Value is what a request carries for one top-level member of an operation's input.
type Value struct {
	Present bool
	Text    *string  // a string or enum scalar
	Number  *float64 // an integer, long, float or double
	Items   int      // the items of a list or map; -1 when the protocol does not say
}

// Input reads a member's value from a request, as its protocol carries it.
type Input func(m *Member) Value

// Violation is a member that breaks the model's constraint on it.
type Violation struct {
	Member  string // the member's name in the model
	Missing bool   // a required member is absent
	Shown   string // the value as an answer may repeat it
	Hidden  bool   // a sensitive value, a list or a map: not repeated
	Reason  string // the constraint broken, in AWS's words
}

// Validate checks a request's top-level input against the model: required members
// present, strings and lists within their lengths, numbers within their range, enums and
// patterns matched. It decides nothing about members deeper than the top level.
func (op *Operation) Validate(in Input) []Violation {
	var out []Violation
	for _, m := range op.Input {
		if m.Location == "headers" {
			continue
		}
		v := in(m)
		if !v.Present {
			if m.Required {
				out = append(out, Violation{Member: m.Name, Missing: true, Reason: "Member must not be null"})
			}
			continue
		}
		shown, hidden := "", true
		if v.Text != nil && !m.Sensitive {
			shown, hidden = *v.Text, false
		}
		if v.Number != nil && !m.Sensitive {
			shown, hidden = strconv.FormatFloat(*v.Number, 'f', -1, 64), false
		}
		add := func(reason string) {
			out = append(out, Violation{Member: m.Name, Shown: shown, Hidden: hidden, Reason: reason})
		}
		switch {
		case v.Text != nil:
			n := float64(utf8.RuneCountInString(*v.Text))
			if m.Min != nil && n < *m.Min {
				add(fmt.Sprintf("Member must have length greater than or equal to %g", *m.Min))
			}
			if m.Max != nil && n > *m.Max {
				add(fmt.Sprintf("Member must have length less than or equal to %g", *m.Max))
			}
			if len(m.Enum) > 0 && !contains(m.Enum, *v.Text) {
				add("Member must satisfy enum value set: [" + strings.Join(m.Enum, ", ") + "]")
			}
			if re := pattern(m.Pattern); re != nil && !re.MatchString(*v.Text) {
				add("Member must satisfy regular expression pattern: " + m.Pattern)
			}
		case v.Number != nil:
			if m.Min != nil && *v.Number < *m.Min {
				add(fmt.Sprintf("Member must have value greater than or equal to %g", *m.Min))
			}
			if m.Max != nil && *v.Number > *m.Max {
				add(fmt.Sprintf("Member must have value less than or equal to %g", *m.Max))
			}
		case v.Items >= 0 && (m.Type == "list" || m.Type == "map"):
			if m.Min != nil && float64(v.Items) < *m.Min {
				add(fmt.Sprintf("Member must have length greater than or equal to %g", *m.Min))
			}
			if m.Max != nil && float64(v.Items) > *m.Max {
				add(fmt.Sprintf("Member must have length less than or equal to %g", *m.Max))
			}
		}
	}
	return out
}

// Message is violations as AWS's validation errors word them: "1 validation error detected:
// Value null at 'name' failed to satisfy constraint: Member must not be null". A member is
// named with its first letter lower case, as AWS's answers do; a sensitive value, a list or
// a map is not repeated.
func Message(vs []Violation) string {
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		name := strings.ToLower(v.Member[:1]) + v.Member[1:]
		switch {
		case v.Missing:
			parts = append(parts, fmt.Sprintf("Value null at '%s' failed to satisfy constraint: %s", name, v.Reason))
		case v.Hidden:
			parts = append(parts, fmt.Sprintf("Value at '%s' failed to satisfy constraint: %s", name, v.Reason))
		default:
			parts = append(parts, fmt.Sprintf("Value '%s' at '%s' failed to satisfy constraint: %s", v.Shown, name, v.Reason))
		}
	}
	noun := "errors"
	if len(vs) == 1 {
		noun = "error"
	}
	return fmt.Sprintf("%d validation %s detected: %s", len(vs), noun, strings.Join(parts, "; "))
}

// JSONInput reads the top-level members of an AWS JSON request body. A body that is not a
// JSON object gives an error: the caller answers it as the service does (SerializationException).
func JSONInput(body []byte) (Input, error) {
	fields := map[string]any{}
	if len(bytes.TrimSpace(body)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&fields); err != nil {
			return nil, err
		}
	}
	return func(m *Member) Value {
		raw, ok := fields[m.Name]
		if !ok || raw == nil {
			return Value{}
		}
		v := Value{Present: true, Items: -1}
		switch x := raw.(type) {
		case string:
			if m.Type == "string" {
				v.Text = &x
			}
		case json.Number:
			if f, err := x.Float64(); err == nil && m.Type != "timestamp" {
				v.Number = &f
			}
		case []any:
			v.Items = len(x)
		case map[string]any:
			v.Items = len(x)
		}
		return v
	}, nil
}

// QueryInput reads the top-level members of an AWS query request (its form): a scalar by
// its name, a list or a structure present when any of its keys is ("Tags.member.1.Key").
func QueryInput(form url.Values) Input {
	return func(m *Member) Value {
		key := m.Name
		if m.Wire != "" {
			key = m.Wire
		}
		if vals, ok := form[key]; ok && len(vals) > 0 {
			v := Value{Present: true, Items: -1}
			s := vals[0]
			switch m.Type {
			case "string":
				v.Text = &s
			case "integer", "long", "float", "double":
				if f, err := strconv.ParseFloat(s, 64); err == nil {
					v.Number = &f
				}
			case "list", "map":
				// "Tags=" is an empty list in the query protocol
				if s == "" {
					v.Items = 0
				}
			}
			return v
		}
		for k := range form {
			if strings.HasPrefix(k, key+".") {
				return Value{Present: true, Items: -1}
			}
		}
		return Value{}
	}
}

var (
	patterns      sync.Map // a model's pattern -> *regexp.Regexp, nil when Go cannot read it
	unicodeEscape = regexp.MustCompile(`\\u([0-9A-Fa-f]{4})`)
	surrogatePair = regexp.MustCompile(`\\u(D[89ABab][0-9A-Fa-f]{2})\\u(D[C-Fc-f][0-9A-Fa-f]{2})`)
)

// pattern compiles a model's pattern (a Java regular expression) to match a whole value,
// nil when Go's syntax cannot express it (then the pattern is not checked: the emulator
// never refuses a value for a pattern it cannot read).
func pattern(p string) *regexp.Regexp {
	if p == "" {
		return nil
	}
	if re, ok := patterns.Load(p); ok {
		return re.(*regexp.Regexp)
	}
	// Java writes characters beyond the BMP as UTF-16 surrogate pairs; Go reads code points.
	g := surrogatePair.ReplaceAllStringFunc(p, func(pair string) string {
		m := surrogatePair.FindStringSubmatch(pair)
		hi, _ := strconv.ParseUint(m[1], 16, 32)
		lo, _ := strconv.ParseUint(m[2], 16, 32)
		return fmt.Sprintf(`\x{%X}`, (hi-0xD800)<<10+(lo-0xDC00)+0x10000)
	})
	g = unicodeEscape.ReplaceAllString(g, `\x{$1}`)
	re, err := regexp.Compile(`^(?:` + g + `)$`)
	if err != nil {
		re = nil
	}
	patterns.Store(p, re)
	return re
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// RESTInput reads the top-level members of a REST request (rest-json, rest-xml) bound to
// op: the path labels of its URI template, its query string and headers by their wire
// names. Members of the body are not read: a REST body is validated by its handler.
func RESTInput(op *Operation, path string, query url.Values, header http.Header) Input {
	labels := map[string]string{}
	tmpl, _, _ := strings.Cut(op.URI, "?")
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, t := range strings.Split(strings.Trim(tmpl, "/"), "/") {
		if !strings.HasPrefix(t, "{") || i >= len(segs) {
			continue
		}
		name := strings.Trim(t, "{}+")
		v := segs[i]
		if strings.HasSuffix(t, "+}") {
			v = strings.Join(segs[i:], "/")
		}
		if u, err := url.PathUnescape(v); err == nil {
			v = u
		}
		labels[name] = v
	}
	return func(m *Member) Value {
		wire := m.Name
		if m.Wire != "" {
			wire = m.Wire
		}
		var s string
		var ok bool
		switch m.Location {
		case "uri":
			s, ok = labels[wire]
		case "querystring":
			if vs, has := query[wire]; has && len(vs) > 0 {
				s, ok = vs[0], true
			}
		case "header":
			if vs := header.Values(wire); len(vs) > 0 {
				s, ok = vs[0], true
			}
		default:
			return Value{Present: true, Items: -1} // in the body: left to the handler
		}
		if !ok {
			return Value{}
		}
		v := Value{Present: true, Items: -1}
		switch m.Type {
		case "string":
			v.Text = &s
		case "integer", "long":
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				v.Number = &f
			}
		}
		return v
	}
}
