// Package template parses CloudFormation templates (JSON or YAML, short-form intrinsics
// such as !Ref and !GetAtt included) with rain's parser, and exposes what cairn checks a
// stack's config against: the parameters the template declares and the outputs it gives.
package template

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws-cloudformation/rain/cft/parse"
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
	// Resources is the number of resources.
	Resources int
	// Node is the template's YAML tree, with short-form intrinsics in long form.
	Node *yaml.Node
}

// Parameter is a declared template parameter.
type Parameter struct {
	Type          string
	HasDefault    bool
	Default       string
	NoEcho        bool
	AllowedValues []string
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

// Parse parses a template body and checks it has the shape of a CloudFormation template:
// a mapping with a non-empty Resources section whose resources have a Type, parameters
// with a Type, and outputs with a Value. Errors give the line of the offending key.
func Parse(body []byte) (*Template, error) {
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil, errors.New("template is empty")
	}
	cft, err := parse.String(string(body))
	if err != nil {
		return nil, fmt.Errorf("template does not parse: %w", err)
	}
	root := cft.Node
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: not a CloudFormation template: expected a mapping with a Resources section, got %s", root.Line, kind(root))
	}
	sum := sha256.Sum256(body)
	t := &Template{Body: body, SHA256: hex.EncodeToString(sum[:]), Parameters: map[string]Parameter{}, Node: root}
	var haveResources bool
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if !sections[k.Value] {
			return nil, fmt.Errorf("line %d: unknown top-level section %q: CloudFormation accepts only %s", k.Line, k.Value, sectionList())
		}
		switch k.Value {
		case "Resources":
			haveResources = true
			if err := t.resources(v); err != nil {
				return nil, err
			}
		case "Parameters":
			if err := t.parameters(v); err != nil {
				return nil, err
			}
		case "Outputs":
			if err := t.outputs(v); err != nil {
				return nil, err
			}
		case "AWSTemplateFormatVersion":
			if v.Kind != yaml.ScalarNode || v.Value != "2010-09-09" {
				return nil, fmt.Errorf("line %d: AWSTemplateFormatVersion must be \"2010-09-09\"", v.Line)
			}
		}
	}
	if !haveResources {
		return nil, errors.New("not a CloudFormation template: no Resources section")
	}
	slices.Sort(t.Outputs)
	return t, nil
}

func (t *Template) resources(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return fmt.Errorf("line %d: Resources must be a mapping with at least one resource, got %s", n.Line, kind(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, r := n.Content[i], n.Content[i+1]
		if r.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: resource %s must be a mapping, got %s", name.Line, name.Value, kind(r))
		}
		typ := value(r, "Type")
		if typ == nil || typ.Kind != yaml.ScalarNode || typ.Value == "" {
			return fmt.Errorf("line %d: resource %s needs a Type such as AWS::S3::Bucket", name.Line, name.Value)
		}
		t.Resources++
	}
	return nil
}

func (t *Template) parameters(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: Parameters must be a mapping, got %s", n.Line, kind(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, p := n.Content[i], n.Content[i+1]
		if p.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: parameter %s must be a mapping, got %s", name.Line, name.Value, kind(p))
		}
		typ := value(p, "Type")
		if typ == nil || typ.Kind != yaml.ScalarNode || typ.Value == "" {
			return fmt.Errorf("line %d: parameter %s needs a Type such as String", name.Line, name.Value)
		}
		param := Parameter{Type: typ.Value}
		if d := value(p, "Default"); d != nil {
			param.HasDefault = true
			switch d.Kind {
			case yaml.ScalarNode:
				param.Default = d.Value
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
		t.Parameters[name.Value] = param
	}
	return nil
}

func (t *Template) outputs(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: Outputs must be a mapping, got %s", n.Line, kind(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, o := n.Content[i], n.Content[i+1]
		if o.Kind != yaml.MappingNode || value(o, "Value") == nil {
			return fmt.Errorf("line %d: output %s needs a Value", name.Line, name.Value)
		}
		t.Outputs = append(t.Outputs, name.Value)
	}
	return nil
}

// value returns the value of key in mapping n, or nil.
func value(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func scalars(n *yaml.Node) []string {
	var out []string
	for _, c := range n.Content {
		if c.Kind == yaml.ScalarNode {
			out = append(out, c.Value)
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

func sectionList() string {
	names := make([]string, 0, len(sections))
	for s := range sections {
		names = append(names, s)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
