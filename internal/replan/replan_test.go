package replan_test

import (
	"testing"

	"github.com/cairn-dev/cairn/internal/replan"
	"github.com/cairn-dev/cairn/internal/state"
)

func TestPick(t *testing.T) {
	applied := []state.BundleRef{ // newest first
		{VersionID: "3/60O30C1G60O30C9H00MU4SS8K6T5AFO=", GitRef: "c0ffee1234567890"},
		{VersionID: "3/60O30C1G60O30C1M00JRIBLKGCG6G3G=", GitRef: "deadbeef12345678"},
		{VersionID: "3/60O30C1G60O30C1A00JRIBLKGCG6G3G=", GitRef: "feedface12345678"},
	}
	tests := []struct {
		name    string
		to      string
		want    string // version id
		wantErr string
	}{
		{name: "the one before the current", want: applied[1].VersionID},
		{name: "a whole version id", to: applied[2].VersionID, want: applied[2].VersionID},
		{name: "a version as human output shortens it", to: "…K6T5AFO=", want: applied[0].VersionID},
		{name: "a unique end of a version id", to: "K6T5AFO=", want: applied[0].VersionID},
		{name: "a git ref", to: "deadbeef", want: applied[1].VersionID},
		{name: "an end two versions share", to: "JRIBLKGCG6G3G=", wantErr: `"JRIBLKGCG6G3G=" names 2 applied bundles: give more of it; applied: ` +
			"3/60O30C1G60O30C9H00MU4SS8K6T5AFO= (git c0ffee1234567890), 3/60O30C1G60O30C1M00JRIBLKGCG6G3G= (git deadbeef12345678), 3/60O30C1G60O30C1A00JRIBLKGCG6G3G= (git feedface12345678)"},
		{name: "a git ref too short to tell", to: "dead", wantErr: `no applied bundle has version or git ref "dead"; applied: ` +
			"3/60O30C1G60O30C9H00MU4SS8K6T5AFO= (git c0ffee1234567890), 3/60O30C1G60O30C1M00JRIBLKGCG6G3G= (git deadbeef12345678), 3/60O30C1G60O30C1A00JRIBLKGCG6G3G= (git feedface12345678)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := replan.Pick(applied, tt.to)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Pick(%q) = %v, %v; want error %q", tt.to, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got.VersionID != tt.want {
				t.Fatalf("Pick(%q) = %v, %v; want %s", tt.to, got, err, tt.want)
			}
		})
	}
	if _, err := replan.Pick(applied[:1], ""); err == nil || err.Error() != "only one bundle (version 3/60O30C1G60O30C9H00MU4SS8K6T5AFO=) was ever applied: nothing earlier to return to" {
		t.Errorf("Pick of the only bundle: %v", err)
	}
	if _, err := replan.Pick(nil, ""); err == nil || err.Error() != "the graph's history records no applied bundle" {
		t.Errorf("Pick of no bundle: %v", err)
	}
}
