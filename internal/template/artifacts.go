package template

import (
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/artifact"
)

// Local artifacts: a template may name files and folders of the bundle where
// CloudFormation wants an S3 location — `CodeUri: src/`, `Code: ./dist/fn.zip` — as `aws
// cloudformation package` accepts. cairn packages them as the AWS CLI does: before any
// transform runs, each is built (artifact.Write), stored content-addressed in the stack's
// region (bucket.AssetKey), and the property rewritten to that S3 location, in the form the
// property takes.

// Packageable is one property `aws cloudformation package` packages.
type Packageable struct {
	Type string
	// Property is the property's path under Properties, dotted (Command.ScriptLocation);
	// for Metadata, the key under Metadata.Type.
	Property string
	// Zip: a folder, or a file that is not a zip already, is zipped (the CLI's FORCE_ZIP).
	Zip bool
	// Omitted: a resource leaving the property out gets the template's folder packaged
	// (the CLI's PACKAGE_NULL_PROPERTY). cairn follows it for the Serverless types only:
	// zipping a template's folder into a function by omission is never what a plain
	// resource means, and CloudFormation's schema requires the property there.
	Omitted bool
	// Bucket, Key and Version name the S3 object form's keys; with Bucket "" the property
	// takes an s3://BUCKET/KEY string.
	Bucket, Key, Version string
	// Metadata: a key of the template's Metadata section, not a resource's property.
	Metadata bool
	// Kind selects the quota the artifact is checked against.
	Kind artifact.Kind
	// Origin says whose list has it: "aws-cli" (awscli's artifact_exporter, 1.45.11 to
	// 1.45.55 and 2.36, which agree), "sam-cli" (added by `sam package`), "cairn".
	Origin string
}

const (
	awsCLI = "aws-cli"
	samCLI = "sam-cli"
	cairn  = "cairn"
)

// packageable lists what is packaged, resource by resource, in the AWS CLI's order
// (RESOURCES_EXPORT_LIST, then METADATA_EXPORT_LIST), the SAM CLI's and cairn's additions
// after. Nested templates (AWS::CloudFormation::Stack TemplateURL,
// AWS::Serverless::Application Location) are NestedStacks; AWS::Include's Location is
// found wherever Fn::Transform names it.
var packageable = []Packageable{
	{Type: "AWS::Serverless::Function", Property: "CodeUri", Zip: true, Omitted: true, Kind: artifact.FunctionCode, Origin: awsCLI},
	{Type: "AWS::Serverless::Api", Property: "DefinitionUri", Origin: awsCLI},
	{Type: "AWS::AppSync::GraphQLSchema", Property: "DefinitionS3Location", Origin: awsCLI},
	{Type: "AWS::AppSync::Resolver", Property: "RequestMappingTemplateS3Location", Origin: awsCLI},
	{Type: "AWS::AppSync::Resolver", Property: "ResponseMappingTemplateS3Location", Origin: awsCLI},
	{Type: "AWS::AppSync::FunctionConfiguration", Property: "RequestMappingTemplateS3Location", Origin: awsCLI},
	{Type: "AWS::AppSync::FunctionConfiguration", Property: "ResponseMappingTemplateS3Location", Origin: awsCLI},
	{Type: "AWS::ApiGateway::RestApi", Property: "BodyS3Location", Bucket: "Bucket", Key: "Key", Version: "Version", Origin: awsCLI},
	{Type: "AWS::Lambda::Function", Property: "Code", Zip: true, Bucket: "S3Bucket", Key: "S3Key", Version: "S3ObjectVersion", Kind: artifact.FunctionCode, Origin: awsCLI},
	{Type: "AWS::ElasticBeanstalk::ApplicationVersion", Property: "SourceBundle", Bucket: "S3Bucket", Key: "S3Key", Origin: awsCLI},
	{Type: "AWS::Serverless::LayerVersion", Property: "ContentUri", Zip: true, Omitted: true, Kind: artifact.LayerContent, Origin: awsCLI},
	{Type: "AWS::Lambda::LayerVersion", Property: "Content", Zip: true, Bucket: "S3Bucket", Key: "S3Key", Version: "S3ObjectVersion", Kind: artifact.LayerContent, Origin: awsCLI},
	{Type: "AWS::Glue::Job", Property: "Command.ScriptLocation", Origin: awsCLI},
	{Type: "AWS::StepFunctions::StateMachine", Property: "DefinitionS3Location", Bucket: "Bucket", Key: "Key", Version: "Version", Kind: artifact.StateMachineDefinition, Origin: awsCLI},
	{Type: "AWS::Serverless::StateMachine", Property: "DefinitionUri", Bucket: "Bucket", Key: "Key", Version: "Version", Kind: artifact.StateMachineDefinition, Origin: awsCLI},
	{Type: "AWS::CodeCommit::Repository", Property: "Code.S3", Zip: true, Bucket: "Bucket", Key: "Key", Version: "ObjectVersion", Origin: awsCLI},
	{Type: "AWS::ServerlessRepo::Application", Property: "ReadmeUrl", Metadata: true, Origin: awsCLI},
	{Type: "AWS::ServerlessRepo::Application", Property: "LicenseUrl", Metadata: true, Origin: awsCLI},
	{Type: "AWS::Serverless::HttpApi", Property: "DefinitionUri", Origin: samCLI},
	{Type: "AWS::ApiGatewayV2::Api", Property: "BodyS3Location", Bucket: "Bucket", Key: "Key", Version: "Version", Origin: samCLI},
	{Type: "AWS::AppSync::Resolver", Property: "CodeS3Location", Origin: cairn},
	{Type: "AWS::AppSync::FunctionConfiguration", Property: "CodeS3Location", Origin: cairn},
}

// PackageableProperties returns what cairn packages (a copy), nested templates and
// AWS::Include aside.
func PackageableProperties() []Packageable { return append([]Packageable(nil), packageable...) }

// Include is AWS::Include's Location, wherever a Fn::Transform names it (the CLI's
// GLOBAL_EXPORT_DICT): a file, uploaded as it is, its location an s3:// string.
var Include = Packageable{Type: "AWS::Include", Property: "Location", Origin: awsCLI}

// Artifact is a local path a template names where CloudFormation takes an S3 location.
type Artifact struct {
	// LogicalID is the resource naming it ("Globals.Function" for SAM's globals,
	// "Metadata" for the Metadata section, "" for an AWS::Include).
	LogicalID string
	Packageable
	// Path is the path as written, relative to the template's folder; "" when the property
	// is omitted and the template's folder is packaged.
	Path string
	// Line and Col locate the value (the resource's name when omitted); At is its
	// location as a key path, as validation errors name it.
	Line, Col int
	At        string
	// Layers are the logical ids of the layers a function names with Ref, for the quota
	// of a function's code and layers together; LayerCount counts every layer it names.
	Layers     []string
	LayerCount int

	node   *yaml.Node // the value; nil when omitted
	parent *yaml.Node // the mapping holding it, to add it to when omitted
}

// Artifacts returns the local artifacts the template names, in template order.
func (t *Template) Artifacts() []Artifact { return t.artifacts }

// findArtifacts walks the template for them: resources (those in Fn::ForEach loops too, as
// the CLI does), SAM's Globals, the Metadata section and AWS::Include transforms.
func (t *Template) findArtifacts() []Artifact {
	var out []Artifact
	root := t.Node
	if res := value(root, "Resources"); res != nil && res.Kind == yaml.MappingNode {
		out = append(out, t.resourceArtifacts(res, 0)...)
	}
	if fn := value(value(root, "Globals"), "Function"); fn != nil && fn.Kind == yaml.MappingNode {
		p := packageable[0] // AWS::Serverless::Function's CodeUri
		if a, ok := localArtifact(fn, p, "Globals.Function", "Globals.Function"); ok && a.Path != "" {
			out = append(out, a)
		}
	}
	if md := value(root, "Metadata"); md != nil && md.Kind == yaml.MappingNode {
		for _, p := range packageable {
			if !p.Metadata {
				continue
			}
			if m := value(md, p.Type); m != nil && m.Kind == yaml.MappingNode {
				if a, ok := localArtifact(m, p, "Metadata", "Metadata."+p.Type); ok && a.Path != "" {
					out = append(out, a)
				}
			}
		}
	}
	walkIncludes(root, "", &out, 0)
	return out
}

func (t *Template) resourceArtifacts(res *yaml.Node, depth int) []Artifact {
	var out []Artifact
	for i := 0; i+1 < len(res.Content); i += 2 {
		k, v := res.Content[i], resolve(res.Content[i+1])
		if strings.HasPrefix(k.Value, "Fn::ForEach::") {
			if v.Kind == yaml.SequenceNode && len(v.Content) == 3 && depth < 5 {
				if body := resolve(v.Content[2]); body.Kind == yaml.MappingNode {
					out = append(out, t.resourceArtifacts(body, depth+1)...)
				}
			}
			continue
		}
		typ := value(v, "Type")
		props := value(v, "Properties")
		if typ == nil || props == nil || props.Kind != yaml.MappingNode {
			continue // the CLI packages nothing of a resource without Properties
		}
		for _, p := range packageable {
			if p.Type != typ.Value || p.Metadata {
				continue
			}
			a, ok := localArtifact(props, p, k.Value, "Resources."+k.Value+".Properties")
			if !ok {
				continue
			}
			if a.Path == "" && !t.packagesOmitted(p, props) {
				continue
			}
			if a.node == nil {
				a.Line, a.Col = k.Line, k.Column
			}
			if p.Kind == artifact.FunctionCode {
				a.Layers, a.LayerCount = layerRefs(props)
			}
			out = append(out, a)
		}
	}
	return out
}

// packagesOmitted says whether an omitted property gets the template's folder: never for
// a function whose code comes otherwise (InlineCode, an image, SAM's Globals).
func (t *Template) packagesOmitted(p Packageable, props *yaml.Node) bool {
	if !p.Omitted {
		return false
	}
	if p.Type == "AWS::Serverless::Function" {
		if value(props, "InlineCode") != nil || value(props, "ImageUri") != nil {
			return false
		}
		if pt := value(props, "PackageType"); pt != nil && pt.Value == "Image" {
			return false
		}
		if value(value(value(t.Node, "Globals"), "Function"), "CodeUri") != nil {
			return false
		}
	}
	return true
}

// localArtifact finds p's property under m: ok with Path "" when it is omitted (node nil)
// or empty (node the empty value, replaced where it is), ok with the node and Path when it
// is a local path, not ok when it is anything else (an S3 location, an object, an intrinsic
// function), which is left as written.
func localArtifact(m *yaml.Node, p Packageable, id, base string) (Artifact, bool) {
	a := Artifact{LogicalID: id, Packageable: p, At: base + "." + p.Property}
	parent := m
	parts := strings.Split(p.Property, ".")
	for _, part := range parts[:len(parts)-1] {
		if parent = value(parent, part); parent == nil || parent.Kind != yaml.MappingNode {
			return a, false // the CLI's jmespath finds nothing under a missing parent
		}
	}
	a.parent = parent
	v := value(parent, parts[len(parts)-1])
	switch {
	case v == nil:
		return a, true
	case v.Kind == yaml.ScalarNode && (v.Tag == "!!null" || v.Tag == "!!str" && v.Value == ""):
		a.node, a.Line, a.Col = v, v.Line, v.Column
		return a, true
	case v.Kind != yaml.ScalarNode || v.Tag != "!!str" || strings.HasPrefix(v.Value, "s3://"):
		return a, false
	}
	a.node, a.Path, a.Line, a.Col = v, v.Value, v.Line, v.Column
	return a, true
}

// layerRefs returns the layers a function names by Ref (logical ids) and how many it
// names in all.
func layerRefs(props *yaml.Node) ([]string, int) {
	l := value(props, "Layers")
	if l == nil || l.Kind != yaml.SequenceNode {
		return nil, 0
	}
	var ids []string
	for _, c := range l.Content {
		if c = resolve(c); intrinsic(c) == "Ref" {
			if r := resolve(c.Content[1]); r.Kind == yaml.ScalarNode {
				ids = append(ids, r.Value)
			}
		}
	}
	return ids, len(l.Content)
}

// walkIncludes finds AWS::Include transforms with a local Location anywhere in n.
func walkIncludes(n *yaml.Node, path string, out *[]Artifact, depth int) {
	n = resolve(n)
	if n == nil || depth > 64 {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], resolve(n.Content[i+1])
			p := joinPath(path, k.Value)
			if k.Value == "Fn::Transform" && v.Kind == yaml.MappingNode {
				if name := value(v, "Name"); name != nil && name.Value == "AWS::Include" {
					if params := value(v, "Parameters"); params != nil && params.Kind == yaml.MappingNode {
						if a, ok := localArtifact(params, Include, "", p+".Parameters"); ok && a.Path != "" {
							*out = append(*out, a)
						}
					}
					continue
				}
			}
			walkIncludes(v, p, out, depth+1)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			walkIncludes(c, path, out, depth+1)
		}
	}
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// location is what packaging puts in place of a: the S3 object of key in bucket, as an
// s3:// string (str) or in the object form the property takes (text, as JSON).
func (a Artifact) location(bucket, key string) (str, text string, node *yaml.Node) {
	if a.Bucket == "" {
		u := "s3://" + bucket + "/" + key
		return u, "", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: u}
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, kv := range [][2]string{{a.Bucket, bucket}, {a.Key, key}} {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv[0]}, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv[1]})
	}
	return "", "{" + quote(a.Bucket) + ": " + quote(bucket) + ", " + quote(a.Key) + ": " + quote(key) + "}", m
}

// Build is what a template says of how an artifact's code is built, as `sam build` reads
// it: the resource's Metadata.BuildMethod (makefile, esbuild, a runtime), whether `sam
// build` already built it (the built template marks each resource with
// Metadata.SamResourceId), and the function's handler (its own, else Globals.Function's).
type Build struct {
	Method  string
	Built   bool
	Handler string
}

// BuildOf returns the build hints of a's resource; zero for a global or an AWS::Include.
func (t *Template) BuildOf(a Artifact) Build {
	var b Build
	res := value(value(t.Node, "Resources"), a.LogicalID)
	if a.LogicalID == "" || res == nil || res.Kind != yaml.MappingNode {
		return b
	}
	md := value(res, "Metadata")
	if m := value(md, "BuildMethod"); m != nil && m.Kind == yaml.ScalarNode {
		b.Method = m.Value
	}
	b.Built = value(md, "SamResourceId") != nil
	h := value(value(res, "Properties"), "Handler")
	if h == nil {
		h = value(value(value(t.Node, "Globals"), "Function"), "Handler")
	}
	if h != nil && h.Kind == yaml.ScalarNode {
		b.Handler = h.Value
	}
	return b
}
