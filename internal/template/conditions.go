package template

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Conditions decide which resources exist. A resource that exists may not depend on (or
// reference) one that does not: CloudFormation refuses the template for those parameter
// values ("Unresolved resource dependencies"). As cfn-lint decides it, the conditions a
// reference is made under (the referring resource's Condition, the Fn::If branches around
// it) must imply the Condition of the resource it names, for every value of the
// parameters. A condition is a formula over Fn::Equals comparisons; two comparisons of
// one parameter with different values cannot both hold, one with a value outside the
// parameter's AllowedValues never holds, and when the comparisons cover every allowed
// value, one of them holds. Implication is decided by trying every truth assignment of
// the comparisons involved, up to maxAtoms of them (beyond, a reference is not judged).

const maxAtoms = 14

// condExpr is a condition's formula.
type condExpr struct {
	op   byte // '&' and, '|' or, '!' not, '=' a comparison (atom), 'c' another condition, 't' true, 'f' false
	args []*condExpr
	atom int
	name string
}

// equalsAtom is one Fn::Equals comparison: two sides, each a literal ("s:" value), a Ref
// to a parameter ("r:" name) or another expression (its text).
type equalsAtom struct{ left, right string }

// logic holds the template's conditions as formulas.
type logic struct {
	exprs map[string]*condExpr
	atoms []equalsAtom
	index map[equalsAtom]int
	// never: atoms that cannot hold; exclusive: pairs that cannot both hold; cover: groups
	// of which one must hold.
	never     map[int]bool
	exclusive [][2]int
	cover     [][]int
}

// conditionLogic parses the Conditions section, reporting malformed conditions and
// references to conditions that do not exist.
func (c *checker) conditionLogic() {
	l := &logic{exprs: map[string]*condExpr{}, index: map[equalsAtom]int{}, never: map[int]bool{}}
	c.logic = l
	conds := value(c.t.Node, "Conditions")
	if conds == nil || conds.Kind != yaml.MappingNode {
		return
	}
	for _, e := range c.expand(conds, "") {
		path := "Conditions." + e.key.Value
		c.name(e.key, path, "condition")
		l.exprs[e.key.Value] = c.condFormula(resolve(e.value), path, 0)
	}
	c.conditionCycles(l)
	l.constraints(c.t.Parameters)
}

// condFormula parses one condition function.
func (c *checker) condFormula(n *yaml.Node, path string, depth int) *condExpr {
	unknown := &condExpr{op: 'u'}
	if depth > 50 {
		return unknown
	}
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!bool" || n.Value == "true" || n.Value == "false") {
		if canonical(n) == "true" {
			return &condExpr{op: 't'}
		}
		return &condExpr{op: 'f'}
	}
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		c.errorf(n, path, "a condition must be Fn::Equals, Fn::And, Fn::Or, Fn::Not or Condition, not %s", kindOf(n))
		return unknown
	}
	fn, arg := n.Content[0].Value, resolve(n.Content[1])
	switch fn {
	case "Condition":
		if arg.Kind == yaml.MappingNode && len(arg.Content) == 2 && arg.Content[0].Value == "Condition" {
			arg = resolve(arg.Content[1]) // {Condition: {Condition: X}}, as the Serverless transform writes it
		}
		if arg.Kind != yaml.ScalarNode {
			c.errorf(arg, path, "Condition must name a condition, not %s", kindOf(arg))
			return unknown
		}
		c.condition(arg, path)
		return &condExpr{op: 'c', name: arg.Value}
	case "Fn::Equals":
		if arg.Kind != yaml.SequenceNode || len(arg.Content) != 2 {
			c.errorf(n.Content[0], path, "Fn::Equals takes a list of two values")
			return unknown
		}
		for i, side := range arg.Content {
			if containsKey(side, "Fn::ImportValue", 0) {
				c.errorf(side, fmt.Sprintf("%s.Fn::Equals[%d]", path, i), "Fn::ImportValue cannot be used in a condition: CloudFormation evaluates conditions before it reads other stacks' exports and refuses the template; pass the value as a parameter")
			}
		}
		return c.logic.equals(resolve(arg.Content[0]), resolve(arg.Content[1]))
	case "Fn::And", "Fn::Or":
		if arg.Kind != yaml.SequenceNode || len(arg.Content) < 2 || len(arg.Content) > 10 {
			c.errorf(n.Content[0], path, "%s takes a list of 2 to 10 conditions", fn)
			return unknown
		}
		e := &condExpr{op: '&'}
		if fn == "Fn::Or" {
			e.op = '|'
		}
		for i, a := range arg.Content {
			e.args = append(e.args, c.condFormula(resolve(a), fmt.Sprintf("%s.%s[%d]", path, fn, i), depth+1))
		}
		return e
	case "Fn::Not":
		if arg.Kind != yaml.SequenceNode || len(arg.Content) != 1 {
			c.errorf(n.Content[0], path, "Fn::Not takes a list of one condition")
			return unknown
		}
		return &condExpr{op: '!', args: []*condExpr{c.condFormula(resolve(arg.Content[0]), path+".Fn::Not[0]", depth+1)}}
	}
	c.errorf(n.Content[0], path, "%s cannot make a condition: use Fn::Equals, Fn::And, Fn::Or, Fn::Not or Condition", fn)
	return unknown
}

// side is one side of a comparison, as text that compares equal when CloudFormation's
// values would.
func side(n *yaml.Node) (text string, literal bool) {
	if n.Kind == yaml.ScalarNode {
		return "s:" + canonical(n), true
	}
	if intrinsic(n) == "Ref" {
		if a := resolve(n.Content[1]); a.Kind == yaml.ScalarNode {
			return "r:" + a.Value, false
		}
	}
	b, _ := yaml.Marshal(n)
	return "x:" + string(b), false
}

func (l *logic) equals(a, b *yaml.Node) *condExpr {
	left, litL := side(a)
	right, litR := side(b)
	if litL && litR || left == right {
		if left == right {
			return &condExpr{op: 't'}
		}
		return &condExpr{op: 'f'}
	}
	if left > right {
		left, right = right, left
	}
	at := equalsAtom{left, right}
	i, ok := l.index[at]
	if !ok {
		i = len(l.atoms)
		l.atoms = append(l.atoms, at)
		l.index[at] = i
	}
	return &condExpr{op: '=', atom: i}
}

// paramValue returns the parameter and value an atom compares, if it is Ref P = literal.
func (a equalsAtom) paramValue() (param, value string, ok bool) {
	if strings.HasPrefix(a.left, "r:") && strings.HasPrefix(a.right, "s:") {
		return a.left[2:], a.right[2:], true
	}
	return "", "", false
}

// constraints derives what the parameters' values allow of the comparisons.
func (l *logic) constraints(params map[string]Parameter) {
	byParam := map[string][]int{}
	for i, a := range l.atoms {
		p, v, ok := a.paramValue()
		if !ok {
			continue
		}
		for _, j := range byParam[p] {
			if _, w, _ := l.atoms[j].paramValue(); w != v {
				l.exclusive = append(l.exclusive, [2]int{j, i})
			}
		}
		byParam[p] = append(byParam[p], i)
		if decl, ok := params[p]; ok && len(decl.AllowedValues) > 0 && !listParameter(decl.Type) && !slices.Contains(decl.AllowedValues, v) {
			l.never[i] = true
		}
	}
	for p, atoms := range byParam {
		decl, ok := params[p]
		if !ok || len(decl.AllowedValues) == 0 || listParameter(decl.Type) {
			continue
		}
		covered := 0
		for _, allowed := range decl.AllowedValues {
			if slices.ContainsFunc(atoms, func(i int) bool { _, v, _ := l.atoms[i].paramValue(); return v == allowed }) {
				covered++
			}
		}
		if covered == len(decl.AllowedValues) {
			l.cover = append(l.cover, atoms)
		}
	}
}

// conditionCycles reports conditions that name themselves through Condition.
func (c *checker) conditionCycles(l *logic) {
	for _, name := range slices.Sorted(maps.Keys(l.exprs)) {
		seen := map[string]bool{}
		var visit func(e *condExpr) bool
		visit = func(e *condExpr) bool {
			if e == nil {
				return false
			}
			if e.op == 'c' {
				if e.name == name {
					return true
				}
				if seen[e.name] {
					return false
				}
				seen[e.name] = true
				return visit(l.exprs[e.name])
			}
			return slices.ContainsFunc(e.args, visit)
		}
		if visit(l.exprs[name]) {
			c.errorf(key(value(c.t.Node, "Conditions"), name), "Conditions."+name, "condition %s depends on itself through Condition", name)
			l.exprs[name] = &condExpr{op: 'u'}
		}
	}
}

// eval evaluates a formula for an assignment of the atoms; ok is false when it cannot
// (an unknown part). memo holds the named conditions already evaluated for this
// assignment, so conditions naming others many times over cost one evaluation each.
func (l *logic) eval(e *condExpr, truth func(int) bool, memo map[string]int8) (v, ok bool) {
	if e == nil {
		return false, false
	}
	switch e.op {
	case 't':
		return true, true
	case 'f':
		return false, true
	case '=':
		return truth(e.atom), true
	case 'c':
		switch memo[e.name] {
		case 1:
			return true, true
		case -1:
			return false, true
		case -2:
			return false, false // unknown, or a loop (reported)
		}
		memo[e.name] = -2
		v, ok := l.eval(l.exprs[e.name], truth, memo)
		if ok {
			memo[e.name] = map[bool]int8{true: 1, false: -1}[v]
		}
		return v, ok
	case '!':
		v, ok := l.eval(e.args[0], truth, memo)
		return !v, ok
	case '&', '|':
		for _, a := range e.args {
			v, ok := l.eval(a, truth, memo)
			if !ok {
				return false, false
			}
			if e.op == '&' && !v {
				return false, true
			}
			if e.op == '|' && v {
				return true, true
			}
		}
		return e.op == '&', true
	}
	return false, false
}

// atomsOf collects the atoms a formula depends on; seen holds the named conditions
// visited.
func (l *logic) atomsOf(e *condExpr, into map[int]bool, seen map[string]bool) {
	if e == nil {
		return
	}
	switch e.op {
	case '=':
		into[e.atom] = true
	case 'c':
		if !seen[e.name] {
			seen[e.name] = true
			l.atomsOf(l.exprs[e.name], into, seen)
		}
	}
	for _, a := range e.args {
		l.atomsOf(a, into, seen)
	}
}

// implies reports whether, whenever the conditions of scope have the truth values it
// gives, condition target holds. It says true when it cannot decide.
func (l *logic) implies(scope map[string]bool, target string) bool {
	if _, ok := l.exprs[target]; !ok {
		return true // reported as naming no condition
	}
	if v, ok := scope[target]; ok {
		return v
	}
	used, seen := map[int]bool{}, map[string]bool{}
	l.atomsOf(l.exprs[target], used, seen)
	for name := range scope {
		if _, ok := l.exprs[name]; !ok {
			return true
		}
		l.atomsOf(l.exprs[name], used, seen)
	}
	atoms := slices.Sorted(maps.Keys(used))
	if len(atoms) > maxAtoms {
		return true
	}
	pos := map[int]int{}
	for i, a := range atoms {
		pos[a] = i
	}
	for m := 0; m < 1<<len(atoms); m++ {
		truth := func(a int) bool { return m&(1<<pos[a]) != 0 }
		if !l.possible(atoms, used, truth) {
			continue
		}
		memo := map[string]int8{}
		holds := true
		for name, want := range scope {
			v, ok := l.eval(&condExpr{op: 'c', name: name}, truth, memo)
			if !ok {
				return true
			}
			if v != want {
				holds = false
				break
			}
		}
		if !holds {
			continue
		}
		v, ok := l.eval(&condExpr{op: 'c', name: target}, truth, memo)
		if !ok {
			return true
		}
		if !v {
			return false
		}
	}
	return true
}

// possible reports whether an assignment of the atoms in use respects what the
// parameters allow.
func (l *logic) possible(atoms []int, used map[int]bool, truth func(int) bool) bool {
	for _, a := range atoms {
		if l.never[a] && truth(a) {
			return false
		}
	}
	for _, p := range l.exclusive {
		if used[p[0]] && used[p[1]] && truth(p[0]) && truth(p[1]) {
			return false
		}
	}
	for _, group := range l.cover {
		all := true
		any := false
		for _, a := range group {
			if !used[a] {
				all = false
				break
			}
			any = any || truth(a)
		}
		if all && !any {
			return false
		}
	}
	return true
}

// scopeWith returns scope with condition name set to v, or nil when scope already holds
// the opposite (the branch cannot be reached).
func scopeWith(scope map[string]bool, name string, v bool) map[string]bool {
	if old, ok := scope[name]; ok {
		if old != v {
			return nil
		}
		return scope
	}
	out := make(map[string]bool, len(scope)+1)
	for k, x := range scope {
		out[k] = x
	}
	out[name] = v
	return out
}

// unavailable says whether resource res may not exist under scope, as "when condition C
// is false" text, or "".
func (c *checker) unavailable(scope map[string]bool, res string) string {
	r, ok := c.resources[res]
	if !ok || r.condition == "" || c.logic == nil {
		return ""
	}
	if c.logic.implies(scope, r.condition) {
		return ""
	}
	return fmt.Sprintf("exists only when condition %s is true, and it may be false here", r.condition)
}
