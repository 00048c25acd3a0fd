package template

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/resourcespec"
)

// references checks every Ref, Fn::GetAtt, Fn::Sub variable, DependsOn and Condition,
// that what they name exists under the conditions they are used in, and records the
// dependencies between resources.
func (c *checker) references() {
	for _, name := range c.order {
		r := c.resources[name]
		base := "Resources." + name
		scope := map[string]bool{}
		if r.condition != "" {
			scope[r.condition] = true
		}
		for i := 0; i+1 < len(r.node.Content); i += 2 {
			k, v := r.node.Content[i], resolve(r.node.Content[i+1])
			switch k.Value {
			case "DependsOn":
				var items []*yaml.Node
				switch v.Kind {
				case yaml.ScalarNode:
					items = []*yaml.Node{v}
				case yaml.SequenceNode:
					items = v.Content
				default:
					c.errorf(k, base+".DependsOn", "must be a resource name or a list of them, not %s", kindOf(v))
				}
				for j, it := range items {
					it = resolve(it)
					if it.Kind != yaml.ScalarNode {
						c.errorf(it, fmt.Sprintf("%s.DependsOn[%d]", base, j), "must be a resource name, not %s", kindOf(it))
						continue
					}
					if _, ok := c.resources[it.Value]; !ok {
						c.errorf(it, base+".DependsOn", "DependsOn names no resource %q%s", it.Value, Suggest(it.Value, c.order))
						continue
					}
					if it.Value == name {
						c.errorf(it, base+".DependsOn", "resource %s depends on itself", name)
						continue
					}
					if why := c.unavailable(scope, it.Value); why != "" {
						c.errorf(it, base+".DependsOn", "DependsOn names %s, which %s: CloudFormation refuses the template when %s exists and %s does not; give %s the same Condition or drop the dependency", it.Value, why, name, it.Value, name)
					}
					c.deps[name] = append(c.deps[name], it.Value)
				}
			case "Condition":
				c.condition(v, base+".Condition")
			case "Type":
			default:
				c.walk(v, base+"."+k.Value, name, nil, scope)
			}
		}
	}
	root := c.t.Node
	if outs := value(root, "Outputs"); outs != nil && outs.Kind == yaml.MappingNode {
		for _, e := range c.expand(outs, "") {
			o := resolve(e.value)
			base := "Outputs." + e.key.Value
			scope := map[string]bool{}
			if cn := value(o, "Condition"); cn != nil && cn.Kind == yaml.ScalarNode {
				scope[cn.Value] = true
			}
			for i := 0; i+1 < len(o.Content); i += 2 {
				k, v := o.Content[i], o.Content[i+1]
				if k.Value == "Condition" {
					c.condition(resolve(v), base+".Condition")
					continue
				}
				c.walk(v, base+"."+k.Value, "", nil, scope)
			}
		}
	}
	if conds := value(root, "Conditions"); conds != nil && conds.Kind == yaml.MappingNode {
		for _, e := range c.expand(conds, "") {
			c.walk(e.value, "Conditions."+e.key.Value, "", nil, nil)
		}
	}
}

func (c *checker) condition(v *yaml.Node, path string) {
	if v.Kind != yaml.ScalarNode {
		c.errorf(v, path, "must be a condition name, not %s", kindOf(v))
		return
	}
	if !c.conditions[v.Value] {
		names := make([]string, 0, len(c.conditions))
		for n := range c.conditions {
			names = append(names, n)
		}
		slices.Sort(names)
		c.errorf(v, path, "names no condition %q%s; the template declares %s", v.Value, Suggest(v.Value, names), listOr(names, "no conditions"))
	}
}

func listOr(names []string, none string) string {
	if len(names) == 0 {
		return none
	}
	return strings.Join(names, ", ")
}

// walk checks the intrinsics under n; from is the resource n belongs to ("" for outputs
// and conditions), locals the names an enclosing Fn::Sub defines, scope the conditions
// known to hold (true) or not (false) where n is (nil where not judged: in Conditions).
func (c *checker) walk(n *yaml.Node, path, from string, locals map[string]bool, scope map[string]bool) {
	n = resolve(n)
	switch n.Kind {
	case yaml.SequenceNode:
		for i, it := range n.Content {
			c.walk(it, fmt.Sprintf("%s[%d]", path, i), from, locals, scope)
		}
		return
	case yaml.MappingNode:
	default:
		return
	}
	fn := intrinsic(n)
	if fn == "" {
		for i := 0; i+1 < len(n.Content); i += 2 {
			c.walk(n.Content[i+1], path+"."+n.Content[i].Value, from, locals, scope)
		}
		return
	}
	k, arg := n.Content[0], resolve(n.Content[1])
	switch fn {
	case "Ref":
		if arg.Kind == yaml.ScalarNode {
			c.ref(arg.Value, arg, path, from, locals, scope)
		} else {
			c.walk(arg, path, from, locals, scope)
		}
	case "Fn::GetAtt":
		if arg.Kind == yaml.SequenceNode && len(arg.Content) == 2 {
			res, attr := resolve(arg.Content[0]), resolve(arg.Content[1])
			if res.Kind == yaml.ScalarNode {
				a := ""
				if attr.Kind == yaml.ScalarNode {
					a = attr.Value
				} else {
					c.walk(attr, path, from, locals, scope)
				}
				c.getAtt(res.Value, a, res, attr, path, from, scope)
			}
			return
		}
		c.errorf(k, path, "Fn::GetAtt takes [Resource, Attribute] or Resource.Attribute")
	case "Fn::Sub":
		c.sub(arg, path, from, locals, scope)
	case "Fn::If":
		if arg.Kind == yaml.SequenceNode && len(arg.Content) > 0 {
			cond := resolve(arg.Content[0])
			c.condition(cond, path)
			for i, it := range arg.Content[1:] {
				branch := scope
				if scope != nil && cond.Kind == yaml.ScalarNode && c.conditions[cond.Value] {
					branch = scopeWith(scope, cond.Value, i == 0)
					if branch == nil {
						continue // unreachable: the enclosing conditions decide the other way
					}
				}
				c.walk(it, fmt.Sprintf("%s[%d]", path, i+1), from, locals, branch)
			}
		}
	case "Fn::Join":
		if arg.Kind == yaml.SequenceNode && len(arg.Content) == 2 {
			if items := resolve(arg.Content[1]); items.Kind == yaml.SequenceNode {
				for _, it := range items.Content {
					c.textAttribute(it, "", "", path, "an item of Fn::Join")
				}
			}
		}
		c.walk(arg, path, from, locals, scope)
	case "Fn::FindInMap":
		if arg.Kind == yaml.SequenceNode && len(arg.Content) > 0 {
			if m := resolve(arg.Content[0]); m.Kind == yaml.ScalarNode && !c.mappings[m.Value] {
				c.errorf(m, path, "Fn::FindInMap names no mapping %q", m.Value)
			}
		}
		c.walk(arg, path, from, locals, scope)
	case "Fn::GetStackOutput":
		c.stackOutputArgs(k, arg, path)
		c.walk(arg, path, from, locals, scope)
	default:
		switch {
		case strings.HasPrefix(fn, "Fn::ForEach::"):
		case strings.HasPrefix(fn, "Rain::") || strings.HasPrefix(fn, "Fn::Rain::"):
			c.errorf(k, path, "%s is a directive of rain's packager, not a CloudFormation function: CloudFormation refuses it; run rain pkg on the template first, or write the value out", fn)
		case slices.Contains(extensionFunctions, fn) && !c.t.HasTransform(languageExtensions):
			c.errorf(k, path, "%s needs Transform: %s", fn, languageExtensions)
		case !slices.Contains(functions, fn) && !slices.Contains(extensionFunctions, fn):
			c.errorf(k, path, "unknown intrinsic function %s%s", fn, Suggest(fn, functions))
		}
		c.walk(arg, path, from, locals, scope)
	}
}

// sub checks a Fn::Sub (its argument arg): each ${Name} and ${Res.Attr} of its string
// names something that exists (a variable of its own, a parameter, a resource), and its
// variables' values are text.
func (c *checker) sub(arg *yaml.Node, path, from string, locals map[string]bool, scope map[string]bool) {
	var s *yaml.Node
	vars := map[string]bool{}
	for name := range locals {
		vars[name] = true
	}
	switch arg.Kind {
	case yaml.ScalarNode:
		s = arg
	case yaml.SequenceNode:
		if len(arg.Content) == 2 {
			s = resolve(arg.Content[0])
			if m := resolve(arg.Content[1]); m.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(m.Content); i += 2 {
					vars[m.Content[i].Value] = true
					c.textAttribute(m.Content[i+1], "", "", path, "a value of Fn::Sub's variables")
					c.walk(m.Content[i+1], path, from, locals, scope)
				}
			}
		}
	}
	if s == nil || s.Kind != yaml.ScalarNode {
		c.walk(arg, path, from, locals, scope)
		return
	}
	words, err := subVariables(s.Value)
	if err != nil {
		c.errorf(s, path, "Fn::Sub string does not parse: %v", err)
		return
	}
	for _, w := range words {
		switch {
		case vars[w.name]:
		case w.attr != "":
			if !vars[w.res] {
				c.getAtt(w.res, w.attr, s, s, path, from, scope)
				c.textAttribute(s, w.res, w.attr, path, "Fn::Sub's ${"+w.name+"}")
			}
		default:
			c.ref(w.name, s, path, from, nil, scope)
		}
	}
}

// functions are CloudFormation's intrinsic functions (those of conditions and rules
// included); extensionFunctions those of the AWS::LanguageExtensions transform.
var (
	functions = []string{"Fn::Base64", "Fn::Cidr", "Fn::FindInMap", "Fn::GetAtt", "Fn::GetAZs", "Fn::If",
		"Fn::ImportValue", "Fn::Join", "Fn::Select", "Fn::Split", "Fn::Sub", "Fn::Transform", "Fn::GetStackOutput",
		"Fn::And", "Fn::Equals", "Fn::Not", "Fn::Or", "Fn::Contains", "Fn::EachMemberEquals", "Fn::EachMemberIn",
		"Fn::RefAll", "Fn::ValueOf", "Fn::ValueOfAll"}
	extensionFunctions = []string{"Fn::Length", "Fn::ToJsonString"}
)

func (c *checker) ref(name string, at *yaml.Node, path, from string, locals, scope map[string]bool) {
	if locals[name] || slices.Contains(pseudoParameters, name) {
		return
	}
	if _, ok := c.t.Parameters[name]; ok {
		return
	}
	if _, ok := c.resources[name]; ok {
		if from != "" {
			c.deps[from] = append(c.deps[from], name)
		}
		if why := c.unavailable(scope, name); scope != nil && why != "" {
			c.add(at, path, true, "Ref to %s, which %s: CloudFormation refuses the template when %s does not exist; use Fn::If [%s, ...] here", name, why, name, c.resources[name].condition)
		}
		return
	}
	c.errorf(at, path, "Ref names nothing: %q is not a parameter, resource or pseudo parameter of the template%s", name, Suggest(name, c.refNames))
}

func (c *checker) getAtt(res, attr string, resNode, attrNode *yaml.Node, path, from string, scope map[string]bool) {
	r, ok := c.resources[res]
	if !ok {
		c.errorf(resNode, path, "Fn::GetAtt names no resource %q%s", res, Suggest(res, c.order))
		return
	}
	if from != "" {
		c.deps[from] = append(c.deps[from], res)
	}
	if why := c.unavailable(scope, res); scope != nil && why != "" {
		c.add(resNode, path, true, "Fn::GetAtt of %s, which %s: CloudFormation refuses the template when %s does not exist; use Fn::If [%s, ...] here", res, why, res, r.condition)
	}
	if attr == "" {
		return
	}
	st := resourcespec.Lookup(r.typ)
	if st == nil || r.typ == "AWS::CloudFormation::Stack" && strings.HasPrefix(attr, "Outputs.") {
		return // custom, registry or unknown (reported) types
	}
	if !st.HasAttribute(attr) {
		c.errorf(attrNode, path, "%s %s has no attribute %q for Fn::GetAtt%s; it has %s", r.typ, res, attr, Suggest(attr, st.Attributes), listOr(st.Attributes, "none"))
	}
}

// cycles reports circular dependencies between resources, at each resource of a cycle
// (as cfn-lint does), the cycle written from it.
func (c *checker) cycles() {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	reported := map[string]bool{}
	var visit func(n string)
	visit = func(n string) {
		color[n] = grey
		stack = append(stack, n)
		for _, d := range c.deps[n] {
			switch color[d] {
			case white:
				visit(d)
			case grey:
				i := slices.Index(stack, d)
				members := slices.Clone(stack[i:])
				for j, m := range members {
					if reported[m] {
						continue
					}
					reported[m] = true
					cycle := append(slices.Clone(members[j:]), members[:j+1]...)
					c.errorf(c.resources[m].nameNode, "Resources."+m, "circular dependency between resources: %s: CloudFormation cannot order them; remove one of the references", strings.Join(cycle, " -> "))
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
	}
	for _, n := range c.order {
		if color[n] == white {
			visit(n)
		}
	}
}

// Suggest returns ` (did you mean "x"?)` for the candidate closest to name (a different
// case of name, or within about a third of its length in edits), or "" when none is close.
func Suggest(name string, candidates []string) string {
	best, bestD := "", len(name)/3+2
	lower := strings.ToLower(name)
	for _, c := range candidates {
		if strings.ToLower(c) == lower && c != name {
			return fmt.Sprintf(" (did you mean %q?)", c)
		}
		if d := distance(name, c, bestD); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || best == name {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the Levenshtein distance of a and b, or max when it is at least max.
func distance(a, b string, max int) int {
	if d := len(a) - len(b); d >= max || -d >= max {
		return max
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], max)
}

// textAttribute reports a Fn::GetAtt (n, or res.attr when res is set) of an attribute
// whose value is a number or a boolean where CloudFormation takes text only (an output's
// Value, a Fn::Sub, a Fn::Join): it refuses the template ("Every Value member must be a
// string", "variable ... in Fn::Sub expression does not resolve to a string"; cfn-lint's
// E1010, E6101).
func (c *checker) textAttribute(n *yaml.Node, res, attr, path, where string) {
	at := n
	if res == "" {
		if n = resolve(n); n == nil || intrinsic(n) != "Fn::GetAtt" {
			return
		}
		at = n.Content[0]
		if arg := resolve(n.Content[1]); arg.Kind == yaml.ScalarNode {
			res, attr, _ = strings.Cut(arg.Value, ".")
		} else {
			res, attr = getAttArgs(arg)
		}
	}
	if k := c.attributeKind(res, attr); k != "" {
		c.errorf(at, path, "Fn::GetAtt %s.%s gives %s, but %s must be text: CloudFormation refuses the template (it turns no number or boolean into text here); use a text attribute or a literal", res, attr, k, where)
	}
}

// attributeKind names the kind of a resource's attribute when it is a number or a
// boolean ("an integer"), else "".
func (c *checker) attributeKind(res, attr string) string {
	r := c.resources[res]
	if r == nil || attr == "" {
		return ""
	}
	st := resourcespec.Lookup(r.typ)
	if st == nil {
		return ""
	}
	switch st.ScalarAttribute(attr) {
	case resourcespec.Integer:
		return "an integer"
	case resourcespec.Number:
		return "a number"
	case resourcespec.Boolean:
		return "a boolean"
	}
	return ""
}
