package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
)

// withDrift adds to the sample plan's app stack what its drift-aware change set showed: a
// security-group rule added out of band (reverted), a value the template now adopts
// (SyncWithActual), a NoEcho-derived property (masked all three ways), a hostile value,
// and a resource deleted out of band (re-created); and to the network and dns stacks
// (on_drift keep: ordinary change sets) what their last drift report found: a property
// the change set overwrites, one it leaves, a masked one and a deleted resource.
func withDrift(p *plan.Document) *plan.Document {
	for i := range p.Stacks {
		s := &p.Stacks[i]
		switch s.Name {
		case "network":
			s.Changes[0].Properties = []string{"CidrBlock"}
			s.SettleDrift([]plan.ResourceDrift{
				{LogicalID: "Vpc", Type: "AWS::EC2::VPC", Status: "MODIFIED", Properties: []plan.PropertyDrift{
					{Property: "/CidrBlock", Previous: "10.0.0.0/16", Actual: "10.1.0.0/16"},
					{Property: "/Tags/0/Value", Previous: "shop", Actual: "shop | <script>"},
				}},
				{LogicalID: "Key", Type: "AWS::SSM::Parameter", Status: "MODIFIED", Properties: []plan.PropertyDrift{{Property: "/Value", Previous: "****", Actual: "****"}}},
				{LogicalID: "Old", Type: "AWS::SQS::Queue", Status: "DELETED"},
			}, "drift report s3://cairn/drift/shop/20261130T110000Z-1a2b3c4d.json of 2026-11-30T11:00:02Z")
			continue
		case "dns":
			s.SettleDrift([]plan.ResourceDrift{{LogicalID: "Zone", Type: "AWS::Route53::HostedZone", Status: "MODIFIED", Properties: []plan.PropertyDrift{
				{Property: "/HostedZoneConfig/Comment", Previous: "shop", Actual: "edited in the console"}}}},
				"drift report s3://cairn/drift/shop/20261130T110000Z-1a2b3c4d.json of 2026-11-30T11:00:02Z")
			continue
		case "app":
		default:
			continue
		}
		s.Changes = append(s.Changes,
			plan.Change{LogicalID: "Web", Type: "AWS::EC2::SecurityGroup", Action: "Modify", Replacement: "False", DriftStatus: "MODIFIED", Drift: []plan.PropertyDrift{
				{Property: "SecurityGroupIngress", Revert: true,
					Previous: `[{"IpProtocol":"tcp","FromPort":443,"ToPort":443,"CidrIp":"10.0.0.0/8"}]`,
					Actual:   `[{"IpProtocol":"tcp","FromPort":443,"ToPort":443,"CidrIp":"10.0.0.0/8"},{"IpProtocol":"tcp","FromPort":22,"ToPort":22,"CidrIp":"0.0.0.0/0"}]`,
					Template: `[{"IpProtocol":"tcp","FromPort":443,"ToPort":443,"CidrIp":"10.0.0.0/8"}]`},
				{Property: "GroupDescription", Previous: "web", Actual: "web | `ops` <b>", Template: "web | `ops` <b>"},
			}},
			plan.Change{LogicalID: "Topic", Type: "AWS::SNS::Topic", Action: "Modify", Replacement: "False", DriftStatus: "MODIFIED", Drift: []plan.PropertyDrift{
				{Property: "DisplayName", Revert: true, Previous: "****", Actual: "hunter2-rotated", Template: "****"},
			}},
			plan.Change{LogicalID: "Gone", Type: "AWS::SQS::Queue", Action: "Add", DriftStatus: "DELETED"},
		)
	}
	return p
}

// TestChangedOutsideCairnGolden: the plan comment's "changed outside cairn" section, per
// resource and property: the last deployment's value, today's, the template's, and what
// the plan does; secrets masked all three ways, hostile values escaped. Run with -update
// to accept a deliberate change.
func TestChangedOutsideCairnGolden(t *testing.T) {
	var b bytes.Buffer
	if err := PlanComment(&b, withDrift(loadPlan(t)), 0); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if strings.Contains(got, "hunter2") {
		t.Errorf("a secret's new value is shown:\n%s", got)
	}
	var text bytes.Buffer
	if err := PlanText(&text, withDrift(loadPlan(t))); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"~ changed outside cairn: app Web.SecurityGroupIngress: this plan reverts it\n",
		"~ changed outside cairn: app Web.GroupDescription: this plan keeps it (SyncWithActual)\n", "~ changed outside cairn: app Gone: deleted: this plan re-creates it from the template\n",
		"~ changed outside cairn: network Vpc./CidrBlock: this plan overwrites it (the template changes it)\n",
		"~ changed outside cairn: network Vpc./Tags/0/Value: this plan leaves it (still drifted)\n",
		"~ changed outside cairn: network Old: deleted: this plan leaves it (still drifted)\n",
		"~ changed outside cairn: dns Zone./HostedZoneConfig/Comment: this plan leaves it (still drifted)\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the terminal's plan lacks %q:\n%s", want, text.String())
		}
	}
	golden := filepath.Join("testdata", "plan-drift.md")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("Markdown differs from %s (go test -update accepts it):\n%s", golden, got)
	}
}

// TestDriftSectionFitsTheComment: a 200-stack plan with drift in 20 stacks (10 with
// drift-aware change sets: a property reverted, one kept; 10 on_drift keep, from a drift
// report: a property overwritten, one left) keeps its whole "changed outside cairn"
// section in a comment under GitHub's limit. It logs the comment's and the section's
// sizes (go test -v).
func TestDriftSectionFitsTheComment(t *testing.T) {
	p := bigPlan(200)
	long := strings.Repeat(`{"IpProtocol":"tcp","FromPort":443,"ToPort":443,"CidrIp":"10.0.0.0/8"},`, 20)
	for i := 0; i < 200; i += 10 {
		s := &p.Stacks[i]
		if i%20 == 0 {
			s.Changes[0].DriftStatus = "MODIFIED"
			s.Changes[0].Drift = []plan.PropertyDrift{{Property: "Value", Revert: true, Previous: long, Actual: long + "x", Template: long},
				{Property: "Description", Previous: "a", Actual: "b", Template: "b"}}
			continue
		}
		s.Changes[0].Properties = []string{"Value"}
		s.SettleDrift([]plan.ResourceDrift{{LogicalID: "Parameter00", Type: "AWS::SSM::Parameter", Status: "MODIFIED", Properties: []plan.PropertyDrift{
			{Property: "/Value", Previous: long, Actual: long + "x"}, {Property: "/Description", Previous: "a", Actual: "b"}}}},
			"drift report s3://cairn-state/drift/shop/20261130T110000Z-1a2b3c4d.json of 2026-11-30T11:00:02Z")
	}
	var b bytes.Buffer
	if err := PlanComment(&b, p, 0); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if len(got) > CommentLimit {
		t.Fatalf("comment of %d characters, over GitHub's %d", len(got), CommentLimit)
	}
	section := got[strings.Index(got, "## Changed outside cairn"):]
	section = section[:strings.Index(section, "\n\n## ")+1]
	t.Logf("200 stacks, drift in 20: comment %d characters (GitHub's limit %d), its \"changed outside cairn\" section %d", len(got), CommentLimit, len(section))
	if n := strings.Count(section, "\n| stack-"); n != 40 {
		t.Errorf("the section shows %d rows, want 40 (20 stacks, 2 properties each):\n%s", n, section)
	}
	for _, want := range []string{"| stack-180 | Parameter00 | Value |", "**reverts it**", "keeps it (the template now sets it: SyncWithActual)",
		"| stack-190 | Parameter00 | /Value |", "**overwrites it** with the template's new value", "leaves it (CloudFormation does not touch it: still drifted)",
		"(`on_drift: keep`, or not updated: stack-010, stack-030, stack-050, stack-070, stack-090 and 5 more)"} {
		if !strings.Contains(section, want) {
			t.Errorf("the section lacks %q:\n%s", want, section)
		}
	}
}

// TestDriftSectionIsBounded: past 60 rows the section says how many more there are and
// where they all are.
func TestDriftSectionIsBounded(t *testing.T) {
	p := bigPlan(40)
	for i := range p.Stacks {
		p.Stacks[i].Changes[0].DriftStatus = "MODIFIED"
		p.Stacks[i].Changes[0].Drift = []plan.PropertyDrift{{Property: "Value", Revert: true, Previous: "a", Actual: "b", Template: "a"}, {Property: "Tier", Previous: "a", Actual: "b", Template: "b"}}
	}
	got := changedOutside(p, Order(p))
	if n := strings.Count(got, "\n| stack-"); n != driftRowsShown || !strings.Contains(got, "80 change(s) made outside cairn") ||
		!strings.Contains(got, "…and 20 more: `cairn plans shop "+p.ID+" --format json` lists them all.") {
		t.Errorf("%d rows:\n%s", n, got)
	}
}

// TestRunReportSaysWhatTheRunDidWithDrift: a run report lists, per stack whose drift-aware
// change set showed drift, what the run did with each property as the stack ended: done
// reverted, re-created or kept (SyncWithActual); a failed stack's change set was not
// executed, so nothing was reverted; hostile names escaped.
func TestRunReportSaysWhatTheRunDidWithDrift(t *testing.T) {
	r := sampleRun()
	r.Stacks["network"].Drift = []run.DriftedProperty{{LogicalID: "Web", Property: "SecurityGroupIngress", Revert: true},
		{LogicalID: "Queue", Property: "VisibilityTimeout"}, {LogicalID: "Gone", Revert: true}}
	r.Stacks["cache"].Drift = []run.DriftedProperty{{LogicalID: "Cache|x", Property: "NodeType", Revert: true}}
	r.Stacks["app"].Outside = []run.DriftedProperty{{LogicalID: "Sg", Property: "/SecurityGroupIngress", Does: run.DriftLeft},
		{LogicalID: "Q", Property: "/VisibilityTimeout", Does: run.DriftOverwritten}, {LogicalID: "Old", Does: run.DriftLeft}}
	r.Stacks["app"].DriftFrom = "drift report s3://b/drift/shop/s1.json of 2026-12-07 08:00"
	var b strings.Builder
	if err := Markdown(&b, Input{Run: r}); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"## Changed outside cairn\n\n", "| Stack | Resource | Property | What this run did |\n|---|---|---|---|\n",
		"| network | Web | SecurityGroupIngress | reverted to the template's value |",
		"| network | Queue | VisibilityTimeout | kept: the template now sets it (SyncWithActual, drift reset) |",
		"| network | Gone | (the resource, deleted) | re-created from the template |",
		`| cache | Cache\|x | NodeType | not reverted: its change set was not executed (stack failed) |`,
		"(`on_drift: keep`: app) are shown as the drift report s3://b/drift/shop/s1.json of 2026-12-07 08:00 found them.",
		"| app | Sg | /SecurityGroupIngress | left as it is: CloudFormation does not touch it (still drifted) |",
		"| app | Q | /VisibilityTimeout | not overwritten: its change set did not complete (stack unchanged) |",
		"| app | Old | (the resource, deleted) | left deleted: an ordinary change set does not re-create it (on_drift revert does) |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	if b.Reset(); Markdown(&b, Input{Run: sampleRun()}) != nil || strings.Contains(b.String(), "Changed outside cairn") {
		t.Errorf("a run without drift has the section:\n%s", b.String())
	}
	for _, tc := range []struct {
		phase run.Phase
		d     run.DriftedProperty
		want  string
	}{
		{run.Ready, run.DriftedProperty{LogicalID: "W", Property: "P", Revert: true}, "to be reverted to the template's value (its change set is ready)"},
		{run.Executing, run.DriftedProperty{LogicalID: "W", Property: "P", Revert: true}, "being reverted to the template's value"},
		{run.Failed, run.DriftedProperty{LogicalID: "W", Property: "P"}, "kept: left as it is (its change set was not executed)"},
		{run.Done, run.DriftedProperty{LogicalID: "W", Property: "P", Does: run.DriftOverwritten}, "overwritten with the template's new value"},
		{run.Failed, run.DriftedProperty{LogicalID: "W", Property: "P", Does: run.DriftOverwritten}, "not overwritten: its change set did not complete (stack failed)"},
		{run.Failed, run.DriftedProperty{LogicalID: "W", Property: "P", Does: run.DriftLeft}, "left as it is: CloudFormation does not touch it (still drifted)"},
	} {
		if got := RunDriftDoes(&run.Stack{Phase: tc.phase}, tc.d); got != tc.want {
			t.Errorf("%s %+v: %q, want %q", tc.phase, tc.d, got, tc.want)
		}
	}
}
