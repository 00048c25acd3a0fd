// Package eventpattern matches JSON documents against EventBridge event patterns and SNS
// subscription filter policies, which share one syntax: an object whose keys name fields
// of the document, nested objects for nested fields, and at the leaves arrays of values
// or matchers, any of which may match ("prefix", "suffix", "anything-but", "numeric",
// "exists", "equals-ignore-case", "wildcard"), with "$or" for alternatives.
package eventpattern

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Pattern is a parsed event pattern or filter policy.
type Pattern struct {
	root node
}

// node is an object of the pattern: fields to match, and alternatives ($or).
type node struct {
	fields map[string]field
	or     []node
}

// field matches one key: either a nested object or a list of leaf matchers.
type field struct {
	nested   *node
	matchers []matcher
}

type matcher struct {
	kind  string // value, prefix, suffix, anything-but, numeric, exists, equals-ignore-case, wildcard
	value any    // the literal, or the argument
	not   []matcher
	ops   []numericOp
}

type numericOp struct {
	op  string
	arg float64
}

// Parse reads a pattern from its JSON text.
func Parse(doc []byte) (*Pattern, error) {
	var raw any
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be a JSON object")
	}
	n, err := parseNode(obj, "")
	if err != nil {
		return nil, err
	}
	return &Pattern{root: n}, nil
}

func parseNode(obj map[string]any, at string) (node, error) {
	n := node{fields: map[string]field{}}
	for _, k := range sortedKeys(obj) {
		v := obj[k]
		where := strings.TrimPrefix(at+"."+k, ".")
		if k == "$or" {
			alts, ok := v.([]any)
			if !ok || len(alts) < 2 {
				return n, fmt.Errorf("%s: $or takes an array of at least two patterns", where)
			}
			for _, a := range alts {
				o, ok := a.(map[string]any)
				if !ok {
					return n, fmt.Errorf("%s: every $or alternative must be an object", where)
				}
				alt, err := parseNode(o, at)
				if err != nil {
					return n, err
				}
				n.or = append(n.or, alt)
			}
			continue
		}
		switch x := v.(type) {
		case map[string]any:
			child, err := parseNode(x, where)
			if err != nil {
				return n, err
			}
			n.fields[k] = field{nested: &child}
		case []any:
			if len(x) == 0 {
				return n, fmt.Errorf("%s: empty arrays are not allowed", where)
			}
			var ms []matcher
			for _, e := range x {
				m, err := parseMatcher(e, where)
				if err != nil {
					return n, err
				}
				ms = append(ms, m)
			}
			n.fields[k] = field{matchers: ms}
		default:
			return n, fmt.Errorf("%s: match expressions must be in an array, not %v", where, v)
		}
	}
	return n, nil
}

func parseMatcher(e any, where string) (matcher, error) {
	obj, ok := e.(map[string]any)
	if !ok {
		return matcher{kind: "value", value: e}, nil
	}
	if len(obj) != 1 {
		return matcher{}, fmt.Errorf("%s: a matcher object has exactly one key", where)
	}
	for k, arg := range obj {
		switch k {
		case "prefix", "suffix":
			if s, ok := arg.(string); ok {
				return matcher{kind: k, value: s}, nil
			}
			if inner, ok := arg.(map[string]any); ok {
				if s, ok := inner["equals-ignore-case"].(string); ok && len(inner) == 1 {
					return matcher{kind: k + "-ignore-case", value: strings.ToLower(s)}, nil
				}
			}
			return matcher{}, fmt.Errorf("%s: %s takes a string", where, k)
		case "equals-ignore-case", "wildcard":
			s, ok := arg.(string)
			if !ok {
				return matcher{}, fmt.Errorf("%s: %s takes a string", where, k)
			}
			return matcher{kind: k, value: s}, nil
		case "exists":
			b, ok := arg.(bool)
			if !ok {
				return matcher{}, fmt.Errorf("%s: exists takes true or false", where)
			}
			return matcher{kind: k, value: b}, nil
		case "anything-but":
			m := matcher{kind: k}
			var items []any
			switch a := arg.(type) {
			case []any:
				items = a
			default:
				items = []any{a}
			}
			for _, it := range items {
				inner, err := parseMatcher(it, where)
				if err != nil {
					return matcher{}, err
				}
				if inner.kind != "value" && inner.kind != "prefix" && inner.kind != "suffix" && inner.kind != "equals-ignore-case" && inner.kind != "wildcard" {
					return matcher{}, fmt.Errorf("%s: anything-but takes values, prefix, suffix, equals-ignore-case or wildcard", where)
				}
				m.not = append(m.not, inner)
			}
			return m, nil
		case "numeric":
			list, ok := arg.([]any)
			if !ok || len(list) == 0 || len(list)%2 != 0 || len(list) > 4 {
				return matcher{}, fmt.Errorf("%s: numeric takes one or two comparisons, e.g. [\">\", 0, \"<=\", 5]", where)
			}
			m := matcher{kind: k}
			for i := 0; i < len(list); i += 2 {
				op, ok1 := list[i].(string)
				num, ok2 := list[i+1].(float64)
				if !ok1 || !ok2 || !validOp(op) {
					return matcher{}, fmt.Errorf("%s: numeric comparison %v %v: want one of = < <= > >= and a number", where, list[i], list[i+1])
				}
				m.ops = append(m.ops, numericOp{op, num})
			}
			return m, nil
		default:
			return matcher{}, fmt.Errorf("%s: unrecognized match type %s", where, k)
		}
	}
	return matcher{}, nil
}

func validOp(op string) bool {
	switch op {
	case "=", "<", "<=", ">", ">=":
		return true
	}
	return false
}

// Match reports whether doc (decoded JSON: map[string]any, []any, string, float64, bool,
// nil) matches the pattern.
func (p *Pattern) Match(doc any) bool {
	obj, ok := doc.(map[string]any)
	if !ok {
		return false
	}
	return p.root.match(obj)
}

func (n node) match(obj map[string]any) bool {
	for k, f := range n.fields {
		v, present := obj[k]
		if f.nested != nil {
			child, ok := v.(map[string]any)
			if !ok {
				if !present {
					child = map[string]any{}
				} else {
					return false
				}
			}
			if !f.nested.match(child) {
				return false
			}
			continue
		}
		if !f.matchValue(v, present) {
			return false
		}
	}
	if len(n.or) == 0 {
		return true
	}
	for _, alt := range n.or {
		if alt.match(obj) {
			return true
		}
	}
	return false
}

// matchValue: any matcher matching the value (or, for an array, any of its elements).
func (f field) matchValue(v any, present bool) bool {
	values := []any{v}
	if list, ok := v.([]any); ok {
		values = list
	}
	for _, m := range f.matchers {
		if m.kind == "exists" {
			if m.value.(bool) == present {
				return true
			}
			continue
		}
		if !present {
			continue
		}
		for _, x := range values {
			if m.match(x) {
				return true
			}
		}
	}
	return false
}

func (m matcher) match(x any) bool {
	s, isString := x.(string)
	switch m.kind {
	case "value":
		if a, ok := m.value.(float64); ok {
			b, ok := x.(float64)
			return ok && a == b
		}
		return m.value == x
	case "prefix":
		return isString && strings.HasPrefix(s, m.value.(string))
	case "suffix":
		return isString && strings.HasSuffix(s, m.value.(string))
	case "prefix-ignore-case":
		return isString && strings.HasPrefix(strings.ToLower(s), m.value.(string))
	case "suffix-ignore-case":
		return isString && strings.HasSuffix(strings.ToLower(s), m.value.(string))
	case "equals-ignore-case":
		return isString && strings.EqualFold(s, m.value.(string))
	case "wildcard":
		return isString && wildcard(m.value.(string), s)
	case "anything-but":
		if x == nil {
			return false
		}
		for _, n := range m.not {
			if n.match(x) {
				return false
			}
		}
		return true
	case "numeric":
		f, ok := x.(float64)
		if !ok || math.IsNaN(f) {
			return false
		}
		for _, o := range m.ops {
			switch o.op {
			case "=":
				ok = f == o.arg
			case "<":
				ok = f < o.arg
			case "<=":
				ok = f <= o.arg
			case ">":
				ok = f > o.arg
			case ">=":
				ok = f >= o.arg
			}
			if !ok {
				return false
			}
		}
		return true
	}
	return false
}

// wildcard matches s against a pattern where * stands for any run of characters.
func wildcard(pat, s string) bool {
	parts := strings.Split(pat, "*")
	if len(parts) == 1 {
		return pat == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
