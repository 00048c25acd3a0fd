package rundoc

import "testing"

func TestSuperseded(t *testing.T) {
	for _, tc := range []struct {
		name, version, latest string
		superseded            bool
	}{
		{"the newest version", "v2", "v2", false},
		{"a newer version exists", "v1", "v2", true},
		{"no version listed (deleted since)", "v1", "", false},
		{"an unversioned bucket", "", "", false},
		{"S3's null version", "null", "v2", false},
	} {
		if got := Superseded(Bundle{Bucket: "cairn-state", Key: "deployments/shop.zip", VersionID: tc.version}, tc.latest); got != tc.superseded {
			t.Errorf("%s: Superseded = %v, want %v", tc.name, got, tc.superseded)
		}
	}
}
