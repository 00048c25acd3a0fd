package deployer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
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
  Value: {Type: String, NoEcho: true}
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
	// The consumers by name got the value (unsealed just before their change sets), in a
	// NoEcho parameter (DescribeStacks masks it), which their output echoes.
	for _, stack := range []string{"shop-bycfn", "shop-byxref"} {
		live := w.stacks()[stack]
		got := ""
		for _, o := range live.Outputs {
			if aws.ToString(o.OutputKey) == "Echo" {
				got = aws.ToString(o.OutputValue)
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

// TestFailureReasonQuotingASecretIsScrubbed makes CloudFormation fail a resource with a
// reason that quotes the secret it was given (a SecureString through a NoEcho parameter,
// and the same secret through a resource attribute): the run fails with the reason, and
// the secret is nowhere in clear: no version of any object cairn writes (runs, reports,
// the graph), the published summary, the logs.
func TestFailureReasonQuotingASecretIsScrubbed(t *testing.T) {
	w := newReviewWorld(t)
	const secret = "Qu0ted-Secret-0005"
	w.putParameter("/shop/quoted", "SecureString", secret)
	ctx := context.Background()
	q, err := w.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("summaries")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.em.SNS().Subscribe(w.topic, "sqs", w.em.SQS().QueueARN("summaries"), nil); err != nil {
		t.Fatal(err)
	}
	const reason = "Value admin:" + secret + " at 'value' failed to satisfy constraint"
	w.fault(cfnlocal.Fault{Stack: "shop-app", LogicalID: "Copy", Operation: "CREATE", Reason: reason, Count: 1})
	dir := bundleOf(t, map[string]string{
		"cairn.yaml": `namespace: shop
stacks:
  - name: app
    template_path: templates/app.yaml
    parameters: {Password: "${ssm /shop/quoted}"}
`,
		"templates/app.yaml": `Parameters:
  Password: {Type: String, NoEcho: true}
Resources:
  Kept: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: !Sub "admin:${Password}"}}
  Copy: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: !GetAtt Kept.Value}}
`,
	})
	doc := w.wait("shop", w.push("shop", dir))
	app := doc.Run.Stacks["app"]
	if doc.Run.Status != run.RunFailed || app.Phase != run.Failed {
		t.Fatalf("run: %s, app %s (%s); want failed", doc.Run.Status, app.Phase, app.Reason)
	}
	if !strings.Contains(app.Reason, "Value admin:**** at 'value' failed") {
		t.Errorf("app's reason %q, want CloudFormation's with the secret masked", app.Reason)
	}
	// The run keeps the resource's event with the same reason, masked the same way.
	if res := run.Resources(app.Events); len(res) == 0 || res[0].LogicalID != "Copy" || !strings.Contains(res[0].Reason, "Value admin:**** at 'value' failed") {
		t.Errorf("app's resources %+v, want Copy failed with CloudFormation's reason, the secret masked", res)
	}
	var summaries []string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && len(summaries) == 0 {
		out, err := w.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			summaries = append(summaries, aws.ToString(m.Body))
		}
	}
	if len(summaries) == 0 {
		t.Fatal("no summary published")
	}
	for _, s := range summaries {
		if strings.Contains(s, secret) || !strings.Contains(s, "****") {
			t.Errorf("the published summary holds the secret, or not its masked reason:\n%s", s)
		}
	}
	if n := w.scanBucket(secret); n < 3 {
		t.Errorf("scanned only %d object versions", n)
	}
	if strings.Contains(w.logs.String(), secret) {
		t.Errorf("the logs hold the secret:\n%s", w.logs.String())
	}
}
