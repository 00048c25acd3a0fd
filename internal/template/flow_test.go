package template

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestSecrecyFollowsDataFlow: a value is secret when a secret reaches it through any chain
// of resources, intrinsics, nested stacks and imports, and only then.
func TestSecrecyFollowsDataFlow(t *testing.T) {
	child := mustParse(t, `Parameters:
  In: {Type: String}
  Other: {Type: String}
  Hidden: {Type: String, NoEcho: true, Default: x}
Resources:
  P: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: !Ref In}}
  Q: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: !Ref Other}}
Outputs:
  FromIn: {Value: !GetAtt P.Value}
  FromOther: {Value: !GetAtt Q.Value}
  FromHidden: {Value: !Ref Hidden}
`)
	for _, c := range []struct {
		name     string
		body     string
		in       Sources
		children map[string]*Template
		outputs  []string
		props    map[string][]string
	}{
		{name: "a two-hop Fn::GetAtt chain from a SecureString to an output", body: `Resources:
  A: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: "{{resolve:ssm-secure:/db/pw}}"}}
  B: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: !GetAtt A.Value, Name: plain}}
  C: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: !Sub "x-${B.Value}"}}
  D: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: !Ref A}}
Outputs:
  Leak: {Value: !GetAtt C.Value}
  Name: {Value: !Ref C}
  Plain: {Value: !GetAtt D.Value}
`, outputs: []string{"Leak"}, props: map[string][]string{"A": {"/Value"}, "B": {"/Value"}, "C": {"/Value"}}},
		{name: "intrinsics carry what they read", body: `Parameters:
  Pw: {Type: String, NoEcho: true}
  Pick: {Type: String}
Conditions:
  C: !Equals [!Ref Pick, a]
Mappings:
  M: {a: {b: c}}
Resources:
  R: {Type: AWS::SNS::Topic, Properties: {DisplayName: !If [C, !Select [0, [!Ref Pw]], none]}}
  S: {Type: AWS::SNS::Topic, Properties: {DisplayName: !FindInMap [M, !Ref Pw, b]}}
Outputs:
  If: {Value: !GetAtt R.TopicName}
  Map: {Value: !Join ["", [!GetAtt S.TopicName]]}
  Pick: {Value: !Ref Pick}
`, outputs: []string{"If", "Map"}, props: map[string][]string{"R": {"/DisplayName"}, "S": {"/DisplayName"}}},
		{name: "an import of a secret export, re-exported", body: `Resources:
  R: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: !ImportValue sealed}}
Outputs:
  Direct: {Value: !ImportValue sealed, Export: {Name: again}}
  Through: {Value: !GetAtt R.Value}
  Plain: {Value: !ImportValue open}
`, in: Sources{Import: func(name string) bool { return name == "sealed" }}, outputs: []string{"Direct", "Through"}, props: map[string][]string{"R": {"/Value"}}},
		{name: "an import of a computed name may be any export", body: `Resources:
  R: {Type: AWS::SNS::Topic}
Outputs:
  Computed: {Value: !ImportValue {"Fn::Sub": "${AWS::StackName}-x"}}
`, in: Sources{Import: func(name string) bool { return name == "" }}, outputs: []string{"Computed"}},
		{name: "a parameter the caller knows is secret", body: `Parameters:
  FromOutput: {Type: String}
Resources:
  R: {Type: AWS::SNS::Topic, Properties: {DisplayName: !Ref FromOutput}}
Outputs:
  X: {Value: !GetAtt [R, TopicName]}
`, in: Sources{Parameters: map[string]bool{"FromOutput": true}}, outputs: []string{"X"}, props: map[string][]string{"R": {"/DisplayName"}}},
		{name: "a nested stack's secret output through Fn::GetAtt Child.Outputs.X", body: `Parameters:
  Pw: {Type: String, NoEcho: true}
Resources:
  Child:
    Type: AWS::CloudFormation::Stack
    Properties: {TemplateURL: child.yaml, Parameters: {In: !Ref Pw, Other: plain}}
  Copy: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: !GetAtt Child.Outputs.FromHidden}}
Outputs:
  FromIn: {Value: !GetAtt Child.Outputs.FromIn}
  FromHidden: {Value: !GetAtt Copy.Value}
  FromOther: {Value: !GetAtt Child.Outputs.FromOther}
  Sub: {Value: !Sub "${Child.Outputs.FromIn}"}
`, children: map[string]*Template{"Child": child}, outputs: []string{"FromHidden", "FromIn", "Sub"},
			props: map[string][]string{"Child": {"/Parameters/In"}, "Copy": {"/Value"}}},
		{name: "a nested stack whose template is not known, fed a secret", body: `Parameters:
  Pw: {Type: String, NoEcho: true}
Resources:
  Child:
    Type: AWS::CloudFormation::Stack
    Properties: {TemplateURL: "https://example.com/t.yaml", Parameters: {In: !Ref Pw}}
Outputs:
  Any: {Value: !GetAtt Child.Outputs.Whatever}
`, outputs: []string{"Any"}, props: map[string][]string{"Child": {"/Parameters/In"}}},
		{name: "nothing secret", body: `Parameters:
  P: {Type: String}
Resources:
  R: {Type: AWS::SNS::Topic, Properties: {DisplayName: !Ref P}}
Outputs:
  X: {Value: !GetAtt R.TopicName}
`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tree := &Tree{Template: mustParse(t, c.body), Children: map[string]*Tree{}}
			for id, ct := range c.children {
				tree.Children[id] = &Tree{Template: ct}
			}
			got := tree.Secrecy(c.in)
			if !slices.Equal(got.Outputs, c.outputs) {
				t.Errorf("secret outputs %v, want %v", got.Outputs, c.outputs)
			}
			if len(got.Properties) != len(c.props) {
				t.Errorf("secret properties %v, want %v", got.Properties, c.props)
			}
			for id, want := range c.props {
				if !slices.Equal(got.Properties[id], want) {
					t.Errorf("%s: secret properties %v, want %v", id, got.Properties[id], want)
				}
			}
		})
	}
}

// TestSecretExports: the exports of secret outputs, the template's and those of the
// templates it nests, by name; one whose name is not known marks Unnamed.
func TestSecretExports(t *testing.T) {
	child := mustParse(t, `Parameters:
  In: {Type: String}
Resources:
  T: {Type: AWS::SNS::Topic}
Outputs:
  Literal: {Value: !Ref In, Export: {Name: child-secret}}
  ByStack: {Value: !Ref In, Export: {Name: !Sub "${AWS::StackName}-x"}}
  Plain: {Value: !GetAtt T.TopicName, Export: {Name: child-plain}}
`)
	tree := &Tree{Template: mustParse(t, `Parameters:
  Pw: {Type: String, NoEcho: true}
  Suffix: {Type: String}
Resources:
  Child: {Type: AWS::CloudFormation::Stack, Properties: {TemplateURL: child.yaml, Parameters: {In: !Ref Pw}}}
Outputs:
  Mine: {Value: !Ref Pw, Export: {Name: !Sub "${AWS::StackName}-${AWS::Region}-pw"}}
  Computed: {Value: !Ref Pw, Export: {Name: !Sub "pw-${Suffix}"}}
  Plain: {Value: !Ref Suffix, Export: {Name: plain}}
`), Children: map[string]*Tree{"Child": {Template: child}}}
	got := tree.Secrecy(Sources{StackName: "shop-db"})
	if want := []string{"child-secret", "shop-db-${AWS::Region}-pw"}; !slices.Equal(got.Exports, want) || !got.Unnamed {
		t.Errorf("secret exports %v (unnamed %v), want %v and unnamed (a nested stack's name, a parameter)", got.Exports, got.Unnamed, want)
	}
}

func TestReadsAreDirect(t *testing.T) {
	tp := mustParse(t, `Parameters:
  P: {Type: String}
  Q: {Type: String}
Resources:
  A: {Type: AWS::SNS::Topic, Properties: {DisplayName: !Sub "${P}-x"}}
  B: {Type: AWS::SNS::Topic, Properties: {DisplayName: !GetAtt A.TopicName, Tags: [{Key: k, Value: !Ref P}]}}
  C: {Type: AWS::SNS::Topic, Properties: {DisplayName: !GetAtt B.TopicName}}
  D: {Type: AWS::SNS::Topic, Properties: {DisplayName: "{{resolve:secretsmanager:x}}"}}
`)
	got := tp.Reads([]string{"P", "Q"})
	if len(got) != 1 || !slices.Equal(got["P"], []string{"A", "B"}) {
		t.Errorf("reads %v, want P read by A and B only", got)
	}
}

// chainedTemplate is a template of paths×hops resources: each path starts at a NoEcho
// parameter and passes its value through hops resources (Fn::GetAtt and Fn::Sub in turn)
// to an output.
func chainedTemplate(tb testing.TB, paths, hops int) *Template {
	var b strings.Builder
	b.WriteString("Parameters:\n")
	for p := range paths {
		fmt.Fprintf(&b, "  P%d: {Type: String, NoEcho: true}\n", p)
	}
	b.WriteString("Resources:\n")
	for p := range paths {
		prev := fmt.Sprintf("!Ref P%d", p)
		for h := range hops {
			id := fmt.Sprintf("R%dx%d", p, h)
			fmt.Fprintf(&b, "  %s: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: %s, Tags: {k: v}}}\n", id, prev)
			if h%2 == 0 {
				prev = "!GetAtt " + id + ".Value"
			} else {
				prev = `!Sub "x-${` + id + `.Value}"`
			}
		}
	}
	b.WriteString("Outputs:\n")
	for p := range paths {
		fmt.Fprintf(&b, "  O%d: {Value: !GetAtt R%dx%d.Value}\n", p, p, hops-1)
	}
	return mustParseTB(tb, b.String())
}

// BenchmarkSecrecy analyses a 1,000-resource template with 100 chained secret paths (10
// resources each): the analysis is one walk and one search, linear in the template.
func BenchmarkSecrecy(b *testing.B) {
	for _, size := range []struct{ paths, hops int }{{10, 10}, {100, 10}, {100, 20}} {
		tp := chainedTemplate(b, size.paths, size.hops)
		b.Run(fmt.Sprintf("resources=%d/paths=%d", size.paths*size.hops, size.paths), func(b *testing.B) {
			for b.Loop() {
				if s := tp.Secrecy(Sources{}); len(s.Outputs) != size.paths || len(s.Properties) != size.paths*size.hops {
					b.Fatalf("%d secret outputs, %d resources with secret properties", len(s.Outputs), len(s.Properties))
				}
			}
		})
	}
}

func TestChainedTemplateIsAllSecret(t *testing.T) {
	s := chainedTemplate(t, 3, 4).Secrecy(Sources{})
	if len(s.Outputs) != 3 || len(s.Properties) != 12 {
		t.Errorf("secret outputs %v, properties %v", s.Outputs, s.Properties)
	}
}

// TestSecrecyOfADeepSharedTreeIsBounded: a template nested twice in a template nested
// twice ... 20 levels down is a million places; past maxInstances a nested stack is not
// analysed, and its outputs count as secret.
func TestSecrecyOfADeepSharedTreeIsBounded(t *testing.T) {
	tree := &Tree{Template: mustParse(t, "Resources:\n  T: {Type: AWS::SNS::Topic}\nOutputs:\n  Out: {Value: !GetAtt T.TopicName}\n")}
	for range 20 {
		tree = &Tree{Template: mustParse(t, `Resources:
  A: {Type: AWS::CloudFormation::Stack, Properties: {TemplateURL: c.yaml}}
  B: {Type: AWS::CloudFormation::Stack, Properties: {TemplateURL: c.yaml}}
Outputs:
  Out: {Value: !GetAtt A.Outputs.Out}
`), Children: map[string]*Tree{"A": tree, "B": tree}}
	}
	if got := tree.Secrecy(Sources{}); !slices.Equal(got.Outputs, []string{"Out"}) {
		t.Errorf("secret outputs %v, want Out: the deepest nested stacks were not analysed", got.Outputs)
	}
}
