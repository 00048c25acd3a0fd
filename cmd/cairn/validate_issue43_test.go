package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validateFixtures is the directory of the minimal templates of issue 43, one per rule.
const validateFixtures = "../../testdata/validate"

// validateTemplate runs cairn validate on a bundle of one stack whose template is the
// fixture file, and returns the exit code and stderr with the bundle's directory cut.
func validateTemplate(t *testing.T, fixture string) (int, string) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(validateFixtures, fixture))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "templates", fixture), body, 0o644); err != nil {
		t.Fatal(err)
	}
	config := "namespace: t43\nstacks:\n  - name: s\n    template_path: templates/" + fixture + "\n"
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"validate", dir}, &out, &errOut)
	return code, strings.ReplaceAll(errOut.String(), dir+string(filepath.Separator), "")
}

// issue43Fixtures is every fixture of testdata/validate with what cairn validate says of it:
// "" when it accepts it, else a fragment of each error it must report.
var issue43Fixtures = map[string][]string{
	// 1. AllowedPattern is Java's syntax: its POSIX classes, \Q..\E and possessive quantifiers
	"allowedpattern-java-classes.yaml":  nil,
	"allowedpattern-java-mismatch.yaml": {`templates/allowedpattern-java-mismatch.yaml:5:14: Parameters.Letters.Default: the Default is refused: parameter Letters: value "abc1" does not match its AllowedPattern \p{Alpha}+`},
	"allowedpattern-unterminated.yaml":  {`Parameters.Code.AllowedPattern: AllowedPattern "[\\p{Alpha}" is not a valid regular expression`},
	// 2. AWS::LanguageExtensions resolves Fn::Sub of pseudo parameters before SAM reads CodeUri
	"sam-langext-sub-codeuri.yaml":         nil,
	"sam-sub-codeuri-without-langext.yaml": {"Resources.Fn: the Serverless transform refuses it: 'CodeUri' requires Bucket and Key properties to be specified."},
	// 3. SAM rewrites a DependsOn naming a layer to the layer's hashed logical id
	"sam-depends-on-layer.yaml":      nil,
	"sam-depends-on-layer-list.yaml": nil,
	// 4. "\/" is a JSON escape
	"json-escaped-solidus.json": nil,
}

func TestValidateIssue43(t *testing.T) {
	entries, err := os.ReadDir(validateFixtures)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); ext != ".yaml" && ext != ".json" {
			continue
		}
		if _, ok := issue43Fixtures[e.Name()]; !ok {
			t.Errorf("fixture %s has no expectation in issue43Fixtures", e.Name())
		}
	}
	for fixture, want := range issue43Fixtures {
		t.Run(fixture, func(t *testing.T) {
			code, stderr := validateTemplate(t, fixture)
			if len(want) == 0 {
				if code != 0 {
					t.Fatalf("exit %d, want 0:\n%s", code, stderr)
				}
				return
			}
			if code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", code, stderr)
			}
			for _, w := range want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}
