package template

import (
	"maps"
	"testing"
)

func TestOutputParameters(t *testing.T) {
	for _, tc := range []struct {
		name, outputs string
		want          map[string]string
	}{
		{"a Ref to a String parameter", "  Out: {Value: !Ref Tag}\n", map[string]string{"Out": "Tag"}},
		{"the long form too", "  Out:\n    Value: {Ref: Tag}\n", map[string]string{"Out": "Tag"}},
		{"a NoEcho parameter's is secret", "  Out: {Value: !Ref Secret}\n", nil},
		{"a list's is joined", "  Out: {Value: !Join [',', !Ref Names]}\n", nil},
		{"a resource's is known only after the deploy", "  Out: {Value: !Ref Parameter}\n", nil},
		{"a computed value", "  Out: {Value: !Sub '${Tag}-x'}\n", nil},
		{"an output with a condition may not exist", "  Out: {Value: !Ref Tag, Condition: Always}\n", nil},
		{"an SSM parameter type's value is resolved", "  Out: {Value: !Ref FromSSM}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `AWSTemplateFormatVersion: "2010-09-09"
Parameters:
  Tag: {Type: String}
  Secret: {Type: String, NoEcho: true}
  Names: {Type: CommaDelimitedList}
  FromSSM: {Type: "AWS::SSM::Parameter::Value<String>"}
Conditions:
  Always: !Equals [a, a]
Resources:
  Parameter:
    Type: AWS::SSM::Parameter
    Properties: {Type: String, Value: !Ref Tag}
Outputs:
` + tc.outputs
			tpl, err := Parse([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			if got := tpl.OutputParameters(); !maps.Equal(got, tc.want) {
				t.Errorf("OutputParameters() = %v, want %v", got, tc.want)
			}
		})
	}
}
