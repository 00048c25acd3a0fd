package awslocal_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cairn-dev/cairn/internal/artifact"
	"github.com/cairn-dev/cairn/internal/template"
)

// The corpus keeps templates, not the code and definitions beside them that `sam build`
// and `aws cloudformation package` would read. cairn packages local artifacts and refuses
// a template naming one its bundle lacks, as `aws cloudformation package` does, so each
// template is deployed in a bundle holding a small stub at every path it names: which
// paths, and what each property takes, come from cairn's own list of packageable
// properties (template.Artifacts), so a property cairn learns to package is stubbed here
// without a second list to keep.

// samHarnessFiles are the placeholders of the SAM project's integration templates (the
// corpus's samint-*), as its harness fills them: integration/helpers/file_resources.py's
// CODE_KEY_TO_FILE_MAP names the file each stands for, which base_test.py uploads to its
// bucket before replacing ${KEY} by that object's s3:// URI. The templates are only ever
// deployed that way: the literal "${codeuri}" is no path in any bundle (cairn rightly
// refuses it as a missing artifact) and no S3 URI CloudFormation would take, so the test
// does what the harness does instead of expecting an error no user meets.
var samHarnessFiles = map[string]string{
	"codeuri":       "code.zip",
	"contenturi":    "layer1.zip",
	"definitionuri": "swagger1.json",
}

// samHarnessBucket is where the test uploads the harness's files (and cairn's packaging
// stores the artifacts it builds).
const samHarnessBucket = "cairn-packaged"

// fillHarnessPlaceholders replaces the SAM harness's placeholders in body by the S3 URIs
// of the files they stand for.
func fillHarnessPlaceholders(body []byte) []byte {
	for key, file := range samHarnessFiles {
		body = bytes.ReplaceAll(body, []byte("${"+key+"}"), []byte("s3://"+samHarnessBucket+"/"+file))
	}
	return body
}

// harnessObjects are the objects the harness's placeholders name, by key: a function's
// code and a layer as zips, an API definition.
func harnessObjects(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, file := range samHarnessFiles {
		var body []byte
		switch file {
		case "code.zip":
			body = zipOf(t, fstest.MapFS{"index.js": {Data: []byte(nodeHandler("handler"))}})
		case "layer1.zip":
			body = zipOf(t, fstest.MapFS{"nodejs/README": {Data: []byte("layer stub\n")}})
		case "swagger1.json":
			body = []byte(openAPIStub(file))
		default:
			t.Fatalf("no stub for the SAM harness's %s", file)
		}
		out[file] = body
	}
	return out
}

// zipOf is the deterministic zip of files, as cairn builds a folder.
func zipOf(t *testing.T, files fstest.MapFS) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := artifact.Write(files, artifact.Source{Path: ".", Zip: true}, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// artifactStubs returns the files of the bundle that stand in for what the template (at
// tplPath in the bundle, parsed as tpl) names as local artifacts: a function's code is a
// folder holding a handler file for each function using it (a zip holding them when the
// path names a zip), a layer a folder with one file, a state machine definition a minimal
// ASL document, an API definition a minimal OpenAPI document, in the format its extension
// says; any other artifact a small text file. An artifact the test cannot stub (an
// AWS::Include outside an API definition: what the snippet must be depends on where it
// goes) is an error.
func artifactStubs(t *testing.T, tplPath string, tpl *template.Template) (fstest.MapFS, error) {
	t.Helper()
	var m map[string]any
	if err := tpl.Node.Decode(&m); err != nil {
		return nil, err
	}
	tree := &template.Tree{Template: tpl, Path: tplPath}
	out := fstest.MapFS{}
	for _, a := range tpl.Artifacts() {
		src := tree.Source(a)
		switch {
		case a.Kind == artifact.FunctionCode:
			files := fstest.MapFS{}
			for _, fn := range functionsUsing(m, a) {
				name, body := handlerStub(fn)
				files[name] = &fstest.MapFile{Data: []byte(body)}
			}
			if len(files) == 0 {
				files["index.js"] = &fstest.MapFile{Data: []byte(nodeHandler("handler"))}
			}
			addStub(t, out, src.Path, files)
		case a.Kind == artifact.LayerContent, a.Zip:
			addStub(t, out, src.Path, fstest.MapFS{"README": {Data: []byte("stub content of " + a.LogicalID + "\n")}})
		case a.Kind == artifact.StateMachineDefinition:
			out[src.Path] = &fstest.MapFile{Data: []byte(aslStub(src.Path))}
		case isAPIDefinition(a):
			out[src.Path] = &fstest.MapFile{Data: []byte(openAPIStub(src.Path))}
		case a.Type == template.Include.Type:
			return nil, fmt.Errorf("%s: no stub for an AWS::Include there (the snippet depends on where it goes): add one to the test", a.At)
		default:
			out[src.Path] = &fstest.MapFile{Data: []byte("stub " + a.Property + " of " + a.LogicalID + "\n")}
		}
	}
	return out, nil
}

// addStub puts files at p: in the folder p, or zipped into p when p names a zip or jar
// file (`aws cloudformation package` uploads such a file as it is).
func addStub(t *testing.T, out fstest.MapFS, p string, files fstest.MapFS) {
	t.Helper()
	switch strings.ToLower(path.Ext(p)) {
	case ".zip", ".jar":
		out[p] = &fstest.MapFile{Data: zipOf(t, files)}
		return
	}
	for name, f := range files {
		out[path.Join(p, name)] = f
	}
}

// isAPIDefinition says whether the artifact is an API's OpenAPI definition: the
// DefinitionUri of a Serverless API, the BodyS3Location of an API Gateway API, or a
// snippet AWS::Include puts in the DefinitionBody or Body of one.
func isAPIDefinition(a template.Artifact) bool {
	switch a.Type {
	case "AWS::Serverless::Api", "AWS::Serverless::HttpApi", "AWS::ApiGateway::RestApi", "AWS::ApiGatewayV2::Api":
		return true
	case template.Include.Type:
		return strings.Contains(a.At, ".Properties.DefinitionBody.") || strings.Contains(a.At, ".Properties.Body.")
	}
	return false
}

// function is what a stub handler file needs of a function: its Handler and Runtime.
type function struct{ handler, runtime string }

// functionsUsing returns the functions whose code is the artifact: the resource naming it,
// or for SAM's Globals every Serverless function that has no code of its own.
func functionsUsing(m map[string]any, a template.Artifact) []function {
	resources, _ := m["Resources"].(map[string]any)
	globals, _ := m["Globals"].(map[string]any)
	gfn, _ := globals["Function"].(map[string]any)
	props := func(id string) map[string]any {
		r, _ := resources[id].(map[string]any)
		p, _ := r["Properties"].(map[string]any)
		return p
	}
	of := func(p map[string]any) function {
		h, _ := p["Handler"].(string)
		rt, _ := p["Runtime"].(string)
		if h == "" {
			h, _ = gfn["Handler"].(string)
		}
		if rt == "" {
			rt, _ = gfn["Runtime"].(string)
		}
		return function{handler: h, runtime: rt}
	}
	if a.LogicalID != "Globals.Function" {
		return []function{of(props(a.LogicalID))}
	}
	var out []function
	for id, r := range resources {
		r, _ := r.(map[string]any)
		p := props(id)
		if r["Type"] != "AWS::Serverless::Function" || p["CodeUri"] != nil || p["InlineCode"] != nil || p["ImageUri"] != nil {
			continue
		}
		out = append(out, of(p))
	}
	return out
}

// handlerStub is the file a function's Handler names, for its runtime, and a handler
// doing nothing: Python's and Ruby's FILE.FUNCTION, Node's FILE.EXPORT, Java's
// CLASS::METHOD (a class file), .NET's ASSEMBLY::TYPE::METHOD (an assembly), the
// bootstrap of a custom runtime.
func handlerStub(fn function) (name, body string) {
	if fn.handler == "" && !strings.HasPrefix(fn.runtime, "provided") {
		return "handler", "stub handler\n" // a Handler given by an intrinsic function
	}
	mod, export := fn.handler, "handler"
	if i := strings.LastIndex(fn.handler, "."); i > 0 {
		mod, export = fn.handler[:i], fn.handler[i+1:]
	}
	switch rt := fn.runtime; {
	case strings.HasPrefix(rt, "python"):
		// a dotted module is a package path: pkg.mod.handler is pkg/mod.py
		return strings.ReplaceAll(mod, ".", "/") + ".py", "def " + export + "(event, context):\n    return {}\n"
	case strings.HasPrefix(rt, "nodejs"):
		return mod + ".js", nodeHandler(export)
	case strings.HasPrefix(rt, "ruby"):
		return mod + ".rb", "def " + export + "(event:, context:)\n  {}\nend\n"
	case strings.HasPrefix(rt, "java"):
		class, _, _ := strings.Cut(fn.handler, "::")
		return strings.ReplaceAll(class, ".", "/") + ".class", "stub class " + class + "\n"
	case strings.HasPrefix(rt, "dotnet"):
		assembly, _, _ := strings.Cut(fn.handler, "::")
		return assembly + ".dll", "stub assembly " + assembly + "\n"
	case strings.HasPrefix(rt, "provided"):
		return "bootstrap", "#!/bin/sh\n"
	}
	return "handler", "stub handler " + fn.handler + "\n"
}

func nodeHandler(export string) string {
	return "exports." + export + " = async () => ({});\n"
}

// aslStub is the smallest valid state machine: one Pass state, in JSON or YAML as the
// file's extension says.
func aslStub(p string) string {
	if isYAML(p) {
		return "Comment: stub\nStartAt: Done\nStates:\n  Done:\n    Type: Pass\n    End: true\n"
	}
	return `{"Comment": "stub", "StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": true}}}` + "\n"
}

// openAPIStub is the smallest OpenAPI 3 document API Gateway imports: no paths.
func openAPIStub(p string) string {
	if isYAML(p) {
		return "openapi: 3.0.1\ninfo:\n  title: stub\n  version: '1.0'\npaths: {}\n"
	}
	return `{"openapi": "3.0.1", "info": {"title": "stub", "version": "1.0"}, "paths": {}}` + "\n"
}

func isYAML(p string) bool {
	ext := strings.ToLower(path.Ext(p))
	return ext == ".yaml" || ext == ".yml"
}

// TestArtifactStubs checks the stubs against what cairn requires of each kind of
// artifact: every packageable property of a resource, named with a local path, gets a stub
// cairn accepts (a state machine definition is a file, code a folder or a zip).
func TestArtifactStubs(t *testing.T) {
	var res strings.Builder
	res.WriteString("AWSTemplateFormatVersion: '2010-09-09'\nTransform: AWS::Serverless-2016-10-31\nResources:\n")
	want := map[string]bool{}
	for i, p := range template.PackageableProperties() {
		if p.Metadata {
			continue
		}
		// a property under a parent (Command.ScriptLocation) nests its value
		parts := strings.Split(p.Property, ".")
		res.WriteString(fmt.Sprintf("  R%d:\n    Type: %s\n    Properties:\n", i, p.Type))
		indent := "      "
		for _, part := range parts[:len(parts)-1] {
			res.WriteString(indent + part + ":\n")
			indent += "  "
		}
		file := fmt.Sprintf("a%d/", i)
		switch {
		case p.Kind == artifact.StateMachineDefinition:
			file = fmt.Sprintf("a%d.asl.yaml", i)
		case !p.Zip && p.Kind == artifact.Other:
			file = fmt.Sprintf("a%d.json", i)
		}
		if p.Type == "AWS::Serverless::Function" {
			res.WriteString(indent + "Handler: app.handler\n" + indent + "Runtime: python3.12\n")
		}
		res.WriteString(indent + parts[len(parts)-1] + ": " + file + "\n")
		want[fmt.Sprintf("R%d", i)] = true
	}
	tpl, err := template.Parse([]byte(res.String()))
	if err != nil {
		t.Fatal(err)
	}
	stubs, err := artifactStubs(t, "templates/t.yaml", tpl)
	if err != nil {
		t.Fatal(err)
	}
	tree := &template.Tree{Template: tpl, Path: "templates/t.yaml"}
	for _, a := range tpl.Artifacts() {
		delete(want, a.LogicalID)
		src := tree.Source(a)
		info, err := artifact.Stat(stubs, src)
		if err != nil {
			t.Errorf("%s %s: %v", a.Type, a.Property, err)
			continue
		}
		if err := a.Kind.Check(info); err != nil {
			t.Errorf("%s %s: %v", a.Type, a.Property, err)
		}
		if a.Type == "AWS::Serverless::Function" {
			if _, err := fs.Stat(stubs, path.Join(src.Path, "app.py")); err != nil {
				t.Errorf("the function's stub has no app.py for its handler app.handler: %v", err)
			}
		}
		if a.Kind == artifact.StateMachineDefinition && !strings.Contains(string(stubs[src.Path].Data), "StartAt: Done") {
			t.Errorf("%s: %q is no ASL definition in YAML", src.Path, stubs[src.Path].Data)
		}
	}
	if len(want) > 0 {
		t.Errorf("resources whose artifact cairn did not find: %v", want)
	}
	if _, err := artifactStubs(t, "t.yaml", mustParse(t, "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      Tags:\n        Fn::Transform: {Name: AWS::Include, Parameters: {Location: tags.yaml}}\n")); err == nil {
		t.Error("an AWS::Include outside an API definition got a stub; want an error")
	}
}

func mustParse(t *testing.T, body string) *template.Template {
	t.Helper()
	tpl, err := template.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}
