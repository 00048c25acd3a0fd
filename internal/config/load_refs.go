package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/graph"
)

// dep is one dependency: entry idx of the requires, required_by or lookups of stack d.
// Its ends, node and key (for locating a cycle) are read from d when needed: a large
// config has many deps.
type dep struct {
	d    *stackDef
	list depList
	idx  int
}

type depList uint8

const (
	depRequires depList = iota
	depRequiredBy
	depLookup
)

func (p dep) from() string {
	if p.list == depRequiredBy {
		return p.d.s.RequiredBy[p.idx]
	}
	return p.d.s.Name
}

func (p dep) to() string {
	switch p.list {
	case depRequires:
		return p.d.s.Requires[p.idx]
	case depRequiredBy:
		return p.d.s.Name
	}
	return p.d.s.Lookups[p.idx].Stack
}

// node is the node that declares the dependency.
func (p dep) node() *yaml.Node {
	switch p.list {
	case depRequires:
		return p.d.requires[p.idx]
	case depRequiredBy:
		return p.d.requiredBy[p.idx]
	}
	return p.d.lookupAt[p.idx].node
}

func (p dep) fullKey() string {
	switch p.list {
	case depRequires:
		return fmt.Sprintf("%s.requires[%d]", p.d.key, p.idx)
	case depRequiredBy:
		return fmt.Sprintf("%s.required_by[%d]", p.d.key, p.idx)
	}
	return p.d.lookupAt[p.idx].key
}

// names checks stack names, config names and CloudFormation names alike, and indexes them.
func (l *loader) names(c *Config, defs []*stackDef, namespaceOK bool) {
	// By identity: stacks in cairn's own account and region (most) by stack name alone.
	byStackName := make(map[string]*stackDef, len(defs))
	var byIdentity map[stackIdentity]*stackDef
	// claim records d's identity, or returns the stack that has it already.
	claim := func(d *stackDef) *stackDef {
		id := identity(d.s)
		if id.account == "" && id.region == "" {
			if first, dup := byStackName[id.stackName]; dup {
				return first
			}
			byStackName[id.stackName] = d
			return nil
		}
		if first, dup := byIdentity[id]; dup {
			return first
		}
		if byIdentity == nil {
			byIdentity = map[stackIdentity]*stackDef{}
		}
		byIdentity[id] = d
		return nil
	}
	byName := make(map[string]*stackDef, len(defs))
	if len(c.byName) == 0 {
		c.byName = make(map[string]*Stack, len(defs))
	}
	for _, d := range defs {
		s := d.s
		if d.nameNode != nil {
			if s.Name == "" {
				if n := resolve(d.nameNode); n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
					l.errorf(d.nameNode, d.key+".name", "must not be empty")
				} // else str reported the wrong type
			} else if first, dup := byName[s.Name]; dup {
				l.errorf(d.nameNode, d.key+".name", "duplicate stack name %q: %s (line %d) has it already", s.Name, first.key, first.nameNode.Line)
			} else {
				byName[s.Name] = d
				c.byName[s.Name] = s
			}
		}
		if d.nameNode != nil && c.byName[s.Name] != s {
			continue // empty or duplicate name, reported above
		}
		derived := s.StackName == ""
		at, atKey := d.stackNameN, ".stack_name" // after d.key: joined only for an error
		if derived {
			at, atKey = d.nameNode, ".name"
			if s.Name == "" {
				continue
			}
			s.StackName = s.Name
			if c.Namespace != "" {
				s.StackName = c.Namespace + c.NamespaceDelimiter + s.Name
			}
		}
		if !validStackName(s.StackName) || len(s.StackName) > 128 {
			if derived && !namespaceOK {
				continue // the namespace error says it once
			}
			how := ""
			if derived {
				how = " (namespace, delimiter and name joined)"
			}
			l.errorf(at, d.key+atKey, "CloudFormation stack name %q%s is invalid: it must start with a letter, hold only letters, digits and hyphens, and have at most 128 characters", s.StackName, how)
		} else if first := claim(d); first != nil {
			l.errorf(at, d.key+atKey, "stack %s has the CloudFormation stack name %q of stack %s (line %d) in the same account and region (%s): set a distinct stack_name, or another region or role_arn", s.Name, s.StackName, first.s.Name, first.node.Line, where(s.Target))
		}
	}
	c.Stacks = slices.Grow(c.Stacks, len(defs))
	for _, d := range defs {
		c.Stacks = append(c.Stacks, d.s)
	}
}

// references checks requires, required_by, lookups, templates and parameters, and
// returns the dependencies between known stacks.
func (l *loader) references(c *Config, defs []*stackDef) []dep {
	// Parse every template first: an output lookup may name a stack defined later.
	for _, d := range defs {
		l.template(c, d)
	}
	n := 0
	for _, d := range defs {
		n += len(d.requires) + len(d.requiredBy) + len(d.lookupAt)
	}
	deps := make([]dep, 0, n)
	known := func(name string, n *yaml.Node, key, what string) bool {
		if c.byName[name] != nil {
			return true
		}
		hint := ""
		if l.suggestions < maxSuggestions {
			l.suggestions++
			if l.knownNames == nil {
				l.knownNames = slices.Sorted(maps.Keys(c.byName))
			}
			hint = suggestList(name, l.knownNames)
		}
		l.errorf(n, key, "%s unknown stack %q%s", what, name, hint)
		return false
	}
	for _, d := range defs {
		s := d.s
		// Dependencies of an unnamed or duplicate stack would be attributed to another.
		own := s.Name != "" && c.byName[s.Name] == s
		for i, r := range s.Requires {
			dp := dep{d: d, list: depRequires, idx: i}
			if c.byName[r] != nil {
				if own {
					deps = append(deps, dp)
				}
			} else {
				known(r, dp.node(), dp.fullKey(), "requires")
			}
		}
		for i, r := range s.RequiredBy {
			dp := dep{d: d, list: depRequiredBy, idx: i}
			if c.byName[r] != nil {
				if own {
					deps = append(deps, dp)
				}
			} else {
				known(r, dp.node(), dp.fullKey(), "required_by names")
			}
		}
		for i, at := range d.lookupAt {
			lk := &s.Lookups[i]
			if lk.Kind == KindRxref {
				if c.byName[lk.Stack] != nil {
					l.errorf(at.node, at.key, "${rxref %s::%s} names stack %s of this config: write ${output %s::%s}, which also deploys %s first", lk.Stack, lk.Output, lk.Stack, lk.Stack, lk.Output, lk.Stack)
					continue
				}
				lk.StackName = lk.Stack
				if c.Namespace != "" {
					lk.StackName = c.Namespace + c.NamespaceDelimiter + lk.Stack
				}
				continue
			}
			if lk.Kind != KindOutput {
				continue
			}
			target := c.byName[lk.Stack]
			if target == nil {
				known(lk.Stack, at.node, at.key, "${output "+lk.Stack+"::"+lk.Output+"} names")
				continue
			}
			lk.StackName = target.StackName
			if own {
				deps = append(deps, dep{d: d, list: depLookup, idx: i})
			}
			if t := target.Template; t != nil && !t.HasOutput(lk.Output) {
				l.errorf(at.node, at.key, "stack %s has no output %q: its template declares %s", target.Name, lk.Output, list(t.Outputs, "no outputs"))
			}
		}
	}
	return deps
}

// exports reports export names that two stacks of the bundle would both create:
// CloudFormation refuses the second.
func (l *loader) exports(defs []*stackDef) {
	type owner struct {
		d      *stackDef
		output string
	}
	seen := map[string]owner{}
	for _, d := range defs {
		if d.s.Template == nil || d.s.StackName == "" {
			continue
		}
		for _, e := range d.s.Template.Exports(d.s.StackName) {
			// Exports are per account and region.
			k := d.s.Target.Account() + "/" + d.s.Target.Region + "/" + e.Name
			if first, dup := seen[k]; dup && first.d != d {
				l.errorf(d.templateNode, d.templateKeyPath(), "stack %s exports %q (output %s), as stack %s (%s) does with output %s: CloudFormation refuses a second export of a name in a region; make the name unique, e.g. with ${AWS::StackName}", d.s.Name, e.Name, e.Output, first.d.s.Name, first.d.key, first.output)
				continue
			}
			seen[k] = owner{d, e.Output}
		}
	}
}

// cycles reports a dependency cycle among known stacks at the declaration of its first edge.
func (l *loader) cycles(c *Config, deps []dep) {
	g := graph.NewSized(len(c.Stacks))
	for _, s := range c.Stacks {
		if c.byName[s.Name] == s {
			g.AddNode(s.Name)
		}
	}
	for _, d := range deps {
		if err := g.AddEdge(d.from(), d.to()); err != nil {
			l.errorf(d.node(), d.fullKey(), "%v", err)
		}
	}
	var ce *graph.CycleError
	err := g.Validate()
	if errors.As(err, &ce) && len(ce.Cycle) > 1 {
		// Report the cycle where its first edge is first declared.
		for _, d := range deps {
			if d.from() == ce.Cycle[0] && d.to() == ce.Cycle[1] {
				l.errorf(d.node(), d.fullKey(), "%v: remove one of these dependencies", ce)
				break
			}
		}
	} else if err == nil {
		c.graph = g
	}
}
