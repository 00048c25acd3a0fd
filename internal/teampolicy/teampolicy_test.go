package teampolicy

import (
	"crypto/md5"
	"encoding/hex"
	"reflect"
	"strings"
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

func TestSessionName(t *testing.T) {
	for arn, want := range map[string]string{
		"arn:aws:iam::123456789012:user/alice":                              "alice",
		"arn:aws:iam::123456789012:user/team/alice@example.com":             "alice@example.com",
		"arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin/alice": "alice",
		"arn:aws:iam::123456789012:root":                                    "root",
		"arn:aws:sts::123456789012:assumed-role/r/a":                        "cairn-a",
		"arn:aws:sts::123456789012:federated-user/bob smith":                "bob-smith",
		"arn:aws:iam::123456789012:user/" + strings.Repeat("x", 70):         strings.Repeat("x", 64),
	} {
		if got := SessionName(arn); got != want {
			t.Errorf("SessionName(%q) = %q, want %q", arn, got, want)
		}
	}
}
