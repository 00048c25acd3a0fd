package scaffold_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/scaffold"
)

var templates = map[string]string{
	"templates/network.yaml": `Description: The shop's network.
Parameters:
  CidrBlock:
    Type: String
    Default: 10.20.0.0/16
    Description: CIDR of the VPC
Resources:
  Vpc:
    Type: AWS::EC2::VPC
    Properties: {CidrBlock: !Ref CidrBlock}
Outputs:
  VpcId:
    Value: !Ref Vpc
    Export: {Name: !Sub "${AWS::StackName}-VpcId"}
`,
	"templates/App Server.template.yaml": `Parameters:
  VpcId:
    Type: AWS::EC2::VPC::Id
    Description: The VPC to run in
  Image:
    Type: String
    Description: The container image
  Env:
    Type: String
    Default: prod
    AllowedValues: [prod, staging]
  DbPassword:
    Type: String
    NoEcho: true
Resources:
  Group:
    Type: AWS::EC2::SecurityGroup
    Properties: {GroupDescription: app, VpcId: !Ref VpcId}
  Param:
    Type: AWS::SSM::Parameter
    Properties: {Type: String, Value: !Sub "${Image}-${Env}-${DbPassword}"}
`,
	"db.json": `{"Resources": {"Subnets": {"Type": "AWS::SSM::Parameter",
  "Properties": {"Type": "String", "Value": {"Fn::ImportValue": "shop-network-VpcId"}}}}}`,
}

// TestWriteGuessesAndMarks: a stack per template, parameters with their defaults and
// descriptions, an output feeding a parameter of the same name and an imported export
// guessed as edges, what needs a value marked; the config it writes loads with exactly
// the missing values as its errors, and once they are given, with the guessed edges.
func TestWriteGuessesAndMarks(t *testing.T) {
	dir := t.TempDir()
	var ts []scaffold.Template
	for _, p := range []string{"templates/network.yaml", "templates/App Server.template.yaml", "db.json"} {
		ts = append(ts, scaffold.Template{Path: p, Body: []byte(templates[p])})
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(templates[p]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := scaffold.Write("shop", ts)
	if err != nil {
		t.Fatal(err)
	}
	text := string(r.Config)
	for _, want := range []string{
		"namespace: shop  # review: stacks are named shop-<name>\n",
		"  # The shop's network.\n  - name: network\n    template_path: templates/network.yaml\n",
		"      # CIDR of the VPC (String)\n      CidrBlock: 10.20.0.0/16  # the template's default\n",
		"  - name: app-server\n    template_path: templates/App Server.template.yaml\n",
		"      # The VPC to run in (AWS::EC2::VPC::Id)\n      VpcId: ${output network::VpcId}  # review: guessed: stack network's output VpcId\n",
		"      # Image:  # review: required, no default: give it a value\n",
		"      # String, one of prod, staging\n      Env: prod  # the template's default\n",
		"      # DbPassword: ${ssm /shop/DbPassword}  # review: required and secret",
		"  - name: db\n    template_path: db.json\n    requires: [network]  # review: guessed: it imports network's export shop-network-VpcId\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the config lacks %q:\n%s", want, text)
		}
	}
	if !slices.Equal(r.Stacks, []string{"network", "app-server", "db"}) || r.Review != 5 || !slices.Equal(r.Missing, []string{"app-server.Image", "app-server.DbPassword"}) {
		t.Errorf("stacks %v, review %d, missing %v", r.Stacks, r.Review, r.Missing)
	}

	load := func(cfg string) (*config.Config, error) {
		if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := bundle.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return config.Load(b)
	}
	_, err = load(text)
	var errs config.Errors
	if !asErrors(err, &errs) || len(errs) != 1 || !strings.Contains(errs[0].Error(), "requires parameter DbPassword, Image (no Default)") {
		t.Fatalf("the draft loads with %v, want only the two missing values", err)
	}
	filled := strings.Replace(text, "      # Image:", "      Image: nginx #", 1)
	filled = strings.Replace(filled, "      # DbPassword: ${ssm /shop/DbPassword}", "      DbPassword: ${ssm /shop/DbPassword}", 1)
	cfg, err := load(filled)
	if err != nil {
		t.Fatalf("with the values given: %v\n%s", err, filled)
	}
	g, err := cfg.Graph()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{"network": nil, "app-server": {"network"}, "db": {"network"}} {
		if got := g.Dependencies(name); !slices.Equal(got, want) {
			t.Errorf("stack %s depends on %v, want %v", name, got, want)
		}
	}
}

func asErrors(err error, errs *config.Errors) bool {
	e, ok := err.(config.Errors)
	*errs = e
	return ok
}

// TestWriteLeavesCyclesAndAmbiguityToPeople: an output two templates give, and a guess
// that would close a cycle, are not guessed but marked.
func TestWriteLeavesCyclesAndAmbiguityToPeople(t *testing.T) {
	a := "Parameters:\n  B: {Type: String}\nResources:\n  R: {Type: AWS::SNS::Topic}\nOutputs:\n  A: {Value: !Ref R}\n  Shared: {Value: x}\n"
	b := "Parameters:\n  A: {Type: String}\n  Shared: {Type: String}\nResources:\n  R: {Type: AWS::SNS::Topic}\nOutputs:\n  B: {Value: !Ref R}\n"
	c := "Parameters:\n  AName: {Type: String}\nResources:\n  R: {Type: AWS::SNS::Topic}\nOutputs:\n  Shared: {Value: y}\n"
	a += "  Name: {Value: n}\n"
	r, err := scaffold.Write("x", []scaffold.Template{{Path: "a.yaml", Body: []byte(a)}, {Path: "b.yaml", Body: []byte(b)}, {Path: "c.yaml", Body: []byte(c)}})
	if err != nil {
		t.Fatal(err)
	}
	text := string(r.Config)
	for _, want := range []string{
		"      B: ${output b::B}  # review: guessed",
		"      # A:  # review: stack a has an output A, but reading it would make a dependency cycle\n",
		"      # Shared:  # review: stacks a, c each have an output Shared: choose one (${output STACK::Shared})\n",
		// A parameter named after the stack whose output it reads.
		"      AName: ${output a::Name}  # review: guessed: stack a's output Name\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the config lacks %q:\n%s", want, text)
		}
	}
}

func TestStackName(t *testing.T) {
	for in, want := range map[string]string{
		"templates/network.yaml": "network", "App Server.template.json": "app-server", "2-db.yml": "stack-2-db", "x/__.yaml": "stack",
	} {
		if got := scaffold.StackName(in); got != want {
			t.Errorf("StackName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWriteRefusesWhatIsNoTemplate(t *testing.T) {
	if _, err := scaffold.Write("x", []scaffold.Template{{Path: "notes.yaml", Body: []byte("- a list\n")}}); err == nil || !strings.HasPrefix(err.Error(), "notes.yaml: ") {
		t.Errorf("Write = %v, want an error naming notes.yaml", err)
	}
}
