// Package scaffold writes a first cairn.yaml for CloudFormation templates (`cairn init`):
// a stack per template, each parameter with its default and description, and the edges
// it can guess: an output of one template feeding a parameter of the same name of another
// (an ${output} lookup), and an export another template imports (requires). Every guess,
// and every value a person must give, is marked "review:" in a comment, so the file is a
// draft to read, never a config written behind its owner's back.
package scaffold

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/template"
)

// Template is one template of the bundle: its bundle-relative, slash-separated path and
// its body.
type Template struct {
	Path string
	Body []byte
	// Overrides are parameter values given beside the template (a samconfig.toml's
	// parameter_overrides), which the stack takes; From names where ("samconfig.toml").
	Overrides map[string]string
	From      string
}

// Result is the config written, and what a person must look at.
type Result struct {
	Config []byte
	// Stacks are the stacks' names, in the order written.
	Stacks []string
	// Review counts the lines marked "review:"; Missing names the required parameters
	// left without a value ("stack.Parameter").
	Review  int
	Missing []string
	// Overridden names the parameters given a value from a template's Overrides
	// ("stack.Parameter").
	Overridden []string
}

// Write writes the config of the templates, in namespace. A template that does not parse
// is an error naming it.
func Write(namespace string, templates []Template) (*Result, error) {
	if len(templates) == 0 {
		return nil, fmt.Errorf("no templates: name at least one")
	}
	stacks := make([]*stack, 0, len(templates))
	taken := map[string]bool{}
	for _, tp := range templates {
		t, err := template.Parse(tp.Body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tp.Path, err)
		}
		name := uniqueName(StackName(tp.Path), taken)
		stacks = append(stacks, &stack{name: name, path: tp.Path, t: t, params: parameters(t), description: scalar(get(t.Node, "Description")),
			overrides: tp.Overrides, from: tp.From})
	}
	guess(namespace, stacks)

	var b bytes.Buffer
	r := &Result{}
	plural := "s"
	if len(stacks) == 1 {
		plural = ""
	}
	fmt.Fprintf(&b, "# cairn.yaml for %d template%s, written by `cairn init`: a draft. Read every line marked\n", len(stacks), plural)
	b.WriteString("# \"review:\" (names, values, the guessed dependencies), then check it with `cairn validate`\n")
	b.WriteString("# and see the deploy order with `cairn graph`. The keys: see docs/bundle.md in cairn's repository.\n")
	fmt.Fprintf(&b, "namespace: %s  # review: stacks are named %s-<name>\n", quote(namespace), namespace)
	r.Review++
	b.WriteString("stacks:\n")
	for i, s := range stacks {
		if i > 0 {
			b.WriteString("\n")
		}
		if s.description != "" {
			comment(&b, "  ", s.description)
		}
		r.Stacks = append(r.Stacks, s.name)
		fmt.Fprintf(&b, "  - name: %s\n", s.name)
		fmt.Fprintf(&b, "    template_path: %s\n", quote(s.path))
		if len(s.requires) > 0 {
			var why []string
			for _, req := range s.requires {
				why = append(why, fmt.Sprintf("it imports %s's export %s", req.stack, req.export))
			}
			fmt.Fprintf(&b, "    requires: [%s]  # review: guessed: %s\n", strings.Join(names(s.requires), ", "), strings.Join(why, "; "))
			r.Review++
		}
		if len(s.params) == 0 {
			continue
		}
		b.WriteString("    parameters:\n")
		for _, p := range s.params {
			about := p.Type
			if len(p.AllowedValues) > 0 {
				about += ", one of " + strings.Join(p.AllowedValues, ", ")
			}
			if p.NoEcho {
				about += ", NoEcho"
			}
			if p.description != "" {
				comment(&b, "      ", fmt.Sprintf("%s (%s)", p.description, about))
			} else {
				comment(&b, "      ", about)
			}
			v, given := s.overrides[p.Name]
			switch {
			case given && p.NoEcho:
				fmt.Fprintf(&b, "      # %s: ${ssm /%s/%s}  # review: %s gives it a value, which is secret: never write it here; read it with ${ssm NAME} or ${var NAME} (--var-file)\n", p.Name, namespace, p.Name, s.from)
				r.Review++
				if !p.HasDefault {
					r.Missing = append(r.Missing, s.name+"."+p.Name)
				}
			case given && strings.Contains(v, "${"):
				fmt.Fprintf(&b, "      # %s: %s  # review: from %s, which cairn.yaml would read as a lookup\n", p.Name, quote(v), s.from)
				r.Review++
			case given:
				fmt.Fprintf(&b, "      %s: %s  # from %s\n", p.Name, quote(v), s.from)
				r.Overridden = append(r.Overridden, s.name+"."+p.Name)
			case p.from != "":
				fmt.Fprintf(&b, "      %s: ${output %s::%s}  # review: guessed: stack %s's output %s\n", p.Name, p.from, p.output, p.from, p.output)
				r.Review++
			case p.note != "":
				fmt.Fprintf(&b, "      # %s:  # review: %s\n", p.Name, p.note)
				r.Review++
				if !p.HasDefault {
					r.Missing = append(r.Missing, s.name+"."+p.Name)
				}
			case p.NoEcho && !p.HasDefault:
				fmt.Fprintf(&b, "      # %s: ${ssm /%s/%s}  # review: required and secret: never write it here; read it with ${ssm NAME} or ${var NAME} (--var-file)\n", p.Name, namespace, p.Name)
				r.Review++
				r.Missing = append(r.Missing, s.name+"."+p.Name)
			case !p.HasDefault:
				fmt.Fprintf(&b, "      # %s:  # review: required, no default: give it a value\n", p.Name)
				r.Review++
				r.Missing = append(r.Missing, s.name+"."+p.Name)
			case p.NoEcho:
				fmt.Fprintf(&b, "      # %s: the template's default  # review: secret: the default applies; to change it use ${ssm NAME} or ${var NAME}\n", p.Name)
			case strings.Contains(p.Default, "${"):
				// cairn.yaml would read it as a lookup: the template's default applies.
				fmt.Fprintf(&b, "      # %s: %s  # the template's default\n", p.Name, quote(p.Default))
			default:
				fmt.Fprintf(&b, "      %s: %s  # the template's default\n", p.Name, quote(p.Default))
			}
		}
	}
	r.Config = b.Bytes()
	return r, nil
}

// stack is one template's stack and what was guessed of it.
type stack struct {
	name, path  string
	t           *template.Template
	description string
	params      []*param
	requires    []requirement
	overrides   map[string]string
	from        string
}

type requirement struct{ stack, export string }

func names(rs []requirement) []string {
	var out []string
	for _, r := range rs {
		if !slices.Contains(out, r.stack) {
			out = append(out, r.stack)
		}
	}
	return out
}

// param is a template parameter, its description, and where its value was guessed from
// (from: a stack with an output of the same name) or why it was not (note).
type param struct {
	template.Parameter
	description string
	// from is the stack whose output (named output) the parameter reads.
	from, output, note string
}

func parameters(t *template.Template) []*param {
	var out []*param
	for _, name := range declared(t) {
		p := t.Parameters[name]
		out = append(out, &param{Parameter: p, description: scalar(get(get(get(t.Node, "Parameters"), name), "Description"))})
	}
	return out
}

// declared lists a template's parameters in the order the template declares them.
func declared(t *template.Template) []string {
	var out []string
	ps := deref(get(t.Node, "Parameters"))
	if ps == nil || ps.Kind != yaml.MappingNode {
		return t.ParameterNames()
	}
	for i := 0; i+1 < len(ps.Content); i += 2 {
		if _, ok := t.Parameters[ps.Content[i].Value]; ok {
			out = append(out, ps.Content[i].Value)
		}
	}
	return out
}

// guess fills in the edges: a parameter named as exactly one other template's output
// reads it, an imported export one template gives makes a requirement, in template
// order, leaving out a guess that would close a cycle.
func guess(namespace string, stacks []*stack) {
	edges := map[string][]string{}         // stack -> the stacks it needs
	cycles := func(from, to string) bool { // does to already need from?
		seen := map[string]bool{}
		var walk func(string) bool
		walk = func(n string) bool {
			if n == from {
				return true
			}
			if seen[n] {
				return false
			}
			seen[n] = true
			return slices.ContainsFunc(edges[n], walk)
		}
		return walk(to)
	}
	need := func(s *stack, other string) bool {
		if slices.Contains(edges[s.name], other) {
			return true
		}
		if cycles(s.name, other) {
			return false
		}
		edges[s.name] = append(edges[s.name], other)
		return true
	}
	exports := map[string]string{} // export name -> stack
	for _, s := range stacks {
		for _, e := range s.t.Exports(namespace + "-" + s.name) {
			exports[e.Name] = s.name
		}
	}
	for _, s := range stacks {
		for _, imp := range imports(s.t.Node) {
			if other, ok := exports[imp]; ok && other != s.name && need(s, other) {
				s.requires = append(s.requires, requirement{other, imp})
			}
		}
		for _, p := range s.params {
			givers, output := outputsFor(p.Name, s, stacks)
			switch {
			case len(givers) == 1 && need(s, givers[0]):
				p.from, p.output = givers[0], output
			case len(givers) == 1:
				p.note = fmt.Sprintf("stack %s has an output %s, but reading it would make a dependency cycle", givers[0], output)
			case len(givers) > 1:
				p.note = fmt.Sprintf("stacks %s each have an output %s: choose one (${output STACK::%s})", strings.Join(givers, ", "), output, output)
			}
		}
	}
}

// outputsFor finds the stacks (other than s) whose output a parameter named name reads:
// an output of the same name, else one the parameter names after the stack that gives
// it (parameter DatabaseEndpoint, stack database's output Endpoint).
func outputsFor(name string, s *stack, stacks []*stack) ([]string, string) {
	var exact []string
	for _, o := range stacks {
		if o != s && o.t.HasOutput(name) {
			exact = append(exact, o.name)
		}
	}
	if len(exact) > 0 {
		return exact, name
	}
	var prefixed []string
	output := ""
	for _, o := range stacks {
		prefix := strings.ReplaceAll(o.name, "-", "")
		if o == s || len(name) <= len(prefix) || !strings.EqualFold(name[:len(prefix)], prefix) {
			continue
		}
		if rest := name[len(prefix):]; o.t.HasOutput(rest) && (output == "" || output == rest) {
			prefixed, output = append(prefixed, o.name), rest
		}
	}
	return prefixed, output
}

// imports lists the export names a template imports literally (Fn::ImportValue of a
// string), in template order.
func imports(n *yaml.Node) []string {
	var out []string
	var walk func(*yaml.Node, int)
	walk = func(n *yaml.Node, depth int) {
		n = deref(n)
		if n == nil || depth > 100 {
			return
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == "Fn::ImportValue" {
					if v := deref(n.Content[i+1]); v != nil && v.Kind == yaml.ScalarNode && !slices.Contains(out, v.Value) {
						out = append(out, v.Value)
					}
				}
			}
		}
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return out
}

// nameRE is what a stack's name keeps of a file name: CloudFormation's letters, digits
// and hyphens.
var nameRE = regexp.MustCompile(`[^a-z0-9]+`)

// StackName is the stack name a template file suggests: its base name without extension
// (and without a ".template" before it), lower case, other characters as hyphens,
// starting with a letter.
func StackName(p string) string {
	base := path.Base(strings.ReplaceAll(p, "\\", "/"))
	base = strings.TrimSuffix(base, path.Ext(base))
	base = strings.TrimSuffix(base, ".template")
	name := strings.Trim(nameRE.ReplaceAllString(strings.ToLower(base), "-"), "-")
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		name = "stack-" + name
	}
	return strings.TrimSuffix(name, "-")
}

func uniqueName(name string, taken map[string]bool) string {
	n := name
	for i := 2; taken[n]; i++ {
		n = fmt.Sprintf("%s-%d", name, i)
	}
	taken[n] = true
	return n
}

// get is the value of key k of mapping n, aliases followed; nil when there is none.
func get(n *yaml.Node, k string) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			return deref(n.Content[i+1])
		}
	}
	return nil
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 10; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return deref(n.Content[0])
	}
	return n
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return strings.Join(strings.Fields(n.Value), " ")
}

// comment writes text as YAML comment lines at indent, wrapped near 100 columns.
func comment(b *bytes.Buffer, indent, text string) {
	line := indent + "#"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 100 && len(line) > len(indent)+1 {
			b.WriteString(line + "\n")
			line = indent + "#"
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
}

// quote is s as a YAML scalar that reads back as the same string.
func quote(s string) string {
	out, err := yaml.Marshal(s)
	if err != nil {
		return fmt.Sprintf("%q", s)
	}
	text := strings.TrimSuffix(string(out), "\n")
	if strings.Contains(text, "\n") || strings.HasPrefix(text, "|") || strings.HasPrefix(text, ">") {
		return fmt.Sprintf("%q", s) // a multi-line default: one double-quoted line
	}
	return text
}
