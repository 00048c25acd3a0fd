package template

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// entry is one key and value of a template section.
type entry struct{ key, value *yaml.Node }

// expand returns the entries of a Resources, Outputs or Conditions section with the
// Fn::ForEach loops of AWS::LanguageExtensions expanded, as CloudFormation expands them
// before it checks anything. A collection the template does not spell out (a Ref to a
// CommaDelimitedList parameter without Default, a Fn::FindInMap) is expanded with one
// stand-in item, enough to check the loop's body. Malformed loops are reported when label
// is set.
func (c *checker) expand(section *yaml.Node, label string) []entry {
	var out []entry
	ext := c.t.HasTransform(languageExtensions)
	for i := 0; i+1 < len(section.Content); i += 2 {
		k, v := section.Content[i], section.Content[i+1]
		if ext && strings.HasPrefix(k.Value, "Fn::ForEach::") {
			out = append(out, c.loop(k, resolve(v), label, 0)...)
			continue
		}
		out = append(out, entry{k, v})
	}
	return out
}

func (c *checker) loop(k, v *yaml.Node, label string, depth int) []entry {
	if v.Kind != yaml.SequenceNode || len(v.Content) != 3 || resolve(v.Content[0]).Kind != yaml.ScalarNode ||
		resolve(v.Content[2]).Kind != yaml.MappingNode || depth > 5 {
		if label != "" {
			c.errorf(k, label+"."+k.Value, "%s must be [Identifier, Collection, {OutputKey: OutputValue}] (at most 5 loops deep)", k.Value)
		}
		return nil
	}
	id := resolve(v.Content[0]).Value
	var items []string
	switch coll := resolve(v.Content[1]); {
	case coll.Kind == yaml.SequenceNode:
		for _, it := range coll.Content {
			if it = resolve(it); it.Kind == yaml.ScalarNode {
				items = append(items, it.Value)
			}
		}
	case intrinsic(coll) == "Ref" && resolve(coll.Content[1]).Kind == yaml.ScalarNode:
		if p, ok := c.t.Parameters[resolve(coll.Content[1]).Value]; ok && p.HasDefault && p.Default != "" {
			items = strings.Split(p.Default, ",")
		}
	}
	if len(items) == 0 {
		items = []string{"Item"}
	}
	frag := resolve(v.Content[2])
	var out []entry
	for _, item := range items {
		item = strings.TrimSpace(item)
		for i := 0; i+1 < len(frag.Content); i += 2 {
			fk, fv := substitute(frag.Content[i], id, item), substitute(frag.Content[i+1], id, item)
			if strings.HasPrefix(fk.Value, "Fn::ForEach::") {
				out = append(out, c.loop(fk, resolve(fv), label, depth+1)...)
				continue
			}
			out = append(out, entry{fk, fv})
		}
	}
	return out
}

// substitute copies n with ${id} and &{id} replaced by item (&{} keeps only its letters
// and digits) and {Ref: id} by item itself.
func substitute(n *yaml.Node, id, item string) *yaml.Node {
	n = resolve(n)
	cp := *n
	if n.Kind == yaml.ScalarNode {
		if strings.Contains(n.Value, "{"+id+"}") {
			cp.Value = strings.ReplaceAll(cp.Value, "${"+id+"}", item)
			cp.Value = strings.ReplaceAll(cp.Value, "&{"+id+"}", alnumOnly(item))
		}
		return &cp
	}
	if intrinsic(n) == "Ref" && resolve(n.Content[1]).Value == id {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: item, Line: n.Line, Column: n.Column}
	}
	cp.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		cp.Content[i] = substitute(ch, id, item)
	}
	return &cp
}

func alnumOnly(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
