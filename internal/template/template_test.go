package template

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// samples is the folder of real-world AWS sample templates beside the repository.
const samples = "../../../shared/templates/aws-samples"

func TestParseAWSSamples(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(samples, "*.yaml"))
	if len(paths) == 0 {
		t.Skipf("no AWS sample templates in %s (the shared folder is absent in a fresh clone)", samples)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			body, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err := Parse(body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if tmpl.Resources == 0 {
				t.Error("no resources counted")
			}
		})
	}
}

func TestParseSampleDetails(t *testing.T) {
	body, err := os.ReadFile(filepath.Join(samples, "ECS_FargateLaunchType_clusters_public-vpc.yaml"))
	if err != nil {
		t.Skipf("AWS sample templates absent: %v", err)
	}
	tmpl, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{"ClusterName", "ExternalUrl", "VPCId", "PublicListener"} {
		if !tmpl.HasOutput(out) {
			t.Errorf("output %s missing from %v", out, tmpl.Outputs)
		}
	}
}

func TestParse(t *testing.T) {
	const body = `AWSTemplateFormatVersion: "2010-09-09"
Parameters:
  Name:
    Type: String
  Size:
    Type: Number
    Default: 3
  Secret:
    Type: String
    NoEcho: true
    Default: ""
  Tier:
    Type: String
    Default: small
    AllowedValues: [small, large]
  Zones:
    Type: CommaDelimitedList
    Default: [a, b]
Conditions:
  Large: !Equals [!Ref Tier, large]
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: !Sub "${Name}-${AWS::Region}"
      DelaySeconds: !If [Large, 5, !Ref "AWS::NoValue"]
  Topic:
    Type: AWS::SNS::Topic
    Properties:
      Subscription:
        - Endpoint: !GetAtt Queue.Arn
          Protocol: sqs
Outputs:
  TopicArn:
    Value: !Ref Topic
  QueueArn:
    Value: !GetAtt [Queue, Arn]
    Export:
      Name: !Sub ${AWS::StackName}-queue
`
	tmpl, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Parameter{
		"Name":   {Type: "String"},
		"Size":   {Type: "Number", HasDefault: true, Default: "3"},
		"Secret": {Type: "String", HasDefault: true, NoEcho: true},
		"Tier":   {Type: "String", HasDefault: true, Default: "small", AllowedValues: []string{"small", "large"}},
		"Zones":  {Type: "CommaDelimitedList", HasDefault: true, Default: "a,b"},
	}
	for name, w := range want {
		got := tmpl.Parameters[name]
		if got.Type != w.Type || got.HasDefault != w.HasDefault || got.Default != w.Default || got.NoEcho != w.NoEcho || !slices.Equal(got.AllowedValues, w.AllowedValues) {
			t.Errorf("parameter %s = %+v, want %+v", name, got, w)
		}
	}
	if len(tmpl.Parameters) != len(want) {
		t.Errorf("parameters = %v", tmpl.ParameterNames())
	}
	if !slices.Equal(tmpl.Outputs, []string{"QueueArn", "TopicArn"}) {
		t.Errorf("outputs = %v", tmpl.Outputs)
	}
	if tmpl.Resources != 2 {
		t.Errorf("resources = %d, want 2", tmpl.Resources)
	}
	sum := sha256.Sum256([]byte(body))
	if tmpl.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("SHA256 = %s", tmpl.SHA256)
	}
	// Short forms are normalised to long form by rain.
	if !strings.Contains(dump(tmpl), "Fn::GetAtt") {
		t.Error("!GetAtt was not normalised")
	}
}

// dump lists every scalar value and key of the template's tree, breadth first.
func dump(t *Template) string {
	var out []string
	nodes := []*yaml.Node{t.Node}
	for len(nodes) > 0 {
		n := nodes[0]
		nodes = append(nodes[1:], n.Content...)
		out = append(out, n.Value)
	}
	return strings.Join(out, "\n")
}

func TestParseJSON(t *testing.T) {
	tmpl, err := Parse([]byte(`{"Parameters": {"P": {"Type": "String"}}, "Resources": {"B": {"Type": "AWS::S3::Bucket"}}, "Outputs": {"Name": {"Value": {"Ref": "B"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Resources != 1 || tmpl.Parameters["P"].Type != "String" || !tmpl.HasOutput("Name") {
		t.Errorf("template = %+v", tmpl)
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name, body, wantErr string
	}{
		{"empty", "  \n", "template is empty"},
		{"invalid YAML", "Resources: [", "template does not parse: invalid YAML: yaml: line 1: did not find expected node content"},
		{"a list", "- a\n- b\n", `line 1: not a CloudFormation template: expected a mapping with a Resources section, got a list`},
		{"a scalar", "hello\n", `line 1: not a CloudFormation template: expected a mapping with a Resources section, got "hello"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.body))
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Parse = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestStructureProblems: a template whose shape is wrong still parses, and Check reports
// the problem with every other one, so one does not hide the rest.
func TestStructureProblems(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"no Resources", "Description: nothing\n", []string{
			"1:1: Resources: not a complete CloudFormation template: no Resources section (a template needs at least one resource)"}},
		{"empty Resources", "Resources: {}\n", []string{
			"1:12: Resources: Resources must be a mapping with at least one resource, not a mapping"}},
		{"Resources a list", "Resources:\n  - a\n", []string{
			"2:3: Resources: Resources must be a mapping with at least one resource, not a list"}},
		{"resource not a mapping", "Resources:\n  Bucket: yes\n  Q: {Type: AWS::SQS::Queue, Properties: {DelaySeconds: soon}}\n", []string{
			`2:3: Resources.Bucket: resource Bucket must be a mapping, got "yes"`,
			`3:57: Resources.Q.Properties.DelaySeconds: must be an integer, not "soon"`}},
		{"resource without Type", "Resources:\n  Bucket:\n    Properties: {}\n", []string{
			"2:3: Resources.Bucket.Type: resource Bucket needs a Type such as AWS::S3::Bucket"}},
		{"parameter without Type", "Parameters:\n  Name: {Default: x}\n  Other: {Type: Strin}\nResources:\n  B: {Type: AWS::S3::Bucket}\n", []string{
			"2:3: Parameters.Name: parameter Name needs a Type such as String",
			`3:17: Parameters.Other.Type: unknown parameter type "Strin" (did you mean "String"?): use String, Number, List<Number>, CommaDelimitedList or an AWS-specific type such as AWS::EC2::VPC::Id`}},
		{"Parameters a list", "Parameters: [a]\nResources:\n  B: {Type: AWS::S3::Bucket}\n", []string{
			"1:13: Parameters: Parameters must be a mapping, not a list"}},
		{"output without Value", "Resources:\n  B: {Type: AWS::S3::Bucket}\nOutputs:\n  Name: {Description: x}\n", []string{
			"4:3: Outputs.Name: output Name needs a Value"}},
		{"unknown sections, each", "Resource:\n  B: {Type: AWS::S3::Bucket}\nErrors: {}\nResources:\n  Q: {Type: AWS::SQS::Queu}\n", []string{
			`1:1: Resource: unknown top-level section "Resource" (did you mean "Resources"?): CloudFormation accepts only AWSTemplateFormatVersion, Conditions, Description, Globals, Hooks, Mappings, Metadata, Outputs, Parameters, Resources, Rules, Transform`,
			`3:1: Errors: unknown top-level section "Errors": CloudFormation accepts only AWSTemplateFormatVersion, Conditions, Description, Globals, Hooks, Mappings, Metadata, Outputs, Parameters, Resources, Rules, Transform`,
			`5:7: Resources.Q.Type: unknown resource type "AWS::SQS::Queu" (did you mean "AWS::SQS::Queue"?)`}},
		{"bad version", "AWSTemplateFormatVersion: 2012-01-01\nResources:\n  B: {Type: AWS::S3::Bucket}\n", []string{
			`1:27: AWSTemplateFormatVersion: must be "2010-09-09", the only version of the template format`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := problems(t, tt.body); !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestDeclaredResources: a plan lists what a stack created at apply will add from its
// template, in template order.
func TestDeclaredResources(t *testing.T) {
	tpl, err := Parse([]byte("Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n  Queue: {Type: AWS::SQS::Queue}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Resource{{"Topic", "AWS::SNS::Topic"}, {"Queue", "AWS::SQS::Queue"}}
	if len(tpl.Declared) != 2 || tpl.Declared[0] != want[0] || tpl.Declared[1] != want[1] || tpl.Resources != 2 {
		t.Errorf("Declared = %v (%d resources), want %v", tpl.Declared, tpl.Resources, want)
	}
}
