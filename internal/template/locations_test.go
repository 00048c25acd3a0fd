package template

import (
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/resourcespec"
)

// show renders a location's forms: URL text, or BUCKET|KEY for the object form, with
// unknown parts as <what> (own buckets as <own:what>).
func show(l S3Location) []string {
	render := func(ps []bucket.Part) string {
		var b strings.Builder
		for _, p := range ps {
			switch {
			case p.Own:
				b.WriteString("<own:" + p.Unknown + ">")
			case p.Unknown != "":
				b.WriteString("<" + p.Unknown + ">")
			default:
				b.WriteString(p.Text)
			}
		}
		return b.String()
	}
	var out []string
	for _, f := range l.Forms {
		if f.Object {
			out = append(out, render(f.Bucket)+"|"+render(f.Key))
		} else {
			out = append(out, render(f.URL))
		}
	}
	return out
}

// TestS3Locations: each way a template names an S3 object, and what cairn makes of the
// intrinsic functions that compute one.
func TestS3Locations(t *testing.T) {
	const fn = "Resources:\n  Fn:\n    Type: AWS::Lambda::Function\n    Properties:\n"
	tests := []struct {
		name, body string
		values     map[string]string
		at         string
		want       []string
		unknown    []string
	}{
		{"Code literal", fn + "      Code: {S3Bucket: b, S3Key: k.zip}\n", nil, "Resources.Fn.Properties.Code", []string{"b|k.zip"}, nil},
		{"Code from parameters", "Parameters:\n  B: {Type: String}\n  K: {Type: String}\n" + fn + "      Code: {S3Bucket: !Ref B, S3Key: !Ref K}\n",
			map[string]string{"B": "mine"}, "Resources.Fn.Properties.Code", []string{"mine|<parameter K>"}, []string{"K"}},
		{"Code ZipFile is none", fn + "      Code: {ZipFile: 'def h(e, c): pass'}\n", nil, "", nil, nil},
		{"Code, a bundle path is packaged", fn + "      Code: ./dist/fn.zip\n", nil, "", nil, nil},
		{"Fn::If both branches", "Conditions:\n  C: !Equals [a, b]\n" + fn + "      Code: {S3Bucket: !If [C, x, y], S3Key: k}\n", nil, "Resources.Fn.Properties.Code", []string{"x|k", "y|k"}, nil},
		{"Fn::Sub with pseudo parameters and a variable map", "Resources:\n  S:\n    Type: AWS::CloudFormation::Stack\n    Properties:\n      TemplateURL: !Sub ['https://${B}.s3.${AWS::Region}.${AWS::URLSuffix}/${!Literal}/t.json', {B: !ImportValue shared}]\n",
			map[string]string{"AWS::Region": "cn-north-1"}, "Resources.S.Properties.TemplateURL", []string{"https://<Fn::ImportValue shared>.s3.cn-north-1.amazonaws.com.cn/${Literal}/t.json"}, nil},
		{"Fn::Join, Fn::Select and Fn::FindInMap", "Mappings:\n  M:\n    eu-west-1: {Bucket: eu-bucket}\n" + fn + "      Code:\n        S3Bucket: !FindInMap [M, !Ref AWS::Region, Bucket]\n        S3Key: !Join ['/', [code, !Select [1, [a, b]], !GetAtt Other.Arn]]\n",
			map[string]string{"AWS::Region": "eu-west-1"}, "Resources.Fn.Properties.Code", []string{"eu-bucket|code/b/<Fn::GetAtt Other.Arn>"}, nil},
		{"the template's own bucket", "Resources:\n  Art:\n    Type: AWS::S3::Bucket\n  S:\n    Type: AWS::CloudFormation::Stack\n    Properties:\n      TemplateURL: !Sub 'https://${Art.RegionalDomainName}/x.json'\n",
			nil, "Resources.S.Properties.TemplateURL", []string{"https://<own:Fn::GetAtt Art.RegionalDomainName>/x.json"}, nil},
		{"an unknown pseudo parameter", "Resources:\n  L:\n    Type: AWS::Lambda::LayerVersion\n    Properties:\n      Content: {S3Bucket: !Sub 'cairn-${AWS::AccountId}', S3Key: l.zip}\n",
			nil, "Resources.L.Properties.Content", []string{"cairn-<AWS::AccountId>|l.zip"}, []string{"AWS::AccountId"}},
		{"AWS::Include", "Resources:\n  Fn::Transform:\n    Name: AWS::Include\n    Parameters: {Location: 's3://b/snippet.yaml'}\n", nil, "Resources.Fn::Transform.Parameters.Location", []string{"s3://b/snippet.yaml"}, nil},
		{"SAM CodeUri object form", "Transform: AWS::Serverless-2016-10-31\nResources:\n  F:\n    Type: AWS::Serverless::Function\n    Properties:\n      CodeUri: {Bucket: b, Key: k}\n", nil, "Resources.F.Properties.CodeUri", []string{"b|k"}, nil},
		{"Glue script", "Resources:\n  J:\n    Type: AWS::Glue::Job\n    Properties:\n      Command: {ScriptLocation: 's3://b/job.py'}\n", nil, "Resources.J.Properties.Command.ScriptLocation", []string{"s3://b/job.py"}, nil},
		{"a bucket's ARN", "Resources:\n  A:\n    Type: AWS::KinesisAnalyticsV2::Application\n    Properties:\n      RuntimeEnvironment: FLINK-1_18\n      ServiceExecutionRole: arn:aws:iam::1:role/r\n" +
			"      ApplicationConfiguration:\n        ApplicationCodeConfiguration:\n          CodeContentType: ZIPFILE\n          CodeContent:\n            S3ContentLocation: {BucketARN: !Sub 'arn:${AWS::Partition}:s3:::b', FileKey: app.zip}\n",
			nil, "Resources.A.Properties.ApplicationConfiguration.ApplicationCodeConfiguration.CodeContent.S3ContentLocation", []string{"b|app.zip"}, []string{"AWS::Partition"}},
		{"a canary's code, from the specification", "Resources:\n  C:\n    Type: AWS::Synthetics::Canary\n    Properties:\n      Code: {Handler: h, S3Bucket: b, S3Key: c.zip}\n",
			nil, "Resources.C.Properties.Code", []string{"b|c.zip"}, nil},
		{"Beanstalk SourceBundle", "Resources:\n  V:\n    Type: AWS::ElasticBeanstalk::ApplicationVersion\n    Properties:\n      ApplicationName: a\n      SourceBundle: {S3Bucket: b, S3Key: app.zip}\n", nil, "Resources.V.Properties.SourceBundle", []string{"b|app.zip"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, err := Parse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			locs := tp.S3Locations(tt.values)
			if tt.at == "" {
				if len(locs) != 0 {
					t.Fatalf("locations %+v, want none", locs)
				}
				return
			}
			if len(locs) != 1 {
				t.Fatalf("%d locations %+v, want one", len(locs), locs)
			}
			if l := locs[0]; l.At != tt.at || !slices.Equal(show(l), tt.want) || !slices.Equal(l.Unknown, tt.unknown) {
				t.Errorf("got %s %q unknown %v, want %s %q unknown %v", l.At, show(l), l.Unknown, tt.at, tt.want, tt.unknown)
			}
		})
	}
}

// TestLocationPropertiesCoverWhatIsPackaged: every property cairn packages (the AWS CLI's
// list and its additions) is one S3Locations reads, and the nested stacks' URLs and the
// resource specification's S3 objects too.
func TestLocationPropertiesCoverWhatIsPackaged(t *testing.T) {
	props := LocationProperties()
	for _, p := range PackageableProperties() {
		if !p.Metadata && !slices.Contains(props, p.Type+"."+p.Property) {
			t.Errorf("%s.%s is packaged but its S3 location is not checked", p.Type, p.Property)
		}
	}
	for typ, prop := range nestedTypes {
		if !slices.Contains(props, typ+"."+prop) {
			t.Errorf("%s.%s is not checked", typ, prop)
		}
	}
	// and the object forms of the resource specification
	for _, p := range []string{"AWS::Synthetics::Canary.Code", "AWS::GameLift::Build.StorageLocation", "AWS::SageMaker::Pipeline.PipelineDefinition.PipelineDefinitionS3Location",
		"AWS::CodeDeploy::DeploymentGroup.Deployment.Revision.S3Location", "AWS::KinesisAnalyticsV2::Application.ApplicationConfiguration.ApplicationCodeConfiguration.CodeContent.S3ContentLocation"} {
		if !slices.Contains(props, p) {
			t.Errorf("%s is not checked", p)
		}
	}
}

// TestScanSSMReferences: the references to Parameter Store parameters of a value, and
// those cairn cannot tell.
func TestScanSSMReferences(t *testing.T) {
	lit := func(s string) []bucket.Part { return []bucket.Part{{Text: s}} }
	tests := []struct {
		name string
		in   []bucket.Part
		want []string // names, or ?Text for an unknown
	}{
		{"ssm", lit("x {{resolve:ssm:/web/db/user}} y"), []string{"/web/db/user"}},
		{"version", lit("{{resolve:ssm:/web/db/user:3}}"), []string{"/web/db/user:3"}},
		{"secure", lit("{{resolve:ssm-secure:/web/db/password}}"), []string{"/web/db/password"}},
		{"ARN", lit("{{resolve:ssm:arn:aws:ssm:us-east-1:1:parameter/web/x}}"), []string{"/web/x"}},
		{"two", lit("{{resolve:ssm:a}}{{resolve:ssm:/b}}"), []string{"a", "/b"}},
		{"secretsmanager is not SSM", lit("{{resolve:secretsmanager:s:SecretString:k}}"), nil},
		{"never closed", lit("{{resolve:ssm:/web/x"), nil},
		{"no braces", lit("resolve:ssm:/web/x"), nil},
		{"name unknown", []bucket.Part{{Text: "{{resolve:ssm:/"}, {Unknown: "parameter Env"}, {Text: "/x}}"}}, []string{"?{{resolve:ssm:/${parameter Env}/x}}"}},
		{"service unknown", []bucket.Part{{Text: "{{resolve:"}, {Unknown: "Fn::ImportValue s"}, {Text: ":/x}}"}}, []string{"?{{resolve:${Fn::ImportValue s}:/x}}"}},
		{"braces unknown", []bucket.Part{{Unknown: "Fn::ImportValue b"}, {Text: "resolve:ssm:/web/x}}"}}, []string{"?{{resolve:ssm:/web/x}}"}},
		{"split word", []bucket.Part{{Text: "{{reso"}, {Unknown: "Fn::GetAtt C.V"}, {Text: "lve:ssm:/web/x}}"}}, []string{"?{{reso${Fn::GetAtt C.V}lve:ssm:/web/x}}"}},
		{"unknown beside no reference", []bucket.Part{{Text: "arn:"}, {Unknown: "AWS::Partition"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range ScanSSMReferences(tt.in) {
				if r.Name == "" {
					got = append(got, "?"+r.Text)
				} else {
					got = append(got, r.Name)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMayReferToSSM: the filter that spares a walk of templates that cannot make a
// dynamic reference reads the parsed strings, so an escaped "{{" counts.
func TestMayReferToSSM(t *testing.T) {
	for body, want := range map[string]bool{
		"Resources:\n  Q:\n    Type: AWS::SQS::Queue\n":                                                         false,
		"Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: '{{resolve:ssm:/x}}'}\n":      true,
		"Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: \"\\x7b\\x7bres\\x6flve\"}\n": true,
		"Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: !Join ['', ['{{', x]]}\n":     true,
	} {
		tp, err := Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if got := tp.MayReferToSSM(); got != want {
			t.Errorf("MayReferToSSM(%q) = %v, want %v", body, got, want)
		}
	}
}

// objectForms are the pairs of keys by which the resource specification's objects name
// an S3 object.
var objectForms = [][2]string{{"S3Bucket", "S3Key"}, {"Bucket", "Key"}, {"BucketName", "Key"}, {"BucketName", "ObjectKey"},
	{"S3BucketName", "S3ObjectKey"}, {"BucketArn", "FileKey"}, {"BucketARN", "FileKey"}}

// TestSpecObjectLocationsAreCurrent: specObjectLocations are exactly the objects of the
// resource specification (internal/resourcespec) outside lists that hold one of objectForms, so
// a specification update that adds one fails here until it is listed.
func TestSpecObjectLocationsAreCurrent(t *testing.T) {
	var found []locationProperty
	var walk func(typ, path string, s *resourcespec.Shape, depth int)
	walk = func(typ, path string, s *resourcespec.Shape, depth int) {
		if s == nil || s.Properties == nil || depth > 6 {
			return
		}
		for _, f := range objectForms {
			if path != "" && s.Properties[f[0]] != nil && s.Properties[f[1]] != nil {
				found = append(found, locationProperty{Type: typ, Property: path, Bucket: f[0], Key: f[1]})
			}
		}
		for _, name := range s.PropertyNames() {
			np := name
			if path != "" {
				np = path + "." + name
			}
			walk(typ, np, s.Properties[name], depth+1)
		}
	}
	for _, name := range resourcespec.TypeNames() {
		if ty := resourcespec.Lookup(name); ty != nil {
			walk(name, "", ty.Properties, 0)
		}
	}
	if !slices.Equal(found, specObjectLocations) {
		for _, p := range found {
			if !slices.Contains(specObjectLocations, p) {
				t.Errorf("missing from specObjectLocations: {Type: %q, Property: %q, Bucket: %q, Key: %q}", p.Type, p.Property, p.Bucket, p.Key)
			}
		}
		for _, p := range specObjectLocations {
			if !slices.Contains(found, p) {
				t.Errorf("not in the specification: %+v", p)
			}
		}
	}
}
