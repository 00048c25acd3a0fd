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
	resolves := parse("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: '{{resolve:ssm:/shop/queue}}'}\n")
	// The config's network exports shop-network-VpcId (by its stack name) and
	// ${AWS::Region}-zones; the ports token is cairn's own.
	network := parse("Resources:\n  Vpc: {Type: AWS::EC2::VPC}\nOutputs:\n  VpcId: {Value: !Ref Vpc, Export: {Name: !Sub '${AWS::StackName}-VpcId'}}\n  Zones: {Value: a, Export: {Name: !Sub '${AWS::Region}-zones'}}\n")
	ex := Exports(&config.Config{Stacks: []*config.Stack{{Name: "network", StackName: "shop-network", Template: network}}})
	if ex.Unknown != "" || len(ex.Names) != 2 {
		t.Fatalf("exports %+v", ex)
	}
	importing := func(name string) *config.Stack {
		tpl := parse("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: !ImportValue " + name + "}\n")
		return &config.Stack{Name: "a", Template: tpl}
	}
	byParameter := parse("Parameters:\n  Env: {Type: String}\nResources:\n  Q: {Type: AWS::SQS::Queue}\nOutputs:\n  A: {Value: !Ref Q, Export: {Name: !Sub '${Env}-a'}}\n")
	unknown := Exports(&config.Config{Stacks: []*config.Stack{{Name: "env", StackName: "shop-env", Template: byParameter}}})
	for _, tc := range []struct {
		name  string
		stack *config.Stack
		ex    Exported
		want  bool
	}{
		{"parameters only", &config.Stack{Name: "a", Template: plain}, ex, true},
		{"parameters only, as a tree", &config.Stack{Name: "a", Template: plain, Tree: &template.Tree{Template: plain}}, ex, true},
		{"imports a config stack's export", importing("shop-network-VpcId"), ex, false},
		{"imports a config stack's export of a region", importing("eu-west-1-zones"), ex, false},
		{"imports an export no config stack makes", importing("cairn-ports-service-token"), ex, true},
		{"imports while an export cannot be named", importing("cairn-ports-service-token"), unknown, false},
		{"a nested template imports a config stack's export", &config.Stack{Name: "a", Template: plain, Tree: &template.Tree{Template: plain, Children: map[string]*template.Tree{"Net": {Template: importing("shop-network-VpcId").Template}}}}, ex, false},
		{"a dynamic reference", &config.Stack{Name: "a", Template: resolves}, ex, false},
		{"template_url: not read", &config.Stack{Name: "a", TemplateURL: "https://example.com/t.yaml"}, ex, false},
		{"a tag reads an output", &config.Stack{Name: "a", Template: plain, Lookups: []config.Lookup{{Kind: config.KindOutput, Stack: "net", Output: "Id", Tag: "vpc"}}}, ex, false},
		{"a parameter reads an output", &config.Stack{Name: "a", Template: plain, Lookups: []config.Lookup{{Kind: config.KindOutput, Stack: "net", Output: "Id", Param: "Vpc"}}}, ex, true},
	} {
		if got := Early(tc.stack, tc.ex); got != tc.want {
			t.Errorf("%s: Early = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := Exports(&config.Config{Stacks: []*config.Stack{{Name: "remote", TemplateURL: "https://example.com/t.yaml"}}}); got.Unknown != "remote" {
		t.Errorf("a template_url's exports: %+v", got)
	}
	nested := &config.Stack{Name: "parent", StackName: "shop-parent", Template: plain, Tree: &template.Tree{Template: plain, Children: map[string]*template.Tree{"Net": {Template: network}}}}
	if got := Exports(&config.Config{Stacks: []*config.Stack{nested}}); got.Unknown != "parent" {
		t.Errorf("a nested template's exports: %+v", got)
	}
}
