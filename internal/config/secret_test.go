package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/seal"
)

// TestNoEchoSealing: a NoEcho value the bundle gives (written out, or read by ${var}) is
// stored as a sealed reference and its ${var} record is left out; one read at deploy time
// keeps its lookup; plain parameters stay as written; Unseal gives the bundle's values
// back only when their hashes match, and a resolved value is stored by hash.
func TestNoEchoSealing(t *testing.T) {
	const tmpl = `
      Parameters:
        Literal: {Type: String, NoEcho: true}
        FromVar: {Type: String, NoEcho: true}
        FromOutput: {Type: String, NoEcho: true}
        Plain: {Type: String}
      Resources:
        Handle: {Type: AWS::CloudFormation::WaitConditionHandle}
      Outputs:
        Out: {Value: x}`
	cfg := `namespace: shop
variables: {key: Var-Secret}
stacks:
  - name: src
    template_body: |` + tmpl + `
    parameters: {Literal: a, FromVar: b, FromOutput: c, Plain: d}
  - name: app
    template_body: |` + tmpl + `
    parameters:
      Literal: Literal-Secret
      FromVar: ${var key}
      FromOutput: ${output src::Out}
      Plain: ${var key}-plain
`
	c, err := Load(fuzzBundle(t, []byte(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Stack("app")
	if got := s.NoEcho(); !slices.Equal(got, []string{"FromOutput", "FromVar", "Literal"}) {
		t.Errorf("NoEcho %v", got)
	}
	stored := s.StoredParameters(seal.Unkeyed)
	for _, k := range []string{"Literal", "FromVar"} {
		if !strings.HasPrefix(stored[k], "{{cairn:bundle@") {
			t.Errorf("stored %s = %q, want a sealed reference", k, stored[k])
		}
	}
	if stored["FromOutput"] != "${output src::Out}" || stored["Plain"] != "${var key}-plain" {
		t.Errorf("stored %v: lookups read at deploy time and plain parameters stay as written", stored)
	}
	for _, l := range s.StoredLookups() {
		if l.Param == "FromVar" || l.Param == "Literal" {
			t.Errorf("a stored lookup holds the NoEcho value of %s: %+v", l.Param, l)
		}
	}
	if got := s.BundleSecrets(); !slices.Equal(got, []string{"Literal-Secret", "Var-Secret"}) {
		t.Errorf("bundle secrets %v", got)
	}

	plain, err := Unseal(map[string]string{"Literal": stored["Literal"], "FromVar": "x-" + stored["FromVar"]}, Plain{Stack: "app", Bundle: s.BundleSecrets()})
	if err != nil || plain["Literal"] != "Literal-Secret" || plain["FromVar"] != "x-Var-Secret" {
		t.Errorf("Unseal = %v, %v", plain, err)
	}
	if _, err := Unseal(map[string]string{"Literal": stored["Literal"]}, Plain{Stack: "app", Bundle: []string{"Literal-Secret-2"}}); err == nil ||
		strings.Contains(err.Error(), "Literal-Secret") || !strings.Contains(err.Error(), "not in the bundle of stack app any more") {
		t.Errorf("Unseal of a changed value: %v", err)
	}
	if _, err := Unseal(map[string]string{"Literal": stored["Literal"]}, Plain{Stack: "src", Bundle: s.BundleSecrets()}); err == nil {
		t.Error("a bundle value of stack app unsealed as stack src's")
	}

	sealed := SealNoEcho(seal.Unkeyed, "app", "FromOutput", "arn:out")
	if !strings.HasPrefix(sealed, "{{cairn:noecho@") || strings.Contains(sealed, "arn:out") || SealNoEcho(seal.Unkeyed, "app", "FromOutput", "arn:out2") == sealed {
		t.Errorf("SealNoEcho = %q", sealed)
	}
	if got := SealNoEcho(seal.Unkeyed, "app", "Literal", stored["Literal"]); got != stored["Literal"] {
		t.Errorf("a sealed reference sealed again: %q", got)
	}
	if _, err := Unseal(map[string]string{"FromOutput": sealed}, Plain{Stack: "app"}); err == nil {
		t.Error("a stored hash was unsealed")
	}
}
