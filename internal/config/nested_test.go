package config

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cairn-dev/cairn/internal/benchbundle"
	"github.com/cairn-dev/cairn/internal/bundle"
)

func TestNestedStacksFromTheBundle(t *testing.T) {
	c := load(t, filepath.Join(bundles, "nested"), LoadOptions{})
	s := c.Stack("app")
	if s.Tree == nil || s.Tree.Children["Network"] == nil || s.Tree.Children["Network"].Path != "templates/network/network.yaml" ||
		s.Tree.Children["Network"].Children["Subnets"] == nil || s.Tree.Children["Network"].Children["Subnets"].Path != "templates/network/subnets.yaml" {
		t.Fatalf("tree %+v", s.Tree)
	}
	// the child's IAM role counts for the parent
	if !slices.Equal(s.Capabilities, []string{"CAPABILITY_IAM"}) || !s.CapabilitiesFromTemplate {
		t.Errorf("capabilities %v, want CAPABILITY_IAM for the nested stack's role", s.Capabilities)
	}
}

// nestedBundle is a directory-like bundle of files, the config naming templates/app.yaml.
func nestedBundle(files map[string]string) *bundle.Bundle {
	fsys := fstest.MapFS{}
	for k, v := range files {
		fsys[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return &bundle.Bundle{ConfigFile: "cairn.yaml", Config: []byte("stacks:\n  - name: app\n    template_path: templates/app.yaml\n"), FS: fsys}
}

const nestedParent = `Resources:
  Net:
    Type: AWS::CloudFormation::Stack
    Properties:
      TemplateURL: %s
      Parameters:
        Cidr: %s
`

const nestedChild = `Parameters:
  Cidr: {Type: String, AllowedPattern: '\d+\.\d+\.\d+\.\d+/\d+'}
Resources:
  Vpc: {Type: AWS::EC2::VPC, Properties: {CidrBlock: !Ref Cidr}}
`

func TestNestedStackErrors(t *testing.T) {
	parent := func(url, cidr string) string {
		return strings.NewReplacer("%s\n      Parameters:\n        Cidr: %s", url+"\n      Parameters:\n        Cidr: "+cidr).Replace(nestedParent)
	}
	tests := []struct {
		name  string
		files map[string]string
		want  []string // errors as FILE:LINE:COL: KEY: message
	}{
		{"missing file", map[string]string{"templates/app.yaml": parent("net.yaml", "10.0.0.0/16")},
			[]string{`templates/app.yaml:5:20: Resources.Net.Properties.TemplateURL: nested stack Net: template file "templates/net.yaml" not found in the bundle (its TemplateURL "net.yaml" is relative to the folder of templates/app.yaml)`}},
		{"leaves the bundle", map[string]string{"templates/app.yaml": parent("../../net.yaml", "10.0.0.0/16")},
			[]string{`templates/app.yaml:5:20: Resources.Net.Properties.TemplateURL: nested stack Net: template "../../net.yaml" leaves the bundle: name a file of the bundle, relative to the template's folder`}},
		{"unknown and refused parameters", map[string]string{"templates/app.yaml": parent("net.yaml", "nope") + "        Cidrs: x\n", "templates/net.yaml": nestedChild},
			[]string{
				`templates/app.yaml:7:9: Resources.Net.Properties.Parameters.Cidr: parameter Cidr: value "nope" does not match its AllowedPattern \d+\.\d+\.\d+\.\d+/\d+ (nested stack Net, template templates/net.yaml)`,
				`templates/app.yaml:8:9: Resources.Net.Properties.Parameters.Cidrs: nested stack Net passes parameter "Cidrs", which templates/net.yaml does not declare (did you mean "Cidr"?); it declares Cidr`,
			}},
		{"missing parameter", map[string]string{"templates/app.yaml": "Resources:\n  Net:\n    Type: AWS::CloudFormation::Stack\n    Properties: {TemplateURL: net.yaml}\n", "templates/net.yaml": nestedChild},
			[]string{`templates/app.yaml:4:31: Resources.Net.Properties.TemplateURL: nested stack Net: template templates/net.yaml requires parameter Cidr (no Default): pass it under the nested stack's Parameters`}},
		{"a child's own problem, in the child", map[string]string{"templates/app.yaml": parent("net.yaml", "10.0.0.0/16"), "templates/net.yaml": strings.Replace(nestedChild, "CidrBlock", "CidrBlok", 1)},
			[]string{`templates/net.yaml:4:30: Resources.Vpc.Properties: AWS::EC2::VPC takes exactly one of CidrBlock, Ipv4IpamPoolId, and has none`,
				`templates/net.yaml:4:43: Resources.Vpc.Properties.CidrBlok: unknown property "CidrBlok" of AWS::EC2::VPC (did you mean "CidrBlock"?)`}},
		{"parameters chosen by a condition", map[string]string{"templates/app.yaml": nestedByCondition("!Ref AWS::NoValue"), "templates/net.yaml": nestedChild},
			[]string{
				`templates/app.yaml:7:20: Resources.Net.Properties.TemplateURL: nested stack Net: template templates/net.yaml requires parameter Cidr (no Default), which choice 2 of the Fn::If of its Parameters does not pass: pass it in every choice`,
				`templates/app.yaml:8:31: Resources.Net.Properties.Parameters.Cidr: parameter Cidr: value "nope" does not match its AllowedPattern \d+\.\d+\.\d+\.\d+/\d+ (nested stack Net, template templates/net.yaml)`,
			}},
		{"a cycle", map[string]string{"templates/app.yaml": parent("net.yaml", "10.0.0.0/16"), "templates/net.yaml": nestedChild + "  Back:\n    Type: AWS::CloudFormation::Stack\n    Properties: {TemplateURL: app.yaml, Parameters: {Cidr: 10.0.0.0/16}}\n"},
			[]string{`templates/net.yaml:7:31: Resources.Back.Properties.TemplateURL: nested stack Back: templates/app.yaml nests itself: templates/app.yaml -> templates/net.yaml -> templates/app.yaml`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(nestedBundle(tc.files))
			if err == nil {
				t.Fatal("Load succeeded")
			}
			var got []string
			for _, e := range err.(Errors) {
				got = append(got, e.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// nestedByCondition is a parent whose nested stack's Parameters an Fn::If chooses: the
// first choice passes Cidr, the second is other.
func nestedByCondition(other string) string {
	return "Conditions:\n  Wide: !Equals [!Ref AWS::Region, us-east-1]\nResources:\n  Net:\n    Type: AWS::CloudFormation::Stack\n    Properties:\n      TemplateURL: net.yaml\n      Parameters: !If [Wide, {Cidr: nope}, " + other + "]\n"
}

// TestNestedParametersChosenByACondition: a nested stack's Parameters may be an Fn::If
// of two sets of them, each passed whole (CloudFormation resolves the condition first).
func TestNestedParametersChosenByACondition(t *testing.T) {
	if _, err := Load(nestedBundle(map[string]string{"templates/app.yaml": strings.Replace(nestedByCondition("{Cidr: 10.1.0.0/16}"), "nope", "10.0.0.0/16", 1), "templates/net.yaml": nestedChild})); err != nil {
		t.Fatal(err)
	}
}

// TestNestedFanOutIsRefused: twenty templates each nesting the next twice would make
// 2,097,150 nested stacks. Validation walks each template once and refuses the stack,
// naming the count and CloudFormation's quota; a tree within the quota loads.
func TestNestedFanOutIsRefused(t *testing.T) {
	files := benchbundle.DoublingNested("shop", 20)
	_, err := Load(nestedBundle(files))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("Load = %v, want one error", err)
	}
	want := "cairn.yaml:3:20: stacks[0].template_path: stack app: template templates/app.yaml makes 2,097,150 nested stacks holding 3,145,726 resources in all (a template nested twice counts twice), more than the 2,500 resources CloudFormation creates, updates or deletes in one operation of a stack and its nested stacks: nest fewer, or split them into stacks of the config"
	if errs[0].Error() != want {
		t.Errorf("error\n%s\nwant\n%s", errs[0], want)
	}
	c, err := Load(nestedBundle(benchbundle.DoublingNested("shop", 9))) // 1,022 stacks, 1,534 resources
	if err != nil {
		t.Fatal(err)
	}
	if stacks, _ := c.Stack("app").Tree.Count(); stacks != 1022 {
		t.Errorf("%d nested stacks", stacks)
	}
}

func TestLocalArtifacts(t *testing.T) {
	const fn = `Resources:
  Fn:
    Type: AWS::Lambda::Function
    Properties:
      Code: %s
      Handler: index.handler
      Role: arn:aws:iam::123456789012:role/fn
      Runtime: nodejs24.x
`
	code := func(path string) string { return strings.Replace(fn, "%s", path, 1) }
	var layers []string
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		layers = append(layers, "arn:aws:lambda:us-east-1:123456789012:layer:"+name+":1")
	}
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"a folder", map[string]string{"templates/app.yaml": code("../src"), "src/index.js": "x"}, nil},
		{"a missing path", map[string]string{"templates/app.yaml": code("./dist/fn.zip")},
			[]string{`templates/app.yaml:5:13: Resources.Fn.Properties.Code: Code of Fn: templates/dist/fn.zip does not exist in the bundle ("./dist/fn.zip" is relative to the folder of templates/app.yaml): add it, or give an s3:// location`}},
		{"leaving the bundle", map[string]string{"templates/app.yaml": code("../../src")},
			[]string{`templates/app.yaml:5:13: Resources.Fn.Properties.Code: Code of Fn: "../../src" leaves the bundle: name a file or folder of the bundle, relative to the folder of templates/app.yaml`}},
		{"an absolute path", map[string]string{"templates/app.yaml": code("/etc")},
			[]string{`templates/app.yaml:5:13: Resources.Fn.Properties.Code: Code of Fn: "/etc" leaves the bundle: name a file or folder of the bundle, relative to the folder of templates/app.yaml`}},
		{"six layers", map[string]string{"templates/app.yaml": code("../src") + "      Layers: [" + strings.Join(layers, ", ") + "]\n", "src/index.js": "x"},
			[]string{`templates/app.yaml:5:13: Resources.Fn.Properties.Code: function Fn names 6 layers, more than Lambda's 5`,
				`templates/app.yaml:9:7: Resources.Fn.Properties.Layers: has 6 items, more than the 5 it takes`}},
		{"a state machine folder", map[string]string{"templates/app.yaml": "Resources:\n  M:\n    Type: AWS::StepFunctions::StateMachine\n    Properties: {RoleArn: \"arn:aws:iam::123456789012:role/sm\", DefinitionS3Location: sm}\n", "templates/sm/x.json": "{}"},
			[]string{`templates/app.yaml:4:86: Resources.M.Properties.DefinitionS3Location: DefinitionS3Location of M (templates/sm): a state machine definition is a file (JSON or YAML), not a folder`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadOptions{Today: runtimeDay}.Load(nestedBundle(tc.files))
			var got []string
			var errs Errors
			if errors.As(err, &errs) {
				for _, e := range errs {
					got = append(got, e.Error())
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if tc.want == nil {
				s := c.Stack("app")
				if s.Tree == nil || s.Tree.Assets == nil {
					t.Fatal("a stack with local code has no tree to package")
				}
				code, err := s.Tree.Code()
				if err != nil || len(code) != 1 || len(code["src/"]) != 64 {
					t.Errorf("code %v, %v", code, err)
				}
			}
		})
	}
}

// TestNestedTemplatesCarryCode: a nested template's artifacts are paths relative to its
// own folder, packaged with the stack, and part of its hash: a change to the child's code
// alone changes the parent stack's template hash.
func TestNestedTemplatesCarryCode(t *testing.T) {
	files := map[string]string{
		"templates/app.yaml":       "Resources:\n  Fns:\n    Type: AWS::CloudFormation::Stack\n    Properties: {TemplateURL: fns/fns.yaml}\n",
		"templates/fns/fns.yaml":   "Resources:\n  Fn:\n    Type: AWS::Lambda::Function\n    Properties: {Handler: app.handler, Runtime: python3.14, Role: \"arn:aws:iam::123456789012:role/fn\", Code: src}\n",
		"templates/fns/src/app.py": "def handler(e, c): return 1\n",
	}
	c, err := LoadOptions{Today: runtimeDay}.Load(nestedBundle(files))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Stack("app")
	code, err := s.Tree.Code()
	if err != nil || len(code) != 1 || code["templates/fns/src/"] == "" {
		t.Fatalf("code %v, %v", code, err)
	}
	before := s.Tree.SHA256()
	files["templates/fns/src/app.py"] = "def handler(e, c): return 2\n"
	c, err = LoadOptions{Today: runtimeDay}.Load(nestedBundle(files))
	if err != nil {
		t.Fatal(err)
	}
	if c.Stack("app").Tree.SHA256() == before {
		t.Error("the stack's template hash ignores its nested template's code")
	}
}

func TestSingleFileBundleNamesNoLocalCode(t *testing.T) {
	b := bundle.FromYAML("cairn.yaml", []byte(`stacks:
  - name: app
    template_body:
      Resources:
        Fn:
          Type: AWS::Lambda::Function
          Properties: {Handler: app.handler, Runtime: python3.12, Role: r, Code: ./src}
`))
	_, err := Load(b)
	if err == nil || !strings.Contains(err.Error(), `Resources.Fn.Properties.Code: Code of Fn names "./src", a local path: a single-file bundle holds no files; bundle a directory or zip, or give an s3:// location`) {
		t.Errorf("Load = %v", err)
	}
}
