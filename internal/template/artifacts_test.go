package template

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/cairn-dev/cairn/internal/artifact"
)

const artifactsTemplate = `Transform: [AWS::Serverless-2016-10-31, AWS::LanguageExtensions]
Metadata:
  AWS::ServerlessRepo::Application: {Name: app, ReadmeUrl: README.md, LicenseUrl: s3://b/LICENSE}
Globals:
  Function: {Runtime: python3.12}
Resources:
  Api:
    Type: AWS::Serverless::Function
    Properties: {Handler: app.handler, CodeUri: src/}
  Inline:
    Type: AWS::Serverless::Function
    Properties: {Handler: index.handler, InlineCode: "def handler(e, c): pass"}
  Omitted:
    Type: AWS::Serverless::Function
    Properties: {Handler: index.handler}
  Plain:
    Type: AWS::Lambda::Function
    Properties:
      Code: ./dist/fn.zip
      Handler: index.handler
      Role: arn:aws:iam::123456789012:role/r
      Runtime: nodejs20.x
      Layers: [!Ref Layer, arn:aws:lambda:us-east-1:123456789012:layer:x:1]
  Remote:
    Type: AWS::Lambda::Function
    Properties:
      Code: {S3Bucket: b, S3Key: k}
      Handler: index.handler
      Role: arn:aws:iam::123456789012:role/r
      Runtime: nodejs20.x
  Layer:
    Type: AWS::Lambda::LayerVersion
    Properties: {Content: "layer"}
  Machine:
    Type: AWS::StepFunctions::StateMachine
    Properties: {RoleArn: arn:aws:iam::123456789012:role/r, DefinitionS3Location: statemachine/definition.json}
  Script:
    Type: AWS::Glue::Job
    Properties: {Role: r, Command: {Name: glueetl, ScriptLocation: jobs/etl.py}}
  Fn::ForEach::Queues:
    - Name
    - [a, b]
    - Worker${Name}:
        Type: AWS::Lambda::Function
        Properties:
          Code: workers
          Handler: index.handler
          Role: arn:aws:iam::123456789012:role/r
          Runtime: nodejs20.x
  Snippet:
    Type: AWS::SNS::Topic
    Properties:
      Fn::Transform: {Name: AWS::Include, Parameters: {Location: snippets/topic.yaml}}
`

func TestArtifactsFound(t *testing.T) {
	tpl := mustParse(t, artifactsTemplate)
	var got []string
	for _, a := range tpl.Artifacts() {
		got = append(got, fmt.Sprintf("%s %s=%q zip=%v %d:%d", cmpOr(a.LogicalID, "-"), a.Property, a.Path, a.Zip, a.Line, a.Col))
	}
	want := []string{
		`Api CodeUri="src/" zip=true 9:49`,
		`Omitted CodeUri="" zip=true 13:3`, // the template's folder, as the CLI does
		`Plain Code="./dist/fn.zip" zip=true 19:13`,
		`Layer Content="layer" zip=true 33:27`,
		`Machine DefinitionS3Location="statemachine/definition.json" zip=false 36:83`,
		`Script Command.ScriptLocation="jobs/etl.py" zip=false 39:68`,
		`Worker${Name} Code="workers" zip=true 46:17`,
		`Metadata ReadmeUrl="README.md" zip=false 3:60`,
		`- Location="snippets/topic.yaml" zip=false 53:66`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("artifacts\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, a := range tpl.Artifacts() {
		if a.LogicalID == "Plain" && (!slices.Equal(a.Layers, []string{"Layer"}) || a.LayerCount != 2) {
			t.Errorf("layers of Plain: %v of %d", a.Layers, a.LayerCount)
		}
	}
	// Code given as a path is not a schema error: it is packaged before CloudFormation
	// reads it.
	for _, p := range tpl.Check() {
		if strings.Contains(p.Path, "Code") || strings.Contains(p.Path, "DefinitionS3Location") {
			t.Errorf("a packaged property was checked as written: %v", p)
		}
	}
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// TestPackageArtifacts: each artifact is replaced by its S3 location in the form its
// property takes, in YAML and JSON, the rest of the text as written; the same artifact
// named twice is stored once; an omitted CodeUri gets the template's folder.
func TestPackageArtifacts(t *testing.T) {
	files := fstest.MapFS{
		"app/template.yaml":     {Data: []byte("x")},
		"app/src/app.py":        {Data: []byte("def handler(e, c): return 1\n")},
		"app/dist/fn.zip":       {Data: []byte("PK\x05\x06" + strings.Repeat("\x00", 18))},
		"app/defs/sm.json":      {Data: []byte(`{"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`)},
		"app/layer/python/x.py": {Data: []byte("X = 1\n")},
	}
	yamlBody := `Transform: AWS::Serverless-2016-10-31
Resources:
  Fn:   # the function
    Type: AWS::Serverless::Function
    Properties:
      Handler: app.handler
      CodeUri: src/
  Again:
    Type: AWS::Serverless::Function
    Properties: {Handler: app.handler, CodeUri: "./src"}
  Plain:
    Type: AWS::Lambda::Function
    Properties:
      Code: 'dist/fn.zip'
  Machine:
    Type: AWS::StepFunctions::StateMachine
    Properties:
      DefinitionS3Location: defs/sm.json
`
	jsonBody := `{"Resources": {"Layer": {"Type": "AWS::Lambda::LayerVersion", "Properties": {"Content": "layer"}}}}`
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"yaml", yamlBody, []string{
			"  Fn:   # the function\n",
			"      CodeUri: s3://assets-eu/assets/",
			`Properties: {Handler: app.handler, CodeUri: "s3://assets-eu/assets/`,
			`      Code: {"S3Bucket": "assets-eu", "S3Key": "assets/`,
			`      DefinitionS3Location: {"Bucket": "assets-eu", "Key": "assets/`,
		}},
		{"json", jsonBody, []string{`"Content": {"S3Bucket": "assets-eu", "S3Key": "assets/`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := &Tree{Template: mustParse(t, tc.body), Path: "app/template.yaml", Assets: artifact.NewSet(files)}
			p, err := tree.Package(nil, "assets-eu")
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(p.Body), w) {
					t.Errorf("packaged template lacks %q:\n%s", w, p.Body)
				}
			}
			again := mustParse(t, string(p.Body))
			if len(again.Artifacts()) != 0 {
				t.Errorf("still names local artifacts: %+v", again.Artifacts())
			}
			if tc.name == "yaml" && len(p.Assets) != 3 {
				t.Errorf("%d assets, want src/ once, fn.zip, sm.json: %+v", len(p.Assets), p.Assets)
			}
			for _, a := range p.Assets {
				if !strings.HasPrefix(a.Key, "assets/"+a.Digest.SHA256+".") {
					t.Errorf("asset %+v not addressed by its content", a)
				}
			}
		})
	}
	omitted := &Tree{Template: mustParse(t, "Transform: AWS::Serverless-2016-10-31\nResources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties: {Handler: app.handler}\n"),
		Path: "app/template.yaml", Assets: artifact.NewSet(files)}
	p, err := omitted.Package(nil, "b")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Assets) != 1 || p.Assets[0].Source.Path != "app" || !strings.Contains(string(p.Body), "CodeUri: 's3://b/assets/") || len(mustParse(t, string(p.Body)).Artifacts()) != 0 {
		t.Errorf("omitted CodeUri: %+v\n%s", p.Assets, p.Body)
	}
	code, err := omitted.Code()
	if err != nil || len(code) != 1 || code["app/"] != p.Assets[0].Digest.SHA256 {
		t.Errorf("Code() = %v, %v", code, err)
	}
}

// TestPackageablePropertiesMatchTheAWSCLI reads the list `aws cloudformation package`
// packages from the installed AWS CLI's own source (its artifact_exporter) and requires
// cairn to package each of them the same way: zipped or not, string or object with the
// same keys, omitted properties alike (for the Serverless types; see Packageable.Omitted).
func TestPackageablePropertiesMatchTheAWSCLI(t *testing.T) {
	const script = `
import json, awscli
from awscli.customizations.cloudformation import artifact_exporter as ae
out = []
for c in ae.RESOURCES_EXPORT_LIST + ae.METADATA_EXPORT_LIST:
    out.append({"type": c.RESOURCE_TYPE, "property": c.PROPERTY_NAME, "zip": c.FORCE_ZIP,
        "omitted": c.PACKAGE_NULL_PROPERTY, "bucket": getattr(c, "BUCKET_NAME_PROPERTY", None) or "",
        "key": getattr(c, "OBJECT_KEY_PROPERTY", None) or "", "version": getattr(c, "VERSION_PROPERTY", None) or "",
        "metadata": c in ae.METADATA_EXPORT_LIST})
print(json.dumps({"version": awscli.__version__, "exporters": out, "global": list(ae.GLOBAL_EXPORT_DICT)}))
`
	out, err := exec.Command("python3", "-c", script).Output()
	if err != nil {
		t.Skipf("the AWS CLI (awscli) is not installed for python3: %v", err)
	}
	var cli struct {
		Version   string
		Exporters []struct {
			Type, Property, Bucket, Key, Version string
			Zip, Omitted, Metadata               bool
		}
		Global []string
	}
	if err := json.Unmarshal(out, &cli); err != nil {
		t.Fatal(err)
	}
	t.Logf("AWS CLI %s: %d exporters", cli.Version, len(cli.Exporters))
	ours := PackageableProperties()
	for _, e := range cli.Exporters {
		if (e.Type == "AWS::CloudFormation::Stack" && e.Property == "TemplateURL") || (e.Type == "AWS::Serverless::Application" && e.Property == "Location") {
			if nestedTypes[e.Type] != e.Property {
				t.Errorf("%s %s: a nested template the CLI packages, not a nested stack here", e.Type, e.Property)
			}
			continue
		}
		i := slices.IndexFunc(ours, func(p Packageable) bool { return p.Type == e.Type && p.Property == e.Property })
		if i < 0 {
			t.Errorf("the AWS CLI packages %s %s; cairn does not", e.Type, e.Property)
			continue
		}
		p := ours[i]
		omitted := e.Omitted && strings.HasPrefix(e.Type, "AWS::Serverless::") && !e.Metadata
		if p.Zip != e.Zip || p.Bucket != e.Bucket || p.Key != e.Key || p.Version != e.Version || p.Metadata != e.Metadata || p.Origin != awsCLI ||
			(p.Omitted != omitted && !strings.HasPrefix(e.Type, "AWS::Serverless::Application")) {
			t.Errorf("%s %s: cairn %+v, the AWS CLI %+v", e.Type, e.Property, p, e)
		}
	}
	for _, p := range ours {
		if p.Origin == awsCLI && !slices.ContainsFunc(cli.Exporters, func(e struct {
			Type, Property, Bucket, Key, Version string
			Zip, Omitted, Metadata               bool
		}) bool {
			return e.Type == p.Type && e.Property == p.Property
		}) {
			t.Errorf("%s %s is marked as the AWS CLI's, which does not package it", p.Type, p.Property)
		}
	}
	if !slices.Equal(cli.Global, []string{"Fn::Transform"}) {
		t.Errorf("the CLI packages globally %v; cairn: Fn::Transform (AWS::Include)", cli.Global)
	}
}

// TestTreeOfSharedTemplatesIsWalkedOnce: twenty templates each nesting the next twice make
// 2^21-2 nested stacks; packaging and counting visit each template once.
func TestTreeOfSharedTemplatesIsWalkedOnce(t *testing.T) {
	tree := doubling(t, 20)
	start := time.Now()
	stacks, resources := tree.Count()
	if stacks != 1<<21-2 || resources != 3<<20-2 {
		t.Errorf("count %d stacks, %d resources; want %d, %d", stacks, resources, 1<<21-2, 3<<20-2)
	}
	p, err := tree.Package(func(sha string) string { return "https://b/templates/" + sha + ".json" }, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Templates) != 20 {
		t.Errorf("%d templates to store, want each of the 20 once", len(p.Templates))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Logf("slow: %v", d) // the figure is the benchmark's; exponential work would never end
	}
}

// doubling is a tree of n+1 templates, each nesting the next one twice.
func doubling(t testing.TB, n int) *Tree {
	leaf := &Tree{Template: mustParseTB(t, "Resources:\n  Q: {Type: AWS::SQS::Queue}\n"), Path: fmt.Sprintf("t%d.yaml", n)}
	for i := n - 1; i >= 0; i-- {
		body := fmt.Sprintf("Resources:\n  A: {Type: AWS::CloudFormation::Stack, Properties: {TemplateURL: t%d.yaml}}\n  B: {Type: AWS::CloudFormation::Stack, Properties: {TemplateURL: t%d.yaml}}\n", i+1, i+1)
		leaf = &Tree{Template: mustParseTB(t, body), Path: fmt.Sprintf("t%d.yaml", i), Children: map[string]*Tree{"A": leaf, "B": leaf}}
	}
	return leaf
}

func mustParseTB(t testing.TB, body string) *Template {
	t.Helper()
	tpl, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func BenchmarkPackageDoublingTree(b *testing.B) {
	tree := doubling(b, 20)
	for b.Loop() {
		if _, err := tree.Package(func(sha string) string { return sha }, ""); err != nil {
			b.Fatal(err)
		}
	}
}
