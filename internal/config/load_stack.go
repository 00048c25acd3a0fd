package config

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	layout "github.com/cairn-dev/cairn/internal/bucket"
)

// stackDef is a stack with the nodes its errors point at.
type stackDef struct {
	s                          *Stack
	key                        string // stacks[i]
	node, nameNode, stackNameN *yaml.Node
	templateNode, paramsNode   *yaml.Node
	templateKey                string // the key holding the template: template_path, ...
	templateOK                 bool   // the template key's value decoded
	capsNode                   *yaml.Node
	inline                     *yaml.Node // an inline template_body given as a mapping
	// params are the parameters given, in the config's order (a slice: a stack has few,
	// and a large config many stacks).
	params               []givenParam
	requires, requiredBy []*yaml.Node
	// lookupAt locates each of the stack's Lookups (s.Lookups[i] at lookupAt[i]).
	lookupAt []lookupAt
	ownTags  map[string]string
	// targetNodes holds the nodes of the stack's own targetKeys.
	targetNodes map[string]*yaml.Node
}

// givenParam is a parameter given to a stack, with its key node (kept even if its value is
// wrong), and its value when known at load (no deploy-time lookup), checked against the
// template's constraints, whose errors point at at: the value's node, or the key's when
// the parameter is merged into the parameters (<<:).
type givenParam struct {
	name   string
	k, at  *yaml.Node
	static string
	known  bool
}

// given reports whether the stack is given parameter name.
func (d *stackDef) given(name string) bool {
	for i := range d.params {
		if d.params[i].name == name {
			return true
		}
	}
	return false
}

// templateKeyPath is the key of the stack's template (stacks[i].template_path, ...), built
// for an error only: a large config has many stacks.
func (d *stackDef) templateKeyPath() string { return d.key + "." + d.templateKey }

// lookupAt is where a lookup is written: the node and key of its value.
type lookupAt struct {
	node *yaml.Node
	key  string
}

// addLookup adds a lookup of the stack.
func (d *stackDef) addLookup(lr lookupRef) {
	d.s.Lookups = append(d.s.Lookups, lr.l)
	d.lookupAt = append(d.lookupAt, lookupAt{lr.node, lr.key})
}

// sortLookups orders the stack's lookups by parameter, then tag (a stable insertion sort
// of both slices: a stack has few).
func (d *stackDef) sortLookups() {
	ls, at := d.s.Lookups, d.lookupAt
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && cmp.Or(strings.Compare(ls[j].Param, ls[j-1].Param), strings.Compare(ls[j].Tag, ls[j-1].Tag)) < 0; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
			at[j], at[j-1] = at[j-1], at[j]
		}
	}
}

type lookupRef struct {
	l    Lookup
	node *yaml.Node
	key  string
}

// stack decodes one stack into d and s; template and parameter checks that need other
// stacks come later.
func (l *loader) stack(c *Config, n *yaml.Node, key string, d *stackDef, s *Stack) *stackDef {
	if n.Kind != yaml.MappingNode {
		l.errorf(n, key, "a stack must be a mapping with name and template_path, got %s", describe(n))
		return nil
	}
	*s = Stack{Enabled: true, Target: c.Target}
	// The stack's maps are made when their keys are met, at their size (targetNodes
	// stays nil when empty): a large config has many stacks.
	*d = stackDef{s: s, key: key, node: n}
	var ownTagLookups []lookupRef
	defer l.fieldBuf.release(l.fieldBuf.mark()) // the stack's fields are ranged over here only
	for _, f := range l.fields(n, key, stackKeys) {
		switch f.name {
		case "name":
			s.Name, _ = l.str(f.v, f.key)
			d.nameNode = f.v
		case "stack_name":
			s.StackName, _ = l.str(f.v, f.key)
			d.stackNameN = f.v
		case "template_path", "template_url", "template_body":
			l.stackTemplate(d, f)
		case "parameters", "variables":
			l.stackParameters(d, f)
		case "requires":
			s.Requires, d.requires = l.strs(f.v, f.key)
		case "required_by":
			s.RequiredBy, d.requiredBy = l.strs(f.v, f.key)
		case "tags":
			d.ownTags, ownTagLookups = l.tags(f.v, f.key)
		case "termination_protection":
			s.TerminationProtection, _ = l.boolean(f.v, f.key)
		case "protected":
			s.Protected, _ = l.boolean(f.v, f.key)
		case "enabled":
			s.Enabled, _ = l.boolean(f.v, f.key)
		case "locked":
			s.Locked, _ = l.boolean(f.v, f.key)
		case "region", "role_arn", "external_id", "service_role":
			l.targetField(&s.Target, f)
			if d.targetNodes == nil {
				d.targetNodes = map[string]*yaml.Node{}
			}
			d.targetNodes[f.name] = f.v
		case "capabilities":
			l.stackCapabilities(d, f)
		default:
			l.option(d, f) // a stack option (stackOptions)
		}
	}
	if s.Parameters == nil {
		s.Parameters = map[string]string{}
	}
	if d.nameNode == nil {
		l.errorf(n, key+".name", "missing: every stack needs a name")
	}
	if d.templateNode == nil {
		l.errorf(n, key, "no template: set template_path, template_url or template_body")
	}
	l.checkTarget(d)
	s.Tags = c.Tags // shared, read-only, unless the stack has tags of its own
	if len(d.ownTags) > 0 {
		s.Tags = maps.Clone(c.Tags)
		maps.Copy(s.Tags, d.ownTags)
	}
	for _, lr := range l.topTags {
		if _, own := d.ownTags[lr.l.Tag]; !own {
			d.addLookup(lr)
		}
	}
	for _, lr := range ownTagLookups {
		d.addLookup(lr)
	}
	d.sortLookups()
	return d
}

// stackTemplate reads the stack's template key f: template_path, template_url or
// template_body (one of them).
func (l *loader) stackTemplate(d *stackDef, f field) {
	s := d.s
	if d.templateNode != nil {
		l.errorf(f.k, f.key, "a stack takes one of template_path, template_url and template_body")
		return
	}
	d.templateNode, d.templateKey = f.v, f.name
	switch f.name {
	case "template_path":
		s.TemplatePath, d.templateOK = l.str(f.v, f.key)
	case "template_url":
		if u, ok := l.str(f.v, f.key); ok {
			d.templateOK = true
			if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "s3://") {
				l.errorf(f.v, f.key, "%q is not an https:// or s3:// URL", u)
			} else if err := layout.CheckTemplateURL(u, l.bucket); err != nil {
				l.errorf(f.v, f.key, "%v", err)
			}
			s.TemplateURL = u
		}
	case "template_body":
		if f.v.Kind == yaml.MappingNode {
			l.needComments = l.needComments || l.commentsDropped
			body, err := yaml.Marshal(f.v)
			if err != nil {
				l.errorf(f.v, f.key, "cannot re-encode the inline template: %v", err)
			}
			s.TemplateBody, d.templateOK, d.inline = body, err == nil, f.v
		} else if b, ok := l.str(f.v, f.key); ok {
			s.TemplateBody, d.templateOK = []byte(b), true
		}
	}
}

// stackParameters reads the stack's parameters (or variables) f: their values, and the
// lookups and values known at load of each.
func (l *loader) stackParameters(d *stackDef, f field) {
	s := d.s
	if d.paramsNode != nil {
		l.errorf(f.k, f.key, "parameters and variables are the same key: use one")
		return
	}
	d.paramsNode = f.k
	params := l.fields(f.v, f.key, nil)
	s.Parameters = make(map[string]string, len(params))
	d.params = make([]givenParam, 0, len(params))
	for _, p := range params {
		at := p.v
		if p.merged {
			at = p.k
		}
		d.params = append(d.params, givenParam{name: p.name, k: p.k, at: at}) // given, even if its value is wrong
		v, ok := l.str(p.v, p.key)
		if !ok {
			continue
		}
		s.Parameters[p.name] = v
		found, static, known, ok := l.lookups(v, p.v, p.key)
		if !ok {
			continue
		}
		if s.Lookups == nil && len(found) > 0 {
			size := len(found) + len(params) - len(d.params) + len(l.topTags)
			s.Lookups, d.lookupAt = make([]Lookup, 0, size), make([]lookupAt, 0, size)
		}
		for _, lk := range found {
			lk.Param = p.name
			d.addLookup(lookupRef{l: lk, node: p.v, key: p.key})
		}
		if known {
			gp := &d.params[len(d.params)-1]
			gp.static, gp.known = static, true
		}
	}
}

// stackCapabilities reads the capabilities the stack names (f), each one cairn knows.
func (l *loader) stackCapabilities(d *stackDef, f field) {
	d.capsNode = f.k
	caps, nodes := l.strs(f.v, f.key)
	for i, cp := range caps {
		if !slices.Contains(capabilities, cp) {
			l.errorf(nodes[i], fmt.Sprintf("%s[%d]", f.key, i), "unknown capability %q: use %s", cp, strings.Join(capabilities, ", "))
		}
	}
	d.s.Capabilities = caps
	if d.s.Capabilities == nil {
		d.s.Capabilities = []string{}
	}
}
