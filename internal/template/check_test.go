package template

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/resourcespec"
)

// runtimeDay is the day the tests judge Lambda runtimes on (CheckOn), so a fixture's
// runtime does not expire with the calendar.
const runtimeDay = "2026-12-01"

// problems are the problems of the template in body, runtimes judged on runtimeDay.
func problems(t *testing.T, body string) []string {
	t.Helper()
	return problemsOn(t, body, runtimeDay)
}

func problemsOn(t *testing.T, body, day string) []string {
	t.Helper()
	tmpl, err := Parse([]byte(body))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var out []string
	for _, p := range tmpl.CheckOn(day) {
		s := p.String()
		if p.Warning {
			s = "warning: " + s
		}
		out = append(out, s)
	}
	return out
}

const head = "AWSTemplateFormatVersion: \"2010-09-09\"\n"

// TestCheckRules: each rule, with the exact text and position (line:col of the key or
// value cfn-lint points at).
func TestCheckRules(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"unknown type", head + "Resources:\n  Queue:\n    Type: AWS::SQS::Queu\n", []string{
			`4:5: Resources.Queue.Type: unknown resource type "AWS::SQS::Queu" (did you mean "AWS::SQS::Queue"?)`}},
		{"serverless type without the transform", head + "Resources:\n  Fn:\n    Type: AWS::Serverless::Function\n", []string{
			`4:5: Resources.Fn.Type: unknown resource type "AWS::Serverless::Function": add Transform: AWS::Serverless-2016-10-31 to use the Serverless types`}},
		{"registry type is a note", head + "Resources:\n  W:\n    Type: Acme::Widgets::Widget\n    Properties: {Anything: 1}\n", []string{
			`warning: 4:5: Resources.W.Type: Acme::Widgets::Widget is not an AWS type: a registry (third-party or private) type, so cairn does not check its properties`}},
		{"unknown property", head + "Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n    Properties:\n      VisibiltyTimeout: 30\n", []string{
			`6:7: Resources.Queue.Properties.VisibiltyTimeout: unknown property "VisibiltyTimeout" of AWS::SQS::Queue (did you mean "VisibilityTimeout"?)`}},
		{"missing required property", head + "Resources:\n  P:\n    Type: AWS::SSM::Parameter\n    Properties:\n      Value: x\n", []string{
			`5:5: Resources.P.Properties: AWS::SSM::Parameter requires property Type`}},
		{"no Properties at all", head + "Resources:\n  P:\n    Type: AWS::SSM::Parameter\n", []string{
			`3:3: Resources.P: AWS::SSM::Parameter requires properties Type, Value: add them under Properties`}},
		{"list for a scalar", head + "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: [a, b]\n", []string{
			`6:7: Resources.Q.Properties.QueueName: must be a single value (a string, number or boolean), not a list`}},
		{"scalar for a list", head + "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      Tags: team\n", []string{
			`6:7: Resources.Q.Properties.Tags: must be a list, not the single value "team"`}},
		{"nested property types", head + "Resources:\n  G:\n    Type: AWS::EC2::SecurityGroup\n    Properties:\n      GroupDescription: web\n      SecurityGroupIngress:\n        - CidrIp: 10.0.0.0/8\n        - IpProtocol: tcp\n          FromPot: 443\n", []string{
			`8:11: Resources.G.Properties.SecurityGroupIngress[0]: SecurityGroupIngress[0] of AWS::EC2::SecurityGroup requires property IpProtocol`,
			`9:11: Resources.G.Properties.SecurityGroupIngress[1]: SecurityGroupIngress[1] of AWS::EC2::SecurityGroup takes exactly one of CidrIp, CidrIpv6, SourcePrefixListId, SourceSecurityGroupId, SourceSecurityGroupName, and has none`,
			`10:11: Resources.G.Properties.SecurityGroupIngress[1].FromPot: unknown property "FromPot" of SecurityGroupIngress[1] of AWS::EC2::SecurityGroup (did you mean "FromPort"?)`}},
		{"both branches of Fn::If", head + "Conditions:\n  C: !Equals [a, b]\nResources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: !If [C, [x], !Ref AWS::NoValue]\n", []string{
			`8:26: Resources.Q.Properties.QueueName: must be a single value (a string, number or boolean), not a list`}},
		{"null value", head + "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName:\n", []string{
			`6:7: Resources.Q.Properties.QueueName: has no value: CloudFormation refuses null values; remove the key or give it a value`}},
		{"custom resource needs a ServiceToken", head + "Resources:\n  Port:\n    Type: Custom::PortAllocation\n    Properties: {Pool: default}\n", []string{
			`5:5: Resources.Port.Properties: custom resource Port needs a ServiceToken: the ARN of the Lambda function or SNS topic that answers it`}},
		{"unknown resource attribute", head + "Resources:\n  T:\n    Type: AWS::SNS::Topic\n    DependOn: [U]\n  U:\n    Type: AWS::SNS::Topic\n", []string{
			`5:5: Resources.T.DependOn: unknown resource attribute "DependOn" (did you mean "DependsOn"?): a resource takes Type, Properties, DependsOn, Condition, Metadata, DeletionPolicy, UpdateReplacePolicy, CreationPolicy, UpdatePolicy, Version`}},
		{"GetAtt attribute", head + "Resources:\n  Q:\n    Type: AWS::SQS::Queue\nOutputs:\n  A:\n    Value: !GetAtt Q.Arnn\n", []string{
			`7:22: Outputs.A.Value: AWS::SQS::Queue Q has no attribute "Arnn" for Fn::GetAtt (did you mean "Arn"?); it has Arn, ContentBasedDeduplication, DeduplicationScope, DelaySeconds, FifoQueue, FifoThroughputLimit, KmsDataKeyReusePeriodSeconds, KmsMasterKeyId, MaximumMessageSize, MessageRetentionPeriod, QueueName, QueueUrl, ReceiveMessageWaitTimeSeconds, RedrivePolicy.deadLetterTargetArn, RedrivePolicy.maxReceiveCount, SqsManagedSseEnabled, Tags, VisibilityTimeout`}},
		{"GetAtt long form, nested attribute, stack outputs", head + "Resources:\n  D:\n    Type: AWS::RDS::DBInstance\n    Properties: {DBInstanceClass: db.t3.micro}\n  N:\n    Type: AWS::CloudFormation::Stack\n    Properties: {TemplateURL: https://example.com/t.yaml}\nOutputs:\n  A: {Value: {\"Fn::GetAtt\": [D, Endpoint.Address]}}\n  B: {Value: !GetAtt N.Outputs.Anything}\n  C: {Value: !GetAtt [D, Endpoint.Nope]}\n", []string{
			`12:26: Outputs.C.Value: AWS::RDS::DBInstance D has no attribute "Endpoint.Nope" for Fn::GetAtt (did you mean "Endpoint.Port"?); it has ` + strings.Join(mustAttributes(t, "AWS::RDS::DBInstance"), ", ")}},
		{"GetAtt in Fn::Sub", head + "Resources:\n  Q:\n    Type: AWS::SQS::Queue\nOutputs:\n  A:\n    Value: !Sub \"${Q.Url}/${!Literal}/${AWS::Region}\"\n", []string{
			`7:12: Outputs.A.Value: AWS::SQS::Queue Q has no attribute "Url" for Fn::GetAtt (did you mean "Arn"?); it has ` + strings.Join(mustAttributes(t, "AWS::SQS::Queue"), ", ")}},
		{"Ref naming nothing", head + "Parameters:\n  Name: {Type: String}\nResources:\n  T:\n    Type: AWS::SNS::Topic\n    Properties:\n      TopicName: !Ref Nme\n", []string{
			`8:18: Resources.T.Properties.TopicName: Ref names nothing: "Nme" is not a parameter, resource or pseudo parameter of the template (did you mean "Name"?)`}},
		{"Sub variable naming nothing, local variables fine", head + "Resources:\n  T:\n    Type: AWS::SNS::Topic\n    Properties:\n      TopicName: !Sub [\"${Local}-${Other}\", {Local: x}]\n", []string{
			`6:24: Resources.T.Properties.TopicName: Ref names nothing: "Other" is not a parameter, resource or pseudo parameter of the template`}},
		{"DependsOn naming nothing", head + "Resources:\n  T:\n    Type: AWS::SNS::Topic\n    DependsOn: [Queue]\n  Queues:\n    Type: AWS::SQS::Queue\n", []string{
			`5:17: Resources.T.DependsOn: DependsOn names no resource "Queue" (did you mean "Queues"?)`}},
		{"Condition naming nothing", head + "Conditions:\n  IsProd: !Equals [a, b]\nResources:\n  T:\n    Type: AWS::SNS::Topic\n    Condition: IsProdd\n", []string{
			`7:16: Resources.T.Condition: names no condition "IsProdd" (did you mean "IsProd"?); the template declares IsProd`}},
		{"FindInMap naming no mapping", head + "Resources:\n  T:\n    Type: AWS::SNS::Topic\n    Properties:\n      TopicName: !FindInMap [Regions, a, b]\n", []string{
			`6:30: Resources.T.Properties.TopicName: Fn::FindInMap names no mapping "Regions"`}},
		{"circular dependency", head + "Resources:\n  A:\n    Type: AWS::SNS::Topic\n    DependsOn: B\n  B:\n    Type: AWS::SNS::Topic\n    Properties: {TopicName: !GetAtt A.TopicName}\n", []string{
			`3:3: Resources.A: circular dependency between resources: A -> B -> A: CloudFormation cannot order them; remove one of the references`,
			`6:3: Resources.B: circular dependency between resources: B -> A -> B: CloudFormation cannot order them; remove one of the references`}},
		{"parameter declarations", head + "Parameters:\n  Env: {Type: String, AllowedValues: [dev, prod], Default: test}\n  Size: {Type: Numbr}\n  Code: {Type: String, AllowedPattern: \"[a-z\"}\nResources:\n  T:\n    Type: AWS::SNS::Topic\n", []string{
			`3:60: Parameters.Env.Default: the Default is refused: parameter Env: value "test" is not one of its AllowedValues dev, prod`,
			`4:16: Parameters.Size.Type: unknown parameter type "Numbr" (did you mean "Number"?): use String, Number, List<Number>, CommaDelimitedList or an AWS-specific type such as AWS::EC2::VPC::Id`,
			`5:40: Parameters.Code.AllowedPattern: AllowedPattern "[a-z" is not a valid regular expression: error parsing regexp: unterminated [] set in ` + "`[a-z`"}},
		{"Lambda runtime AWS no longer creates functions with", head + "Resources:\n  F:\n    Type: AWS::Lambda::Function\n    Properties:\n      Role: arn:aws:iam::123456789012:role/r\n      Runtime: python2.7\n      Handler: index.handler\n      Code: {ZipFile: x}\n", []string{
			`7:16: Resources.F.Properties.Runtime: Lambda runtime python2.7 is deprecated: AWS blocked creating functions with it on 2021-07-15 and updating them on 2022-05-30: move to python3.14`}},
		{"resource names", head + "Resources:\n  my-topic:\n    Type: AWS::SNS::Topic\n", []string{
			`3:3: Resources.my-topic: resource name "my-topic" must be alphanumeric (A-Z, a-z, 0-9)`}},
		{"ForEach expanded and checked", head + "Transform: AWS::LanguageExtensions\nResources:\n  Fn::ForEach::Queues:\n    - Name\n    - [Orders, Payments]\n    - ${Name}Queue:\n        Type: AWS::SQS::Queue\n        Properties: {QueueName: !Ref Name, DelaySecond: 5}\nOutputs:\n  Fn::ForEach::Urls:\n    - Name\n    - [Orders]\n    - ${Name}Url: {Value: !GetAtt [!Sub \"${Name}Queue\", QueueUrl]}\n", []string{
			`9:44: Resources.OrdersQueue.Properties.DelaySecond: unknown property "DelaySecond" of AWS::SQS::Queue (did you mean "DelaySeconds"?)`,
			`9:44: Resources.PaymentsQueue.Properties.DelaySecond: unknown property "DelaySecond" of AWS::SQS::Queue (did you mean "DelaySeconds"?)`}},
		{"macros are not checked past the structure", head + "Transform: Count\nResources:\n  T:\n    Type: AWS::SNS::Topic\n    Count: 3\n", nil},
		{"Serverless templates are checked expanded: generated resources exist", head + "Transform: AWS::Serverless-2016-10-31\nResources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties: {Runtime: python3.12, Handler: a.b, CodeUri: ./src}\nOutputs:\n  R: {Value: !GetAtt FnRole.Arn}\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problems(t, tt.body)
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func mustAttributes(t *testing.T, typ string) []string {
	t.Helper()
	st := resourcespec.Lookup(typ)
	if st == nil {
		t.Fatalf("no specification of %s", typ)
	}
	return st.Attributes
}

func TestQuotas(t *testing.T) {
	var b strings.Builder
	b.WriteString(head + "Parameters:\n")
	for i := range MaxParameters + 1 {
		fmt.Fprintf(&b, "  P%d: {Type: String, Default: x}\n", i)
	}
	b.WriteString("Resources:\n")
	for i := range MaxResources + 1 {
		fmt.Fprintf(&b, "  T%d: {Type: AWS::SNS::Topic}\n", i)
	}
	b.WriteString("Outputs:\n")
	for i := range MaxOutputs + 1 {
		fmt.Fprintf(&b, "  O%d: {Value: x}\n", i)
	}
	b.WriteString("Mappings:\n")
	for i := range MaxMappings + 1 {
		fmt.Fprintf(&b, "  M%d: {a: {b: c}}\n", i)
	}
	got := problems(t, b.String())
	want := []string{
		"2:1: Parameters: 201 parameters, more than CloudFormation's quota of 200",
		"204:1: Resources: 501 resources, more than CloudFormation's quota of 500: split the template into stacks",
		"706:1: Outputs: 201 outputs, more than CloudFormation's quota of 200",
		"908:1: Mappings: 201 mappings, more than CloudFormation's quota of 200",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLimits: templates over 1 MB and YAML alias bombs are refused before anything walks
// them; a reasonable use of anchors is fine.
func TestLimits(t *testing.T) {
	big := head + "Description: " + strings.Repeat("x", MaxBodySize) + "\nResources:\n  T: {Type: AWS::SNS::Topic}\n"
	if _, err := Parse([]byte(big)); err == nil || err.Error() != fmt.Sprintf("template is %d bytes, more than CloudFormation's limit of 1000000 (1 MB): split it into nested stacks or move code and data out of it", len(big)) {
		t.Errorf("1 MB: %v", err)
	}
	var bomb strings.Builder
	bomb.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&bomb, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	body := "Metadata:\n  " + strings.ReplaceAll(strings.TrimSpace(bomb.String()), "\n", "\n  ") + "\nResources:\n  T: {Type: AWS::SNS::Topic, Metadata: {m: *a8}}\n"
	_, err := Parse([]byte(body))
	if err == nil || !strings.HasPrefix(err.Error(), "line ") || !strings.Contains(err.Error(), "the template's YAML aliases expand it to more than 11130 nodes (113 written): CloudFormation would expand every alias; repeat less through anchors") {
		t.Errorf("alias bomb: %v", err)
	}
	fine := head + "Resources:\n  A:\n    Type: AWS::SNS::Topic\n    Properties: &props {DisplayName: shared}\n  B:\n    Type: AWS::SNS::Topic\n    Properties: *props\n"
	if got := problems(t, fine); len(got) != 0 {
		t.Errorf("anchors: %v", got)
	}
}

func TestNeeds(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"nothing", head + "Resources:\n  T: {Type: AWS::SNS::Topic}\n", nil},
		{"a role", head + "Resources:\n  R:\n    Type: AWS::IAM::Role\n    Properties: {AssumeRolePolicyDocument: {}}\n", []string{"CAPABILITY_IAM for resource R (AWS::IAM::Role) at 3:3"}},
		{"a named role", head + "Resources:\n  P:\n    Type: AWS::IAM::Policy\n  R:\n    Type: AWS::IAM::Role\n    Properties:\n      RoleName: !Sub ${AWS::StackName}-r\n", []string{"CAPABILITY_NAMED_IAM for resource R (AWS::IAM::Role) with RoleName at 8:7"}},
		{"a transform", head + "Transform: [AWS::LanguageExtensions, AWS::Serverless-2016-10-31]\nResources:\n  F:\n    Type: AWS::Serverless::Function\n", []string{
			"CAPABILITY_IAM for resource F (AWS::Serverless::Function) at 4:3", "CAPABILITY_AUTO_EXPAND for Transform AWS::Serverless-2016-10-31 at 2:1"}},
		{"a macro in Fn::Transform", head + "Resources:\n  T:\n    Type: AWS::SNS::Topic\n    Properties: {\"Fn::Transform\": {Name: M}}\n", []string{"CAPABILITY_AUTO_EXPAND for Fn::Transform (a macro) at 0:0"}},
		{"IAM in a ForEach loop", head + "Transform: AWS::LanguageExtensions\nResources:\n  Fn::ForEach::Users:\n    - U\n    - [a, b]\n    - ${U}User:\n        Type: AWS::IAM::User\n        Properties: {UserName: !Ref U}\n", []string{"CAPABILITY_NAMED_IAM for resource aUser (AWS::IAM::User) with UserName at 9:22"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range tmpl.Needs() {
				got = append(got, fmt.Sprintf("%s for %s at %d:%d", n.Capability, n.Why, n.Line, n.Col))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("needs %q, want %q", got, tt.want)
			}
		})
	}
	needs := []Need{{Capability: CapabilityIAM}, {Capability: CapabilityAutoExpand}}
	if u := Uncovered(needs, []string{CapabilityNamedIAM}); len(u) != 1 || u[0].Capability != CapabilityAutoExpand {
		t.Errorf("CAPABILITY_NAMED_IAM covers CAPABILITY_IAM: uncovered %v", u)
	}
}

func TestCheckValue(t *testing.T) {
	i := func(n int) *int { return &n }
	f := func(n float64) *float64 { return &n }
	tests := []struct {
		p     Parameter
		value string
		want  string
	}{
		{Parameter{Name: "Env", Type: "String", AllowedValues: []string{"dev", "prod"}}, "test", `parameter Env: value "test" is not one of its AllowedValues dev, prod`},
		{Parameter{Name: "Env", Type: "String", AllowedValues: []string{"dev", "prod"}}, "dev", ``},
		{Parameter{Name: "Pw", Type: "String", NoEcho: true, AllowedPattern: `(?=.*[0-9]).{8,}`}, "password", `parameter Pw: value (NoEcho, not shown) does not match its AllowedPattern (?=.*[0-9]).{8,}`},
		{Parameter{Name: "Pw", Type: "String", NoEcho: true, AllowedPattern: `(?=.*[0-9]).{8,}`}, "passw0rd", ``},
		{Parameter{Name: "Code", Type: "String", AllowedPattern: `[a-z]+`, ConstraintDescription: "lower-case letters only"}, "abc1", `parameter Code: value "abc1" does not match its AllowedPattern [a-z]+: lower-case letters only`},
		{Parameter{Name: "Code", Type: "String", AllowedPattern: `[a-z]+`}, "abc\n", `parameter Code: value "abc\n" does not match its AllowedPattern [a-z]+`},
		{Parameter{Name: "Name", Type: "String", MinLength: i(3), MaxLength: i(5)}, "ab", `parameter Name: value "ab" is shorter than its MinLength 3`},
		{Parameter{Name: "Name", Type: "String", MinLength: i(3), MaxLength: i(5)}, "abcdef", `parameter Name: value "abcdef" is longer than its MaxLength 5`},
		{Parameter{Name: "Size", Type: "Number", MinValue: f(1), MaxValue: f(10)}, "0.5", `parameter Size: value "0.5" is less than its MinValue 1`},
		{Parameter{Name: "Size", Type: "Number", MinValue: f(1), MaxValue: f(10)}, "11", `parameter Size: value "11" is more than its MaxValue 10`},
		{Parameter{Name: "Size", Type: "Number"}, "ten", `parameter Size: value "ten" is not a number (the parameter is a Number)`},
		{Parameter{Name: "Sizes", Type: "List<Number>"}, "1, 2,x", `parameter Sizes: value "1, 2,x" is not a number (the parameter is a List<Number>)`},
		{Parameter{Name: "Zones", Type: "CommaDelimitedList", AllowedValues: []string{"a", "b"}}, "a,b,c", `parameter Zones: value "a,b,c" is not one of its AllowedValues a, b`},
		{Parameter{Name: "Vpc", Type: "AWS::EC2::VPC::Id"}, "vpc-0123456789abcdef0", ``},
		{Parameter{Name: "Vpc", Type: "AWS::EC2::VPC::Id"}, "10.0.0.0/16", `parameter Vpc: value "10.0.0.0/16" is not a VPC id: vpc- and 8 or 17 hex digits (the parameter is a AWS::EC2::VPC::Id)`},
		{Parameter{Name: "Subnets", Type: "List<AWS::EC2::Subnet::Id>"}, "subnet-12345678,subnet-x", `parameter Subnets: value "subnet-12345678,subnet-x" is not a subnet id: subnet- and 8 or 17 hex digits (the parameter is a List<AWS::EC2::Subnet::Id>)`},
		{Parameter{Name: "Ami", Type: "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"}, "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64", ``},
		{Parameter{Name: "Big", Type: "String"}, strings.Repeat("x", 4097), `parameter Big: value is 4097 bytes, more than CloudFormation's 4096`},
	}
	for _, tt := range tests {
		t.Run(tt.p.Name+"="+tt.value[:min(len(tt.value), 20)], func(t *testing.T) {
			err := tt.p.CheckValue(tt.value)
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, ErrParameter) {
					t.Errorf("%v is not ErrParameter", err)
				}
			}
			if got != tt.want {
				t.Errorf("CheckValue(%q) = %q, want %q", tt.value, got, tt.want)
			}
			if tt.p.NoEcho && strings.Contains(got, tt.value) {
				t.Errorf("a NoEcho value was printed: %s", got)
			}
		})
	}
}

func TestCheckParameters(t *testing.T) {
	tmpl, err := Parse([]byte(head + "Parameters:\n  Env: {Type: String, AllowedValues: [dev, prod], Default: dev}\n  Name: {Type: String, MaxLength: 3}\nResources:\n  T: {Type: AWS::SNS::Topic}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := tmpl.CheckParameters(map[string]string{"Name": "abc"}); err != nil {
		t.Errorf("valid values: %v", err)
	}
	err = tmpl.CheckParameters(map[string]string{"Env": "qa", "Name": "abcd"})
	const want = `parameter Env: value "qa" is not one of its AllowedValues dev, prod; parameter Name: value "abcd" is longer than its MaxLength 3`
	if err == nil || err.Error() != want || !errors.Is(err, ErrParameter) {
		t.Errorf("CheckParameters = %v, want %q", err, want)
	}
	if err := tmpl.CheckParameters(nil); err == nil || err.Error() != "parameter Name has no value and no Default" {
		t.Errorf("missing value: %v", err)
	}
}

func TestExports(t *testing.T) {
	tmpl, err := Parse([]byte(head + "Parameters:\n  P: {Type: String, Default: x}\nResources:\n  T: {Type: AWS::SNS::Topic}\nOutputs:\n  A: {Value: x, Export: {Name: shared-arn}}\n  B: {Value: x, Export: {Name: !Sub \"${AWS::StackName}-b\"}}\n  C: {Value: x, Export: {Name: !Sub \"${P}-c\"}}\n  D: {Value: x}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tmpl.Exports("shop-app") {
		got = append(got, fmt.Sprintf("%s=%s@%d", e.Output, e.Name, e.Line))
	}
	if want := []string{"A=shared-arn@7", "B=shop-app-b@8"}; !slices.Equal(got, want) {
		t.Errorf("exports %v, want %v", got, want)
	}
}

// TestBrokenCorpusFails: every template of the broken corpus has at least one error, so
// the peer check's corpus is what its name says.
func TestBrokenCorpusFails(t *testing.T) {
	paths, _ := filepath.Glob("../../testdata/templates/broken/*.yaml")
	if len(paths) < 5 {
		t.Fatalf("broken corpus: %v", paths)
	}
	for _, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := Parse(body)
		if err != nil {
			continue
		}
		n := 0
		for _, pr := range tmpl.Check() {
			if !pr.Warning {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: no errors", p)
		}
	}
}

// TestRuntimeProblem: the lifecycle of a runtime by date: supported, deprecated (a
// warning), creation blocked, then updates blocked too (errors).
func TestRuntimeProblem(t *testing.T) {
	tests := []struct {
		runtime, day string
		want         string
		warning, ok  bool
	}{
		{"nodejs20.x", "2026-04-29", "", false, false},
		{"nodejs20.x", "2026-04-30", "Lambda runtime nodejs20.x is deprecated since 2026-04-30 (AWS blocks creating functions with it on 2027-02-01): move to nodejs24.x", true, true},
		{"nodejs20.x", "2027-01-31", "Lambda runtime nodejs20.x is deprecated since 2026-04-30 (AWS blocks creating functions with it on 2027-02-01): move to nodejs24.x", true, true},
		{"nodejs20.x", "2027-02-01", "Lambda runtime nodejs20.x is deprecated: AWS blocked creating functions with it on 2027-02-01, and blocks updating them on 2027-03-03: move to nodejs24.x", false, true},
		{"nodejs20.x", "2027-03-03", "Lambda runtime nodejs20.x is deprecated: AWS blocked creating functions with it on 2027-02-01 and updating them on 2027-03-03: move to nodejs24.x", false, true},
		// AWS's schedule as its runtimes page gives it, where it moved after cfn-lint 1.51's
		// table (genspec.py): python3.11 a year on, dotnet6 to 2027
		{"python3.11", "2026-12-01", "", false, false},
		{"dotnet6", "2026-12-01", "Lambda runtime dotnet6 is deprecated since 2024-12-20 (AWS blocks creating functions with it on 2027-02-01): move to dotnet10", true, true},
		{"python3.14", "2026-12-01", "", false, false},
		{"cobol85", "2026-12-01", "", false, false},
	}
	for _, tt := range tests {
		msg, warning, ok := RuntimeProblem(tt.runtime, tt.day)
		if msg != tt.want || warning != tt.warning || ok != tt.ok {
			t.Errorf("RuntimeProblem(%s, %s) = %q, %v, %v; want %q, %v, %v", tt.runtime, tt.day, msg, warning, ok, tt.want, tt.warning, tt.ok)
		}
	}
}
