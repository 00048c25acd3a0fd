package template

import "testing"

func TestOutside(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"parameters only", "Parameters:\n  Vpc: {Type: String}\nResources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: !Ref Vpc}\n", ""},
		{"short import", "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: !ImportValue shared-name}\n", "Fn::ImportValue"},
		{"long import in JSON", `{"Resources":{"Q":{"Type":"AWS::SQS::Queue","Properties":{"QueueName":{"Fn::ImportValue":"x"}}}}}`, "Fn::ImportValue"},
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
	child, _ := Parse([]byte("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: !ImportValue n}\n"))
	tree := &Tree{Template: plain, Children: map[string]*Tree{"Net": {Template: child}}}
	if got := tree.Outside(); got != "Fn::ImportValue" {
		t.Errorf("nested: Outside() = %q, want Fn::ImportValue", got)
	}
}
