package assembly

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// The example CDK app's synthesized variants (infra's TestCDKAppAssemblies keeps them).
const (
	exampleBase  = "../../testdata/cdkapp/assemblies/base"
	exampleImage = "../../testdata/cdkapp/assemblies/image"
)

func stackByPath(t *testing.T, a *Assembly, p string) *Stack {
	t.Helper()
	for _, s := range a.Stacks {
		if s.Path == p {
			return s
		}
	}
	t.Fatalf("no stack %s among %d", p, len(a.Stacks))
	return nil
}

// TestReadExampleApp reads the example app as cdk synth wrote it: a stage's two stacks in
// a nested assembly and a stack of another environment, with their environments,
// bootstrap roles, tags, dependencies, file assets and bootstrap version.
func TestReadExampleApp(t *testing.T) {
	a, err := Read(os.DirFS(exampleBase), ".")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, s := range a.Stacks {
		paths = append(paths, s.Path)
	}
	if want := []string{"Audit", "Dev/Data", "Dev/Service"}; !reflect.DeepEqual(paths, want) {
		t.Fatalf("stacks %v, want %v", paths, want)
	}
	if !strings.HasPrefix(a.Version, "5") {
		t.Errorf("schema version %q", a.Version)
	}
	svc := stackByPath(t, a, "Dev/Service")
	want := Stack{Path: "Dev/Service", ID: "DevServiceED593074", Manifest: "assembly-Dev/manifest.json", Dir: ".", StackName: "Dev-Service",
		Template: "assembly-Dev/DevServiceED593074.template.json", Account: "000000000000", Region: "us-east-1", Tags: map[string]string{"app": "orders"},
		DeployRole:    "arn:${AWS::Partition}:iam::000000000000:role/cdk-hnb659fds-deploy-role-000000000000-us-east-1",
		ExecutionRole: "arn:${AWS::Partition}:iam::000000000000:role/cdk-hnb659fds-cfn-exec-role-000000000000-us-east-1",
		Bootstrap:     Bootstrap{Version: 6, Parameter: "/cdk-bootstrap/hnb659fds/version"}, Requires: []string{"Dev/Data"}}
	got := *svc
	got.Files, got.Images, got.Bundle = nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Dev/Service:\n got %+v\nwant %+v", got, want)
	}
	if svc.Bundle == nil {
		t.Error("Dev/Service has nothing to build its file assets with")
	}
	var code *FileAsset
	for i, f := range svc.Files {
		if f.Name == "Handler/Code" {
			code = &svc.Files[i]
		}
	}
	if code == nil || len(svc.Files) != 2 {
		t.Fatalf("Dev/Service's file assets %+v: want its function's code and its template", svc.Files)
	}
	if !code.Zip || !strings.HasPrefix(code.Source, "asset.") || len(code.Destinations) != 1 {
		t.Fatalf("the function's code %+v: want a folder asset.HASH zipped, to one destination", code)
	}
	d := code.Destinations[0].Resolve("000000000000", "us-east-1")
	if d.Bucket != "cdk-hnb659fds-assets-000000000000-us-east-1" || d.Key != code.ID+".zip" || d.Region != "us-east-1" ||
		d.RoleARN != "arn:aws:iam::000000000000:role/cdk-hnb659fds-file-publishing-role-000000000000-us-east-1" {
		t.Errorf("the code's destination %+v", d)
	}
	audit := stackByPath(t, a, "Audit")
	if audit.StackName != "orders-audit" || audit.Account != "111111111111" || audit.Region != "eu-west-1" || len(audit.Requires) != 0 || audit.Manifest != "manifest.json" {
		t.Errorf("Audit %+v", audit)
	}
	if len(svc.Images) != 0 {
		t.Errorf("images %+v in the app without one", svc.Images)
	}
}

// TestReadImageAsset reads the variant with a Docker image asset: its repository and tag.
func TestReadImageAsset(t *testing.T) {
	a, err := Read(os.DirFS(exampleImage), ".")
	if err != nil {
		t.Fatal(err)
	}
	svc := stackByPath(t, a, "Test/Service")
	if len(svc.Images) != 1 || len(svc.Images[0].Destinations) != 1 {
		t.Fatalf("images %+v, want the worker's", svc.Images)
	}
	im := svc.Images[0]
	d := im.Destinations[0].Resolve("000000000000", "us-east-1")
	if im.Name != "Worker" || d.Repository != "cdk-hnb659fds-container-assets-000000000000-us-east-1" || d.Tag != im.ID ||
		d.RoleARN != "arn:aws:iam::000000000000:role/cdk-hnb659fds-image-publishing-role-000000000000-us-east-1" {
		t.Errorf("image %+v at %+v", im, d)
	}
	if got := PublishCommand(svc.Dir, im.Manifest, im.ID); got != "cd cdk.out && npx cdk-assets publish --path assembly-Test/TestServiceAAE03A31.assets.json "+im.ID {
		t.Errorf("PublishCommand = %q", got)
	}
}

func TestResolve(t *testing.T) {
	for _, c := range []struct{ in, account, region, want string }{
		{"arn:${AWS::Partition}:iam::${AWS::AccountId}:role/cdk-x-${AWS::Region}", "123456789012", "eu-west-1", "arn:aws:iam::123456789012:role/cdk-x-eu-west-1"},
		{"arn:${AWS::Partition}:iam::1:role/r", "1", "cn-north-1", "arn:aws-cn:iam::1:role/r"},
		{"arn:${AWS::Partition}:iam::1:role/r", "1", "us-gov-west-1", "arn:aws-us-gov:iam::1:role/r"},
		{"plain", "1", "eu-west-1", "plain"},
	} {
		if got := Resolve(c.in, c.account, c.region); got != c.want {
			t.Errorf("Resolve(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	d := Destination{Bucket: "b-${AWS::Region}", Key: "k"}.Resolve("1", "us-west-2")
	if d.Region != "us-west-2" || d.Bucket != "b-us-west-2" {
		t.Errorf("a destination naming no region: %+v", d)
	}
}

// manifestJSON renders a manifest of artifacts for the table tests.
func manifestJSON(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func stackArtifact(props map[string]any, extra map[string]any) map[string]any {
	a := map[string]any{"type": "aws:cloudformation:stack", "environment": "aws://123456789012/eu-west-1", "properties": props}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

const queueTemplate = `{"Resources":{"Q":{"Type":"AWS::SQS::Queue"}}}`

// TestReadRefuses lists what makes an assembly unusable, each reported with its file and key.
func TestReadRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"not JSON", map[string]string{"manifest.json": "{"}, "manifest.json: not the JSON cdk synth writes"},
		{"no version", map[string]string{"manifest.json": `{"artifacts":{}}`}, "manifest.json: version: missing: is this the manifest.json of a cloud assembly (cdk.out)?"},
		{"missing context", map[string]string{"manifest.json": `{"version":"55.0.0","missing":[{"key":"vpc-provider:account=1","provider":"vpc-provider","props":{}}]}`},
			"manifest.json: missing: the app looks up vpc-provider (context key vpc-provider:account=1) in AWS when it is synthesized, and the assembly lacks it"},
		{"template missing", map[string]string{"manifest.json": manifestJSON(t, map[string]any{"version": "55.0.0", "artifacts": map[string]any{
			"App": stackArtifact(map[string]any{"templateFile": "App.template.json"}, nil)}})},
			"manifest.json: artifacts.App.properties.templateFile: stack App: its template App.template.json is not in the bundle"},
		{"template leaves the bundle", map[string]string{"manifest.json": manifestJSON(t, map[string]any{"version": "55.0.0", "artifacts": map[string]any{
			"App": stackArtifact(map[string]any{"templateFile": "../../etc/passwd"}, nil)}})},
			`manifest.json: artifacts.App.properties.templateFile: "../../etc/passwd" is not a path inside the bundle`},
		{"bad environment", map[string]string{"App.template.json": queueTemplate, "manifest.json": manifestJSON(t, map[string]any{"version": "55.0.0", "artifacts": map[string]any{
			"App": stackArtifact(map[string]any{"templateFile": "App.template.json"}, map[string]any{"environment": "123456789012/eu-west-1"})}})},
			`manifest.json: artifacts.App.environment: "123456789012/eu-west-1" is not aws://ACCOUNT/REGION`},
		{"an error annotation", map[string]string{"App.template.json": queueTemplate, "App.metadata.json": `{"/App/Q":[{"type":"aws:cdk:error","data":"queue names must be unique"}]}`,
			"manifest.json": manifestJSON(t, map[string]any{"version": "55.0.0", "artifacts": map[string]any{
				"App": stackArtifact(map[string]any{"templateFile": "App.template.json"}, map[string]any{"additionalMetadataFile": "App.metadata.json"})}})},
			"manifest.json: artifacts.App: stack App: the app reported an error at /App/Q: queue names must be unique: fix the app and synthesize again"},
		{"nested assembly outside", map[string]string{"manifest.json": manifestJSON(t, map[string]any{"version": "55.0.0", "artifacts": map[string]any{
			"assembly-Dev": map[string]any{"type": "cdk:cloud-assembly", "properties": map[string]any{"directoryName": "/abs"}}}})},
			`manifest.json: artifacts.assembly-Dev.properties.directoryName: "/abs" is not a path inside the bundle`},
		{"asset source missing", map[string]string{"App.template.json": queueTemplate,
			"App.assets.json": `{"version":"55.0.0","files":{"abc":{"source":{"path":"asset.abc","packaging":"zip"},"destinations":{"d":{"bucketName":"b","objectKey":"abc.zip"}}}}}`,
			"manifest.json": manifestJSON(t, map[string]any{"version": "55.0.0", "artifacts": map[string]any{
				"App.assets": map[string]any{"type": "cdk:asset-manifest", "properties": map[string]any{"file": "App.assets.json"}},
				"App":        stackArtifact(map[string]any{"templateFile": "App.template.json"}, map[string]any{"dependencies": []string{"App.assets"}})}})},
			"App.assets.json: files.abc.source.path: asset abc: asset.abc is not in the bundle"},
		{"asset packaging", map[string]string{"App.template.json": queueTemplate, "asset.abc/index.py": "x",
			"App.assets.json": `{"version":"55.0.0","files":{"abc":{"source":{"path":"asset.abc","packaging":"tar"},"destinations":{}}}}`,
			"manifest.json": manifestJSON(t, map[string]any{"version": "55.0.0", "artifacts": map[string]any{
				"App.assets": map[string]any{"type": "cdk:asset-manifest", "properties": map[string]any{"file": "App.assets.json"}},
				"App":        stackArtifact(map[string]any{"templateFile": "App.template.json"}, map[string]any{"dependencies": []string{"App.assets"}})}})},
			`App.assets.json: files.abc.source.packaging: unknown packaging "tar": cdk-assets knows file and zip`},
		{"a folder packaged as a file", map[string]string{"App.template.json": queueTemplate, "asset.abc/index.py": "x",
			"App.assets.json": `{"version":"55.0.0","files":{"abc":{"displayName":"Fn/Code","source":{"path":"asset.abc","packaging":"file"},"destinations":{}}}}`,
			"manifest.json": manifestJSON(t, map[string]any{"version": "55.0.0", "artifacts": map[string]any{
				"App.assets": map[string]any{"type": "cdk:asset-manifest", "properties": map[string]any{"file": "App.assets.json"}},
				"App":        stackArtifact(map[string]any{"templateFile": "App.template.json"}, map[string]any{"dependencies": []string{"App.assets"}})}})},
			`App.assets.json: files.abc.source.path: asset Fn/Code (abc): asset.abc is not a file, which packaging "file" needs`},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for p, body := range c.files {
				fsys[p] = &fstest.MapFile{Data: []byte(body)}
			}
			_, err := Read(fsys, ".")
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Read = %v, want Errors", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Read = %v\nwant it to say %q", err, c.want)
			}
		})
	}
}

// TestReadTakesStackProperties reads what the example app does not set: stack parameters,
// notification topics, termination protection, an external id, an environment-agnostic
// stack, a stack without a name, a nested stack.
func TestReadTakesStackProperties(t *testing.T) {
	fsys := fstest.MapFS{
		"A.template.json": {Data: []byte(`{"Resources":{"Child":{"Type":"AWS::CloudFormation::Stack","Properties":{"TemplateURL":"https://s3.amazonaws.com/b/k.json"}}}}`)},
		"B.template.json": {Data: []byte(queueTemplate)},
		"manifest.json": {Data: []byte(manifestJSON(t, map[string]any{"version": "36.0.0", "artifacts": map[string]any{
			"A": stackArtifact(map[string]any{"templateFile": "A.template.json", "parameters": map[string]string{"Size": "3"}, "notificationArns": []string{"arn:aws:sns:eu-west-1:123456789012:t"},
				"terminationProtection": true, "assumeRoleArn": "arn:${AWS::Partition}:iam::123456789012:role/deploy", "assumeRoleExternalId": "ext"}, map[string]any{"displayName": "A"}),
			"B": stackArtifact(map[string]any{"templateFile": "B.template.json"}, map[string]any{"environment": "aws://unknown-account/unknown-region", "dependencies": []string{"A", "B.assets-not-there"}}),
		}}))},
	}
	a, err := Read(fsys, ".")
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := stackByPath(t, a, "A"), stackByPath(t, a, "B")
	if sa.Parameters["Size"] != "3" || len(sa.NotificationARNs) != 1 || !sa.TerminationProtection || sa.DeployExternalID != "ext" || !sa.NestedStacks {
		t.Errorf("A %+v", sa)
	}
	if sb.StackName != "B" || sb.Account != "" || sb.Region != "" || !reflect.DeepEqual(sb.Requires, []string{"A"}) || sb.NestedStacks {
		t.Errorf("B %+v", sb)
	}
}

// FuzzRead feeds Read arbitrary manifests (beside a template and an asset manifest): it
// reports problems, and never panics or reads outside the bundle. Seeds in
// testdata/fuzz/FuzzRead.
func FuzzRead(f *testing.F) {
	base, err := os.ReadFile(exampleBase + "/assembly-Dev/manifest.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(base), `{"version":"55.0.0","files":{}}`)
	f.Fuzz(func(t *testing.T, manifest, assets string) {
		fsys := fstest.MapFS{
			"manifest.json":                    {Data: []byte(manifest)},
			"DevDataF961E460.template.json":    {Data: []byte(queueTemplate)},
			"DevServiceED593074.template.json": {Data: []byte(queueTemplate)},
			"DevDataF961E460.assets.json":      {Data: []byte(assets)},
			"DevServiceED593074.assets.json":   {Data: []byte(assets)},
			"asset.x/index.py":                 {Data: []byte("x")},
		}
		a, err := Read(fsys, ".")
		if a == nil {
			t.Fatalf("Read returned no assembly (err %v)", err)
		}
		for _, s := range a.Stacks {
			for _, p := range append([]string{s.Template}, sources(s)...) {
				if strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/") || p == ".." {
					t.Fatalf("stack %s names %q outside the bundle", s.Path, p)
				}
			}
		}
	})
}

func sources(s *Stack) []string {
	var out []string
	for _, f := range s.Files {
		if f.Source != "" {
			out = append(out, f.Source)
		}
	}
	return out
}

// TestReadRefusesNamesThatAreNotStackNames: a stack's path (displayName, or the nested
// assemblies' and its artifact id joined) and its CloudFormation name (stackName, or the
// artifact id) obey CloudFormation's stack-name rule, part by part for the path, so a name
// with a line break, an escape sequence or an override never becomes a stack's name.
func TestReadRefusesNamesThatAreNotStackNames(t *testing.T) {
	stack := func(id string, props, extra map[string]any) map[string]string {
		p := map[string]any{"templateFile": "A.template.json"}
		for k, v := range props {
			p[k] = v
		}
		return map[string]string{"A.template.json": queueTemplate,
			"manifest.json": manifestJSON(t, map[string]any{"version": "36.0.0", "artifacts": map[string]any{id: stackArtifact(p, extra)}})}
	}
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string // "" when accepted
	}{
		{"a stage's path", stack("DevA", nil, map[string]any{"displayName": "Dev/A"}), ""},
		{"newline in displayName", stack("A", nil, map[string]any{"displayName": "A\n::error::forged"}),
			`manifest.json: artifacts.A.displayName: displayName "A\n::error::forged" is not a name cairn accepts`},
		{"clear screen in displayName", stack("A", nil, map[string]any{"displayName": "A\x1b[2J"}), `displayName "A\x1b[2J" is not a name cairn accepts`},
		{"OSC 8 link in displayName", stack("A", nil, map[string]any{"displayName": "\x1b]8;;https://evil.example\x07A\x1b]8;;\x07"}), `artifacts.A.displayName: displayName "\x1b]8;;https://evil.example\aA`},
		{"override in displayName", stack("A", nil, map[string]any{"displayName": "A\u202Eb"}), `displayName "A\u202eb" is not`},
		{"an empty part", stack("A", nil, map[string]any{"displayName": "Dev//A"}), `displayName "Dev//A" is not`},
		{"stackName", stack("A", map[string]any{"stackName": "shop_app"}, nil),
			`manifest.json: artifacts.A.properties.stackName: stackName "shop_app" is not a name cairn accepts: each part between slashes of a stack's path, and its CloudFormation stack name, must start with a letter and hold only letters, digits and hyphens, at most 128 characters; give the stack a valid stackName in the CDK app and synthesize again`},
		{"artifact id", stack("A\nB", map[string]any{"stackName": "shop-app"}, map[string]any{"displayName": "A"}), `artifact id "A\nB" is not a name cairn accepts`},
		{"a nested assembly's name", map[string]string{"sub/A.template.json": queueTemplate,
			"manifest.json": manifestJSON(t, map[string]any{"version": "36.0.0", "artifacts": map[string]any{
				"assembly-Dev": map[string]any{"type": "cdk:cloud-assembly", "properties": map[string]any{"directoryName": "sub", "displayName": "Dev\n::add-mask::x"}}}}),
			"sub/manifest.json": manifestJSON(t, map[string]any{"version": "36.0.0", "artifacts": map[string]any{
				"A": stackArtifact(map[string]any{"templateFile": "A.template.json", "stackName": "Dev-A"}, nil)}})},
			`sub/manifest.json: artifacts.A: stack path "Dev\n::add-mask::x/A" is not a name cairn accepts`},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for p, body := range c.files {
				fsys[p] = &fstest.MapFile{Data: []byte(body)}
			}
			_, err := Read(fsys, ".")
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Read = %v, want it accepted", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("Read = %v\nwant it to say %q", err, c.want)
			}
		})
	}
}
