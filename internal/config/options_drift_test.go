package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
)

func loadOnDrift(t *testing.T, value string) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"cairn.yaml": "namespace: shop\nstacks:\n  - name: app\n    template_path: app.yaml\n    on_drift: " + value + "\n",
		"app.yaml":   "Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bundle.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return LoadOptions{}.Load(b)
}

// TestOnDrift: on_drift takes revert, keep (the default, hashing as no option) or refuse;
// anything else is refused with the values it takes.
func TestOnDrift(t *testing.T) {
	for value, want := range map[string]DriftMode{"revert": DriftRevert, "refuse": DriftRefuse, "keep": DriftKeep} {
		c, err := loadOnDrift(t, value)
		if err != nil {
			t.Fatalf("on_drift: %s: %v", value, err)
		}
		o := c.Stack("app").Options
		if o.OnDrift != want {
			t.Errorf("on_drift: %s read as %q", value, o.OnDrift)
		}
		if value == "keep" && o.Hash() != "" {
			t.Errorf("on_drift: keep hashes to %q: naming the default would update the stack", o.Hash())
		}
	}
	_, err := loadOnDrift(t, "overwrite")
	if err == nil || !strings.Contains(err.Error(), `unknown value "overwrite": use revert, keep, refuse`) {
		t.Fatalf("on_drift: overwrite: %v", err)
	}
}
