package plan

import (
	"testing"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/template"
)

func TestEarly(t *testing.T) {
	parse := func(body string) *template.Template {
		tpl, err := template.Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return tpl
	}
	plain := parse("Parameters:\n  Vpc: {Type: String}\nResources:\n  Q: {Type: AWS::SQS::Queue}\n")
	imports := parse("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: !ImportValue shop-network-VpcId}\n")
	for _, tc := range []struct {
		name  string
		stack *config.Stack
		want  bool
	}{
		{"parameters only", &config.Stack{Name: "a", Template: plain}, true},
		{"parameters only, as a tree", &config.Stack{Name: "a", Template: plain, Tree: &template.Tree{Template: plain}}, true},
		{"imports an export", &config.Stack{Name: "a", Template: imports, Tree: &template.Tree{Template: imports}}, false},
		{"a nested template imports", &config.Stack{Name: "a", Template: plain, Tree: &template.Tree{Template: plain, Children: map[string]*template.Tree{"Net": {Template: imports}}}}, false},
		{"template_url: not read", &config.Stack{Name: "a", TemplateURL: "https://example.com/t.yaml"}, false},
		{"a tag reads an output", &config.Stack{Name: "a", Template: plain, Lookups: []config.Lookup{{Kind: config.KindOutput, Stack: "net", Output: "Id", Tag: "vpc"}}}, false},
		{"a parameter reads an output", &config.Stack{Name: "a", Template: plain, Lookups: []config.Lookup{{Kind: config.KindOutput, Stack: "net", Output: "Id", Param: "Vpc"}}}, true},
	} {
		if got := Early(tc.stack); got != tc.want {
			t.Errorf("%s: Early = %v, want %v", tc.name, got, tc.want)
		}
	}
}
