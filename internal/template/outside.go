package template

import (
	"bytes"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// outsideReads are the texts by which a template reads, when CloudFormation makes its
// change set, a value other stacks may change: another stack's output, a
// dynamic reference or an SSM parameter type (an SSM parameter or a secret another stack
// may write), an inline macro.
var outsideReads = []struct{ text, what string }{
	{"GetStackOutput", "Fn::GetStackOutput"},
	{"{{resolve:", "a dynamic reference"},
	{"AWS::SSM::Parameter::Value", "an SSM parameter type"},
	{"Fn::Transform", "Fn::Transform"},
}

// Outside names what the tree's templates read, beyond their parameters and the exports
// they import (Imports), that the update of another stack can change while their change
// set waits: another stack's output (Fn::GetStackOutput), a dynamic reference, a
// parameter of an SSM parameter type (AWS::SSM::Parameter::Value<...>), or a macro of the
// account's own (a Transform not named AWS::..., an Fn::Transform), which is a Lambda
// function a stack deploys. "" when it reads none. The test is by text, so a
// description mentioning one counts too: it errs toward "reads". With the imports
// checked against the exports a run may change (plan.Early), this is what lets a run make
// a change set early (run.Stack.Early): made from the same parameters, it is the same
// whether made before or after the stacks it depends on are updated.
func (t *Tree) Outside() string {
	seen := map[*Tree]bool{}
	var walk func(*Tree) string
	walk = func(n *Tree) string {
		if seen[n] {
			return ""
		}
		seen[n] = true
		if w := n.Template.Outside(); w != "" {
			return w
		}
		for _, c := range n.Children {
			if w := walk(c); w != "" {
				return w
			}
		}
		return ""
	}
	return walk(t)
}

// Outside is Tree.Outside for one template.
func (t *Template) Outside() string {
	for _, r := range outsideReads {
		if bytes.Contains(t.Body, []byte(r.text)) {
			return r.what
		}
	}
	for _, m := range t.Transforms {
		if !strings.HasPrefix(m, "AWS::") {
			return "the macro " + m
		}
	}
	return ""
}

// Imports returns the export names the tree's templates import (Fn::ImportValue), sorted
// and each once, and whether each import names its export literally (false when one
// computes the name, with Fn::Sub or another intrinsic: it could be any export).
func (t *Tree) Imports() (names []string, literal bool) {
	literal = true
	seen := map[*Tree]bool{}
	var walk func(*Tree)
	walk = func(n *Tree) {
		if seen[n] {
			return
		}
		seen[n] = true
		each(n.Template.Node, func(k string, v *yaml.Node) {
			if k != "Fn::ImportValue" {
				return
			}
			if v.Kind != yaml.ScalarNode {
				literal = false
				return
			}
			names = append(names, v.Value)
		})
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(t)
	slices.Sort(names)
	return slices.Compact(names), literal
}

// ExportsKnown reports whether Exports(stackName) names every export of the template's
// outputs: false when one's name needs more than it substitutes (a parameter, a Join),
// so the template could export any name.
func (t *Template) ExportsKnown(stackName string) bool {
	n := 0
	each(value(t.Node, "Outputs"), func(k string, v *yaml.Node) {
		if k == "Export" && value(v, "Name") != nil {
			n++
		}
	})
	return n == len(t.Exports(stackName))
}

// each calls f with every key and value of every mapping under n, each node once (an
// alias's target is visited where it is defined).
func each(n *yaml.Node, f func(key string, v *yaml.Node)) {
	seen := map[*yaml.Node]bool{}
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		switch n.Kind {
		case yaml.AliasNode:
			walk(n.Alias)
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				f(n.Content[i].Value, resolve(n.Content[i+1]))
				walk(n.Content[i+1])
			}
		default:
			for _, c := range n.Content {
				walk(c)
			}
		}
	}
	walk(n)
}
