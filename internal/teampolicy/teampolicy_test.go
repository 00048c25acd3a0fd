package teampolicy

import (
	"crypto/md5"
	"encoding/hex"
	"reflect"
	"testing"
)

func etag(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestDiff: what publishing a folder changes, by key: files the bucket lacks are added,
// files whose content differs from the object's (its ETag, a single PUT's MD5) changed,
// objects the folder no longer holds removed; the rest is left alone.
func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name   string
		local  map[string][]byte
		remote map[string]string
		want   []Change
	}{
		{"nothing published yet", map[string][]byte{"a.rego": []byte("a"), "x/b.json": []byte("{}")}, nil,
			[]Change{{Added, "policies/a.rego"}, {Added, "policies/x/b.json"}}},
		{"up to date", map[string][]byte{"a.rego": []byte("a")}, map[string]string{"policies/a.rego": etag("a")}, nil},
		{"changed, removed and added", map[string][]byte{"a.rego": []byte("a2"), "c.rego": []byte("c")},
			map[string]string{"policies/a.rego": etag("a"), "policies/b.rego": etag("b"), "policies/README.md": etag("r")},
			[]Change{{Removed, "policies/README.md"}, {Changed, "policies/a.rego"}, {Removed, "policies/b.rego"}, {Added, "policies/c.rego"}}},
		{"an empty folder removes everything", map[string][]byte{}, map[string]string{"policies/a.rego": etag("a")}, []Change{{Removed, "policies/a.rego"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Diff(tc.local, tc.remote); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Diff = %v, want %v", got, tc.want)
			}
		})
	}
}
