package template

import (
	"slices"
	"testing"
)

func TestOutside(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"parameters only", "Parameters:\n  Vpc: {Type: String}\nResources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: !Ref Vpc}\n", ""},
		{"an import: checked by plan.Early", "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: !ImportValue shared-name}\n", ""},
		{"stack output", "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: {Fn::GetStackOutput: {StackName: a, OutputName: b}}\n", "Fn::GetStackOutput"},
		{"ssm dynamic reference", "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: '{{resolve:ssm:/team/queue}}'}\n", "a dynamic reference"},
		{"ssm parameter type", "Parameters:\n  Ami: {Type: 'AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>', Default: /team/ami}\nResources:\n  Q: {Type: AWS::SQS::Queue}\n", "an SSM parameter type"},
		{"serverless transform", "Transform: AWS::Serverless-2016-10-31\nResources:\n  Q: {Type: AWS::SQS::Queue}\n", ""},
		{"own macro", "Transform: [AWS::Serverless-2016-10-31, Count]\nResources:\n  Q: {Type: AWS::SQS::Queue}\n", "the macro Count"},
		{"inline macro", "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      Fn::Transform: {Name: Tags}\n", "Fn::Transform"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl, err := Parse([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if got := (&Tree{Template: tpl}).Outside(); got != tc.want {
				t.Errorf("Outside() = %q, want %q", got, tc.want)
			}
		})
	}
	// A nested template's reads are the tree's.
	plain, _ := Parse([]byte("Resources:\n  Q: {Type: AWS::SQS::Queue}\n"))
	child, _ := Parse([]byte("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: '{{resolve:ssm:/q}}'}\n"))
	tree := &Tree{Template: plain, Children: map[string]*Tree{"Net": {Template: child}}}
	if got := tree.Outside(); got != "a dynamic reference" {
		t.Errorf("nested: Outside() = %q, want a dynamic reference", got)
	}
}

func TestImports(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
		literal    bool
	}{
		{"none", "Resources:\n  Q: {Type: AWS::SQS::Queue}\n", nil, true},
		{"short and long forms, each once", "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: !ImportValue b-name\n      Tags: [{Key: k, Value: {Fn::ImportValue: a-name}}, {Key: l, Value: !ImportValue b-name}]\n", []string{"a-name", "b-name"}, true},
		{"through an alias", "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: &p {QueueName: !ImportValue a-name}\n  R:\n    Type: AWS::SQS::Queue\n    Properties: *p\n", []string{"a-name"}, true},
		{"a computed name", "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: !ImportValue {'Fn::Sub': '${AWS::StackName}-x'}}\n", nil, false},
		{"mentioned in a description only", "Description: uses Fn::ImportValue nowhere\nResources:\n  Q: {Type: AWS::SQS::Queue}\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl, err := Parse([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got, literal := (&Tree{Template: tpl}).Imports()
			if !slices.Equal(got, tc.want) || literal != tc.literal {
				t.Errorf("Imports() = %q, %v, want %q, %v", got, literal, tc.want, tc.literal)
			}
		})
	}
	// A nested template's imports are the tree's.
	plain, _ := Parse([]byte("Resources:\n  Q: {Type: AWS::SQS::Queue}\n"))
	child, _ := Parse([]byte("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: !ImportValue n}\n"))
	if got, _ := (&Tree{Template: plain, Children: map[string]*Tree{"Net": {Template: child}}}).Imports(); !slices.Equal(got, []string{"n"}) {
		t.Errorf("nested: Imports() = %q", got)
	}
}

func TestExportsKnown(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       bool
	}{
		{"none", "Resources:\n  Q: {Type: AWS::SQS::Queue}\n", true},
		{"literal and by stack name", "Resources:\n  Q: {Type: AWS::SQS::Queue}\nOutputs:\n  A: {Value: !Ref Q, Export: {Name: a}}\n  B: {Value: !Ref Q, Export: {Name: !Sub '${AWS::StackName}-b'}}\n", true},
		{"from a parameter", "Parameters:\n  Env: {Type: String}\nResources:\n  Q: {Type: AWS::SQS::Queue}\nOutputs:\n  A: {Value: !Ref Q, Export: {Name: !Sub '${Env}-a'}}\n", false},
		{"joined", "Resources:\n  Q: {Type: AWS::SQS::Queue}\nOutputs:\n  A: {Value: !Ref Q, Export: {Name: !Join ['-', [x, y]]}}\n", false},
	} {
		tpl, err := Parse([]byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if got := tpl.ExportsKnown("shop-net"); got != tc.want {
			t.Errorf("%s: ExportsKnown = %v, want %v", tc.name, got, tc.want)
		}
	}
}
