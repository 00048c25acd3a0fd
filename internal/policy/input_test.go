package policy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
	"github.com/cairn-dev/cairn/internal/template"
)

var evalTime = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

const siteTemplate = `
Resources:
  Site:
    Type: AWS::S3::Bucket
    DeletionPolicy: Retain
    UpdateReplacePolicy: !If [Prod, Retain, Delete]
    Properties:
      BucketName: !Sub "${AWS::StackName}-site"
      AccessControl: PublicRead
  Fn:
    Type: AWS::Lambda::Function
    Properties:
      Runtime: python3.13
`

// samplePlan is a plan of two stacks: web (a public bucket, a secret and a NoEcho
// parameter, a change set) and db (protected, deleted), from pull request 22.
func samplePlan() *plan.Document {
	return &plan.Document{
		ID: "20261207-100000-aaaaaaaa", Deployment: "shop", Namespace: "shop",
		Bundle: plan.BundleVersion{Key: "plans/shop.zip", SHA256: "abc", GitRef: "c0ffee",
			Source: provenance.Source{Ref: "refs/pull/22/merge", PullRequest: 22, HeadRef: "feature/site", HeadCommit: "beef", RunURL: "https://ci/1"}},
		Protection: map[string]bool{"db": true},
		Stacks: []plan.Stack{
			{Name: "db", StackName: "shop-db", Action: plan.Delete, Resources: []plan.Resource{{LogicalID: "Table", Type: "AWS::DynamoDB::Table"}}},
			{Name: "web", StackName: "shop-web", Action: plan.Update,
				Parameters: map[string]string{"Domain": "shop.example", "ApiKey": "{{cairn:ssm-secure:/shop/key@hmac:" + strings.Repeat("ab", 32) + "}}", "Password": "hunter2"},
				Changes: []plan.Change{{LogicalID: "Site", Type: "AWS::S3::Bucket", Action: "Modify", Replacement: "False",
					Details: []string{"Properties AccessControl (recreation: Never, Static)", "Tags (recreation: Never, Static)"}}}},
		},
		Run: &run.Run{ID: "run-1", Stacks: map[string]*run.Stack{
			"web": {Name: "web", NoEcho: []string{"Password"}, At: target.Target{Account: "111111111111", Region: "eu-west-1"}},
			"db":  {Name: "db", Target: target.Spec{Region: "us-east-1"}, PlanOnly: true},
		}},
	}
}

func webSource(t *testing.T) Source {
	t.Helper()
	tpl, err := template.Parse([]byte(siteTemplate))
	if err != nil {
		t.Fatal(err)
	}
	return Source{"web": {Name: "web", Template: tpl, Capabilities: []string{"CAPABILITY_IAM"},
		Options: config.Options{TimeoutInMinutes: 30, Rollback: &config.Rollback{Triggers: []config.Trigger{{ARN: "arn:alarm"}}}}}}
}

// TestFromPlanMasksSecretsAndReadsThePlan: each field of the input comes from the plan as
// docs/policy.md says; secret values show as ****.
func TestFromPlanMasksSecretsAndReadsThePlan(t *testing.T) {
	in := FromPlan(samplePlan(), nil, evalTime)
	if in.Kind != "plan" || in.PlanID != "20261207-100000-aaaaaaaa" || in.RunID != "run-1" || in.Time != "2026-12-07T10:00:00Z" || in.TimeNS != evalTime.UnixNano() {
		t.Errorf("header = %+v", in)
	}
	p := in.Provenance
	if p.Commit != "c0ffee" || p.Branch != "feature/site" || p.PullRequest != 22 || p.HeadCommit != "beef" || p.BundleSHA256 != "abc" {
		t.Errorf("provenance = %+v", p)
	}
	db, web := in.Stacks[0], in.Stacks[1]
	if !db.Protected || db.Action != "delete" || db.Region != "us-east-1" || len(db.Resources) != 1 || db.TemplateKnown {
		t.Errorf("db = %+v", db)
	}
	if web.Protected || web.Account != "111111111111" || web.Region != "eu-west-1" {
		t.Errorf("web = %+v", web)
	}
	want := map[string]string{"Domain": "shop.example", "ApiKey": Masked, "Password": Masked}
	for k, v := range want {
		if web.Parameters[k] != v {
			t.Errorf("parameter %s = %q, want %q", k, web.Parameters[k], v)
		}
	}
	if !slices.Equal(web.Secret, []string{"ApiKey", "Password"}) {
		t.Errorf("secret parameters = %v", web.Secret)
	}
	b, _ := json.Marshal(in)
	if strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "hmac:") {
		t.Errorf("input shows a secret: %s", b)
	}
	if c := web.Changes[0]; !slices.Equal(c.Scope, []string{"Properties", "Tags"}) || c.Replacement != "False" {
		t.Errorf("change = %+v", c)
	}
}

// TestFromPlanWithTheBundle: with the bundle's stack, resources carry the template's
// properties and policies (intrinsics in long form), and capabilities and options are set.
func TestFromPlanWithTheBundle(t *testing.T) {
	in := FromPlan(samplePlan(), webSource(t), evalTime)
	web := in.Stacks[1]
	if !web.TemplateKnown || len(web.Resources) != 2 || !slices.Equal(web.Capabilities, []string{"CAPABILITY_IAM"}) {
		t.Fatalf("web = %+v", web)
	}
	if web.Options == nil || web.Options.TimeoutInMinutes != 30 || !slices.Equal(web.Options.RollbackTriggers, []string{"arn:alarm"}) {
		t.Errorf("options = %+v", web.Options)
	}
	fn, site := web.Resources[0], web.Resources[1]
	if fn.LogicalID != "Fn" || fn.Properties["Runtime"] != "python3.13" {
		t.Errorf("Fn = %+v", fn)
	}
	if site.DeletionPolicy != "Retain" || site.Properties["AccessControl"] != "PublicRead" || !strings.Contains(site.UpdateReplacePolicy, "Fn::If") {
		t.Errorf("Site = %+v", site)
	}
	if name, _ := site.Properties["BucketName"].(map[string]any); name["Fn::Sub"] != "${AWS::StackName}-site" {
		t.Errorf("BucketName = %#v", site.Properties["BucketName"])
	}
}

// TestFromRunIsAPush: a push's input names its stacks by intent, masks NoEcho values and
// has no changes.
func TestFromRunIsAPush(t *testing.T) {
	r := &run.Run{ID: "run-2", Deployment: "shop", Stacks: map[string]*run.Stack{
		"web": {Name: "web", StackName: "shop-web", Intent: run.IntentDeploy, NoEcho: []string{"Password"}, Parameters: map[string]string{"Password": "{{cairn:noecho@hmac:99}}"}},
	}}
	in := FromRun(r, plan.BundleVersion{Source: provenance.Source{Ref: "refs/heads/main", Commit: "c1"}}, webSource(t), evalTime)
	if in.Kind != "push" || in.RunID != "run-2" || in.Provenance.Branch != "main" || in.Provenance.Commit != "c1" {
		t.Errorf("input = %+v", in)
	}
	s := in.Stacks[0]
	if s.Action != "deploy" || s.Parameters["Password"] != Masked || !s.TemplateKnown || len(s.Changes) != 0 {
		t.Errorf("stack = %+v", s)
	}
}
