package template

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/resourcespec"
)

// Property values are checked against the keywords of their resource provider schema as
// CloudFormation applies them: a single value is converted to the kind the property takes
// first (a string "5" is a number, "true" a boolean, 5 a string), and only a value known
// before deployment is checked. The results of intrinsic functions are checked for their
// kind alone (Fn::Join gives a string, Fn::GetAZs a list, Ref to a resource a string); a
// Ref to a parameter is checked through the parameter's Default and AllowedValues, as
// warnings, since the stack may give another value (config.Load checks the value a stack
// gives); dynamic references ({{resolve:...}}) are unknown until deployment.

// packaged are the properties packaging turns from a local path into what the property
// takes (an S3 location object, often): a string there is a path to package. The list is
// artifacts.go's (packageable, and the nested stacks' template properties).
var packaged = func() map[string]bool {
	m := map[string]bool{}
	for _, p := range packageable {
		if !p.Metadata {
			m[p.Type+"."+p.Property] = true
		}
	}
	for typ, prop := range nestedTypes {
		m[typ+"."+prop] = true
	}
	return m
}()

// valueCtx is where a value sits: the resource type, the path from its Properties (for
// messages and the packaged table), and the node problems about the value itself point at.
type valueCtx struct {
	typ   string
	where string // e.g. SSESpecification.SSEType ("" for the Properties themselves)
	// chosen: the value is a branch of an Fn::If, used only when its condition says so.
	chosen bool
}

func (v valueCtx) of() string {
	if v.where == "" {
		return v.typ
	}
	return v.where + " of " + v.typ
}

func (v valueCtx) sub(key string) valueCtx {
	if v.where == "" {
		return valueCtx{v.typ, key, v.chosen}
	}
	return valueCtx{v.typ, v.where + "." + key, v.chosen}
}

func (v valueCtx) item(i int) valueCtx {
	return valueCtx{v.typ, fmt.Sprintf("%s[%d]", v.where, i), v.chosen}
}

// schemaPath is the property's path without list indexes, as the packaged table names it.
func (v valueCtx) schemaPath() string {
	var b strings.Builder
	depth := 0
	for _, r := range v.where {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return v.typ + "." + b.String()
}

// value checks a property value against its shape; at is the key holding it (or the list
// item), where problems with the value as a whole are reported.
func (c *checker) value(n *yaml.Node, sh *resourcespec.Shape, path string, at *yaml.Node, vc valueCtx) {
	n = resolve(n)
	if at == nil {
		at = n
	}
	if fn := intrinsic(n); fn != "" {
		c.intrinsicValue(fn, n, sh, path, at, vc)
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		c.errorf(at, path, "has no value: CloudFormation refuses null values; remove the key or give it a value")
		return
	}
	switch {
	case sh.Kind == resourcespec.Any:
		if n.Kind == yaml.ScalarNode && sh.Constrained() && !strings.Contains(n.Value, "{{resolve:") {
			if msg := constraintProblem(n, sh); msg != "" {
				c.errorf(n, path, "%s", msg)
			}
		}
	case sh.Kind.Scalar():
		if n.Kind != yaml.ScalarNode {
			c.errorf(at, path, "must be a single value (a string, number or boolean), not %s", kindOf(n))
			return
		}
		if msg := scalarProblem(n, sh); msg != "" {
			c.errorf(n, path, "%s", msg)
		}
	case sh.Kind == resourcespec.List:
		if n.Kind != yaml.SequenceNode {
			if n.Kind == yaml.ScalarNode && packaged[vc.schemaPath()] {
				return
			}
			c.errorf(at, path, "must be a list, not %s", kindOf(n))
			return
		}
		for i, item := range n.Content {
			c.value(item, sh.Elem, fmt.Sprintf("%s[%d]", path, i), item, vc.item(i))
		}
		c.listConstraints(n, sh, path, at)
	case sh.Kind == resourcespec.Map || sh.Kind == resourcespec.Object:
		if n.Kind != yaml.MappingNode {
			if n.Kind == yaml.ScalarNode && packaged[vc.schemaPath()] {
				return
			}
			c.errorf(at, path, "must be a mapping, not %s", kindOf(n))
			return
		}
		c.object(n, sh, path, at, vc)
	}
}

// object checks a mapping's keys and values, and the combinations of keys its shape
// requires or excludes.
func (c *checker) object(n *yaml.Node, sh *resourcespec.Shape, path string, at *yaml.Node, vc valueCtx) {
	keys := presence(n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Value == "Fn::Transform" {
			continue // a macro's: it rewrites the mapping before CloudFormation reads it
		}
		p := sh.Properties[k.Value]
		if p == nil && sh.Kind == resourcespec.Map && len(sh.PatternProperties) == 0 {
			p = sh.Elem
		}
		if p == nil {
			for _, pp := range sh.PatternProperties {
				if ok, err := searchPattern(pp.Pattern, k.Value); ok || err != nil {
					p = pp.Shape
					break
				}
			}
		}
		if p == nil {
			if sh.Closed || sh.Kind == resourcespec.Map && len(sh.PatternProperties) > 0 {
				if sh.Kind == resourcespec.Map {
					c.errorf(k, path+"."+k.Value, "key %q of %s does not match the pattern %s its keys must match", k.Value, vc.of(), sh.PatternProperties[0].Pattern)
				} else {
					c.errorf(k, path+"."+k.Value, "unknown property %q of %s%s", k.Value, vc.of(), Suggest(k.Value, sh.PropertyNames()))
				}
			} else if sh.Kind == resourcespec.Map {
				c.value(n.Content[i+1], sh.Elem, path+"."+k.Value, k, vc.sub(k.Value))
			}
			continue
		}
		c.value(n.Content[i+1], p, path+"."+k.Value, k, vc.sub(k.Value))
	}
	if count := len(n.Content) / 2; sh.MaxProperties >= 0 && keys.least() > sh.MaxProperties {
		c.errorf(at, path, "%s has %d keys, more than the %d it takes", vc.of(), count, sh.MaxProperties)
	} else if sh.MinProperties >= 0 && keys.most() < sh.MinProperties {
		c.errorf(at, path, "%s has %d keys, fewer than the %d it needs", vc.of(), count, sh.MinProperties)
	}
	if sh.Kind != resourcespec.Object {
		return
	}
	var missing []string
	for _, r := range sh.Required {
		if !keys.maybe(r) {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		c.errorf(at, path, "%s requires %s %s", vc.of(), plural(len(missing), "property", "properties"), strings.Join(missing, ", "))
	}
	c.combinations(keys, sh, path, at, n, vc)
}

// intrinsicValue checks what an intrinsic function gives where a property of shape sh
// goes: its kind (a list, a mapping or a single value), and for a Ref to a parameter, the
// parameter's Default and AllowedValues.
func (c *checker) intrinsicValue(fn string, n *yaml.Node, sh *resourcespec.Shape, path string, at *yaml.Node, vc valueCtx) {
	arg := resolve(n.Content[1])
	switch fn {
	case "Fn::If":
		if arg.Kind == yaml.SequenceNode && len(arg.Content) == 3 {
			branch := vc
			branch.chosen = true
			c.value(arg.Content[1], sh, path, arg.Content[1], branch)
			c.value(arg.Content[2], sh, path, arg.Content[2], branch)
		}
		return
	case "Ref":
		if arg.Kind != yaml.ScalarNode {
			return
		}
		if p, ok := c.t.Parameters[arg.Value]; ok {
			c.parameterFlow(p, arg, sh, path, at, vc)
			return
		}
		if r, ok := c.resources[arg.Value]; ok {
			c.gives(single, "Ref to a resource", sh, path, at, vc)
			if want, ok := ec2Ids[sh.Format]; ok && want != r.typ && strings.HasPrefix(r.typ, "AWS::") && resourcespec.Lookup(r.typ) != nil && nestedTypes[r.typ] == "" {
				c.errorf(at, path, "Ref %s gives the identifier of that %s, but %s takes the id of an %s: EC2 refuses it; Ref an %s", arg.Value, r.typ, vc.of(), want, want)
			}
			return
		}
		switch arg.Value {
		case "AWS::NoValue", "AWS::NotificationARNs":
		default:
			if slices.Contains(pseudoParameters, arg.Value) {
				c.gives(single, "Ref "+arg.Value, sh, path, at, vc)
			}
		}
	case "Fn::GetAtt":
		res, attr := getAttArgs(arg)
		r, ok := c.resources[res]
		if !ok || attr == "" {
			return
		}
		st := resourcespec.Lookup(r.typ)
		if st == nil || !st.HasAttribute(attr) || nestedTypes[r.typ] != "" {
			return
		}
		if k := c.attributeKind(res, attr); k != "" && sh.Kind == resourcespec.String {
			c.errorf(at, path, "Fn::GetAtt %s.%s gives %s, but %s takes text: CloudFormation refuses it (it turns no number or boolean into text here); use a text attribute or a literal", res, attr, k, vc.of())
		}
		if st.ListAttribute(attr) {
			c.gives(list, "Fn::GetAtt "+res+"."+attr, sh, path, at, vc)
		} else if !slices.Contains(getAttObjects, r.typ+"."+attr) {
			c.gives(single, "Fn::GetAtt "+res+"."+attr, sh, path, at, vc)
		}
	case "Fn::Sub":
		c.gives(single, fn, sh, path, at, vc)
		c.pseudoSub(arg, sh, path, at)
	case "Fn::Join", "Fn::Base64", "Fn::ImportValue", "Fn::ToJsonString":
		c.gives(single, fn, sh, path, at, vc)
	case "Fn::GetAZs", "Fn::Split", "Fn::Cidr":
		c.gives(list, fn, sh, path, at, vc)
	case "Fn::Length":
		c.gives(single, fn, sh, path, at, vc)
	}
}

// ec2Ids are the formats of EC2 identifiers only a Ref of a resource of one type gives
// (vpc-..., subnet-..., sg-...), by that type (cfn-lint's E1041).
var ec2Ids = map[string]string{
	"AWS::EC2::VPC.Id":           "AWS::EC2::VPC",
	"AWS::EC2::Subnet.Id":        "AWS::EC2::Subnet",
	"AWS::EC2::SecurityGroup.Id": "AWS::EC2::SecurityGroup",
}

// getAttObjects are attributes whose values are JSON objects, not single values.
var getAttObjects = []string{"AWS::CloudFormation::CustomResource.Data"}

// result is the kind of value an intrinsic function gives.
type result uint8

const (
	single result = iota
	list
)

// gives reports an intrinsic function whose result is of the wrong kind for the shape.
func (c *checker) gives(g result, what string, sh *resourcespec.Shape, path string, at *yaml.Node, vc valueCtx) {
	switch {
	case sh.Kind == resourcespec.Any:
	case g == single && sh.Kind == resourcespec.List:
		c.errorf(at, path, "must be a list, but %s gives a single value", what)
	case g == single && (sh.Kind == resourcespec.Object || sh.Kind == resourcespec.Map) && !packaged[vc.schemaPath()]:
		c.errorf(at, path, "must be a mapping, but %s gives a single value", what)
	case g == list && sh.Kind.Scalar():
		c.errorf(at, path, "must be a single value, but %s gives a list: select an item with Fn::Select or join them with Fn::Join", what)
	case g == list && (sh.Kind == resourcespec.Object || sh.Kind == resourcespec.Map):
		c.errorf(at, path, "must be a mapping, but %s gives a list", what)
	}
}

func getAttArgs(arg *yaml.Node) (res, attr string) {
	if arg.Kind == yaml.SequenceNode && len(arg.Content) == 2 {
		r, a := resolve(arg.Content[0]), resolve(arg.Content[1])
		if r.Kind == yaml.ScalarNode && a.Kind == yaml.ScalarNode {
			return r.Value, a.Value
		}
		if r.Kind == yaml.ScalarNode {
			return r.Value, ""
		}
	}
	return "", ""
}

// listParameter reports whether a parameter's value is a list (List<...>,
// CommaDelimitedList, and their SSM forms).
func listParameter(typ string) bool {
	typ = strings.TrimSuffix(strings.TrimPrefix(typ, "AWS::SSM::Parameter::Value<"), ">")
	return strings.HasPrefix(typ, "List<") || typ == "CommaDelimitedList"
}

// parameterFlow checks a Ref to a parameter where a property of shape sh goes: the
// parameter's kind (a list or a single value) must fit, and its Default and AllowedValues
// must meet the property's constraints (warnings: the stack may give another value).
func (c *checker) parameterFlow(p Parameter, ref *yaml.Node, sh *resourcespec.Shape, path string, at *yaml.Node, vc valueCtx) {
	isList := listParameter(p.Type)
	what := fmt.Sprintf("parameter %s (%s)", p.Name, p.Type)
	switch {
	case sh.Kind == resourcespec.Any:
		return
	case isList && sh.Kind.Scalar():
		c.errorf(at, path, "must be a single value, but %s is a list: select an item with Fn::Select or join them with Fn::Join", what)
		return
	case !isList && sh.Kind == resourcespec.List:
		c.errorf(at, path, "must be a list, but %s is a single value: make it a CommaDelimitedList or List<...> parameter, or write [!Ref %s]", what, p.Name)
		return
	case sh.Kind == resourcespec.Object || sh.Kind == resourcespec.Map:
		if !packaged[vc.schemaPath()] {
			c.errorf(at, path, "must be a mapping, but %s is not", what)
		}
		return
	}
	target := sh
	if isList {
		target = sh.Elem
	}
	if target != nil && (target.Kind == resourcespec.Object || target.Kind == resourcespec.Map) {
		c.errorf(at, path, "must be a list of mappings, but %s is a list of single values", what)
		return
	}
	if target == nil || !target.Kind.Scalar() {
		return
	}
	if !vc.chosen {
		// A value an Fn::If may leave unused is not refused for sure: its Default and
		// AllowedValues are warned of below, a stack's value is not judged.
		c.uses = append(c.uses, ParameterUse{Parameter: p.Name, Path: path, Line: ref.Line, Col: ref.Column, shape: target, list: isList})
	}
	if p.NoEcho {
		return // its values are never printed
	}
	check := func(value, label string) {
		items := []string{value}
		if isList {
			items = splitList(value)
		}
		for _, it := range items {
			n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: it}
			if msg := scalarProblem(n, target); msg != "" {
				c.add(ref, path, true, "parameter %s flows here, and its %s is refused: %s", p.Name, label, msg)
				return
			}
		}
	}
	if p.HasDefault && !(p.Default == "" && !isList) {
		check(p.Default, "Default")
	}
	for _, v := range p.AllowedValues {
		if v != p.Default || !p.HasDefault {
			check(v, fmt.Sprintf("allowed value %q", v))
		}
	}
}

func splitList(v string) []string {
	items := strings.Split(v, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// ParameterUse is a place a parameter's value goes as it is (a Ref where a property takes
// a single value, or each item of a list parameter): the value a stack gives must meet the
// property's constraints there.
type ParameterUse struct {
	Parameter string
	// Path is the property, such as Resources.DB.Properties.Engine; Line and Col locate
	// the Ref.
	Path      string
	Line, Col int
	shape     *resourcespec.Shape
	list      bool
}

// Check returns why CloudFormation would refuse value at this use, or "".
func (u ParameterUse) Check(value string) string {
	items := []string{value}
	if u.list {
		items = splitList(value)
	}
	for _, it := range items {
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: it}
		if msg := scalarProblem(n, u.shape); msg != "" {
			return msg
		}
	}
	return ""
}
