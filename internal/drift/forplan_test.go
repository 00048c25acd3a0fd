package drift

import (
	"slices"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
)

// TestForPlan: a plan relies on the newest drift report only when it is recent enough and
// checked the stack; it takes each drifted resource not ignored, secret values masked.
func TestForPlan(t *testing.T) {
	written := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	report := &Report{Sweep: "S1", WrittenAt: written, Graph: &Graph{Name: "shop", Stacks: []*Stack{
		{Name: "web", StackName: "shop-web", Status: Drifted, Resources: []Resource{
			{LogicalID: "Web", Type: "AWS::EC2::SecurityGroup", Status: "MODIFIED", Differences: []Difference{
				{Path: "/SecurityGroupIngress/1", Expected: "", Actual: `{"CidrIp":"0.0.0.0/0"}`, Type: "ADD"},
				{Path: "/GroupDescription", Expected: "****", Actual: "****", Type: "NOT_EQUAL", Masked: true}}},
			{LogicalID: "Noisy", Type: "AWS::SQS::Queue", Status: "MODIFIED", Ignored: "shop-web/Noisy", Differences: []Difference{{Path: "/DelaySeconds"}}},
			{LogicalID: "Gone", Type: "AWS::SQS::Queue", Status: "DELETED"},
		}},
		{Name: "db", StackName: "shop-db", Status: InSync},
		{Name: "busy", StackName: "shop-busy", Status: NotChecked, Reason: "stack operation in progress"},
	}}}
	for _, tc := range []struct {
		name, stack, stackName string
		report                 *Report
		now                    time.Time
		ok                     bool
		resources              int
	}{
		{"drifted, recent", "web", "shop-web", report, written.Add(time.Hour), true, 2},
		{"in sync", "db", "shop-db", report, written.Add(time.Hour), true, 0},
		{"too old", "web", "shop-web", report, written.Add(PlanMaxAge + time.Second), false, 0},
		{"not checked", "busy", "shop-busy", report, written.Add(time.Hour), false, 0},
		{"another stack of that name", "web", "other-web", report, written.Add(time.Hour), false, 0},
		{"no report", "web", "shop-web", nil, written, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found, from, ok := ForPlan(tc.report, "s3://cairn/drift/shop/S1.json", tc.stack, tc.stackName, tc.now, PlanMaxAge)
			if ok != tc.ok || len(found) != tc.resources {
				t.Fatalf("ok %v with %d resources (%+v), want %v with %d", ok, len(found), found, tc.ok, tc.resources)
			}
			if ok && from != "drift report s3://cairn/drift/shop/S1.json of 2026-11-30T11:00:00Z" {
				t.Errorf("from %q", from)
			}
			if tc.resources == 0 {
				return
			}
			web := found[0]
			if web.LogicalID != "Web" || len(web.Properties) != 2 || web.Properties[0].Actual != `{"CidrIp":"0.0.0.0/0"}` ||
				web.Properties[1].Previous != "****" || web.Properties[1].Actual != "****" {
				t.Errorf("Web: %+v", web)
			}
			if found[1].LogicalID != "Gone" || found[1].Status != "DELETED" {
				t.Errorf("deleted resource: %+v", found[1])
			}
		})
	}
}

// TestDetected: what a plan's own drift detection found is masked where a secret reaches
// (a NoEcho parameter's property), every value when the stack's template is not known,
// and drift.ignore leaves resources out, as a sweep's report does.
func TestDetected(t *testing.T) {
	const yaml = `namespace: shop
drift: {ignore: ["web/Noisy"]}
stacks:
  - name: web
    parameters: {Secret: hunter2}
    template_body: |
      Parameters:
        Secret: {Type: String, NoEcho: true}
      Resources:
        Topic:
          Type: AWS::SNS::Topic
          Properties: {DisplayName: !Ref Secret, TopicName: web}
        Noisy:
          Type: AWS::SQS::Queue
`
	cfg, err := config.LoadOptions{Deployment: "shop"}.Load(bundle.FromYAML("cairn.yaml", []byte(yaml)))
	if err != nil {
		t.Fatal(err)
	}
	found := []Resource{
		{LogicalID: "Topic", Type: "AWS::SNS::Topic", Status: "MODIFIED", Differences: []Difference{
			{Path: "/DisplayName", Expected: "hunter2", Actual: "hunter3", Type: "NOT_EQUAL"},
			{Path: "/TopicName", Expected: "web", Actual: "web2", Type: "NOT_EQUAL"}}},
		{LogicalID: "Noisy", Type: "AWS::SQS::Queue", Status: "MODIFIED", Differences: []Difference{{Path: "/DelaySeconds", Expected: "0", Actual: "5"}}},
	}
	clone := func() []Resource {
		out := slices.Clone(found)
		for i := range out {
			out[i].Differences = slices.Clone(out[i].Differences)
		}
		return out
	}
	got := Detected(cfg, "web", "shop-web", clone())
	if len(got) != 1 || got[0].LogicalID != "Topic" || len(got[0].Properties) != 2 {
		t.Fatalf("%+v", got)
	}
	if p := got[0].Properties[0]; p.Previous != "****" || p.Actual != "****" {
		t.Errorf("the secret property is shown: %+v", p)
	}
	if p := got[0].Properties[1]; p.Previous != "web" || p.Actual != "web2" {
		t.Errorf("a plain property: %+v", p)
	}
	for _, r := range Detected(nil, "web", "shop-web", clone()) {
		for _, p := range r.Properties {
			if p.Previous != "****" || p.Actual != "****" {
				t.Errorf("with no template known, %s %s is shown: %+v", r.LogicalID, p.Property, p)
			}
		}
	}
}
