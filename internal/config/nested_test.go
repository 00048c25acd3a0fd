package config

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

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
