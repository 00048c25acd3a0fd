package plan

import (
	"testing"
	"testing/fstest"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
)

// A nested stack's template in the bundle is part of its parent's input: changing only the
// child changes the parent's template hash, so the stack is updated.
func TestTemplateHashCoversNestedTemplates(t *testing.T) {
	hash := func(child string) string {
		t.Helper()
		b := &bundle.Bundle{ConfigFile: "cairn.yaml", Config: []byte("stacks:\n  - name: app\n    template_path: app.yaml\n"), FS: fstest.MapFS{
			"app.yaml": {Data: []byte("Resources:\n  Net:\n    Type: AWS::CloudFormation::Stack\n    Properties: {TemplateURL: net.yaml}\n")},
			"net.yaml": {Data: []byte(child)},
		}}
		c, err := config.Load(b)
		if err != nil {
			t.Fatal(err)
		}
		return TemplateHash(c.Stack("app"))
	}
	a, b := hash("Resources:\n  Q: {Type: AWS::SQS::Queue}\n"), hash("Resources:\n  T: {Type: AWS::SNS::Topic}\n")
	if a == b || a != hash("Resources:\n  Q: {Type: AWS::SQS::Queue}\n") {
		t.Errorf("hashes %s, %s: want them different, and stable", a, b)
	}
}
