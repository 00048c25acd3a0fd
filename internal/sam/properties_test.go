package sam

import (
	"fmt"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestTranslatorPropertyRules: what AWS's translator refuses before it expands a Serverless
// resource, and IgnoreGlobals leaving out the Globals it names.
func TestTranslatorPropertyRules(t *testing.T) {
	fn := func(attrs, props string) string {
		return "Globals:\n  Function:\n    Timeout: 10\n    MemorySize: 512\nResources:\n  Fn:\n    Type: AWS::Serverless::Function\n" + attrs +
			"    Properties:\n      Runtime: python3.12\n      Handler: app.handler\n      CodeUri: s3://b/k.zip\n" + props
	}
	tests := []struct {
		name, template, wantErr string
		wantMemory              any // the function's MemorySize after the transform
	}{
		{"globals apply", fn("", ""), "", 512},
		{"IgnoreGlobals of a list", fn("    IgnoreGlobals: [MemorySize]\n", ""), "", nil},
		{"IgnoreGlobals *", fn("    IgnoreGlobals: '*'\n", ""), "", nil},
		{"IgnoreGlobals naming what Globals lack", fn("    IgnoreGlobals: [Tracing]\n", ""), "Resource Fn has invalid resource attribute 'IgnoreGlobals' on item 'Tracing'.", nil},
		{"IgnoreGlobals of another string", fn("    IgnoreGlobals: all\n", ""), "Resource Fn has invalid resource attribute 'IgnoreGlobals'.", nil},
		{"IgnoreGlobals of a type Globals do not name", strings.Replace(fn("    IgnoreGlobals: [Tracing]\n", ""), "  Function:\n    Timeout: 10\n    MemorySize: 512\n", "  Api:\n    Cors: \"'*'\"\n", 1), "", nil},
		{"a misspelled property", fn("", "      Timout: 3\n"), "property Timout not defined for resource of type AWS::Serverless::Function", nil},
		{"a list where a mapping goes", fn("", "      Environment: [A]\n"), "Type of property 'Environment' is invalid.", nil},
		{"an intrinsic where a mapping goes", fn("", "      Environment: {Ref: Env}\n"), "", 512},
		{"a string where an integer goes", fn("", "      MemorySize: big\n"), "", "big"}, // PassThrough: CloudFormation judges it
		{"a list of layers as a string", fn("", "      Layers: arn:aws:lambda:us-east-1:123456789012:layer:l:1\n"), "Type of property 'Layers' is invalid.", nil},
	}
	api := func(props string) string {
		return "Resources:\n  Api:\n    Type: AWS::Serverless::Api\n    Properties:\n      StageName: prod\n" + props
	}
	for _, tt := range []struct{ name, template, wantErr string }{
		{"Models of a DefinitionUri", api("      DefinitionUri: s3://b/api.yaml\n      Models: {Order: {type: object}}\n"), "Models works only with inline Swagger specified in 'DefinitionBody' property."},
		{"no Models of a DefinitionUri", api("      DefinitionUri: s3://b/api.yaml\n      Models: {}\n"), ""},
		{"Models of a DefinitionBody", api("      DefinitionBody: {swagger: '2.0', info: {title: t}, paths: {}}\n      Models: {Order: {type: object}}\n"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(tt.template), &m); err != nil {
				t.Fatal(err)
			}
			_, err := Expand(m, nil)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(tt.template), &m); err != nil {
				t.Fatal(err)
			}
			_, err := Expand(m, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			props := m["Resources"].(map[string]any)["Fn"].(map[string]any)["Properties"].(map[string]any)
			if got := props["MemorySize"]; fmt.Sprint(got) != fmt.Sprint(tt.wantMemory) {
				t.Errorf("MemorySize %v, want %v", got, tt.wantMemory)
			}
		})
	}
}
