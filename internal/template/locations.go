package template

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/bucket"
)

// S3 locations: every property by which a template makes CloudFormation (or a transform)
// fetch an S3 object — a nested stack's TemplateURL, a function's Code, a layer's
// Content, AWS::Include's Location, an API's or a state machine's definition, a Glue
// script, ... — whether written out or computed by intrinsic functions. The deployer's
// role reads cairn's own bucket, so each is checked against it by bucket.CheckLocation.

// locationProperty is one property that names an S3 object.
type locationProperty struct {
	Type, Property string
	// Bucket and Key name the object form's keys ("" for Bucket and Key).
	Bucket, Key string
}

// locationProperties are what `aws cloudformation package` packages (packageable, the
// Metadata entries aside: CloudFormation reads none), the nested stacks' URLs, the S3
// locations in object form the resource specification has (specObjectLocations), and a
// few of its s3:// strings.
var locationProperties = func() []locationProperty {
	var out []locationProperty
	for _, p := range packageable {
		if !p.Metadata {
			out = append(out, locationProperty{Type: p.Type, Property: p.Property, Bucket: p.Bucket, Key: p.Key})
		}
	}
	for typ, prop := range nestedTypes {
		out = append(out, locationProperty{Type: typ, Property: prop})
	}
	out = append(out,
		locationProperty{Type: "AWS::Serverless::GraphQLApi", Property: "SchemaUri"},
		locationProperty{Type: "AWS::EMR::Step", Property: "HadoopJarStep.Jar"},
	)
	out = append(out, specObjectLocations...)
	// sort.SliceStable rather than slices.SortStableFunc: each instantiation of the latter for a struct
	// type adds 5-9 KB of code to the deployer, held under 15 MB (docs/policy.md).
	sort.SliceStable(out, func(i, j int) bool { return out[i].Type+"."+out[i].Property < out[j].Type+"."+out[j].Property })
	return slices.CompactFunc(out, func(a, b locationProperty) bool { return a.Type == b.Type && a.Property == b.Property })
}()

// specObjectLocations are the properties of the resource specification's types that are
// objects naming an S3 object by a pair of keys (S3Bucket and S3Key, Bucket and Key,
// BucketARN and FileKey, ...), outside lists (S3Locations reads no list), as
// TestSpecObjectLocationsAreCurrent finds them in internal/resourcespec: written out, because
// building every type of the specification to find them takes 200 ms.
var specObjectLocations = []locationProperty{
	{Type: "AWS::ApiGateway::RestApi", Property: "BodyS3Location", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::ApiGatewayV2::Api", Property: "BodyS3Location", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::AppStream::AppBlock", Property: "PostSetupScriptDetails.ScriptS3Location", Bucket: "S3Bucket", Key: "S3Key"},
	{Type: "AWS::AppStream::AppBlock", Property: "SetupScriptDetails.ScriptS3Location", Bucket: "S3Bucket", Key: "S3Key"},
	{Type: "AWS::AppStream::AppBlock", Property: "SourceS3Location", Bucket: "S3Bucket", Key: "S3Key"},
	{Type: "AWS::AppStream::Application", Property: "IconS3Location", Bucket: "S3Bucket", Key: "S3Key"},
	{Type: "AWS::AppStream::Fleet", Property: "SessionScriptS3Location", Bucket: "S3Bucket", Key: "S3Key"},
	{Type: "AWS::B2BI::Capability", Property: "Configuration.Edi.InputLocation", Bucket: "BucketName", Key: "Key"},
	{Type: "AWS::B2BI::Capability", Property: "Configuration.Edi.OutputLocation", Bucket: "BucketName", Key: "Key"},
	{Type: "AWS::Bedrock::Flow", Property: "DefinitionS3Location", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::CleanRooms::AnalysisTemplate", Property: "Source.Artifacts.EntryPoint.Location", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::CloudFront::TrustStore", Property: "CaCertificatesBundleSource.CaCertificatesBundleS3Location", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::CodeCommit::Repository", Property: "Code.S3", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::CodeDeploy::DeploymentGroup", Property: "Deployment.Revision.S3Location", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::CodeStar::GitHubRepository", Property: "Code.S3", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::DataBrew::Dataset", Property: "Input.DataCatalogInputDefinition.TempDirectory", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::DataBrew::Dataset", Property: "Input.DatabaseInputDefinition.TempDirectory", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::DataBrew::Dataset", Property: "Input.S3InputDefinition", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::DataBrew::Job", Property: "OutputLocation", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::ElasticBeanstalk::ApplicationVersion", Property: "SourceBundle", Bucket: "S3Bucket", Key: "S3Key"},
	{Type: "AWS::GameLift::Build", Property: "StorageLocation", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::GameLift::Script", Property: "StorageLocation", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::IoT::SoftwarePackageVersion", Property: "Artifact.S3Location", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::IoT::SoftwarePackageVersion", Property: "Sbom.S3Location", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::IoT::TopicRule", Property: "TopicRulePayload.ErrorAction.S3", Bucket: "BucketName", Key: "Key"},
	{Type: "AWS::KafkaConnect::CustomPlugin", Property: "Location.S3Location", Bucket: "BucketArn", Key: "FileKey"},
	{Type: "AWS::Kendra::DataSource", Property: "DataSourceConfiguration.OneDriveConfiguration.OneDriveUsers.OneDriveUserS3Path", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::Kendra::DataSource", Property: "DataSourceConfiguration.SharePointConfiguration.SslCertificateS3Path", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::Kendra::Faq", Property: "S3Path", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::KinesisAnalytics::ApplicationReferenceDataSource", Property: "ReferenceDataSource.S3ReferenceDataSource", Bucket: "BucketARN", Key: "FileKey"},
	{Type: "AWS::KinesisAnalyticsV2::Application", Property: "ApplicationConfiguration.ApplicationCodeConfiguration.CodeContent.S3ContentLocation", Bucket: "BucketARN", Key: "FileKey"},
	{Type: "AWS::KinesisAnalyticsV2::ApplicationReferenceDataSource", Property: "ReferenceDataSource.S3ReferenceDataSource", Bucket: "BucketARN", Key: "FileKey"},
	{Type: "AWS::Lambda::Function", Property: "Code", Bucket: "S3Bucket", Key: "S3Key"},
	{Type: "AWS::Lambda::LayerVersion", Property: "Content", Bucket: "S3Bucket", Key: "S3Key"},
	{Type: "AWS::Macie::AllowList", Property: "Criteria.S3WordsList", Bucket: "BucketName", Key: "ObjectKey"},
	{Type: "AWS::QBusiness::Plugin", Property: "CustomPluginConfiguration.ApiSchema.S3", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::QuickSight::DataSource", Property: "DataSourceParameters.S3Parameters.ManifestFileLocation", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::SageMaker::Pipeline", Property: "PipelineDefinition.PipelineDefinitionS3Location", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::SimSpaceWeaver::Simulation", Property: "SchemaS3Location", Bucket: "BucketName", Key: "ObjectKey"},
	{Type: "AWS::SimSpaceWeaver::Simulation", Property: "SnapshotS3Location", Bucket: "BucketName", Key: "ObjectKey"},
	{Type: "AWS::StepFunctions::StateMachine", Property: "DefinitionS3Location", Bucket: "Bucket", Key: "Key"},
	{Type: "AWS::Synthetics::Canary", Property: "Code", Bucket: "S3Bucket", Key: "S3Key"},
	{Type: "Alexa::ASK::Skill", Property: "SkillPackage", Bucket: "S3Bucket", Key: "S3Key"},
}

// LocationProperties lists the resource properties S3Locations reads, as TYPE.PROPERTY.
func LocationProperties() []string {
	out := make([]string, len(locationProperties))
	for i, p := range locationProperties {
		out[i] = p.Type + "." + p.Property
	}
	return out
}

// S3Location is one S3 object the template names.
type S3Location struct {
	// LogicalID and Type are the resource's ("" for an AWS::Include); Property its path
	// under Properties (Code, Command.ScriptLocation), or Location.
	LogicalID, Type, Property string
	// At is the value's key path; Line and Col locate it.
	At        string
	Line, Col int
	// Forms are the locations it may be: one per branch of each Fn::If.
	Forms []bucket.Location
	// Unknown are the parameters (and pseudo parameters) it reads whose values were not
	// given: once they are, it may be told.
	Unknown []string
}

// maxForms bounds the branches of Fn::If a location is evaluated with; beyond it, the
// location is unknown.
const maxForms = 16

// S3Locations returns the S3 locations the template names, in template order, each
// evaluated with values: the parameters' values and the pseudo parameters' (AWS::Region,
// AWS::AccountId, AWS::StackName; AWS::Partition and AWS::URLSuffix follow from the
// region) that are known. A parameter missing from values is unknown: the caller puts a
// Default there when it is the value.
func (t *Template) S3Locations(values map[string]string) []S3Location {
	res := value(t.Node, "Resources")
	if res == nil || res.Kind != yaml.MappingNode {
		return nil
	}
	e := &evaluator{t: t, values: values, types: map[string]string{}, unknown: map[string]bool{}}
	for _, r := range t.Declared {
		e.types[r.LogicalID] = r.Type
	}
	if region, ok := values["AWS::Region"]; ok {
		partition, suffix := "aws", "amazonaws.com"
		switch {
		case strings.HasPrefix(region, "cn-"):
			partition, suffix = "aws-cn", "amazonaws.com.cn"
		case strings.HasPrefix(region, "us-gov-"):
			partition = "aws-us-gov"
		}
		e.pseudo = map[string]string{"AWS::Partition": partition, "AWS::URLSuffix": suffix}
	}
	c := &checker{t: t, resources: map[string]*resource{}, conditions: map[string]bool{}, mappings: map[string]bool{}}
	var out []S3Location
	for _, en := range c.expand(res, "") {
		r := resolve(en.value)
		typ := value(r, "Type")
		props := value(r, "Properties")
		if typ == nil || props == nil || props.Kind != yaml.MappingNode {
			continue
		}
		if typ.Value != "" {
			e.types[en.key.Value] = typ.Value
		}
		for _, p := range locationProperties {
			if p.Type != typ.Value {
				continue
			}
			if l, ok := e.location(props, p, en.key.Value, "Resources."+en.key.Value+".Properties"); ok {
				out = append(out, l)
			}
		}
	}
	if fn := value(value(t.Node, "Globals"), "Function"); fn != nil && fn.Kind == yaml.MappingNode {
		if l, ok := e.location(fn, locationProperty{Type: "AWS::Serverless::Function", Property: "CodeUri"}, "Globals.Function", "Globals.Function"); ok {
			out = append(out, l)
		}
	}
	e.includes(t.Node, "", &out, 0)
	return out
}

// location evaluates property p of the mapping m, if it names an S3 object.
func (e *evaluator) location(m *yaml.Node, p locationProperty, id, base string) (S3Location, bool) {
	parts := strings.Split(p.Property, ".")
	for _, part := range parts[:len(parts)-1] {
		if m = value(m, part); m == nil || m.Kind != yaml.MappingNode {
			return S3Location{}, false
		}
	}
	v := value(m, parts[len(parts)-1])
	if v == nil {
		return S3Location{}, false
	}
	l := S3Location{LogicalID: id, Type: p.Type, Property: p.Property, At: base + "." + p.Property, Line: v.Line, Col: v.Column}
	clear(e.unknown)
	if v.Kind == yaml.MappingNode && intrinsic(v) == "" {
		bk, kk := p.Bucket, p.Key
		if bk == "" {
			bk, kk = "Bucket", "Key"
		}
		b, k := value(v, bk), value(v, kk)
		if b == nil || k == nil {
			return S3Location{}, false // not the object form (ZipFile, ImageUri, an application id)
		}
		for _, bp := range e.eval(b, 0) {
			if strings.HasSuffix(strings.ToLower(bk), "arn") {
				bp = bucketOfARN(bp)
			}
			for _, kp := range e.eval(k, 0) {
				l.Forms = append(l.Forms, bucket.Location{Object: true, Bucket: bp, Key: kp})
			}
		}
	} else {
		if v.Kind == yaml.ScalarNode && (v.Tag == "!!null" || IsLocalPath(v.Value)) {
			return S3Location{}, false // a bundle path cairn packages, or none
		}
		for _, u := range e.eval(v, 0) {
			l.Forms = append(l.Forms, bucket.Location{URL: u})
		}
	}
	for name := range e.unknown {
		l.Unknown = append(l.Unknown, name)
	}
	slices.Sort(l.Unknown)
	return l, true
}

// bucketOfARN is the bucket name of an S3 bucket's ARN (arn:PARTITION:s3:::NAME): the parts
// after the literal ":::". Parts with none are left as they are.
func bucketOfARN(p parts) parts {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i].Unknown != "" {
			continue
		}
		if _, name, ok := strings.Cut(p[i].Text, ":::"); ok {
			return append(parts{{Text: name}}, p[i+1:]...)
		}
	}
	return p
}

// includes finds AWS::Include transforms anywhere in n (Fn::Transform, and the Transform
// section's entries).
func (e *evaluator) includes(n *yaml.Node, path string, out *[]S3Location, depth int) {
	n = resolve(n)
	if n == nil || depth > 64 {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		if name := value(n, "Name"); name != nil && name.Kind == yaml.ScalarNode && name.Value == Include.Type {
			if params := value(n, "Parameters"); params != nil && params.Kind == yaml.MappingNode {
				if l, ok := e.location(params, locationProperty{Type: Include.Type, Property: Include.Property}, "", joinPath(path, "Parameters")); ok {
					l.Type = Include.Type
					*out = append(*out, l)
				}
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			e.includes(n.Content[i+1], joinPath(path, n.Content[i].Value), out, depth+1)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			e.includes(c, path, out, depth+1)
		}
	}
}

// evaluator computes what a value may be, as a list of alternatives (Fn::If's branches),
// each a sequence of literal and unknown parts.
type evaluator struct {
	t       *Template
	values  map[string]string
	pseudo  map[string]string
	types   map[string]string // resource types by logical id
	unknown map[string]bool   // the parameters read that values lacks
}

type parts = []bucket.Part

func unknownPart(what string) []parts { return []parts{{{Unknown: what}}} }

func literal(s string) []parts { return []parts{{{Text: s}}} }

// concat is every alternative of a followed by every alternative of b.
func concat(a, b []parts) []parts {
	if len(a)*len(b) > maxForms {
		return unknownPart("a value with more than " + strconv.Itoa(maxForms) + " Fn::If branches")
	}
	out := make([]parts, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, append(slices.Clip(x), y...))
		}
	}
	return out
}

func (e *evaluator) eval(n *yaml.Node, depth int) []parts {
	n = resolve(n)
	if n == nil || depth > 32 {
		return unknownPart("a value nested too deep")
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return literal(n.Value)
	case yaml.MappingNode:
	default:
		return unknownPart("a list")
	}
	fn := intrinsic(n)
	arg := resolve(n.Content[1])
	switch fn {
	case "Ref":
		if arg.Kind == yaml.ScalarNode {
			return e.ref(arg.Value)
		}
	case "Fn::GetAtt":
		var id, attr string
		switch {
		case arg.Kind == yaml.ScalarNode:
			id, attr, _ = strings.Cut(arg.Value, ".")
		case arg.Kind == yaml.SequenceNode && len(arg.Content) == 2:
			id, attr = resolve(arg.Content[0]).Value, resolve(arg.Content[1]).Value
		}
		return e.getAtt(id, attr)
	case "Fn::Sub":
		return e.sub(arg, depth)
	case "Fn::Join":
		if arg.Kind == yaml.SequenceNode && len(arg.Content) == 2 {
			delim, list := resolve(arg.Content[0]), resolve(arg.Content[1])
			if delim.Kind == yaml.ScalarNode && list.Kind == yaml.SequenceNode {
				out := literal("")
				for i, it := range list.Content {
					if i > 0 {
						out = concat(out, literal(delim.Value))
					}
					out = concat(out, e.eval(it, depth+1))
				}
				return out
			}
		}
	case "Fn::If":
		if arg.Kind == yaml.SequenceNode && len(arg.Content) == 3 {
			a, b := e.eval(arg.Content[1], depth+1), e.eval(arg.Content[2], depth+1)
			if len(a)+len(b) > maxForms {
				return unknownPart("a value with more than " + strconv.Itoa(maxForms) + " Fn::If branches")
			}
			return append(slices.Clip(a), b...)
		}
	case "Fn::Select":
		if arg.Kind == yaml.SequenceNode && len(arg.Content) == 2 {
			idx, list := resolve(arg.Content[0]), resolve(arg.Content[1])
			if i, err := strconv.Atoi(idx.Value); err == nil && idx.Kind == yaml.ScalarNode && list.Kind == yaml.SequenceNode && i >= 0 && i < len(list.Content) {
				return e.eval(list.Content[i], depth+1)
			}
		}
	case "Fn::FindInMap":
		if arg.Kind == yaml.SequenceNode && len(arg.Content) >= 3 {
			m := value(value(e.t.Node, "Mappings"), resolve(arg.Content[0]).Value)
			for _, k := range arg.Content[1:3] {
				ks := e.eval(k, depth+1)
				if m == nil || len(ks) != 1 || len(ks[0]) != 1 || ks[0][0].Unknown != "" {
					m = nil
					break
				}
				m = value(m, ks[0][0].Text)
			}
			if m != nil && m.Kind == yaml.ScalarNode {
				return literal(m.Value)
			}
		}
	}
	if fn == "" {
		return unknownPart("a mapping")
	}
	return unknownPart(describe(fn, arg))
}

// describe names an intrinsic whose value cairn cannot know, for messages.
func describe(fn string, arg *yaml.Node) string {
	if arg.Kind == yaml.ScalarNode && len(arg.Value) <= 64 {
		return fn + " " + arg.Value
	}
	return fn
}

// ref is what Ref name may be.
func (e *evaluator) ref(name string) []parts {
	if v, ok := e.values[name]; ok {
		return literal(v)
	}
	if v, ok := e.pseudo[name]; ok {
		return literal(v)
	}
	if name == "AWS::NoValue" {
		return literal("")
	}
	if _, ok := e.t.Parameters[name]; ok || strings.HasPrefix(name, "AWS::") {
		e.unknown[name] = true
		if strings.HasPrefix(name, "AWS::") {
			return unknownPart(name)
		}
		return unknownPart("parameter " + name)
	}
	if e.types[name] == "AWS::S3::Bucket" {
		return []parts{{{Unknown: "Ref " + name, Own: true}}}
	}
	return unknownPart("Ref " + name)
}

// ownDomains are the attributes of an AWS::S3::Bucket that are its own domain names.
var ownDomains = map[string]bool{"DomainName": true, "RegionalDomainName": true, "DualStackDomainName": true}

// getAtt is what Fn::GetAtt id.attr may be.
func (e *evaluator) getAtt(id, attr string) []parts {
	if e.types[id] == "AWS::S3::Bucket" && ownDomains[attr] {
		return []parts{{{Unknown: "Fn::GetAtt " + id + "." + attr, Own: true}}}
	}
	return unknownPart("Fn::GetAtt " + id + "." + attr)
}

// sub is what Fn::Sub arg may be.
func (e *evaluator) sub(arg *yaml.Node, depth int) []parts {
	var vars *yaml.Node
	if arg.Kind == yaml.SequenceNode && len(arg.Content) == 2 {
		arg, vars = resolve(arg.Content[0]), resolve(arg.Content[1])
	}
	if arg.Kind != yaml.ScalarNode {
		return unknownPart("Fn::Sub")
	}
	s := arg.Value
	out := literal("")
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return concat(out, literal(s))
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return concat(out, literal(s))
		}
		out = concat(out, literal(s[:i]))
		name := s[i+2 : i+j]
		switch {
		case strings.HasPrefix(name, "!"):
			out = concat(out, literal("${"+name[1:]+"}"))
		case vars != nil && value(vars, name) != nil:
			out = concat(out, e.eval(value(vars, name), depth+1))
		case strings.Contains(name, ".") && !strings.HasPrefix(name, "AWS::"):
			id, attr, _ := strings.Cut(name, ".")
			out = concat(out, e.getAtt(id, attr))
		default:
			out = concat(out, e.ref(name))
		}
		s = s[i+j+1:]
	}
}
