package template

import (
	"testing"

	"gopkg.in/yaml.v3"
)

// TestJSONEscapedSolidus: "\/" is an escape of JSON (and of YAML 1.2) that the YAML parser
// lacks: a JSON template with it parses, the value is "/", and the tokens after it keep
// their columns.
func TestJSONEscapedSolidus(t *testing.T) {
	tests := []struct {
		name, body, want string
		col              int // of the Resources key
	}{
		{"in a value", `{"Description": "a\/b\/c", "Resources": {"T": {"Type": "AWS::SNS::Topic"}}}`, "a/b/c", 28},
		{"escaped backslash before a solidus", `{"Description": "a\\/b", "Resources": {"T": {"Type": "AWS::SNS::Topic"}}}`, `a\/b`, 26},
		{"none", `{"Description": "a/b", "Resources": {"T": {"Type": "AWS::SNS::Topic"}}}`, "a/b", 24},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl, err := Parse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			root := tpl.Node
			if root.Kind == yaml.DocumentNode {
				root = root.Content[0]
			}
			if got := value(root, "Description").Value; got != tt.want {
				t.Errorf("Description %q, want %q", got, tt.want)
			}
			if k := key(root, "Resources"); k == nil || k.Column != tt.col {
				t.Errorf("Resources at %+v, want column %d", k, tt.col)
			}
		})
	}
}
