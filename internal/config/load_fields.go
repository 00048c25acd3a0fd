package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/template"
)

// fieldArena hands out slices of fields from a buffer that is given back in the order
// taken (mark, release).
type fieldArena struct {
	buf []field
	gen int // counts the buffers made, so a release knows whether buf is the marked one
}

type arenaMark struct{ gen, len int }

// take returns an empty slice with room for n fields; appending past n copies it out.
func (a *fieldArena) take(n int) []field {
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]field, 0, max(n, 256, 2*cap(a.buf)))
		a.gen++
	}
	start := len(a.buf)
	a.buf = a.buf[:start+n]
	return a.buf[start : start : start+n]
}

func (a *fieldArena) mark() arenaMark { return arenaMark{a.gen, len(a.buf)} }

// release gives back what was taken since m: nothing taken since may be in use.
func (a *fieldArena) release(m arenaMark) {
	if a.gen == m.gen {
		a.buf = a.buf[:m.len]
	} else {
		a.buf = a.buf[:0] // a buffer made since m holds only what was taken since
	}
}

// field is one key of a mapping.
type field struct {
	name string
	key  string // full key path
	k, v *yaml.Node
	// merged: the key is in a mapping merged in (<<:), not in the mapping itself.
	merged bool
}

// fields returns the keys of mapping n, reporting a non-mapping, duplicate keys and, when
// allowed is not nil, unknown keys. Merge keys (<<: *anchor) are expanded; explicit keys
// win over merged ones. The slice is the loader's (fieldBuf): range over it, do not keep it.
func (l *loader) fields(n *yaml.Node, key string, allowed []string) []field {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // an empty value: "tags:" with nothing after it
	}
	if n.Kind != yaml.MappingNode {
		l.errorf(n, key, "must be a mapping, got %s", describe(n))
		return nil
	}
	out := l.fieldBuf.take(len(n.Content) / 2)
	keys, next := fieldKeys(n, key), 0 // the fields' full keys, in one string
	// Duplicates are found by a scan of out for the small mappings a config is made of,
	// and by a map for large ones (a map per mapping is most of a 10,000-stack load's
	// garbage).
	var seenMap map[string]*yaml.Node
	if len(n.Content) > 32 {
		seenMap = make(map[string]*yaml.Node, len(n.Content)/2)
	}
	var rejected []*yaml.Node // keys not in out (unknown ones), still duplicates
	seen := func(name string) *yaml.Node {
		if seenMap != nil {
			return seenMap[name]
		}
		for i := range out {
			if out[i].name == name {
				return out[i].k
			}
		}
		for _, k := range rejected {
			if k.Value == name {
				return k
			}
		}
		return nil
	}
	mark := func(k *yaml.Node, kept bool) {
		if seenMap != nil {
			seenMap[k.Value] = k
		} else if !kept {
			rejected = append(rejected, k)
		}
	}
	var merged []field
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if k.Tag == "!!merge" {
			if l.merging == nil {
				l.merging = map[*yaml.Node]bool{}
			}
			outer := l.merging[n]
			l.merging[n] = true
			merged = append(merged, l.merge(v, key, allowed)...)
			if !outer {
				delete(l.merging, n)
			}
			continue
		}
		if k.Kind != yaml.ScalarNode {
			l.errorf(k, key, "keys must be strings, got %s", describe(k))
			continue
		}
		fk := k.Value
		if key != "" {
			end := next + len(key) + 1 + len(k.Value)
			fk, next = keys[next:end], end
		}
		if first := seen(k.Value); first != nil {
			l.errorf(k, fk, "duplicate key (first at line %d)", first.Line)
			continue
		}
		if allowed != nil && !slices.Contains(allowed, k.Value) {
			mark(k, false)
			hint := suggestList(k.Value, allowed)
			if hint == "" {
				hint = ": allowed keys are " + strings.Join(allowed, ", ")
			}
			l.errorf(k, fk, "unknown key %q%s", k.Value, hint)
			continue
		}
		mark(k, true)
		out = append(out, field{name: k.Value, key: fk, k: k, v: v})
	}
	for _, f := range merged {
		if seen(f.name) == nil {
			mark(f.k, true)
			f.merged = true
			out = append(out, f)
		}
	}
	return out
}

func (l *loader) merge(v *yaml.Node, key string, allowed []string) []field {
	if v.Kind == yaml.SequenceNode {
		var out []field
		for _, c := range v.Content {
			if c = resolve(c); c.Kind == yaml.SequenceNode {
				out = append(out, l.fields(c, key, allowed)...) // not a mapping: said so
				continue
			}
			out = append(out, l.merge(c, key, allowed)...)
		}
		return out
	}
	if l.merging[v] {
		l.errorf(v, key, "the merge key <<: refers to a mapping that contains it (an alias cycle): merge another mapping")
		return nil
	}
	if l.merging == nil {
		l.merging = map[*yaml.Node]bool{}
	}
	l.merging[v] = true
	defer delete(l.merging, v)
	return l.fields(v, key, allowed)
}

// fieldKeys joins key to each string key of mapping n, in one string: the full keys of
// its fields one after the other, made with one allocation instead of one a field.
func fieldKeys(n *yaml.Node, key string) string {
	if key == "" {
		return ""
	}
	size := 0
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Tag != "!!merge" && k.Kind == yaml.ScalarNode {
			size += len(key) + 1 + len(k.Value)
		}
	}
	var b strings.Builder
	b.Grow(size)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Tag != "!!merge" && k.Kind == yaml.ScalarNode {
			b.WriteString(key)
			b.WriteByte('.')
			b.WriteString(k.Value)
		}
	}
	return b.String()
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func (l *loader) str(n *yaml.Node, key string) (string, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		l.errorf(n, key, "must be a string, got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

func (l *loader) strs(n *yaml.Node, key string) ([]string, []*yaml.Node) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, key, "must be a list of strings, got %s", describe(n))
		return nil, nil
	}
	var vals []string
	var nodes []*yaml.Node
	if len(n.Content) > 0 {
		vals, nodes = make([]string, 0, len(n.Content)), make([]*yaml.Node, 0, len(n.Content))
	}
	for i, c := range n.Content {
		if c = resolve(c); c.Kind == yaml.ScalarNode && c.Tag != "!!null" {
			vals, nodes = append(vals, c.Value), append(nodes, c) // as str, without its key
			continue
		}
		l.str(c, fmt.Sprintf("%s[%d]", key, i)) // says what is wrong
	}
	return vals, nodes
}

func (l *loader) boolean(n *yaml.Node, key string) (bool, bool) {
	n = resolve(n)
	if b, ok := plainBool(n); ok {
		return b, true
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
		l.errorf(n, key, "must be true or false, got %s", describe(n))
		return false, false
	}
	return b, true
}

func (l *loader) integer(n *yaml.Node, key string) (int, bool) {
	n = resolve(n)
	if i, ok := plainInt(n); ok {
		return i, true
	}
	var i int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&i) != nil {
		l.errorf(n, key, "must be an integer, got %s", describe(n))
		return 0, false
	}
	return i, true
}

// plainBool and plainInt read the spellings yaml.v3 decodes a !!bool and a !!int of
// most often (true and false; a decimal without leading zeros) without its decoder,
// which a large config would run for each stack's flags; anything else goes to Decode.
func plainBool(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		return false, false
	}
	switch n.Value {
	case "true", "True", "TRUE":
		return true, true
	case "false", "False", "FALSE":
		return false, true
	}
	return false, false
}

func plainInt(n *yaml.Node) (int, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return 0, false
	}
	digits := strings.TrimPrefix(n.Value, "-")
	if digits == "" || len(digits) > 18 || digits[0] == '0' && len(digits) > 1 || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	i, err := strconv.Atoi(n.Value)
	return i, err == nil
}

// tags decodes a tag mapping and the lookups of its values; aws: and cairn: keys are
// reserved.
func (l *loader) tags(n *yaml.Node, key string) (map[string]string, []lookupRef) {
	out := map[string]string{}
	var lookups []lookupRef
	for _, f := range l.fields(n, key, nil) {
		v, ok := l.str(f.v, f.key)
		if !ok {
			continue
		}
		if p, _, _ := strings.Cut(f.name, ":"); strings.Contains(f.name, ":") && (strings.EqualFold(p, "aws") || p == "cairn") {
			l.errorf(f.k, f.key, "tag keys starting with %s: are reserved (cairn sets its own cairn: tags)", p)
			continue
		}
		if len(f.name) > maxTagKey {
			l.errorf(f.k, f.key, "tag key is %d characters, more than CloudFormation's %d", len(f.name), maxTagKey)
		}
		out[f.name] = v
		found, static, known, ok := l.lookups(v, f.v, f.key)
		if !ok {
			continue
		}
		if known && utf8.RuneCountInString(static) > maxTagValue {
			l.errorf(f.v, f.key, "tag value is %d characters, more than CloudFormation's %d", utf8.RuneCountInString(static), maxTagValue)
		}
		for _, lk := range found {
			lk.Tag = f.name
			lookups = append(lookups, lookupRef{l: lk, node: f.v, key: f.key})
		}
	}
	return out, lookups
}

// CloudFormation's limits on stack tags.
const (
	maxTagKey   = 128
	maxTagValue = 256
)

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "nothing"
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		}
		return n.Value
	case yaml.AliasNode:
		return "an alias"
	}
	return "an empty document"
}

func list(names []string, none string) string {
	if len(names) == 0 {
		return none
	}
	return strings.Join(names, ", ")
}

// suggestList returns ` (did you mean "x"?)` for the closest candidate, if one is close.
func suggestList(name string, candidates []string) string { return template.Suggest(name, candidates) }
