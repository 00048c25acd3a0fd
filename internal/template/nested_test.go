package template

import (
	"strings"
	"testing"
)

func mustParse(t *testing.T, body string) *Template {
	t.Helper()
	tpl, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func TestNestedStacks(t *testing.T) {
	tpl := mustParse(t, `Parameters:
  Env: {Type: String}
Resources:
  Network:
    Type: AWS::CloudFormation::Stack
    Properties:
      TemplateURL: ./network.yaml
      Parameters:
        Cidr: 10.0.0.0/16
        Env: !Ref Env
        Zones: [a, b]
  Remote:
    Type: AWS::CloudFormation::Stack
    Properties:
      TemplateURL: https://bucket.s3.amazonaws.com/x.yaml
  Computed:
    Type: AWS::CloudFormation::Stack
    Properties:
      TemplateURL: !Sub "https://${AWS::Region}.example.com/x.yaml"
`)
	got := tpl.NestedStacks()
	if len(got) != 1 || got[0].LogicalID != "Network" || got[0].Path != "./network.yaml" || got[0].Line != 7 || got[0].Col != 20 {
		t.Fatalf("nested stacks %+v", got)
	}
	p := got[0].Parameters
	if !p["Cidr"].Literal || p["Cidr"].Value != "10.0.0.0/16" || p["Env"].Literal || p["Zones"].Value != "a,b" || !p["Zones"].Literal {
		t.Errorf("parameters %+v", p)
	}
	if !tpl.HasNestedStacks() || mustParse(t, "Resources:\n  Q: {Type: AWS::SQS::Queue}\n").HasNestedStacks() {
		t.Error("HasNestedStacks")
	}
	for u, local := range map[string]bool{"network.yaml": true, "../x.yaml": true, "s3://b/k": false, "https://b/k": false, "": false} {
		if IsLocalPath(u) != local {
			t.Errorf("IsLocalPath(%q) = %v", u, !local)
		}
	}
}

// Package rewrites exactly the TemplateURL values (YAML plain and quoted, JSON), keeps the
// rest of the text, and addresses each child by the sha256 of its own packaged body.
func TestPackageRewritesURLsByContent(t *testing.T) {
	leaf := mustParse(t, "Resources:\n  Q: {Type: AWS::SQS::Queue}\n")
	mid := mustParse(t, `{"Resources": {"Leaf": {"Type": "AWS::CloudFormation::Stack", "Properties": {"TemplateURL": "leaf.json"}}}}`)
	root := mustParse(t, `# a comment that stays
Resources:
  A:
    Type: AWS::CloudFormation::Stack
    Properties:
      TemplateURL: 'mid.json' # quoted
  B:
    Type: AWS::CloudFormation::Stack
    Properties: {TemplateURL: leaf.yaml}
`)
	tree := &Tree{Template: root, Children: map[string]*Tree{
		"A": {Template: mid, Path: "mid.json", Children: map[string]*Tree{"Leaf": {Template: leaf, Path: "leaf.json"}}},
		"B": {Template: leaf, Path: "leaf.yaml"},
	}}
	urlOf := func(sha string) string { return "https://cairn.s3.us-east-1.amazonaws.com/templates/" + sha + ".json" }
	p, err := tree.Package(urlOf, "")
	if err != nil {
		t.Fatal(err)
	}
	body, uploads := p.Body, p.Templates
	if len(uploads) != 2 || uploads[0].SHA256 != leaf.SHA256 {
		t.Fatalf("uploads %d (want the leaf once, deepest first, then the middle)", len(uploads))
	}
	midBody := string(uploads[1].Body)
	if !strings.Contains(midBody, `"TemplateURL": "`+urlOf(leaf.SHA256)+`"`) {
		t.Errorf("middle template not rewritten: %s", midBody)
	}
	want := strings.NewReplacer("'mid.json'", "'"+urlOf(uploads[1].SHA256)+"'", "leaf.yaml", urlOf(leaf.SHA256)).Replace(string(root.Body))
	if string(body) != want {
		t.Errorf("root packaged as\n%s\nwant\n%s", body, want)
	}
	if _, err := Parse(body); err != nil {
		t.Errorf("the packaged template does not parse: %v", err)
	}
	again, _ := tree.Package(urlOf, "")
	if string(again.Body) != string(body) {
		t.Error("packaging is not deterministic")
	}
	before := tree.SHA256()
	tree.Children["A"].Children["Leaf"] = &Tree{Template: mustParse(t, "Resources:\n  T: {Type: AWS::SNS::Topic}\n")}
	if tree.SHA256() == before {
		t.Error("the tree's hash ignores a grandchild's change")
	}
}

func TestMergeNeeds(t *testing.T) {
	parent := []Need{{Capability: CapabilityIAM, Why: "p"}}
	child := []Need{{Capability: CapabilityNamedIAM, Why: "c"}, {Capability: CapabilityAutoExpand, Why: "c2"}}
	got := Capabilities(MergeNeeds(parent, child))
	if strings.Join(got, ",") != "CAPABILITY_NAMED_IAM,CAPABILITY_AUTO_EXPAND" {
		t.Errorf("merged %v", got)
	}
}
