package template

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/resourcespec"
)

// Transforms cairn understands; any other is a macro that may rewrite the template.
const (
	languageExtensions = "AWS::LanguageExtensions"
	serverless         = "AWS::Serverless-2016-10-31"
)

// CloudFormation's template quotas (AWS's quota page).
const (
	MaxResources  = 500
	MaxParameters = 200
	MaxOutputs    = 200
	MaxMappings   = 200
	maxNameLength = 255
)

// Problem is something in a template that CloudFormation refuses or, as a Warning, that
// works today but should change. It is located at the key or value cfn-lint points at.
type Problem struct {
	Line, Col int
	// Path is the offending key, such as Resources.Queue.Properties.VisibiltyTimeout.
	Path    string
	Msg     string
	Warning bool
}

func (p Problem) String() string { return fmt.Sprintf("%d:%d: %s: %s", p.Line, p.Col, p.Path, p.Msg) }

// resource is one resource of the template, ForEach loops expanded.
type resource struct {
	name      string
	nameNode  *yaml.Node
	node      *yaml.Node
	typ       string
	typeNode  *yaml.Node
	condition string // its Condition, "" when it has none
}

var pseudoParameters = []string{"AWS::AccountId", "AWS::NoValue", "AWS::NotificationARNs", "AWS::Partition",
	"AWS::Region", "AWS::StackId", "AWS::StackName", "AWS::URLSuffix"}

var resourceKeys = []string{"Type", "Properties", "DependsOn", "Condition", "Metadata", "DeletionPolicy",
	"UpdateReplacePolicy", "CreationPolicy", "UpdatePolicy", "Version"}

type checker struct {
	t          *Template
	probs      []Problem
	resources  map[string]*resource
	order      []string
	conditions map[string]bool
	mappings   map[string]bool
	// sam: the Serverless transform generates resources, so references are not checked;
	// macros: some other transform may rewrite anything, so nothing past the structure is.
	sam, macros   bool
	globalRuntime bool     // the Serverless Globals' Runtime is checked
	refNames      []string // parameters, resources and pseudo parameters, for suggestions
	deps          map[string][]string
	uses          []ParameterUse
	day           string // the day Lambda runtimes are judged on
	logic         *logic
}

// Check checks the template against the CloudFormation resource specification and the
// rules CloudFormation applies before it creates anything: the template's structure,
// resource types, properties (nested ones too) and the keywords of their schemas (enums,
// patterns, lengths, ranges, kinds with CloudFormation's conversions, list sizes, unique
// items, combinations of properties), resource attributes, Fn::GetAtt attributes, Ref,
// DependsOn and Condition targets and whether they exist under the conditions they are
// used in, circular dependencies, quotas, parameter declarations and Lambda runtimes.
// Every problem is reported, in template order. Runtimes are judged on the current date
// (Today); CheckOn judges them on another.
func (t *Template) Check() []Problem { return t.Inspect().Problems }

// CheckOn is Check with Lambda runtimes judged on day (YYYY-MM-DD, as RuntimeProblem takes
// it): a runtime AWS blocks creating functions with by then is an error.
func (t *Template) CheckOn(day string) []Problem { return t.InspectOn(day).Problems }

// Inspection is what Check finds, and the places parameters' values go.
type Inspection struct {
	Problems []Problem
	// Uses are the places a parameter's value goes as it is, where a stack's value for
	// it must meet the property's constraints.
	Uses []ParameterUse
}

// Inspect is Check with the parameter uses it finds on the way.
func (t *Template) Inspect() Inspection { return t.InspectOn(Today()) }

// InspectOn is Inspect with Lambda runtimes judged on day (see CheckOn). A loader judges
// every template of a bundle on the one day it loads it.
func (t *Template) InspectOn(day string) Inspection {
	c := &checker{t: t, resources: map[string]*resource{}, conditions: map[string]bool{}, mappings: map[string]bool{}, deps: map[string][]string{}, day: day}
	c.probs = append(c.probs, t.structure...)
	for _, tr := range t.Transforms {
		switch tr {
		case languageExtensions:
		case serverless:
			c.sam = true
		default:
			c.macros = true
		}
	}
	if !c.macros && containsKey(t.Node, "Fn::Transform", 0) {
		c.macros = true // a macro rewrites part of the template (AWS::Include, ...)
	}
	expanded := false
	if c.sam && !c.macros {
		// checked as CloudFormation checks it, after the transform (serverless.go)
		var probs []Problem
		probs, expanded = t.checkServerless(day)
		c.probs = append(c.probs, probs...)
	}
	if !expanded {
		c.collect()
		c.duplicateKeys(t.Node, 0)
		if !c.macros {
			c.checkParameters()
			c.conditionLogic()
			for _, name := range c.order {
				c.resource(c.resources[name])
			}
			c.outputs()
			c.dynamicReferences()
			if !c.sam {
				c.references()
				c.cycles()
			}
		}
	}
	slices.SortStableFunc(c.probs, func(a, b Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	return Inspection{Problems: c.probs, Uses: c.uses}
}

func (c *checker) errorf(n *yaml.Node, path, format string, args ...any) {
	c.add(n, path, false, format, args...)
}

func (c *checker) add(n *yaml.Node, path string, warning bool, format string, args ...any) {
	if path == "" {
		path = `""` // an empty key
	}
	p := Problem{Line: 1, Col: 1, Path: path, Msg: fmt.Sprintf(format, args...), Warning: warning}
	if n != nil && n.Line > 0 {
		p.Line, p.Col = n.Line, n.Column
	}
	c.probs = append(c.probs, p)
}

// duplicateKeys warns of a key a mapping has twice. YAML 1.1 forbids it, and cfn-lint
// refuses it, but CloudFormation reads such a template, keeping the last.
func (c *checker) duplicateKeys(n *yaml.Node, depth int) {
	if n == nil || n.Kind == yaml.AliasNode || depth > maxDepth {
		return
	}
	if n.Kind == yaml.MappingNode && len(n.Content) > 2 {
		var seen map[string]*yaml.Node // for large mappings; small ones are scanned
		if len(n.Content) > 32 {
			seen = make(map[string]*yaml.Node, len(n.Content)/2)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			var first *yaml.Node
			if seen != nil {
				if first = seen[k.Value]; first == nil {
					seen[k.Value] = k
				}
			} else {
				for j := 0; j < i && first == nil; j += 2 {
					if n.Content[j].Value == k.Value {
						first = n.Content[j]
					}
				}
			}
			if first != nil {
				c.add(k, k.Value, true, "duplicate key %q (first at line %d): CloudFormation keeps the last one; remove one", k.Value, first.Line)
			}
		}
	}
	for _, ch := range n.Content {
		c.duplicateKeys(ch, depth+1)
	}
}

// collect indexes the sections and checks the quotas.
func (c *checker) collect() {
	root := c.t.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], resolve(root.Content[i+1])
		switch k.Value {
		case "Resources":
			entries := c.expand(v, "Resources")
			for _, e := range entries {
				r := &resource{name: e.key.Value, nameNode: e.key, node: resolve(e.value)}
				if r.node.Kind != yaml.MappingNode {
					c.errorf(e.key, "Resources."+r.name, "resource %s must be a mapping, got %s", r.name, kind(r.node))
					continue
				}
				if tn := value(r.node, "Type"); tn != nil && tn.Kind == yaml.ScalarNode {
					r.typ, r.typeNode = tn.Value, tn
				}
				if cn := value(r.node, "Condition"); cn != nil && cn.Kind == yaml.ScalarNode {
					r.condition = cn.Value
				}
				if _, dup := c.resources[r.name]; dup {
					c.errorf(e.key, "Resources."+r.name, "resource %s is declared twice (a Fn::ForEach loop makes the same name twice?)", r.name)
					continue
				}
				c.resources[r.name] = r
				c.order = append(c.order, r.name)
				c.name(e.key, "Resources."+r.name, "resource")
			}
			if len(entries) > MaxResources {
				c.errorf(k, "Resources", "%d resources, more than CloudFormation's quota of %d: split the template into stacks", len(entries), MaxResources)
			}
		case "Parameters":
			if n := len(v.Content) / 2; n > MaxParameters {
				c.errorf(k, "Parameters", "%d parameters, more than CloudFormation's quota of %d", n, MaxParameters)
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				c.name(v.Content[j], "Parameters."+v.Content[j].Value, "parameter")
			}
		case "Outputs":
			if v.Kind == yaml.MappingNode {
				entries := c.expand(v, "Outputs")
				if len(entries) > MaxOutputs {
					c.errorf(k, "Outputs", "%d outputs, more than CloudFormation's quota of %d", len(entries), MaxOutputs)
				}
			}
		case "Mappings":
			if v.Kind == yaml.MappingNode {
				if n := len(v.Content) / 2; n > MaxMappings {
					c.errorf(k, "Mappings", "%d mappings, more than CloudFormation's quota of %d", n, MaxMappings)
				}
				for j := 0; j+1 < len(v.Content); j += 2 {
					c.mappings[v.Content[j].Value] = true
				}
			}
		case "Conditions":
			if v.Kind == yaml.MappingNode {
				for _, e := range c.expand(v, "Conditions") {
					c.conditions[e.key.Value] = true
				}
			}
		}
	}
	for name := range c.t.Parameters {
		c.refNames = append(c.refNames, name)
	}
	c.refNames = append(c.refNames, c.order...)
	c.refNames = append(c.refNames, pseudoParameters...)
}

func (c *checker) name(k *yaml.Node, path, what string) {
	if len(k.Value) > maxNameLength {
		c.errorf(k, path, "%s name is %d characters, more than CloudFormation's %d", what, len(k.Value), maxNameLength)
	} else if !strings.HasPrefix(k.Value, "Fn::ForEach::") && !alphanumeric(k.Value) {
		c.errorf(k, path, "%s name %q must be alphanumeric (A-Z, a-z, 0-9)", what, k.Value)
	}
}

func alphanumeric(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

// resource checks one resource's keys, type and properties.
func (c *checker) resource(r *resource) {
	base := "Resources." + r.name
	for i := 0; i+1 < len(r.node.Content); i += 2 {
		k := r.node.Content[i]
		if !slices.Contains(resourceKeys, k.Value) {
			switch {
			case c.sam && k.Value == "Connectors":
				// the Serverless transform's own attribute
			case c.sam:
				// The transform writes resources out with the attributes it knows.
				c.add(k, base+"."+k.Value, true, "unknown resource attribute %q%s: the Serverless transform drops it; a resource takes %s", k.Value, Suggest(k.Value, resourceKeys), strings.Join(resourceKeys, ", "))
			default:
				c.errorf(k, base+"."+k.Value, "unknown resource attribute %q%s: a resource takes %s", k.Value, Suggest(k.Value, resourceKeys), strings.Join(resourceKeys, ", "))
			}
		}
	}
	if r.typ == "" {
		if tn := value(r.node, "Type"); tn != nil && (tn.Kind != yaml.ScalarNode || tn.Tag == "!!null") {
			c.errorf(tn, base+".Type", "the Type of resource %s must be a type name such as AWS::S3::Bucket, not %s", r.name, kindOf(tn))
			return
		}
		c.errorf(r.nameNode, base+".Type", "resource %s needs a Type such as AWS::S3::Bucket", r.name)
		return
	}
	c.attributes(r)
	props := value(r.node, "Properties")
	propsKey := key(r.node, "Properties")
	switch {
	case strings.HasPrefix(r.typ, "Custom::") || r.typ == "AWS::CloudFormation::CustomResource":
		if props == nil || props.Kind == yaml.MappingNode && value(props, "ServiceToken") == nil {
			at := propsKey
			if at == nil {
				at = r.nameNode
			}
			c.errorf(at, base+".Properties", "custom resource %s needs a ServiceToken: the ARN of the Lambda function or SNS topic that answers it", r.name)
		}
		return
	case strings.HasPrefix(r.typ, "AWS::Serverless::") && c.sam:
		// not expanded (what cairn's transform leaves out): its function's runtime still
		if r.typ == "AWS::Serverless::Function" && value(props, "Runtime") != nil {
			c.runtime(props, base+".Properties")
		} else if r.typ == "AWS::Serverless::Function" && !c.globalRuntime {
			c.globalRuntime = true // reported once, at Globals
			c.runtime(value(value(c.t.Node, "Globals"), "Function"), "Globals.Function")
		}
		return
	}
	st := resourcespec.Lookup(r.typ)
	if st == nil {
		parts := strings.Split(r.typ, "::")
		if len(parts) == 4 && parts[3] == "MODULE" && parts[0] != "AWS" && !slices.Contains(parts, "") {
			c.add(key(r.node, "Type"), base+".Type", true, "%s is a CloudFormation module, which CloudFormation expands into its resources: cairn does not check them", r.typ)
			c.module(r, base)
			return
		}
		if len(parts) == 3 && parts[0] != "AWS" && parts[0] != "Alexa" && !slices.Contains(parts, "") {
			c.add(key(r.node, "Type"), base+".Type", true, "%s is not an AWS type: a registry (third-party or private) type, so cairn does not check its properties", r.typ)
			return
		}
		hint := Suggest(r.typ, resourcespec.TypeNames())
		if strings.HasPrefix(r.typ, "AWS::Serverless::") {
			hint = ": add Transform: " + serverless + " to use the Serverless types"
		}
		c.errorf(key(r.node, "Type"), base+".Type", "unknown resource type %q%s", r.typ, hint)
		return
	}
	c.serviceRules(r, st, props, base)
	if props == nil {
		if missing := st.Properties.Required; len(missing) > 0 {
			c.errorf(r.nameNode, base, "%s requires %s %s: add them under Properties", r.typ, plural(len(missing), "property", "properties"), strings.Join(missing, ", "))
		}
		c.combinations(keySet{}, st.Properties, base+".Properties", r.nameNode, nil, valueCtx{typ: r.typ})
		return
	}
	c.value(props, st.Properties, base+".Properties", propsKey, valueCtx{typ: r.typ})
	if r.typ == "AWS::S3::Bucket" {
		c.bucketACL(props, base)
	}
	if r.typ == "AWS::Lambda::Function" {
		c.runtime(props, base+".Properties")
	}
}

// runtime reports a function's Runtime (of props, at path) that AWS deprecated or blocks
// (RuntimeProblem).
func (c *checker) runtime(props *yaml.Node, path string) {
	if rt := value(props, "Runtime"); rt != nil && rt.Kind == yaml.ScalarNode {
		if msg, warning, ok := RuntimeProblem(rt.Value, c.day); ok {
			c.add(rt, path+".Runtime", warning, "%s", msg)
		}
	}
}

// bucketACL refuses an ACL granting access beyond the bucket owner without ownership
// controls that allow ACLs: S3 has created buckets with ACLs disabled (BucketOwnerEnforced)
// since April 2023, and refuses such a bucket's ACL.
func (c *checker) bucketACL(props *yaml.Node, base string) {
	acl := value(props, "AccessControl")
	if acl == nil || acl.Kind != yaml.ScalarNode || slices.Contains([]string{"Private", "BucketOwnerFullControl", "BucketOwnerRead"}, acl.Value) {
		return
	}
	if oc := value(props, "OwnershipControls"); oc != nil {
		rules := value(oc, "Rules")
		if rules == nil || rules.Kind != yaml.SequenceNode {
			return // an intrinsic or a shape problem reported elsewhere
		}
		for _, r := range rules.Content {
			if o := value(r, "ObjectOwnership"); o == nil || o.Kind != yaml.ScalarNode || o.Value != "BucketOwnerEnforced" {
				return
			}
		}
	}
	c.errorf(acl, base+".Properties.AccessControl", "AccessControl %s needs OwnershipControls that allow ACLs: S3 creates buckets with ACLs disabled (BucketOwnerEnforced) and refuses the ACL; add OwnershipControls: {Rules: [{ObjectOwnership: ObjectWriter}]} (or BucketOwnerPreferred), or drop AccessControl", acl.Value)
}

// outputKeys are the keys an output takes.
var outputKeys = []string{"Value", "Description", "Export", "Condition"}

// outputs checks each output's keys and values: CloudFormation takes single values only.
func (c *checker) outputs() {
	outs := value(c.t.Node, "Outputs")
	if outs == nil || outs.Kind != yaml.MappingNode {
		return
	}
	for _, e := range c.expand(outs, "Outputs") {
		base := "Outputs." + e.key.Value
		c.name(e.key, base, "output")
		o := resolve(e.value)
		if o.Kind != yaml.MappingNode {
			continue // Parse reported it
		}
		for i := 0; i+1 < len(o.Content); i += 2 {
			k, v := o.Content[i], resolve(o.Content[i+1])
			path := base + "." + k.Value
			switch k.Value {
			case "Value":
				c.value(v, str, path, k, valueCtx{typ: "output " + e.key.Value, where: "Value"})
			case "Description":
				if v.Kind != yaml.ScalarNode {
					c.errorf(k, path, "must be a string, not %s", kindOf(v))
				}
			case "Export":
				if v.Kind != yaml.MappingNode || intrinsic(v) != "" || value(v, "Name") == nil {
					c.errorf(k, path, "must be a mapping with a Name: Export: {Name: ...}")
					continue
				}
				for j := 0; j+1 < len(v.Content); j += 2 {
					if ek := v.Content[j]; ek.Value != "Name" {
						c.errorf(ek, path+"."+ek.Value, "unknown key %q of an Export: it takes Name only", ek.Value)
					}
				}
				c.value(value(v, "Name"), str, path+".Name", key(v, "Name"), valueCtx{typ: "output " + e.key.Value, where: "Export.Name"})
			case "Condition":
			default:
				c.errorf(k, path, "unknown key %q of an output%s: an output takes %s", k.Value, Suggest(k.Value, outputKeys), strings.Join(outputKeys, ", "))
			}
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// intrinsic returns the function name of a mapping that is a call ({"Ref": x},
// {"Fn::If": [...]}), or "". {"Condition": x} is one only inside a condition, which
// conditionLogic reads: elsewhere Condition is a property name.
func intrinsic(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return ""
	}
	k := n.Content[0].Value
	// Rain::Embed and the like are rain's directives (rain pkg resolves them): reported by
	// walk, and their values unknown.
	if k == "Ref" || strings.HasPrefix(k, "Fn::") || strings.HasPrefix(k, "Rain::") {
		return k
	}
	return ""
}

func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		if fn := intrinsic(n); fn != "" {
			return "the result of " + fn
		}
		return "a mapping"
	case yaml.ScalarNode:
		return fmt.Sprintf("the single value %q", n.Value)
	}
	return "an empty document"
}
