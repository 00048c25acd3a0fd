package plan

import (
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/template"
)

// Early says whether a deploy run may make s's change set while the stacks it depends on
// are being updated (run.Stack.Early). The run checks its parameters again once they
// finished, so it is allowed where nothing else of the change set can change with them:
// the stack's templates are the bundle's (a template_url's is not read), read nothing
// beyond their parameters that another stack's update may change (template.Tree.Outside),
// import only exports no stack of the config makes (ex: cairn's own, another team's), and
// no tag reads an output (tags are resolved as the change set is made, and not compared
// again).
func Early(s *config.Stack, ex Exported) bool {
	for _, l := range s.Lookups {
		if l.Tag != "" && l.Kind == config.KindOutput {
			return false
		}
	}
	var key any = s.Tree // stacks of one template share its verdict: each is walked once
	tree := s.Tree
	if tree == nil && s.Template != nil {
		tree, key = &template.Tree{Template: s.Template}, s.Template
	}
	if tree == nil {
		return false
	}
	if v, ok := ex.memo[key]; ok {
		return v
	}
	v := treeEarly(tree, ex)
	if ex.memo != nil {
		ex.memo[key] = v
	}
	return v
}

// treeEarly is Early's verdict on a stack's templates.
func treeEarly(tree *template.Tree, ex Exported) bool {
	if tree.Outside() != "" {
		return false
	}
	imports, literal := tree.Imports()
	if len(imports) == 0 {
		return true
	}
	if !literal || ex.Unknown != "" {
		return false
	}
	for _, name := range imports {
		for _, p := range ex.Names {
			if template.ExportMatches(p, name) {
				return false
			}
		}
	}
	return true
}

// Exported is what the stacks of a config export: the names (Fn::Sub patterns in which
// only ${AWS::Region} is left), and the first stack whose exports cannot all be named
// (a template_url's, a name made from a parameter, a nested template's), "" when none.
type Exported struct {
	Names   []string
	Unknown string
	memo    map[any]bool // Early's verdict by tree (or template, for a stack without one)
}

// Exports gathers what cfg's stacks export.
func Exports(cfg *config.Config) Exported {
	ex := Exported{memo: map[any]bool{}}
	unknown := func(name string) {
		if ex.Unknown == "" {
			ex.Unknown = name
		}
	}
	for _, s := range cfg.Stacks {
		if s.Template == nil {
			unknown(s.Name)
			continue
		}
		if !s.Template.ExportsKnown(s.StackName) {
			unknown(s.Name)
		}
		for _, e := range s.Template.Exports(s.StackName) {
			ex.Names = append(ex.Names, e.Name)
		}
		if s.Tree != nil && nestedExports(s.Tree, map[*template.Tree]bool{}) {
			unknown(s.Name) // a nested stack's name is CloudFormation's to choose
		}
	}
	return ex
}

// nestedExports reports whether a template nested in t (at any depth) exports anything.
func nestedExports(t *template.Tree, seen map[*template.Tree]bool) bool {
	for _, c := range t.Children {
		if seen[c] {
			continue
		}
		seen[c] = true
		if !c.Template.ExportsKnown("") || len(c.Template.Exports("")) > 0 || nestedExports(c, seen) {
			return true
		}
	}
	return false
}
