package config

import (
	"testing"
)

// TestTargets: region, role_arn, external_id and service_role at the top are every
// stack's defaults, a stack's own keys win (an empty role_arn clears the default), and the
// same stack name is two stacks in two regions or accounts.
func TestTargets(t *testing.T) {
	c, err := Load(fuzzBundle(t, []byte(`namespace: shop
region: eu-west-1
role_arn: arn:aws:iam::111111111111:role/cairn-deploy-eu-west-1
external_id: cairn-shop
stacks:
  - {name: a, stack_name: shop-net, template_path: templates/app.yaml, parameters: {Name: a}}
  - {name: b, stack_name: shop-net, region: us-west-2, template_path: templates/app.yaml, parameters: {Name: b}}
  - name: c
    stack_name: shop-net
    role_arn: ""
    external_id: ""
    service_role: arn:aws:iam::000000000000:role/cfn
    template_path: templates/app.yaml
    parameters: {Name: c}
  - {name: d, stack_name: shop-net, role_arn: "arn:aws:iam::222222222222:role/x", service_role: "arn:aws:iam::222222222222:role/cfn", template_path: templates/app.yaml, parameters: {Name: d}}
`)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Target{
		"a": {Region: "eu-west-1", RoleARN: "arn:aws:iam::111111111111:role/cairn-deploy-eu-west-1", ExternalID: "cairn-shop"},
		"b": {Region: "us-west-2", RoleARN: "arn:aws:iam::111111111111:role/cairn-deploy-eu-west-1", ExternalID: "cairn-shop"},
		"c": {Region: "eu-west-1", ServiceRole: "arn:aws:iam::000000000000:role/cfn"},
		"d": {Region: "eu-west-1", RoleARN: "arn:aws:iam::222222222222:role/x", ExternalID: "cairn-shop", ServiceRole: "arn:aws:iam::222222222222:role/cfn"},
	}
	for name, w := range want {
		if got := c.Stack(name).Target; got != w {
			t.Errorf("stack %s: target %+v, want %+v", name, got, w)
		}
	}
	if got := c.Stack("a").Target.Account(); got != "111111111111" {
		t.Errorf("account of a = %q", got)
	}
	if got := c.Stack("c").Target.Account(); got != "" {
		t.Errorf("account of c = %q, want cairn's own", got)
	}
}

func TestTargetErrors(t *testing.T) {
	tests := []struct {
		name, cfg string
		want      []string
	}{
		{"the same stack twice in one account and region", `region: eu-west-1
stacks:
  - {name: a, stack_name: shop-net, template_path: templates/app.yaml, parameters: {Name: a}}
  - {name: b, stack_name: shop-net, region: eu-west-1, template_path: templates/app.yaml, parameters: {Name: b}}
`, []string{
			`4:27: stacks[1].stack_name: stack b has the CloudFormation stack name "shop-net" of stack a (line 3) in the same account and region (cairn's account, eu-west-1): set a distinct stack_name, or another region or role_arn`,
		}},
		{"the same stack twice in another account", `stacks:
  - {name: a, stack_name: shop-net, role_arn: "arn:aws:iam::111111111111:role/r1", template_path: templates/app.yaml, parameters: {Name: a}}
  - {name: b, stack_name: shop-net, role_arn: "arn:aws:iam::111111111111:role/r2", template_path: templates/app.yaml, parameters: {Name: b}}
`, []string{
			`3:27: stacks[1].stack_name: stack b has the CloudFormation stack name "shop-net" of stack a (line 2) in the same account and region (111111111111, cairn's region): set a distinct stack_name, or another region or role_arn`,
		}},
		{"bad values", `region: Europe
stacks:
  - {name: a, role_arn: "arn:aws:iam::1:role/x", external_id: "x", service_role: cfn, template_path: templates/app.yaml, parameters: {Name: a}}
`, []string{
			`1:9: region: "Europe" is not an AWS region name, e.g. eu-west-1`,
			`3:25: stacks[0].role_arn: "arn:aws:iam::1:role/x" is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)`,
			`3:63: stacks[0].external_id: must be 2 to 1224 letters, digits or +=,.@:/- (what STS accepts)`,
			`3:82: stacks[0].service_role: "cfn" is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)`,
		}},
		{"external id without a role", `external_id: cairn-shop
stacks:
  - {name: a, template_path: templates/app.yaml, parameters: {Name: a}}
`, []string{
			`1:14: external_id: stack a has an external_id but no role_arn: the external id goes with the role the deployer assumes; set role_arn`,
		}},
		{"service role of another account", `stacks:
  - {name: a, role_arn: "arn:aws:iam::111111111111:role/r", service_role: "arn:aws:iam::222222222222:role/cfn", template_path: templates/app.yaml, parameters: {Name: a}}
`, []string{
			`2:75: stacks[0].service_role: stack a lives in account 111111111111 (its role_arn), but its service role arn:aws:iam::222222222222:role/cfn is in account 222222222222: CloudFormation takes a service role of the stack's account`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(fuzzBundle(t, []byte(tt.cfg)))
			checkErrors(t, err, "cairn.yaml", tt.want)
		})
	}
}

// TestExportsPerRegion: two stacks may export the same name in two regions, not in one.
func TestExportsPerRegion(t *testing.T) {
	body := `"Resources: {Q: {Type: AWS::SQS::Queue}}\nOutputs: {U: {Value: !Ref Q, Export: {Name: shared-url}}}\n"`
	_, err := Load(fuzzBundle(t, []byte(`stacks:
  - {name: a, template_body: `+body+`}
  - {name: b, region: eu-west-1, template_body: `+body+`}
`)))
	if err != nil {
		t.Fatalf("one export name in two regions: %v", err)
	}
	_, err = Load(fuzzBundle(t, []byte(`stacks:
  - {name: a, region: eu-west-1, template_body: `+body+`}
  - {name: b, region: eu-west-1, template_body: `+body+`}
`)))
	if err == nil {
		t.Fatal("one export name twice in a region was accepted")
	}
}
