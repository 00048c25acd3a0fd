// Package template parses CloudFormation templates (JSON or YAML, short-form intrinsics
// such as !Ref and !GetAtt included) with rain's parser, and exposes what cairn checks a
// stack's config against: the parameters the template declares and the outputs it gives.
package template

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Template is a parsed CloudFormation template.
type Template struct {
	// Body is the template as given.
	Body []byte
	// SHA256 is the hex sha256 of Body; it names the template when uploaded for TemplateURL.
	SHA256 string
	// Parameters are the declared parameters by name.
	Parameters map[string]Parameter
	// Outputs are the declared output names, sorted.
	Outputs []string
	// Resources is the number of resources; Declared lists them in template order (those
	// an Fn::ForEach expands are counted, not listed).
	Resources int
	Declared  []Resource
	// Node is the template's YAML tree, with short-form intrinsics in long form. Aliases
	// are kept as alias nodes (their expansion is bounded by Parse).
	Node *yaml.Node
	// Transforms are the macros the template names in Transform.
	Transforms []string

	artifacts []Artifact // the local artifacts it names (artifacts.go)
	// structure holds the problems of the template's shape Parse found (an unknown
	// section, a parameter without a Type, ...); Check reports them with the rest.
	structure []Problem
}

// Resource is a resource a template declares.
type Resource struct {
	LogicalID, Type string
}

// Parameter is a declared template parameter and its constraints.
type Parameter struct {
	Name          string
	Type          string
	HasDefault    bool
	Default       string
	NoEcho        bool
	AllowedValues []string
	// AllowedPattern is "" when the template sets none.
	AllowedPattern       string
	MinLength, MaxLength *int
	MinValue, MaxValue   *float64
	// ConstraintDescription replaces cairn's own explanation when a value breaks a
	// constraint, as CloudFormation does.
	ConstraintDescription string
	// Line and Col locate the parameter's name; DefaultLine and DefaultCol its Default.
	Line, Col               int
	DefaultLine, DefaultCol int
	node                    *yaml.Node
	untyped                 bool // declared without a Type (reported)
}

// HasOutput reports whether the template declares the output.
func (t *Template) HasOutput(name string) bool {
	_, ok := slices.BinarySearch(t.Outputs, name)
	return ok
}

// ParameterNames returns the declared parameter names, sorted.
func (t *Template) ParameterNames() []string {
	names := make([]string, 0, len(t.Parameters))
	for n := range t.Parameters {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// sections are the top-level keys CloudFormation accepts (Globals for SAM templates).
var sections = map[string]bool{
	"AWSTemplateFormatVersion": true, "Description": true, "Metadata": true,
	"Parameters": true, "Rules": true, "Mappings": true, "Conditions": true,
	"Transform": true, "Resources": true, "Outputs": true, "Hooks": true, "Globals": true,
}

// MaxBodySize is the largest template CloudFormation accepts (1 MB, from S3 by
// TemplateURL; over changeset.MaxTemplateBody bytes cairn uploads it there).
const MaxBodySize = 1_000_000

// Parse parses a template body. It fails only when the body is not a template at all:
// empty, over MaxBodySize bytes, not YAML, YAML whose aliases expand beyond bounds, or not
// a mapping. Problems of the template's shape (an unknown top-level section, no or an
// empty Resources section, a resource or parameter without a Type, an output without a
// Value, ...) do not stop it: Check reports them with every other problem, so one
// structural error does not hide the rest.
func Parse(body []byte) (*Template, error) {
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil, errors.New("template is empty")
	}
	if len(body) > MaxBodySize {
		return nil, fmt.Errorf("template is %d bytes, more than CloudFormation's limit of %d (1 MB): split it into nested stacks or move code and data out of it", len(body), MaxBodySize)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(jsonSolidus(body), &doc); err != nil {
		return nil, fmt.Errorf("template does not parse: invalid YAML: %s", err)
	}
	return parseNode(body, &doc)
}

// jsonSolidus returns a JSON body with each "\/" escape (JSON's escaped solidus, which the
// YAML parser does not know) written as "/", and a space before the string for each, so
// every token keeps its line and column. Any other body is returned as it is.
func jsonSolidus(body []byte) []byte {
	if !bytes.Contains(body, []byte(`\/`)) || !json.Valid(body) {
		return body
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		if body[i] != '"' {
			out = append(out, body[i])
			continue
		}
		end, n := i+1, 0 // the closing quote, and the escaped solidi before it
		for ; end < len(body) && body[end] != '"'; end++ {
			if body[end] == '\\' {
				if body[end+1] == '/' {
					n++
				}
				end++
			}
		}
		out = append(out, bytes.Repeat([]byte{' '}, n)...)
		out = append(out, '"')
		for j := i + 1; j < end; j++ {
			if body[j] == '\\' {
				if body[j+1] != '/' {
					out = append(out, '\\')
				}
				j++
				out = append(out, body[j])
				continue
			}
			out = append(out, body[j])
		}
		out = append(out, '"')
		i = end
	}
	return out
}

// ParseNode is Parse of a template given as a YAML tree already parsed from a larger
// document (an inline template_body of cairn.yaml), so positions are in that document;
// body is the template's text as sent to CloudFormation. The tree is changed in place.
func ParseNode(body []byte, n *yaml.Node) (*Template, error) {
	if len(body) > MaxBodySize {
		return nil, fmt.Errorf("template is %d bytes, more than CloudFormation's limit of %d (1 MB): split it into nested stacks or move code and data out of it", len(body), MaxBodySize)
	}
	return parseNode(body, n)
}

func parseNode(body []byte, doc *yaml.Node) (*Template, error) {
	if err := checkAliases(doc); err != nil {
		return nil, err
	}
	if err := normalize(doc); err != nil {
		return nil, fmt.Errorf("template does not parse: %w", err)
	}
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	root = resolve(root)
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: not a CloudFormation template: expected a mapping with a Resources section, got %s", root.Line, kind(root))
	}
	sum := sha256.Sum256(body)
	t := &Template{Body: body, SHA256: hex.EncodeToString(sum[:]), Parameters: map[string]Parameter{}, Node: root}
	t.transforms(root)
	var haveResources bool
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], resolve(root.Content[i+1])
		if !sections[k.Value] {
			t.structuref(k, k.Value, "unknown top-level section %q%s: CloudFormation accepts only %s", k.Value, Suggest(k.Value, sectionNames()), sectionList())
			continue
		}
		switch k.Value {
		case "Resources":
			haveResources = true
			t.resources(k, v)
		case "Parameters":
			t.parameters(k, v)
		case "Outputs":
			t.outputs(k, v)
		case "AWSTemplateFormatVersion":
			if v.Kind != yaml.ScalarNode || v.Value != "2010-09-09" {
				t.structuref(v, k.Value, "must be \"2010-09-09\", the only version of the template format")
			}
		case "Description":
			if v.Kind != yaml.ScalarNode {
				t.structuref(v, k.Value, "must be a string, not %s", kind(v))
			} else if len(v.Value) > maxDescription {
				t.structuref(v, k.Value, "is %d bytes, more than CloudFormation's %d", len(v.Value), maxDescription)
			}
		case "Mappings", "Conditions", "Metadata", "Rules":
			if v.Kind != yaml.MappingNode {
				t.structuref(v, k.Value, "%s must be a mapping, not %s", k.Value, kind(v))
			}
		}
	}
	if !haveResources {
		t.structuref(root, "Resources", "not a complete CloudFormation template: no Resources section (a template needs at least one resource)")
	}
	slices.Sort(t.Outputs)
	t.artifacts = t.findArtifacts()
	return t, nil
}

// maxDescription is the longest template Description CloudFormation accepts, in bytes.
const maxDescription = 1024

// structuref records a problem of the template's shape, located at n.
func (t *Template) structuref(n *yaml.Node, path, format string, args ...any) {
	if path == "" {
		path = `""` // an empty key
	}
	p := Problem{Line: 1, Col: 1, Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil && n.Line > 0 {
		p.Line, p.Col = n.Line, n.Column
	}
	t.structure = append(t.structure, p)
}

// transforms reads the Transform section: a name, a list of names, or macros with Name.
func (t *Template) transforms(root *yaml.Node) {
	v := value(root, "Transform")
	if v == nil {
		return
	}
	switch v.Kind {
	case yaml.ScalarNode:
		t.Transforms = []string{v.Value}
	case yaml.SequenceNode:
		for _, c := range v.Content {
			if c = resolve(c); c.Kind == yaml.ScalarNode {
				t.Transforms = append(t.Transforms, c.Value)
			} else if name := value(c, "Name"); name != nil {
				t.Transforms = append(t.Transforms, name.Value)
			}
		}
	case yaml.MappingNode:
		if name := value(v, "Name"); name != nil {
			t.Transforms = append(t.Transforms, name.Value)
		}
	}
}

// HasTransform reports whether the template names the transform.
func (t *Template) HasTransform(name string) bool { return slices.Contains(t.Transforms, name) }

func (t *Template) resources(k, n *yaml.Node) {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		at := n
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			at = k
		}
		t.structuref(at, "Resources", "Resources must be a mapping with at least one resource, not %s", kind(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, r := n.Content[i], resolve(n.Content[i+1])
		if strings.HasPrefix(name.Value, "Fn::ForEach::") && t.HasTransform(languageExtensions) {
			t.Resources++ // expanded by Check
			continue
		}
		t.Resources++
		if r.Kind != yaml.MappingNode {
			continue // Check says so
		}
		typ := value(r, "Type")
		if typ == nil || typ.Kind != yaml.ScalarNode || typ.Value == "" {
			continue // Check says so
		}
		t.Declared = append(t.Declared, Resource{LogicalID: name.Value, Type: typ.Value})
	}
}

func (t *Template) parameters(k, n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		t.structuref(n, "Parameters", "Parameters must be a mapping, not %s", kind(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, p := n.Content[i], resolve(n.Content[i+1])
		path := "Parameters." + name.Value
		if p.Kind != yaml.MappingNode {
			t.structuref(name, path, "parameter %s must be a mapping with a Type, not %s", name.Value, kind(p))
			continue
		}
		param := Parameter{Name: name.Value, Line: name.Line, Col: name.Column, node: p}
		typ := value(p, "Type")
		if typ == nil || typ.Kind != yaml.ScalarNode || typ.Value == "" {
			t.structuref(name, path, "parameter %s needs a Type such as String", name.Value)
			param.Type = "String" // so its uses are checked as CloudFormation's default would be
			param.untyped = true
		} else {
			param.Type = typ.Value
		}
		if d := value(p, "Default"); d != nil {
			param.HasDefault = true
			param.DefaultLine, param.DefaultCol = d.Line, d.Column
			switch d.Kind {
			case yaml.ScalarNode:
				param.Default = canonical(d)
			case yaml.SequenceNode:
				param.Default = strings.Join(scalars(d), ",")
			}
		}
		if ne := value(p, "NoEcho"); ne != nil {
			param.NoEcho = ne.Value == "true" || ne.Value == "True"
		}
		if av := value(p, "AllowedValues"); av != nil && av.Kind == yaml.SequenceNode {
			param.AllowedValues = scalars(av)
		}
		if ap := value(p, "AllowedPattern"); ap != nil && ap.Kind == yaml.ScalarNode {
			param.AllowedPattern = ap.Value
		}
		if cd := value(p, "ConstraintDescription"); cd != nil && cd.Kind == yaml.ScalarNode {
			param.ConstraintDescription = cd.Value
		}
		param.MinLength, param.MaxLength = intValue(p, "MinLength"), intValue(p, "MaxLength")
		param.MinValue, param.MaxValue = floatValue(p, "MinValue"), floatValue(p, "MaxValue")
		t.Parameters[name.Value] = param
	}
}

func intValue(n *yaml.Node, key string) *int {
	v := value(n, key)
	if v == nil || v.Kind != yaml.ScalarNode {
		return nil
	}
	i, err := strconv.Atoi(v.Value)
	if err != nil {
		return nil
	}
	return &i
}

func floatValue(n *yaml.Node, key string) *float64 {
	v := value(n, key)
	if v == nil || v.Kind != yaml.ScalarNode {
		return nil
	}
	f, err := strconv.ParseFloat(v.Value, 64)
	if err != nil {
		return nil
	}
	return &f
}

func (t *Template) outputs(k, n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		t.structuref(n, "Outputs", "Outputs must be a mapping, not %s", kind(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, o := n.Content[i], resolve(n.Content[i+1])
		if strings.HasPrefix(name.Value, "Fn::ForEach::") && t.HasTransform(languageExtensions) {
			continue // expanded by Check; their names are known only then
		}
		if o.Kind != yaml.MappingNode || value(o, "Value") == nil {
			t.structuref(name, "Outputs."+name.Value, "output %s needs a Value", name.Value)
		}
		t.Outputs = append(t.Outputs, name.Value)
	}
}

// value returns the value of key in mapping n, or nil.
func value(n *yaml.Node, k string) *yaml.Node {
	if _, v := pair(n, k); v != nil {
		return resolve(v)
	}
	return nil
}

// key returns the key node of k in mapping n, or nil.
func key(n *yaml.Node, k string) *yaml.Node {
	kn, _ := pair(n, k)
	return kn
}

// pair returns the key and value nodes of k in mapping n, or nils. A key written twice
// is the last one, as CloudFormation reads it.
func pair(n *yaml.Node, k string) (*yaml.Node, *yaml.Node) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := len(n.Content) - 2; i >= 0; i -= 2 {
		if n.Content[i].Value == k {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// scalars returns the single values of a list as CloudFormation reads them (a YAML
// boolean is true or false).
func scalars(n *yaml.Node) []string {
	var out []string
	for _, c := range n.Content {
		if c = resolve(c); c.Kind == yaml.ScalarNode {
			out = append(out, canonical(c))
		}
	}
	return out
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	default:
		return "an empty document"
	}
}

func sectionNames() []string {
	names := make([]string, 0, len(sections))
	for s := range sections {
		names = append(names, s)
	}
	slices.Sort(names)
	return names
}

func sectionList() string { return strings.Join(sectionNames(), ", ") }
