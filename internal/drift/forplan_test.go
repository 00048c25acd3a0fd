package drift

import (
	"testing"
	"time"
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
