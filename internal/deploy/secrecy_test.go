package deploy_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairn-dev/cairn/internal/run"
)

// secretFlowsBundle is a stack per flow by which a secret (a SecureString given to a
// NoEcho parameter) reaches an output the old pattern did not seal; with consumers (bycfn,
// byxref) when withByName.
func secretFlowsBundle(t *testing.T, withByName bool) string {
	cfg := `namespace: shop
stacks:
  - name: chain
    template_path: templates/chain.yaml
    parameters: {Password: "${ssm /shop/chain}"}
  - name: exporter
    template_path: templates/exporter.yaml
    parameters: {Password: "${ssm /shop/export}"}
  - name: reexporter
    template_path: templates/reexporter.yaml
    requires: [exporter]
  - name: nested
    template_path: templates/parent.yaml
    parameters: {Password: "${ssm /shop/nested}"}
  - name: source
    template_path: templates/exporter.yaml
    parameters: {Password: "${ssm /shop/byname}"}
`
	if withByName {
		cfg += `  - name: bycfn
    template_path: templates/echo.yaml
    parameters: {Value: "${cfn shop-source.Secret}"}
  - name: byxref
    template_path: templates/echo.yaml
    parameters: {Value: "${xref shop-source::Secret}"}
`
	}
	return bundleOf(t, map[string]string{
		"cairn.yaml": cfg,
		// A two-hop Fn::GetAtt chain: Password → A → B → the output.
		"templates/chain.yaml": `Parameters:
  Password: {Type: String, NoEcho: true}
Resources:
  A: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: !Ref Password}}
  B: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: !GetAtt A.Value}}
Outputs:
  Leak: {Value: !GetAtt B.Value}
`,
		"templates/exporter.yaml": `Parameters:
  Password: {Type: String, NoEcho: true}
Resources:
  Topic: {Type: AWS::SNS::Topic}
Outputs:
  Secret:
    Value: !Ref Password
    Export: {Name: !Sub "${AWS::StackName}-secret"}
`,
		// The sealed export imported and exported again.
		"templates/reexporter.yaml": `Resources:
  Topic: {Type: AWS::SNS::Topic}
Outputs:
  Again:
    Value: !ImportValue shop-exporter-secret
    Export: {Name: shop-again}
`,
		// A nested template's NoEcho parameter, given through a resource, and its output.
		"templates/parent.yaml": `Parameters:
  Password: {Type: String, NoEcho: true}
Resources:
  Holder: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: !Ref Password}}
  Child:
    Type: AWS::CloudFormation::Stack
    Properties:
      TemplateURL: child.yaml
      Parameters: {Password: !GetAtt Holder.Value}
Outputs:
  Leak: {Value: !GetAtt Child.Outputs.Echo}
`,
		"templates/child.yaml": `Parameters:
  Password: {Type: String, NoEcho: true}
Resources:
  Topic: {Type: AWS::SNS::Topic}
Outputs:
  Echo: {Value: !Ref Password}
`,
		// Not NoEcho: what it reads by a stack's name is given to it in clear.
		"templates/echo.yaml": `Parameters:
  Value: {Type: String}
Resources:
  Topic: {Type: AWS::SNS::Topic}
Outputs:
  Echo: {Value: !Ref Value}
`,
	})
}

// TestSecretFlowsAreSealed deploys a secret (a SecureString, each flow its own) along the
// flows a pattern did not follow: a two-hop Fn::GetAtt chain to an output, the import of a
// sealed export exported again, a nested template's NoEcho output through Fn::GetAtt
// Child.Outputs.X, and ${cfn} and ${xref} of a secret output of the same config. Each
// output is stored sealed (runs, graph), the consumers still get the value, and no version
// of any object of the bucket nor the logs hold a secret.
func TestSecretFlowsAreSealed(t *testing.T) {
	w := newReviewWorld(t)
	secrets := map[string]string{"chain": "Ch4in-Secret-0001", "export": "Exp0rt-Secret-0002", "nested": "N3sted-Secret-0003", "byname": "ByN4me-Secret-0004"}
	for name, v := range secrets {
		w.putParameter("/shop/"+name, "SecureString", v)
	}
	first := w.wait("shop", w.push("shop", secretFlowsBundle(t, false)))
	if first.Run.Status != run.Succeeded {
		t.Fatalf("first push: %s (%s) %v %v", first.Run.Status, first.Run.Reason, first.Errors, phases(first))
	}
	doc := w.wait("shop", w.push("shop", secretFlowsBundle(t, true)))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("second push: %s (%s) %v %v", doc.Run.Status, doc.Run.Reason, doc.Errors, phases(doc))
	}
	g := w.graph("shop", "shop")
	for _, c := range []struct{ flow, stack, output string }{
		{"a two-hop Fn::GetAtt chain", "chain", "Leak"},
		{"an import of a sealed export, exported again", "reexporter", "Again"},
		{"a nested template's NoEcho output", "nested", "Leak"},
		{"${cfn} of a secret output of the config", "bycfn", "Echo"},
		{"${xref} of a secret output of the config", "byxref", "Echo"},
	} {
		t.Run(c.flow, func(t *testing.T) {
			s := doc.Run.Stacks[c.stack]
			if s == nil {
				t.Fatalf("no stack %s in the run", c.stack)
			}
			if v := s.Outputs[c.output]; !strings.HasPrefix(v, "{{cairn:output:"+c.stack+"."+c.output+"@") {
				t.Errorf("the run stores output %s of %s as %q, want it sealed", c.output, c.stack, v)
			}
			if v := g.Stacks[c.stack].Outputs[c.output]; !strings.HasPrefix(v, "{{cairn:output:") {
				t.Errorf("the graph stores output %s of %s as %q, want it sealed", c.output, c.stack, v)
			}
		})
	}
	// The consumers by name got the value (unsealed just before their change sets).
	for _, stack := range []string{"shop-bycfn", "shop-byxref"} {
		live := w.stacks()[stack]
		got := ""
		for _, p := range live.Parameters {
			if aws.ToString(p.ParameterKey) == "Value" {
				got = aws.ToString(p.ParameterValue)
			}
		}
		if got != secrets["byname"] {
			t.Errorf("%s was given %q, want the secret output's value", stack, got)
		}
	}
	var values []string
	for _, v := range secrets {
		values = append(values, v)
	}
	if n := w.scanBucket(values...); n < 10 {
		t.Errorf("scanned only %d object versions", n)
	}
	for _, v := range values {
		if strings.Contains(w.logs.String(), v) {
			t.Errorf("the logs hold the secret %q", v)
		}
	}
}
