package template

import (
	"bytes"
	"strings"
)

// outsideReads are the texts by which a template reads, when CloudFormation makes its
// change set, a value other stacks may change: an export, another stack's output, a
// dynamic reference or an SSM parameter type (an SSM parameter or a secret another stack
// may write), an inline macro.
var outsideReads = []struct{ text, what string }{
	{"ImportValue", "Fn::ImportValue"},
	{"GetStackOutput", "Fn::GetStackOutput"},
	{"{{resolve:", "a dynamic reference"},
	{"AWS::SSM::Parameter::Value", "an SSM parameter type"},
	{"Fn::Transform", "Fn::Transform"},
}

// Outside names what the tree's templates read, beyond their parameters, that the update
// of another stack can change while their change set waits: an export (Fn::ImportValue),
// another stack's output (Fn::GetStackOutput), a dynamic reference, a parameter of an SSM
// parameter type (AWS::SSM::Parameter::Value<...>), or a macro of the
// account's own (a Transform not named AWS::..., an Fn::Transform), which is a Lambda
// function a stack deploys. "" when it reads none: a change set of the same parameters is
// then the same whether it is made before or after the stacks it depends on are updated,
// which is what lets a run make it early (run.Stack.Early). The test is by text, so a
// description mentioning Fn::ImportValue counts too: it errs toward "reads".
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
