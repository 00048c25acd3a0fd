package localcairn_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/localcairn"
	"github.com/cairn-dev/cairn/internal/target"
)

// TestProvisionTargets: with targets, each gets the target stack in its account and
// region; the deploy role there lets cairn's account in and refuses others; status events
// of a namespace's stack there reach cairn's deploy queue, with the target's account and
// region; a custom resource importing cairn-ports-service-token there reaches cairn's ports
// queue; a stack outside the namespaces sends nothing.
func TestProvisionTargets(t *testing.T) {
	targets := []target.Target{{Account: "111111111111", Region: "eu-west-1"}, {Account: "000000000000", Region: "us-west-2"}}
	v := start(t, "", localcairn.Options{Targets: targets, Namespaces: []string{"shop"}})
	if len(v.c.Targets) != 2 {
		t.Fatalf("targets provisioned: %+v", v.c.Targets)
	}
	for _, tg := range v.c.Targets {
		if tg.DeployRole != tg.DeployRoleARN() || tg.PortsTopic != tg.PortsTopicARN() {
			t.Errorf("%s: role %s, topic %s; want %s and %s", tg.Target, tg.DeployRole, tg.PortsTopic, tg.DeployRoleARN(), tg.PortsTopicARN())
		}
	}
	for _, tc := range []struct {
		who, account string
		ok           bool
	}{{"cairn's account", "000000000000", true}, {"another account", "333333333333", false}} {
		cfg, err := v.e.AWSConfigAt(v.ctx, tc.account, "us-east-1")
		if err != nil {
			t.Fatal(err)
		}
		_, err = sts.NewFromConfig(cfg).AssumeRole(v.ctx, &sts.AssumeRoleInput{RoleArn: aws.String(targets[0].DeployRoleARN()), RoleSessionName: aws.String("cairn-test")})
		if tc.ok != (err == nil) || (!tc.ok && awserr.ErrorCode(err) != "AccessDenied") {
			t.Errorf("%s assuming %s: %v", tc.who, targets[0].DeployRoleARN(), err)
		}
	}

	eu, err := v.e.AWSConfigAt(v.ctx, "111111111111", "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	cf := cloudformation.NewFromConfig(eu)
	for _, name := range []string{"other-stack", "shop-remote"} {
		if _, err := cf.CreateStack(v.ctx, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(
			`{"Resources":{"Port":{"Type":"Custom::PortAllocation","Properties":{"ServiceToken":{"Fn::ImportValue":"cairn-ports-service-token"},"Pool":"default"}}}}`)}); err != nil {
			t.Fatal(err)
		}
	}
	body, skipped := v.receive(t, v.c.Deploy.URL, func(b string) bool { return strings.Contains(b, "stack/shop-remote/") })
	var ev struct {
		Account, Region string
	}
	if err := json.Unmarshal([]byte(body), &ev); err != nil || ev.Account != "111111111111" || ev.Region != "eu-west-1" {
		t.Errorf("forwarded event %s (%v)", body, err)
	}
	for _, s := range skipped {
		if strings.Contains(s, "other-stack") {
			t.Errorf("an event of a stack outside the namespaces reached the deploy queue: %s", s)
		}
	}
	req, _ := v.receive(t, v.c.Ports.URL, func(b string) bool { return strings.Contains(b, "shop-remote") })
	if !strings.Contains(req, `\"ServiceToken\":\"arn:aws:sns:eu-west-1:111111111111:cairn-ports\"`) {
		t.Errorf("port request %s: want one through the target's topic", req)
	}
}

// TestTargetsOfEveryNamespace: without Namespaces, a target's stacks of any namespace send
// their status events to cairn's deploy queue, as at home.
func TestTargetsOfEveryNamespace(t *testing.T) {
	targets := []target.Target{{Account: "111111111111", Region: "eu-west-1"}}
	v := start(t, "", localcairn.Options{Targets: targets})
	eu, err := v.e.AWSConfigAt(v.ctx, "111111111111", "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	out, err := cloudformation.NewFromConfig(eu).CreateStack(v.ctx, &cloudformation.CreateStackInput{StackName: aws.String("finance-ledger"), TemplateBody: aws.String(
		"Resources:\n  Handle:\n    Type: AWS::CloudFormation::WaitConditionHandle\n")})
	if err != nil {
		t.Fatal(err)
	}
	v.receive(t, v.c.Deploy.URL, func(b string) bool { return strings.Contains(b, aws.ToString(out.StackId)) })
}
