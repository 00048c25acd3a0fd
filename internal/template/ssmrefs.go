package template

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/bucket"
)

// SSMReference is a dynamic reference of the template to a Parameter Store parameter
// ({{resolve:ssm:NAME}}, {{resolve:ssm:NAME:VERSION}}, {{resolve:ssm-secure:NAME}}),
// written out or computed by intrinsic functions.
type SSMReference struct {
	// Name is the parameter's name as the reference gives it (a :VERSION kept, an ARN's
	// parameter/ path taken out), "" when cairn cannot tell it: Unknown then says from
	// what it is computed.
	Name, Unknown string
	// Text is the reference, its unknown parts shown as ${...}.
	Text string
	// Params are the parameters (and pseudo parameters) it reads that values lacked.
	Params []string
	// At is the value's key path; Line and Col locate it.
	At        string
	Line, Col int
}

// SSMReferences returns the template's dynamic references to Parameter Store
// parameters, each evaluated with values as S3Locations does: those written out in any
// string, and those an Fn::Sub, Fn::Join or Ref computes.
func (t *Template) SSMReferences(values map[string]string) []SSMReference {
	e := &evaluator{t: t, values: values, types: map[string]string{}, unknown: map[string]bool{}}
	for _, r := range t.Declared {
		e.types[r.LogicalID] = r.Type
	}
	var out []SSMReference
	seen := map[string]bool{}
	var walk func(n *yaml.Node, path string, depth int)
	walk = func(n *yaml.Node, path string, depth int) {
		n = resolve(n)
		if n == nil || depth > 64 {
			return
		}
		add := func(alts []parts) {
			for _, alt := range alts {
				for _, r := range ScanSSMReferences(alt) {
					r.At, r.Line, r.Col = path, n.Line, n.Column
					for name := range e.unknown {
						r.Params = append(r.Params, name)
					}
					slices.Sort(r.Params)
					if k := r.At + "\x00" + r.Text; !seen[k] {
						seen[k] = true
						out = append(out, r)
					}
				}
			}
		}
		switch {
		case n.Kind == yaml.ScalarNode:
			if strings.Contains(n.Value, "resolve") {
				add(literal(n.Value))
			}
			return
		case intrinsic(n) == "Ref":
			clear(e.unknown)
			add(e.eval(n, 0))
			return
		case intrinsic(n) == "Fn::Sub":
			clear(e.unknown)
			add(e.eval(n, 0))
			// its string was read whole; its variables' values are read on their own
			if arg := resolve(n.Content[1]); arg.Kind == yaml.SequenceNode && len(arg.Content) == 2 {
				walk(arg.Content[1], path, depth+1)
			}
			return
		case intrinsic(n) == "Fn::Join":
			clear(e.unknown)
			add(e.eval(n, 0))
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], joinPath(path, n.Content[i].Value), depth+1)
			}
			return
		}
		for _, c := range n.Content {
			walk(c, path, depth+1)
		}
	}
	walk(t.Node, "", 0)
	return out
}

// ScanSSMReferences finds the references to Parameter Store parameters in a value made
// of parts, literal or unknown (a plain string is one literal part). A reference whose
// service or name holds an unknown part, or a value that has an unknown part beside the
// text of a dynamic reference, is returned with Unknown set: cairn cannot tell which
// parameter it reads.
func ScanSSMReferences(p []bucket.Part) []SSMReference {
	const hole = "\x00"
	var b strings.Builder
	unknown := ""
	for _, x := range p {
		if x.Unknown != "" {
			b.WriteString(hole)
			if unknown == "" {
				unknown = x.Unknown
			}
			continue
		}
		b.WriteString(strings.ReplaceAll(x.Text, hole, ""))
	}
	s := b.String()
	show := func(t string) string { return strings.ReplaceAll(t, hole, "${"+unknown+"}") }
	var out []SSMReference
	matched := false
	for i := 0; ; {
		j := strings.Index(s[i:], "resolve:")
		if j < 0 {
			break
		}
		j += i
		i = j + len("resolve:")
		pre := s[max(0, j-2):j]
		if pre != "{{" && !strings.Contains(pre, hole) {
			continue
		}
		matched = true
		rest := s[i:]
		end := strings.Index(rest, "}}")
		body := rest
		if end >= 0 {
			body = rest[:end]
		}
		service, name, _ := strings.Cut(body, ":")
		text := "{{resolve:" + body + "}}"
		switch {
		case strings.Contains(service, hole) || strings.Contains(pre, hole):
			out = append(out, SSMReference{Unknown: unknown, Text: show(text)})
		case service != "ssm" && service != "ssm-secure":
		case end < 0 && !strings.Contains(rest, hole):
			// never closed: no reference
		case end < 0 || strings.Contains(name, hole):
			out = append(out, SSMReference{Unknown: unknown, Text: show(text)})
		default:
			if k := strings.Index(name, ":parameter/"); strings.HasPrefix(name, "arn:") && k >= 0 {
				name = name[k+len(":parameter"):]
			}
			out = append(out, SSMReference{Name: name, Text: text})
		}
	}
	if !matched && strings.Contains(s, hole) && (strings.Contains(s, "{{") || strings.Contains(s, "resolve")) {
		out = append(out, SSMReference{Unknown: unknown, Text: show(s)})
	}
	return out
}

// MayReferToSSM reports whether a dynamic reference could be made from the template's
// text: some string of it holds "{{" or "resolve" (one of them is in any reference
// SSMReferences finds, unless a parameter's value brings it: see MayReferToSSMIn).
func (t *Template) MayReferToSSM() bool {
	found := false
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if n = resolve(n); n == nil || found || depth > 64 {
			return
		}
		if n.Kind == yaml.ScalarNode {
			found = MayReferToSSMIn(n.Value)
			return
		}
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	walk(t.Node, 0)
	return found
}

// MayReferToSSMIn reports whether s holds "{{" or "resolve".
func MayReferToSSMIn(s string) bool {
	return strings.Contains(s, "{{") || strings.Contains(s, "resolve")
}
