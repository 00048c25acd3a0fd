package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
)

// TestPoliciesKey: policies names a folder of the bundle holding its own policies; a path
// leaving the bundle, a missing folder or a file is an error naming the key.
func TestPoliciesKey(t *testing.T) {
	tests := []struct {
		value, want, err string
	}{
		{"rules", "rules", ""},
		{"./rules/", "rules", ""},
		{"rules/team", "rules/team", ""},
		{"../rules", "", `policies directory "../rules" leaves the bundle`},
		{"/etc", "", `policies directory "/etc" leaves the bundle`},
		{"nowhere", "", `policies directory "nowhere" not found in the bundle`},
		{"app.yaml", "", `policies "app.yaml" is a file`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range map[string]string{
				"cairn.yaml":           "namespace: shop\npolicies: " + tt.value + "\nstacks:\n  - name: app\n    template_path: app.yaml\n",
				"app.yaml":             "Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n",
				"rules/team/tags.rego": "package shop.tags\n",
			} {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			b, err := bundle.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			c, err := LoadOptions{Today: runtimeDay}.Load(b)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), "cairn.yaml:2:") || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one at cairn.yaml:2 holding %q", err, tt.err)
				}
				return
			}
			if err != nil || c.Policies != tt.want {
				t.Fatalf("policies %q, %v; want %q", c.Policies, err, tt.want)
			}
		})
	}
}
