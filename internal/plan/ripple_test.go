package plan

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/seal"
	"github.com/cairn-dev/cairn/internal/template"
)

// TestExplained: a ripple's new change set runs only when the parameters that changed
// explain every change: their references, the replacement of what they feed and what
// that replacement changes in turn.
func TestExplained(t *testing.T) {
	inputs := []string{"VpcId", "SubnetIds"}
	sg := run.ResourceChange{LogicalID: "SecurityGroup", Type: "AWS::EC2::SecurityGroup", Action: "Modify", Replacement: "True", Causes: []string{"ParameterReference VpcId"}}
	subnets := run.ResourceChange{LogicalID: "SubnetGroup", Type: "AWS::ElastiCache::SubnetGroup", Action: "Modify", Replacement: "False", Causes: []string{"ParameterReference SubnetIds"}}
	cluster := run.ResourceChange{LogicalID: "Cluster", Type: "AWS::ElastiCache::CacheCluster", Action: "Modify", Replacement: "Conditional", Causes: []string{"ResourceReference SecurityGroup", "ResourceAttribute SecurityGroup.GroupId"}}
	for _, tc := range []struct {
		name    string
		changes []run.ResourceChange
		want    string
	}{
		{"no changes", nil, ""},
		{"a parameter reference", []run.ResourceChange{subnets}, ""},
		{"a replacement and what references it", []run.ResourceChange{cluster, sg, subnets}, ""},
		{"another parameter", []run.ResourceChange{{LogicalID: "Log", Type: "AWS::Logs::LogGroup", Action: "Modify", Causes: []string{"ParameterReference Retention"}}},
			"Log (AWS::Logs::LogGroup): Modify from ParameterReference Retention"},
		{"a direct modification beside an input", []run.ResourceChange{{LogicalID: "SecurityGroup", Type: "AWS::EC2::SecurityGroup", Action: "Modify", Causes: []string{"ParameterReference VpcId", "DirectModification"}}},
			"SecurityGroup (AWS::EC2::SecurityGroup): Modify from DirectModification"},
		{"a resource added", []run.ResourceChange{sg, {LogicalID: "Extra", Type: "AWS::SNS::Topic", Action: "Add"}}, "Extra (AWS::SNS::Topic): Add"},
		{"a resource removed", []run.ResourceChange{{LogicalID: "Old", Type: "AWS::SNS::Topic", Action: "Remove"}}, "Old (AWS::SNS::Topic): Remove"},
		{"a reference to an unexplained change", []run.ResourceChange{cluster, {LogicalID: "SecurityGroup", Type: "AWS::EC2::SecurityGroup", Action: "Modify", Causes: []string{"DirectModification"}}},
			"Cluster (AWS::ElastiCache::CacheCluster): Modify from ResourceReference SecurityGroup, ResourceAttribute SecurityGroup.GroupId; SecurityGroup (AWS::EC2::SecurityGroup): Modify from DirectModification"},
		{"no cause given", []run.ResourceChange{{LogicalID: "X", Type: "AWS::SNS::Topic", Action: "Modify"}}, "X (AWS::SNS::Topic): Modify"},
		{"a nested stack's parameter is not the parent's", []run.ResourceChange{{LogicalID: "Child/Queue", Type: "AWS::SQS::Queue", Action: "Modify", Causes: []string{"ParameterReference VpcId"}}},
			"Child/Queue (AWS::SQS::Queue): Modify from ParameterReference VpcId"},
	} {
		if got := Explained(tc.changes, inputs); got != tc.want {
			t.Errorf("%s: Explained = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestFeeds: the resources each parameter known after apply feeds, from the template's
// references (Ref and Fn::Sub), not counting a secure dynamic reference.
func TestFeeds(t *testing.T) {
	tpl, err := template.Parse([]byte(`Parameters:
  VpcId: {Type: String}
  SubnetIds: {Type: CommaDelimitedList}
  Unused: {Type: String}
Resources:
  SecurityGroup:
    Type: AWS::EC2::SecurityGroup
    Properties:
      GroupDescription: cache
      VpcId: !Ref VpcId
  SubnetGroup:
    Type: AWS::ElastiCache::SubnetGroup
    Properties:
      Description: !Sub "subnets of ${VpcId}"
      SubnetIds: !Ref SubnetIds
  Secret:
    Type: AWS::SSM::Parameter
    Properties:
      Type: String
      Value: "{{resolve:secretsmanager:db}}"
`))
	if err != nil {
		t.Fatal(err)
	}
	got := Feeds(tpl, []string{"VpcId", "SubnetIds", "Unused"})
	want := map[string][]string{"VpcId": {"SecurityGroup", "SubnetGroup"}, "SubnetIds": {"SubnetGroup"}}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Feeds = %v, want %v", got, want)
	}
	if Feeds(nil, []string{"VpcId"}) != nil || Feeds(tpl, nil) != nil {
		t.Error("no template or no parameters: no feeds")
	}
}

// TestParameterChanges: parameters old → new for the reviewer, secrets (NoEcho, sealed
// values, what DescribeStacks masks) as **** and compared sealed with sealed.
func TestParameterChanges(t *testing.T) {
	sealed := func(v string) string { return config.SealNoEcho(seal.Unkeyed, "service", "DbSecret", v) }
	old := map[string]string{"Image": "nginx:1.27", "Size": "2", "DbSecret": sealed("a"), "Gone": "x", "Token": "****", "Same": sealed("s")}
	now := map[string]string{"Image": "nginx:1.28", "Size": "2", "DbSecret": sealed("b"), "New": "y", "Token": sealed("t"), "Same": sealed("s")}
	got := ParameterChanges(old, now, []string{"DbSecret", "Token", "Same"})
	var lines []string
	for _, c := range got {
		lines = append(lines, c.String())
	}
	want := []string{"DbSecret: **** → ****", "Gone: x → (removed)", "Image: nginx:1.27 → nginx:1.28", "New: (none) → y", "Token: **** → ****"}
	if !slices.Equal(lines, want) {
		t.Errorf("ParameterChanges =\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for _, c := range got {
		if strings.Contains(c.Old+c.New, "cairn:") {
			t.Errorf("a sealed value is shown: %+v", c)
		}
	}
}

// TestParameterChangesAgainstDescribeStacks: DescribeStacks lists every parameter of a stack,
// those left at their Default too; the parameters a run gives, with the Defaults of the
// template (WithDefaults), show only what changes.
func TestParameterChangesAgainstDescribeStacks(t *testing.T) {
	tpl, err := template.Parse([]byte(`Parameters:
  BootstrapVersion: {Type: "AWS::SSM::Parameter::Value<String>", Default: /cdk-bootstrap/hnb659fds/version}
  Size: {Type: String, Default: "3"}
  Image: {Type: String}
Resources:
  Q: {Type: AWS::SQS::Queue}
`))
	if err != nil {
		t.Fatal(err)
	}
	described := map[string]string{"BootstrapVersion": "/cdk-bootstrap/hnb659fds/version", "Size": "2", "Image": "nginx:1.27"}
	tests := []struct {
		name  string
		given map[string]string
		want  []string
	}{
		{"left at their Defaults", map[string]string{"Image": "nginx:1.27", "Size": "2"}, nil},
		{"no parameters given", nil, []string{"Image: nginx:1.27 → (removed)", "Size: 2 → 3"}},
		{"a given value changed", map[string]string{"Image": "nginx:1.28", "Size": "2"}, []string{"Image: nginx:1.27 → nginx:1.28"}},
		{"back to the Default", map[string]string{"Image": "nginx:1.27"}, []string{"Size: 2 → 3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range ParameterChanges(described, WithDefaults(tc.given, tpl), nil) {
				got = append(got, c.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("changes = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestConsumedSealsWhatANoEchoParameterReads: the outputs an entry's base records are as
// the run stores them, and an output a NoEcho parameter reads is sealed (its value is the
// secret's), so no staleness reason can print it.
func TestConsumedSealsWhatANoEchoParameterReads(t *testing.T) {
	k := seal.Unkeyed
	r := &run.Run{Stacks: map[string]*run.Stack{
		"database": {Name: "database", Outputs: map[string]string{"SecretArn": "arn:aws:secretsmanager:eu-west-1:1:secret:Database-abc", "Endpoint": "db.internal"}},
		"service": {Name: "service", NoEcho: []string{"DatabaseSecretArn"},
			RawParameters: map[string]string{"DatabaseSecretArn": "${output database::SecretArn}", "DatabaseEndpoint": "${output database::Endpoint}"}},
	}}
	lookups := map[string][]config.Lookup{"service": {
		{Kind: config.KindOutput, Stack: "database", StackName: "shop-database", Output: "SecretArn", Param: "DatabaseSecretArn"},
		{Kind: config.KindOutput, Stack: "database", StackName: "shop-database", Output: "Endpoint", Param: "DatabaseEndpoint"},
	}}
	got := Consumed(r, lookups, nil, "service", k)
	if got["database::Endpoint"] != "db.internal" || !config.HoldsSealed(got["database::SecretArn"]) {
		t.Fatalf("Consumed = %v", got)
	}
	r.Stacks["database"].Outputs["SecretArn"] = "arn:aws:secretsmanager:eu-west-1:1:secret:Database-xyz"
	now := Consumed(r, lookups, nil, "service", k)
	if d := ConsumedChanges(got, now, r, nil); d != "database::SecretArn was ****, now ****" {
		t.Errorf("ConsumedChanges = %q", d)
	}
	if d := ConsumedChanges(got, now, r, map[string]bool{"database": true}); d != "" {
		t.Errorf("an output of a stack the apply changes first is checked later: %q", d)
	}
	if d := ConsumedChanges(got, got, r, nil); d != "" {
		t.Errorf("unchanged: %q", d)
	}
}

// TestInputsDiffer names what differs between two contents of a stack.
func TestInputsDiffer(t *testing.T) {
	a := Inputs{Template: "t", Parameters: "p", Lookups: "l", Settings: "s"}
	if got := a.Differ(a); got != nil {
		t.Errorf("same: %v", got)
	}
	b := Inputs{Template: "t2", Parameters: "p", Lookups: "l2", Settings: "s2"}
	if got := a.Differ(b); !slices.Equal(got, []string{"its template", "the SSM parameters it reads", "its options, tags or protection"}) {
		t.Errorf("Differ = %v", got)
	}
}

// TestRippleStops: a ripple's new change set in a protected stack stops for review when it
// would replace anything (True or Conditional), even where its inputs explain it (before:
// a VPC change replaced a protected database's security group and, conditionally, the
// database, with no plan showing it); elsewhere the explanation alone decides.
func TestRippleStops(t *testing.T) {
	sg := run.ResourceChange{LogicalID: "SecurityGroup", Type: "AWS::EC2::SecurityGroup", Action: "Modify", Replacement: "True", Causes: []string{"ParameterReference VpcId"}}
	db := run.ResourceChange{LogicalID: "Database", Type: "AWS::RDS::DBInstance", Action: "Modify", Replacement: "Conditional", Causes: []string{"ResourceAttribute SecurityGroup.GroupId"}}
	tags := run.ResourceChange{LogicalID: "Database", Type: "AWS::RDS::DBInstance", Action: "Modify", Replacement: "False", Causes: []string{"ParameterReference VpcId"}}
	other := run.ResourceChange{LogicalID: "Log", Type: "AWS::Logs::LogGroup", Action: "Modify", Causes: []string{"DirectModification"}}
	for _, tc := range []struct {
		name      string
		protected bool
		changes   []run.ResourceChange
		want      string
	}{
		{"a protected stack's replacements", true, []run.ResourceChange{sg, db}, "the protected stack would have resources replaced, which no reviewed plan showed: SecurityGroup (AWS::EC2::SecurityGroup): Replacement True; Database (AWS::RDS::DBInstance): Replacement Conditional"},
		{"a protected stack modified in place", true, []run.ResourceChange{tags}, ""},
		{"an unprotected stack's explained replacements", false, []run.ResourceChange{sg, db}, ""},
		{"an unexplained change", false, []run.ResourceChange{other}, "Log (AWS::Logs::LogGroup): Modify from DirectModification"},
	} {
		s := &run.Stack{Name: "db", PlanOnly: tc.protected, Rippled: []string{"VpcId"}}
		if got := RippleStops(s, tc.changes); got != tc.want {
			t.Errorf("%s: RippleStops = %q, want %q", tc.name, got, tc.want)
		}
	}
}
