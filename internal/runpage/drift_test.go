package runpage

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
)

// TestPagesShowDrift: a plan's page has a section "Changed outside cairn" with what the
// comment shows (three values, the plan's outcome, revert, keep, leave, overwrite and a
// re-created resource), a secret masked all three ways and hostile values escaped; a
// run's page says what the run did with each property; pages without drift have none.
func TestPagesShowDrift(t *testing.T) {
	network := plan.Stack{Name: "network", StackName: "shop-network", Action: plan.Update, ChangeSetName: "cs2",
		Changes: []plan.Change{{LogicalID: "Vpc", Type: "AWS::EC2::VPC", Action: "Modify", Replacement: "False", Properties: []string{"CidrBlock"}}}}
	network.SettleDrift([]plan.ResourceDrift{{LogicalID: "Vpc", Status: "MODIFIED", Properties: []plan.PropertyDrift{
		{Property: "/CidrBlock", Previous: "10.0.0.0/16", Actual: "10.1.0.0/16"}, {Property: "/Tags/0/Value", Previous: "shop", Actual: hostile}}}},
		"drift report s3://cairn/drift/shop/S1.json of 2026-12-07T05:00:00Z")
	p := &plan.Document{ID: "P1", Deployment: "shop", Status: plan.Planned, CreatedAt: t0, Stacks: []plan.Stack{
		{Name: "api", StackName: "shop-api", Action: plan.Update, ChangeSetName: "cs1", Changes: []plan.Change{
			{LogicalID: "Web", Type: "AWS::EC2::SecurityGroup", Action: "Modify", DriftStatus: "MODIFIED", Drift: []plan.PropertyDrift{
				{Property: "SecurityGroupIngress", Revert: true, Previous: "[443]", Actual: "[443,22]", Template: "[443]"},
				{Property: "GroupDescription", Previous: "web", Actual: "web2", Template: "web2"},
				{Property: "Secret", Revert: true, Previous: "****", Actual: "hunter2", Template: "****"}}},
			{LogicalID: "Gone", Type: "AWS::SQS::Queue", Action: "Add", DriftStatus: "DELETED"}}},
		network,
	}}
	b, err := RenderPlan(Plan{Plan: p})
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`<h2 id="drift-h">Changed outside cairn</h2>`,
		"<td>api</td><td>Web</td><td>SecurityGroupIngress</td><td>[443]</td><td>[443,22]</td><td>[443]</td><td>reverts it</td>",
		"<td>api</td><td>Web</td><td>GroupDescription</td><td>web</td><td>web2</td><td>web2</td><td>keeps it (SyncWithActual)</td>",
		"<td>api</td><td>Web</td><td>Secret</td><td>****</td><td>****</td><td>****</td>",
		"<td>api</td><td>Gone</td><td>(the resource)</td><td>exists</td><td>deleted</td><td>exists</td><td>re-creates it from the template</td>",
		"<td>network</td><td>Vpc</td><td>/CidrBlock</td><td>10.0.0.0/16</td><td>10.1.0.0/16</td><td>(its new value)</td><td>overwrites it (the template changes it)</td>",
		"<td>network</td><td>Vpc</td><td>/Tags/0/Value</td><td>shop</td>",
		"leaves it (still drifted)",
		"shown as the drift report s3://cairn/drift/shop/S1.json of 2026-12-07T05:00:00Z found them",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the plan page lacks %q", want)
		}
	}
	if strings.Contains(page, "hunter2") || strings.Contains(page, "<script") || strings.Contains(page, "<img") {
		t.Error("a secret or a hostile value reached the plan page")
	}

	r := fixture()
	r.Stacks["network"].Drift = []run.DriftedProperty{{LogicalID: "Web", Property: "SecurityGroupIngress", Revert: true}, {LogicalID: "Gone", Revert: true}}
	r.Stacks["api"].Drift = []run.DriftedProperty{{LogicalID: hostile, Property: "P", Revert: true}}
	r.Stacks["network"].Outside = []run.DriftedProperty{{LogicalID: "Sg", Property: "/SecurityGroupIngress", Does: run.DriftLeft}, {LogicalID: "Q", Property: hostile, Does: run.DriftOverwritten}}
	r.Stacks["network"].DriftFrom = "drift report s3://b/drift/shop/" + hostile + ".json"
	page = render(t, r, nil)
	for _, want := range []string{`<h2 id="drift-h">Changed outside cairn</h2>`,
		"<td>network</td><td>Web</td><td>SecurityGroupIngress</td><td>reverted to the template&#39;s value</td>",
		"<td>network</td><td>Gone</td><td>(the resource, deleted)</td><td>re-created from the template</td>",
		"<td>not reverted: its change set was not executed (stack failed)</td>",
		"<td>network</td><td>Sg</td><td>/SecurityGroupIngress</td><td>left as it is: CloudFormation does not touch it (still drifted)</td>",
		"<td>overwritten with the template&#39;s new value</td>", "Stacks not drift-aware (1: on_drift keep) are shown as the drift report s3://b/drift/shop/"} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "<img") {
		t.Error("a hostile value reached the run page")
	}
	if page := render(t, fixture(), nil); strings.Contains(page, "drift-h") {
		t.Error("a run without drift has the section")
	}
}
