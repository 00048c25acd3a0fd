package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
        F:
          Type: AWS::Lambda::Function
          Properties: {Role: r, Runtime: nodejs12.x, Handler: index.handler, Code: {ZipFile: x}}
`
	c, err := Load(bundle.FromYAML("cairn.yaml", []byte(warn)))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || c.Warnings[0].Error() != "cairn.yaml:8:42: Resources.F.Properties.Runtime: warning: Lambda runtime nodejs12.x is deprecated since 2023-03-31: move to nodejs24.x" {
		t.Errorf("warnings = %v", c.Warnings)
	}
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
