package plan

import "testing"

// TestSettleDrift: an ordinary change set overwrites a drifted property it changes and
// leaves the others (the template still sets them as last deployed) and a deleted
// resource; a masked value masks all three.
func TestSettleDrift(t *testing.T) {
	s := Stack{Name: "web", Changes: []Change{{LogicalID: "Web", Action: "Modify", Properties: []string{"GroupDescription"}}}}
	s.SettleDrift([]ResourceDrift{
		{LogicalID: "Web", Status: "MODIFIED", Properties: []PropertyDrift{
			{Property: "/GroupDescription", Previous: "web", Actual: "web!"},
			{Property: "/SecurityGroupIngress/1", Actual: `{"CidrIp":"0.0.0.0/0"}`},
			{Property: "/Tags/0/Value", Previous: "****", Actual: "****"},
		}},
		{LogicalID: "Gone", Status: "DELETED"},
	}, "drift report R")
	want := []PropertyDrift{
		{Property: "/GroupDescription", Previous: "web", Actual: "web!", Does: Overwrite},
		{Property: "/SecurityGroupIngress/1", Actual: `{"CidrIp":"0.0.0.0/0"}`, Does: Leave},
		{Property: "/Tags/0/Value", Previous: "****", Actual: "****", Template: "****", Does: Leave},
	}
	if len(s.Outside) != 2 || s.DriftFrom != "drift report R" || s.Outside[1].Does != Leave {
		t.Fatalf("%+v from %q", s.Outside, s.DriftFrom)
	}
	for i, w := range want {
		if got := s.Outside[0].Properties[i]; got != w || got.Outcome() != w.Does {
			t.Errorf("property %d: %+v, want %+v", i, got, w)
		}
	}
	for _, tc := range []struct {
		d    PropertyDrift
		want Outcome
	}{{PropertyDrift{Revert: true}, Revert}, {PropertyDrift{}, Keep}, {PropertyDrift{Does: Leave}, Leave}} {
		if got := tc.d.Outcome(); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.d, got, tc.want)
		}
	}
}

// TestRefusedDrift: what a refused drift-aware change set showed becomes the plan's
// "changed outside cairn": the properties it would have brought back and the resources
// deleted out of band, refused; a property the template adopts (SyncWithActual) and a
// change without drift are left out; a masked value masks all three.
func TestRefusedDrift(t *testing.T) {
	got := RefusedDrift([]Change{
		{LogicalID: "Web", Type: "AWS::EC2::SecurityGroup", Action: "Modify", DriftStatus: "MODIFIED", Drift: []PropertyDrift{
			{Property: "SecurityGroupIngress", Previous: "[a]", Actual: "[a,b]", Template: "[a]", Revert: true},
			{Property: "Tags", Previous: "****", Actual: "x", Template: "y", Revert: true},
		}},
		{LogicalID: "Queue", Action: "Modify", DriftStatus: "MODIFIED", Drift: []PropertyDrift{{Property: "VisibilityTimeout", Previous: "30", Actual: "90", Template: "90"}}},
		{LogicalID: "Gone", Action: "Add", DriftStatus: "DELETED"},
		{LogicalID: "Topic", Action: "Modify"},
	})
	if len(got) != 2 || got[0].LogicalID != "Web" || got[1].LogicalID != "Gone" || got[1].Does != Refused || got[1].Status != "DELETED" {
		t.Fatalf("%+v", got)
	}
	want := []PropertyDrift{
		{Property: "SecurityGroupIngress", Previous: "[a]", Actual: "[a,b]", Template: "[a]", Does: Refused},
		{Property: "Tags", Previous: "****", Actual: "****", Template: "****", Does: Refused},
	}
	for i, w := range want {
		if p := got[0].Properties[i]; p != w || p.Outcome() != Refused {
			t.Errorf("property %d: %+v, want %+v", i, p, w)
		}
	}
}
