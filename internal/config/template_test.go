package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/bundle"
)

// TestCapabilitiesGrantedFromTemplate: a stack naming no capabilities is granted exactly
// what its template needs; one naming them keeps them.
func TestCapabilitiesGrantedFromTemplate(t *testing.T) {
	const cfg = `namespace: shop
stacks:
  - name: role
    template_body:
      Resources:
        R: {Type: AWS::IAM::Role, Properties: {AssumeRolePolicyDocument: {}}}
  - name: named
    template_body:
      Resources:
        R: {Type: AWS::IAM::Role, Properties: {RoleName: x, AssumeRolePolicyDocument: {}}}
  - name: plain
    template_body:
      Resources:
        T: {Type: AWS::SNS::Topic}
  - name: given
    template_body:
      Resources:
        R: {Type: AWS::IAM::Role, Properties: {AssumeRolePolicyDocument: {}}}
    capabilities: [CAPABILITY_NAMED_IAM]
  - name: remote
    template_url: https://example.com/t.yaml
`
	c, err := Load(bundle.FromYAML("cairn.yaml", []byte(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		stack string
		want  []string
		from  bool
	}{
		{"role", []string{"CAPABILITY_IAM"}, true},
		{"named", []string{"CAPABILITY_NAMED_IAM"}, true},
		{"plain", []string{}, true},
		{"given", []string{"CAPABILITY_NAMED_IAM"}, false},
		{"remote", []string{}, true},
	}
	for _, tt := range tests {
		s := c.Stack(tt.stack)
		if !slices.Equal(s.Capabilities, tt.want) && !(len(s.Capabilities) == 0 && len(tt.want) == 0) || s.CapabilitiesFromTemplate != tt.from {
			t.Errorf("stack %s: capabilities %v (from template %v), want %v (%v)", tt.stack, s.Capabilities, s.CapabilitiesFromTemplate, tt.want, tt.from)
		}
	}
}

// TestInlineTemplateProblems: problems of inline templates point into cairn.yaml, for a
// mapping and for a block string alike; warnings do not fail the load.
func TestInlineTemplateProblems(t *testing.T) {
	const cfg = `namespace: shop
stacks:
  - name: mapping
    template_body:
      Resources:
        Q:
          Type: AWS::SQS::Queue
          Properties: {VisibiltyTimeout: 3}
  - name: block
    template_body: |
      Resources:
        Q:
          Type: AWS::SQS::Queu
`
	_, err := Load(bundle.FromYAML("cairn.yaml", []byte(cfg)))
	checkErrors(t, err, "cairn.yaml", []string{
		`8:24: Resources.Q.Properties.VisibiltyTimeout: unknown property "VisibiltyTimeout" of AWS::SQS::Queue (did you mean "VisibilityTimeout"?)`,
		`13:11: Resources.Q.Type: unknown resource type "AWS::SQS::Queu" (did you mean "AWS::SQS::Queue"?)`,
	})
	const warn = `namespace: shop
stacks:
  - name: fn
    template_body:
      Resources:
        W:
          Type: Acme::Widgets::Widget
          Properties: {Size: 3}
`
	c, err := Load(bundle.FromYAML("cairn.yaml", []byte(warn)))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || c.Warnings[0].Error() != "cairn.yaml:7:11: Resources.W.Type: warning: Acme::Widgets::Widget is not an AWS type: a registry (third-party or private) type, so cairn does not check its properties" {
		t.Errorf("warnings = %v", c.Warnings)
	}
}

// TestRuntimesJudgedOnToday: LoadOptions.Today is the day a bundle's Lambda runtimes are
// judged on: nodejs20.x is deprecated (a warning) until AWS blocks creating functions with
// it on 2027-02-01, and refused from that day.
func TestRuntimesJudgedOnToday(t *testing.T) {
	const cfg = `namespace: shop
stacks:
  - name: fn
    template_body:
      Resources:
        Fn:
          Type: AWS::Lambda::Function
          Properties:
            Role: arn:aws:iam::123456789012:role/fn
            Runtime: nodejs20.x
            Handler: index.handler
            Code: {ZipFile: "exports.handler = async () => ({})"}
`
	c, err := LoadOptions{Today: "2027-01-31"}.Load(bundle.FromYAML("cairn.yaml", []byte(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || c.Warnings[0].Error() != "cairn.yaml:10:22: Resources.Fn.Properties.Runtime: warning: Lambda runtime nodejs20.x is deprecated since 2026-04-30 (AWS blocks creating functions with it on 2027-02-01): move to nodejs24.x" {
		t.Errorf("warnings = %v", c.Warnings)
	}
	_, err = LoadOptions{Today: "2027-02-01"}.Load(bundle.FromYAML("cairn.yaml", []byte(cfg)))
	checkErrors(t, err, "cairn.yaml", []string{
		`10:22: Resources.Fn.Properties.Runtime: Lambda runtime nodejs20.x is deprecated: AWS blocked creating functions with it on 2027-02-01, and blocks updating them on 2027-03-03: move to nodejs24.x`,
	})
}

// TestDuplicateExports: two stacks exporting one name are refused before either deploys;
// names made unique with ${AWS::StackName} are fine.
func TestDuplicateExports(t *testing.T) {
	const cfg = `namespace: shop
stacks:
  - name: a
    template_path: t.yaml
  - name: b
    template_path: t.yaml
`
	const tmpl = `Resources:
  T: {Type: AWS::SNS::Topic}
Outputs:
  Arn: {Value: !Ref T, Export: {Name: shared-arn}}
  Own: {Value: !Ref T, Export: {Name: !Sub "${AWS::StackName}-arn"}}
`
	_, err := Load(dirBundle(t, map[string]string{"cairn.yaml": cfg, "t.yaml": tmpl}))
	if err == nil || !strings.Contains(err.Error(), `6:20: stacks[1].template_path: stack b exports "shared-arn" (output Arn), as stack a (stacks[0]) does with output Arn: CloudFormation refuses a second export of a name in a region; make the name unique, e.g. with ${AWS::StackName}`) ||
		strings.Count(err.Error(), "\n") != 0 {
		t.Errorf("Load = %v", err)
	}
}

// dirBundle writes files to a temporary directory and opens it as a bundle.
func dirBundle(t *testing.T, files map[string]string) *bundle.Bundle {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bundle.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b.ConfigFile = "cairn.yaml"
	return b
}

// TestTemplateLimits: a YAML alias bomb and a template over CloudFormation's 1 MB are
// refused by validation, so neither reaches CreateChangeSet.
func TestTemplateLimits(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString("Metadata:\n  a0: &a0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&bomb, "  a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	bomb.WriteString("Resources:\n  T: {Type: AWS::SNS::Topic, Metadata: {m: *a8}}\n")
	big := "Description: " + strings.Repeat("x", 7<<20) + "\nResources:\n  T: {Type: AWS::SNS::Topic}\n"
	cfg := "namespace: shop\nstacks:\n  - name: bomb\n    template_path: bomb.yaml\n  - name: big\n    template_path: big.yaml\n"
	_, err := Load(dirBundle(t, map[string]string{"cairn.yaml": cfg, "bomb.yaml": bomb.String(), "big.yaml": big}))
	checkErrors(t, err, "cairn.yaml", []string{
		`4:20: stacks[0].template_path: template bomb.yaml: line 6: the template's YAML aliases expand it to more than 11130 nodes (113 written): CloudFormation would expand every alias; repeat less through anchors`,
		fmt.Sprintf(`6:20: stacks[1].template_path: template big.yaml: template is %d bytes, more than CloudFormation's limit of 1000000 (1 MB): split it into nested stacks or move code and data out of it`, len(big)),
	})
}

// TestParameterValueFlows: a stack's value for a parameter is checked against the
// properties the parameter goes to (here RDS engines, from the provider schemas as
// cfn-lint extends them); a NoEcho value is never printed.
func TestParameterValueFlows(t *testing.T) {
	const tpl = `Parameters:
  Engine: {Type: String}
  Port: {Type: String, NoEcho: true}
Resources:
  Db:
    Type: AWS::RDS::DBCluster
    Properties:
      Engine: !Ref Engine
      Port: !Ref Port
`
	for _, tc := range []struct {
		engine, port string
		want         []string
	}{
		{"aurora-mysql", "3306", nil},
		{"aurora", "db-port", []string{
			`cairn.yaml:5:26: stacks[0].parameters.Engine: parameter Engine: value "aurora" goes to Resources.Db.Properties.Engine (t.yaml:8:15), which refuses it: "aurora" is not one of the values it takes (in any case): aurora-mysql, aurora-postgresql, mysql, postgres`,
			`cairn.yaml:5:40: stacks[0].parameters.Port: parameter Port: value (NoEcho, not shown) goes to Resources.Db.Properties.Port (t.yaml:9:13), which refuses it: must be an integer, not (NoEcho, not shown)`,
		}},
	} {
		cfg := "namespace: shop\nstacks:\n  - name: db\n    template_path: t.yaml\n    parameters: {Engine: " + tc.engine + ", Port: " + tc.port + "}\n"
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "t.yaml"), []byte(tpl), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := bundle.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Load(b)
		var got []string
		if err != nil {
			for _, e := range err.(Errors) {
				got = append(got, strings.TrimPrefix(e.Error(), dir+string(filepath.Separator)))
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("engine %s: errors\n%s\nwant\n%s", tc.engine, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

// TestInlineTemplateKeepsComments: the config is read without its comments, except when a
// stack's template_body is a mapping, whose body keeps the comments written in it (as
// yaml.v3 encodes them); other stacks load the same either way.
func TestInlineTemplateKeepsComments(t *testing.T) {
	const cfg = `# the shop
namespace: shop # its namespace
stacks:
  - name: queue # a stack
    template_body:
      # the queue
      Resources:
        Queue: {Type: AWS::SQS::Queue} # a queue
  - name: app
    template_path: templates/app.yaml
    parameters: {Name: app} # one parameter
`
	c, err := Load(fuzzBundle(t, []byte(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(cfg), &doc); err != nil {
		t.Fatal(err)
	}
	want, err := yaml.Marshal(doc.Content[0].Content[3].Content[0].Content[3])
	if err != nil {
		t.Fatal(err)
	}
	if body := c.Stack("queue").TemplateBody; string(body) != string(want) || !strings.Contains(string(body), "# a queue") {
		t.Errorf("inline body:\n%s\nwant:\n%s", body, want)
	}
	if app := c.Stack("app"); app.Parameters["Name"] != "app" || app.StackName != "shop-app" {
		t.Errorf("app = %+v", app)
	}
}
