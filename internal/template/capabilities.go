package template

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// The capabilities CloudFormation asks a stack's creator to acknowledge.
const (
	CapabilityIAM        = "CAPABILITY_IAM"
	CapabilityNamedIAM   = "CAPABILITY_NAMED_IAM"
	CapabilityAutoExpand = "CAPABILITY_AUTO_EXPAND"
)

// iamTypes are the resource types that need CAPABILITY_IAM, with the property that gives
// one a custom name (and so needs CAPABILITY_NAMED_IAM).
var iamTypes = map[string]string{
	"AWS::IAM::AccessKey":           "",
	"AWS::IAM::Group":               "GroupName",
	"AWS::IAM::GroupPolicy":         "",
	"AWS::IAM::InstanceProfile":     "InstanceProfileName",
	"AWS::IAM::ManagedPolicy":       "ManagedPolicyName",
	"AWS::IAM::Policy":              "",
	"AWS::IAM::Role":                "RoleName",
	"AWS::IAM::RolePolicy":          "",
	"AWS::IAM::User":                "UserName",
	"AWS::IAM::UserPolicy":          "",
	"AWS::IAM::UserToGroupAddition": "",
}

// Need is a capability the template needs and the first thing that needs it.
type Need struct {
	Capability string
	// Why names what needs it: `resource Role (AWS::IAM::Role)`, `Transform AWS::Serverless-2016-10-31`.
	Why string
	// Line and Col locate it in the template, or in File when it is another template
	// deployed with this one (a nested stack's).
	Line, Col int
	File      string
}

// Needs returns the capabilities the template needs, in the order CAPABILITY_IAM,
// CAPABILITY_NAMED_IAM, CAPABILITY_AUTO_EXPAND (CAPABILITY_NAMED_IAM replaces
// CAPABILITY_IAM when a named IAM resource needs it).
func (t *Template) Needs() []Need {
	c := &checker{t: t, resources: map[string]*resource{}, conditions: map[string]bool{}, mappings: map[string]bool{}}
	var iam, named, expand *Need
	for _, tr := range t.Transforms {
		if tr != languageExtensions && expand == nil {
			expand = &Need{Capability: CapabilityAutoExpand, Why: "Transform " + tr}
			if n := key(t.Node, "Transform"); n != nil {
				expand.Line, expand.Col = n.Line, n.Column
			}
		}
	}
	if res := value(t.Node, "Resources"); res != nil && res.Kind == yaml.MappingNode {
		for _, e := range c.expand(res, "") {
			r := resolve(e.value)
			typ := value(r, "Type")
			if typ == nil || typ.Kind != yaml.ScalarNode {
				continue
			}
			why := "resource " + e.key.Value + " (" + typ.Value + ")"
			nameProp, isIAM := iamTypes[typ.Value]
			if strings.HasPrefix(typ.Value, "AWS::Serverless::") && t.HasTransform(serverless) {
				// SAM makes an execution role for functions and state machines that name none.
				isIAM = (typ.Value == "AWS::Serverless::Function" || typ.Value == "AWS::Serverless::StateMachine") && value(value(r, "Properties"), "Role") == nil
			}
			if isIAM && iam == nil {
				iam = &Need{Capability: CapabilityIAM, Why: why, Line: e.key.Line, Col: e.key.Column}
			}
			if nameProp != "" && named == nil {
				if k := key(value(r, "Properties"), nameProp); k != nil {
					named = &Need{Capability: CapabilityNamedIAM, Why: why + " with " + nameProp, Line: k.Line, Col: k.Column}
				}
			}
		}
	}
	if expand == nil && containsKey(t.Node, "Fn::Transform", 0) {
		expand = &Need{Capability: CapabilityAutoExpand, Why: "Fn::Transform (a macro)"}
	}
	var out []Need
	switch {
	case named != nil:
		out = append(out, *named)
	case iam != nil:
		out = append(out, *iam)
	}
	if expand != nil {
		out = append(out, *expand)
	}
	return out
}

func containsKey(n *yaml.Node, k string, depth int) bool {
	if n == nil || depth > maxDepth {
		return false
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				return true
			}
		}
	}
	for _, c := range n.Content {
		if containsKey(c, k, depth+1) {
			return true
		}
	}
	return false
}

// Capabilities returns the capability names of needs.
func Capabilities(needs []Need) []string {
	out := make([]string, len(needs))
	for i, n := range needs {
		out[i] = n.Capability
	}
	return out
}

// Uncovered returns the needs that granted does not cover: CAPABILITY_NAMED_IAM covers
// CAPABILITY_IAM too.
func Uncovered(needs []Need, granted []string) []Need {
	var out []Need
	for _, n := range needs {
		ok := slices.Contains(granted, n.Capability) ||
			n.Capability == CapabilityIAM && slices.Contains(granted, CapabilityNamedIAM)
		if !ok {
			out = append(out, n)
		}
	}
	return out
}

// Export is an output's export name, as far as it is known before deploying.
type Export struct {
	Output string
	Name   string
	// Line and Col locate the name in the template.
	Line, Col int
}

// Exports returns the export names of the template's outputs when deployed as stackName:
// literal names, and Fn::Sub strings whose only variables are ${AWS::StackName} and
// ${AWS::Region} (the region is the same for every stack of a bundle, so it is kept as
// written). Names that need anything else are left out.
func (t *Template) Exports(stackName string) []Export {
	outs := value(t.Node, "Outputs")
	if outs == nil || outs.Kind != yaml.MappingNode {
		return nil
	}
	var out []Export
	for i := 0; i+1 < len(outs.Content); i += 2 {
		name := value(value(outs.Content[i+1], "Export"), "Name")
		if name == nil {
			continue
		}
		e := Export{Output: outs.Content[i].Value, Line: name.Line, Col: name.Column}
		switch {
		case name.Kind == yaml.ScalarNode:
			e.Name = name.Value
		case intrinsic(name) == "Fn::Sub" && resolve(name.Content[1]).Kind == yaml.ScalarNode:
			s := resolve(name.Content[1]).Value
			s = strings.ReplaceAll(s, "${AWS::StackName}", stackName)
			if strings.Contains(strings.ReplaceAll(s, "${AWS::Region}", ""), "${") {
				continue
			}
			e.Name = s
		default:
			continue
		}
		out = append(out, e)
	}
	return out
}

// ExportMatches reports whether an export named by pattern (${AWS::Region} standing for
// any region) can be name.
func ExportMatches(pattern, name string) bool {
	parts := strings.Split(pattern, "${AWS::Region}")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	rest := name[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return strings.HasSuffix(rest, parts[len(parts)-1])
}
