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
