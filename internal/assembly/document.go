package assembly

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/template"
)

// Key is the key of cairn.yaml naming the cloud assembly its stacks come from.
const Key = "assembly"

// Keys of a stack that the assembly decides, which cairn.yaml may not set for one of its
// stacks: the app is where they change.
var assemblyKeys = []string{"stack_name", "template_path", "template_url", "template_body", "region"}

// mergedKeys are the mappings of a stack whose entries cairn.yaml adds to the assembly's,
// its own winning; listKeys the lists it extends. Any other key cairn.yaml sets replaces
// the assembly's.
var (
	mergedKeys = []string{"tags", "parameters"}
	listKeys   = []string{"requires"}
)

// capabilitiesOfNested are what the CDK CLI grants every stack it deploys: cairn grants a
// stack what its template needs, and grants these to a stack with nested stacks, whose
// templates are assets it does not read.
var capabilitiesOfNested = []string{"CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"}

// Config is an assembly as a cairn config: the document internal/config validates as it
// validates any cairn.yaml, and the assembly's facts beyond what the document says (the
// assets, the bootstrap version), by config stack name.
type Config struct {
	// Doc is the config document: cairn.yaml's keys (its nodes, so errors point into it)
	// and a stack for each of the assembly's.
	Doc *yaml.Node
	// Assembly is the assembly read.
	Assembly *Assembly
	// Stacks are the assembly's stacks by config name (their Path).
	Stacks map[string]*Stack
}

// ConfigError is a problem of the cairn.yaml naming an assembly, located in it, or of the
// assembly itself (Line 0): data, which config reports as its own Error.
type ConfigError struct {
	File      string
	Line, Col int
	Key, Msg  string
}

// Named returns the folder of the assembly cairn.yaml's root mapping names with its
// assembly key, and the key's value node; "" when it names none.
func Named(root *yaml.Node) (string, *yaml.Node) {
	if root == nil || root.Kind != yaml.MappingNode {
		return "", nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == Key {
			v := root.Content[i+1]
			return v.Value, v
		}
	}
	return "", nil
}

// Document reads the assembly of a bundle and makes its config document. overlay is the
// root mapping of the bundle's cairn.yaml (file) when it names the assembly with its
// assembly key, and nil when the bundle is the assembly alone (file is its manifest.json).
// Without a namespace in cairn.yaml, the namespace is the deployment's name (when known).
//
// Each stack of the assembly becomes a stack of the config named by its Path, with its
// stack_name, template_path, region, role_arn, external_id and service_role (the
// assembly's bootstrap roles, for a stack of a known environment), tags, parameters,
// notification_arns, termination_protection and requires; cairn.yaml's stacks entry of
// the same name adds what CDK does not say (protected, stack options, drift ignores, ...)
// and may add tags, parameters and requires, or replace the other keys but those the
// assembly decides (stack_name, template_*, region).
func Document(fsys fs.FS, file string, overlay *yaml.Node, deployment string) (*Config, []ConfigError) {
	d := &documenter{file: file}
	dir := "."
	var at *yaml.Node
	if overlay != nil {
		var v string
		v, at = Named(overlay)
		dir = d.dir(fsys, v, at)
		if dir == "" {
			return nil, d.errs
		}
	}
	a, err := Read(fsys, dir)
	if errs, ok := err.(Errors); ok {
		for _, e := range errs {
			d.errs = append(d.errs, ConfigError{File: e.File, Line: 1, Col: 1, Key: e.Key, Msg: e.Msg})
		}
	}
	if a == nil || len(d.errs) > 0 {
		return nil, d.errs
	}
	c := &Config{Assembly: a, Stacks: map[string]*Stack{}}
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	var stacksNode *yaml.Node
	hasNamespace := false
	if overlay != nil {
		for i := 0; i+1 < len(overlay.Content); i += 2 {
			k, v := overlay.Content[i], overlay.Content[i+1]
			switch k.Value {
			case Key:
				continue
			case "stacks":
				stacksNode = v
				continue
			case "namespace":
				hasNamespace = true
			}
			root.Content = append(root.Content, k, v)
		}
	}
	if !hasNamespace && deployment != "" {
		root.Content = append(root.Content, d.str("namespace", at), d.str(deployment, at))
	}
	own, order := d.overlays(stacksNode, a)
	stacks := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	if stacksNode != nil {
		stacks.Line, stacks.Column = stacksNode.Line, stacksNode.Column
	}
	// The stacks cairn.yaml names come first, in its order, so the config's messages
	// (stacks[i].key) name them as cairn.yaml does; then the others, by path.
	for _, s := range a.Stacks {
		c.Stacks[s.Path] = s
	}
	for _, p := range order {
		stacks.Content = append(stacks.Content, d.stack(c.Stacks[p], own[p], at))
	}
	for _, s := range a.Stacks {
		if own[s.Path] == nil {
			stacks.Content = append(stacks.Content, d.stack(s, nil, at))
		}
	}
	root.Content = append(root.Content, d.str("stacks", at), stacks)
	c.Doc = root
	if len(d.errs) > 0 {
		return c, d.errs
	}
	return c, nil
}

type documenter struct {
	file string
	errs []ConfigError
}

func (d *documenter) errorf(n *yaml.Node, key, format string, args ...any) {
	e := ConfigError{File: d.file, Line: 1, Col: 1, Key: key, Msg: fmt.Sprintf(format, args...)}
	if n != nil && n.Line > 0 {
		e.Line, e.Col = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

// dir checks the assembly key's folder: a path inside the bundle holding a manifest.json.
func (d *documenter) dir(fsys fs.FS, v string, at *yaml.Node) string {
	if at == nil || at.Kind != yaml.ScalarNode || at.Tag == "!!null" || v == "" {
		d.errorf(at, Key, "must name the folder of the cloud assembly (cdk.out) in the bundle, e.g. assembly: cdk.out")
		return ""
	}
	p := path.Clean(v)
	if path.IsAbs(v) || p == ".." || strings.HasPrefix(p, "../") {
		d.errorf(at, Key, "%q leaves the bundle: synthesize into a folder beside cairn.yaml (cdk synth --output deploy/cdk.out)", v)
		return ""
	}
	if !Is(fsys, p) {
		d.errorf(at, Key, "%s holds no cloud assembly (no %s): run cdk synth first", p, "manifest.json")
		return ""
	}
	return p
}

// overlays checks cairn.yaml's stacks entries and returns them by the name of the
// assembly's stack they add to, and those names in cairn.yaml's order.
func (d *documenter) overlays(n *yaml.Node, a *Assembly) (map[string]*yaml.Node, []string) {
	out := map[string]*yaml.Node{}
	var order []string
	if n == nil || n.Tag == "!!null" {
		return out, nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, "stacks", "must be a list of the assembly's stacks, each naming one (name: Dev/Service) with what to add to it")
		return out, nil
	}
	paths := make([]string, len(a.Stacks))
	for i, s := range a.Stacks {
		paths[i] = s.Path
	}
	for i, e := range n.Content {
		key := fmt.Sprintf("stacks[%d]", i)
		if e.Kind != yaml.MappingNode {
			d.errorf(e, key, "must be a mapping naming one of the assembly's stacks (name: Dev/Service)")
			continue
		}
		var name *yaml.Node
		for j := 0; j+1 < len(e.Content); j += 2 {
			k := e.Content[j]
			switch {
			case k.Value == "name":
				name = e.Content[j+1]
			case slices.Contains(assemblyKeys, k.Value):
				d.errorf(k, key+"."+k.Value, "the assembly decides %s for its stacks: change it in the CDK app and synthesize again", k.Value)
			}
		}
		if name == nil || name.Kind != yaml.ScalarNode || name.Value == "" {
			d.errorf(e, key+".name", "missing: name the assembly's stack to add to (%s)", strings.Join(paths, ", "))
			continue
		}
		if !slices.Contains(paths, name.Value) {
			d.errorf(name, key+".name", "the assembly has no stack %q%s: its stacks are %s", name.Value, template.Suggest(name.Value, paths), strings.Join(paths, ", "))
			continue
		}
		if first, dup := out[name.Value]; dup {
			d.errorf(name, key+".name", "stack %s is named a second time (first at line %d): keep one entry", name.Value, first.Line)
			continue
		}
		out[name.Value] = e
		order = append(order, name.Value)
	}
	return out, order
}

// stack makes the config entry of an assembly stack, with what cairn.yaml adds to it (own,
// or nil).
func (d *documenter) stack(s *Stack, own, at *yaml.Node) *yaml.Node {
	if own != nil {
		at = own
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if at != nil {
		m.Line, m.Column = at.Line, at.Column
	}
	add := func(k string, v *yaml.Node) { m.Content = append(m.Content, d.str(k, at), v) }
	add("name", d.str(s.Path, at))
	add("stack_name", d.str(s.StackName, at))
	add("template_path", d.str(s.Template, at))
	if s.Region != "" {
		add("region", d.str(s.Region, at))
	}
	if s.Account != "" && s.Region != "" {
		resolved := func(v string) string {
			v = Resolve(v, s.Account, s.Region)
			if strings.Contains(v, "${") {
				return ""
			}
			return v
		}
		if role := resolved(s.DeployRole); role != "" {
			add("role_arn", d.str(role, at))
			if s.DeployExternalID != "" {
				add("external_id", d.str(s.DeployExternalID, at))
			}
		}
		if role := resolved(s.ExecutionRole); role != "" {
			add("service_role", d.str(role, at))
		}
	}
	if len(s.Tags) > 0 {
		add("tags", d.strMap(s.Tags, at))
	}
	if len(s.Parameters) > 0 {
		add("parameters", d.strMap(s.Parameters, at))
	}
	if len(s.NotificationARNs) > 0 {
		add("notification_arns", d.strList(s.NotificationARNs, at))
	}
	if s.TerminationProtection {
		add("termination_protection", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true", Line: m.Line, Column: m.Column})
	}
	if len(s.Requires) > 0 {
		add("requires", d.strList(s.Requires, at))
	}
	if s.NestedStacks {
		add("capabilities", d.strList(capabilitiesOfNested, at))
	}
	if own != nil {
		d.merge(m, own)
	}
	return m
}

// merge adds cairn.yaml's entry own to the generated mapping m: mergedKeys entry by entry,
// listKeys appended, other keys replacing the assembly's (name and the assembly's own keys
// are left out: overlays reported them).
func (d *documenter) merge(m, own *yaml.Node) {
	for j := 0; j+1 < len(own.Content); j += 2 {
		k, v := own.Content[j], own.Content[j+1]
		name := k.Value
		if name == "variables" {
			name = "parameters" // Stacker's spelling
		}
		if name == "name" || slices.Contains(assemblyKeys, name) {
			continue
		}
		i := index(m, name)
		switch {
		case i < 0:
			m.Content = append(m.Content, k, v)
		case slices.Contains(mergedKeys, name) && v.Kind == yaml.MappingNode && m.Content[i+1].Kind == yaml.MappingNode:
			base := m.Content[i+1]
			for e := 0; e+1 < len(v.Content); e += 2 {
				if at := index(base, v.Content[e].Value); at >= 0 {
					base.Content = slices.Delete(base.Content, at, at+2)
				}
			}
			merged := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: v.Line, Column: v.Column}
			merged.Content = append(append(merged.Content, base.Content...), v.Content...)
			m.Content[i], m.Content[i+1] = k, merged
		case slices.Contains(listKeys, name) && v.Kind == yaml.SequenceNode && m.Content[i+1].Kind == yaml.SequenceNode:
			merged := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: v.Line, Column: v.Column}
			merged.Content = append(append(merged.Content, m.Content[i+1].Content...), v.Content...)
			m.Content[i], m.Content[i+1] = k, merged
		default:
			m.Content[i], m.Content[i+1] = k, v
		}
	}
}

// index is the position of key's node in mapping m, or -1.
func index(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}

func (d *documenter) str(v string, at *yaml.Node) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
	if at != nil {
		n.Line, n.Column = at.Line, at.Column
	}
	return n
}

func (d *documenter) strMap(m map[string]string, at *yaml.Node) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		n.Content = append(n.Content, d.str(k, at), d.str(m[k], at))
	}
	if at != nil {
		n.Line, n.Column = at.Line, at.Column
	}
	return n
}

func (d *documenter) strList(l []string, at *yaml.Node) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, v := range l {
		n.Content = append(n.Content, d.str(v, at))
	}
	if at != nil {
		n.Line, n.Column = at.Line, at.Column
	}
	return n
}
