package template

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cairn-dev/cairn/internal/artifact"
)

// FuzzParse parses and checks arbitrary templates: no panic, no hang on aliases, and every
// problem located at a real position. Seeds come from testdata/fuzz/FuzzParse at the
// repository root.
func FuzzParse(f *testing.F) {
	seeds, err := filepath.Glob("../../testdata/fuzz/FuzzParse/*")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata/fuzz/FuzzParse (%v)", err)
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 64<<10 {
			return
		}
		tmpl, err := Parse(body)
		if err != nil {
			return
		}
		for _, p := range tmpl.Check() {
			if p.Line < 1 || p.Col < 1 || p.Msg == "" || p.Path == "" {
				t.Fatalf("problem without a position, path or message: %+v", p)
			}
		}
		for _, n := range tmpl.Needs() {
			if n.Capability == "" || n.Why == "" {
				t.Fatalf("need without a capability or reason: %+v", n)
			}
		}
		values := map[string]string{}
		for name, p := range tmpl.Parameters {
			values[name] = p.Default
		}
		_ = tmpl.CheckParameters(values)
		_ = tmpl.Exports("stack")
		_ = tmpl.ExportsKnown("stack")
		tree := &Tree{Template: tmpl}
		_ = tree.Outside()
		names, _ := tree.Imports()
		if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
			t.Fatalf("imports %q are not sorted and distinct", names)
		}
	})
}

// FuzzPackage: a template that parses still parses once packaged — its nested stacks'
// local TemplateURLs and its local artifacts replaced by S3 locations — and names neither
// any longer. Seeds come from testdata/fuzz/FuzzPackage at the repository root too.
func FuzzPackage(f *testing.F) {
	f.Add("Resources:\n  N:\n    Type: AWS::CloudFormation::Stack\n    Properties:\n      TemplateURL: ./n.yaml\n")
	f.Add(`{"Resources": {"N": {"Type": "AWS::CloudFormation::Stack", "Properties": {"TemplateURL": "n.json"}}}}`)
	f.Add("Resources:\n  N:\n    Type: AWS::CloudFormation::Stack\n    Properties: {TemplateURL: 'sub/n.yaml', Parameters: {A: x}}\n  M:\n    Type: AWS::CloudFormation::Stack\n    Properties:\n      TemplateURL: \"m é.yaml\" # note\n")
	f.Add("Resources:\n  F:\n    Type: AWS::Lambda::Function\n    Properties:\n      Code: ./dist/fn.zip\n      Layers: [!Ref L]\n  L:\n    Type: AWS::Lambda::LayerVersion\n    Properties: {Content: layer/}\n")
	f.Add("Transform: AWS::Serverless-2016-10-31\nGlobals:\n  Function: {Runtime: python3.12}\nResources:\n  F:\n    Type: AWS::Serverless::Function\n    Properties: {Handler: app.handler}\n  S:\n    Type: AWS::StepFunctions::StateMachine\n    Properties:\n      DefinitionS3Location: \"sm.json\"\n      RoleArn: x\n  I:\n    Fn::Transform: {Name: AWS::Include, Parameters: {Location: snippet.yaml}}\n")
	seeds, err := filepath.Glob("../../testdata/fuzz/FuzzPackage/*")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata/fuzz/FuzzPackage (%v)", err)
	}
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	leaf, err := Parse([]byte("Resources:\n  Q: {Type: AWS::SQS::Queue}\n"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string) {
		tpl, err := Parse([]byte(body))
		if err != nil {
			return
		}
		files := fstest.MapFS{}
		tree := &Tree{Template: tpl, Path: "t/template.yaml", Children: map[string]*Tree{}, Assets: artifact.NewSet(files)}
		for _, ns := range tpl.NestedStacks() {
			tree.Children[ns.LogicalID] = &Tree{Template: leaf}
		}
		for _, a := range tpl.Artifacts() {
			if src := tree.Source(a); fs.ValidPath(src.Path) && src.Path != "." {
				files[src.Path] = &fstest.MapFile{Data: []byte("code")}
			} else {
				files["t/code.txt"] = &fstest.MapFile{Data: []byte("code")}
			}
		}
		out, err := tree.Package(func(sha string) string { return "https://b.s3.us-east-1.amazonaws.com/templates/" + sha + ".json" }, "assets-bucket")
		if err != nil {
			return
		}
		again, err := Parse(out.Body)
		if err != nil {
			t.Fatalf("the packaged template does not parse: %v\n%s", err, out.Body)
		}
		if len(tree.Children) > 0 && len(again.NestedStacks()) != 0 {
			t.Fatalf("a local TemplateURL survived packaging:\n%s", out.Body)
		}
		if n := len(again.Artifacts()); n != 0 {
			t.Fatalf("%d local artifacts survived packaging:\n%s", n, out.Body)
		}
	})
}

// fuzzSeeds adds the files of testdata/fuzz/NAME at the repository root as seeds.
func fuzzSeeds(f *testing.F, name string) {
	seeds, err := filepath.Glob("../../testdata/fuzz/" + name + "/*")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata/fuzz/%s (%v)", name, err)
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
}

// FuzzSubVariables: the variables of any Fn::Sub string are trimmed names, a
// Resource.Attribute split at its first dot, each written inside ${ } in the string.
func FuzzSubVariables(f *testing.F) {
	fuzzSeeds(f, "FuzzSubVariables")
	f.Fuzz(func(t *testing.T, s string) {
		words, err := subVariables(s)
		if err != nil && !strings.Contains(s, "${") {
			t.Fatalf("error %v without any ${", err)
		}
		for _, w := range words {
			if w.name == "" || strings.TrimSpace(w.name) != w.name || strings.HasPrefix(w.name, "!") {
				t.Fatalf("variable %q of %q", w.name, s)
			}
			if w.attr != "" && w.res+"."+w.attr != w.name {
				t.Fatalf("GetAtt %q.%q of %q", w.res, w.attr, w.name)
			}
			if !strings.Contains(s, w.name) {
				t.Fatalf("variable %q is not in %q", w.name, s)
			}
		}
	})
}

// FuzzDynamicReferences: the dynamic references of any string are {{resolve:...}} texts
// of it, and judging their syntax never fails.
func FuzzDynamicReferences(f *testing.F) {
	fuzzSeeds(f, "FuzzDynamicReferences")
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range DynamicReferences(s) {
			if !strings.HasPrefix(d.Text, "{{resolve:") || !strings.HasSuffix(d.Text, "}}") || !strings.Contains(s, d.Text) {
				t.Fatalf("reference %q of %q", d.Text, s)
			}
			_ = d.Problem()
			for _, place := range []dynPlace{{section: "Resources", attr: "Properties"}, {section: "Outputs", attr: "Value"}} {
				_ = place.refused(d.Service)
			}
		}
	})
}
