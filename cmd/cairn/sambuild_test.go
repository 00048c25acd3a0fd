package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// samBuildApp copies testdata/bundles/sam-build (a SAM app with a requirements.txt, and
// what `sam build` made of it in .aws-sam/build) to a folder of the test's.
func samBuildApp(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hello")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "testdata", "bundles", "sam-build"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSAMAppThatNeedsBuilding: a function folder deployed as source would fail when first
// called, so validate reports it, and push and plan refuse it, saying what to run: a
// requirements.txt with no package installed beside it, a package.json with dependencies
// and no node_modules, a TypeScript handler with no JavaScript built, Metadata BuildMethod.
// What `sam build` made (.aws-sam/build) is a bundle as it is: init --from its template
// and push it; its outputs are printed.
func TestSAMAppThatNeedsBuilding(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond)
	t.Setenv("CAIRN_BUCKET", localBucket)
	dir := samBuildApp(t)
	cairnOK(t, "init", dir, "--from", filepath.Join(dir, "template.yaml"), "--namespace", "hello")
	want := "function HelloFunction: CodeUri hello/ needs building (requirements.txt lists packages not installed there): run `sam build` and push .aws-sam/build (or build it yourself)"
	for _, args := range [][]string{
		{"validate", dir},
		append([]string{"push", dir, "--deployment", "hello"}, followFlags...),
		append([]string{"plan", dir, "--deployment", "hello"}, followFlags...),
	} {
		out, code := cairnRun(t, args...)
		if code == 0 || !strings.Contains(out, "template.yaml:16:16: Resources.HelloFunction.Properties.CodeUri: "+want) {
			t.Errorf("cairn %s: exit %d, want the function refused as needing a build:\n%s", args[0], code, out)
		}
		if args[0] == "validate" {
			t.Logf("cairn validate %s (exit %d):\n%s", dir, code, out)
		}
	}

	// The other sources that need building, each in a bundle of its own.
	for name, c := range map[string]struct {
		files map[string]string
		why   string
	}{
		"node": {map[string]string{"src/app.js": "exports.handler = async () => require('uuid').v4()\n", "src/package.json": `{"name":"a","dependencies":{"uuid":"^9"}}`},
			"package.json lists dependencies not installed there: no node_modules"},
		"typescript": {map[string]string{"src/app.ts": "export const handler = async () => 1\n", "src/package.json": `{"name":"a","devDependencies":{"typescript":"^5"}}`},
			"its handler app.ts is TypeScript, with no app.js built from it"},
		"makefile": {map[string]string{"src/app.js": "exports.handler = async () => 1\n", "src/Makefile": "build-Fn:\n\tcp app.js $(ARTIFACTS_DIR)\n"},
			"Metadata BuildMethod makefile, which sam build runs"},
	} {
		app := filepath.Join(t.TempDir(), name)
		metadata := ""
		if name == "makefile" {
			metadata = "    Metadata: {BuildMethod: makefile}\n"
		}
		c.files["template.yaml"] = "Transform: AWS::Serverless-2016-10-31\nResources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties: {CodeUri: src/, Handler: app.handler, Runtime: nodejs20.x}\n" + metadata
		c.files["cairn.yaml"] = "namespace: " + name + "\nstacks:\n  - name: app\n    template_path: template.yaml\n"
		for p, body := range c.files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(app, p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(app, p), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want := "function Fn: CodeUri src/ needs building (" + c.why + "): run `sam build` and push .aws-sam/build (or build it yourself)"
		if out, code := cairnRun(t, "validate", app); code != 1 || !strings.Contains(out, want) {
			t.Errorf("validate of the %s app: exit %d, want %q:\n%s", name, code, want, out)
		}
		// Built (dependencies installed, JavaScript compiled, sam build's marks), it is valid.
		switch name {
		case "node":
			os.MkdirAll(filepath.Join(app, "src", "node_modules", "uuid"), 0o755)
			os.WriteFile(filepath.Join(app, "src", "node_modules", "uuid", "index.js"), []byte("exports.v4 = () => 'x'\n"), 0o644)
		case "typescript":
			os.WriteFile(filepath.Join(app, "src", "app.js"), []byte("exports.handler = async () => 1\n"), 0o644)
		case "makefile":
			os.WriteFile(filepath.Join(app, "template.yaml"), []byte(strings.Replace(c.files["template.yaml"], "{BuildMethod: makefile}", "{BuildMethod: makefile, SamResourceId: Fn}", 1)), 0o644)
		}
		if out, code := cairnRun(t, "validate", app); code != 0 {
			t.Errorf("validate of the %s app built: exit %d:\n%s", name, code, out)
		}
	}

	// The build output, as sam build leaves it, named by a cairn.yaml init writes.
	cairnOK(t, "init", dir, "--from", filepath.Join(dir, ".aws-sam", "build", "template.yaml"), "--namespace", "hello", "--force")
	out := cairnOK(t, "validate", dir)
	t.Logf("cairn validate %s:\n%s", dir, out)
	out = cairnOK(t, append([]string{"push", dir, "--deployment", "hello"}, followFlags...)...)
	t.Logf("cairn push %s --deployment hello --wait:\n%s", dir, out)
	if !regexp.MustCompile(`(?m)^outputs:\n  template \(hello-template\):\n    HelloFunctionArn = arn:aws:lambda:us-east-1:000000000000:function:\S+\n    HelloFunctionName = \S+$`).MatchString(out) {
		t.Errorf("push of the build output does not print its outputs:\n%s", out)
	}
}

// TestInitReadsSAMConfig: cairn init beside a samconfig.toml (in the template's folder, or
// above it up to the bundle's, as for sam build's template) gives the stack the values its
// parameter_overrides give sam deploy, in either form, and says so; a NoEcho one is left
// out of the file.
func TestInitReadsSAMConfig(t *testing.T) {
	dir := samBuildApp(t)
	out := cairnOK(t, "init", dir, "--from", filepath.Join(dir, ".aws-sam", "build", "template.yaml"), "--namespace", "hello")
	if !strings.Contains(out, "took 1 parameter value from samconfig.toml (parameter_overrides of [default.deploy.parameters]): template.Greeting\n") {
		t.Errorf("init does not say it took the samconfig.toml's value:\n%s", out)
	}
	draft, err := os.ReadFile(filepath.Join(dir, "cairn.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(draft), "      Greeting: hi there  # from samconfig.toml\n") {
		t.Errorf("the draft does not take the override:\n%s", draft)
	}
	cairnOK(t, "validate", dir)

	// The list form, beside the template, with a secret and a value cairn.yaml would read
	// as a lookup.
	app := t.TempDir()
	for name, body := range map[string]string{
		"template.yaml":  "Parameters:\n  Stage: {Type: String, Default: dev}\n  Size: {Type: Number}\n  Token: {Type: String, NoEcho: true}\n  Path: {Type: String, Default: x}\nResources:\n  T: {Type: AWS::SNS::Topic}\n",
		"samconfig.toml": "version = 0.1\n[default.global.parameters]\nparameter_overrides = \"Stage=qa\"\n[default.deploy.parameters]\nparameter_overrides = [\"Stage=prod\", \"ParameterKey=Size,ParameterValue=3\", \"Token=s3cr3t\", \"Path=${HOME}\"]\n",
	} {
		if err := os.WriteFile(filepath.Join(app, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out = cairnOK(t, "init", app, "--from", filepath.Join(app, "template.yaml"), "--namespace", "list")
	if !strings.Contains(out, "took 2 parameter values from samconfig.toml (parameter_overrides of [default.deploy.parameters]): template.Stage, template.Size\n") {
		t.Errorf("init of the list form:\n%s", out)
	}
	draft, err = os.ReadFile(filepath.Join(app, "cairn.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"      Stage: prod  # from samconfig.toml\n", "      Size: \"3\"  # from samconfig.toml\n", "      # Token: ${ssm /list/Token}  # review: samconfig.toml gives it a value, which is secret", "      # Path: ${HOME}  # review: from samconfig.toml, which cairn.yaml would read as a lookup\n"} {
		if !strings.Contains(string(draft), want) {
			t.Errorf("the draft lacks %q:\n%s", want, draft)
		}
	}
	if strings.Contains(string(draft), "s3cr3t") {
		t.Errorf("the draft holds the secret:\n%s", draft)
	}
}
