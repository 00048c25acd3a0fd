package config

import (
	"maps"
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

// TestRecoverNoEcho: a NoEcho value stored as its hash ({{cairn:noecho@HASH}}) comes back
// only from a candidate with that very hash, under the key it was sealed with, for its
// stack and parameter; a value holding a SecureString's seal comes back sealed, for Unseal;
// other seals and plain values are left as they are; a parameter no candidate matches is
// named lost and stays sealed.
func TestRecoverNoEcho(t *testing.T) {
	key := seal.NewKey("k1", []byte("0123456789abcdef0123456789abcdef"))
	other := seal.NewKey("k2", []byte("fedcba9876543210fedcba9876543210"))
	const arn = "arn:aws:secretsmanager:us-east-1:000000000000:secret:shop-db-AbCdEf"
	secure := sealedSecure("/shop/pw", secretHash(key, "/shop/pw", "pw"))
	mixed := "admin:" + secure
	bundle := "{{cairn:bundle@" + bundleHash(key, "service", "Literal-Secret") + "}}"
	stored := map[string]string{
		"DatabaseSecretArn": SealNoEcho(key, "service", "DatabaseSecretArn", arn),
		"Login":             SealNoEcho(key, "service", "Login", mixed),
		"Literal":           SealNoEcho(key, "service", "Literal", bundle),
		"Image":             "nginx:1.27",
	}
	if stored["Literal"] != bundle || HoldsSealed(stored["Image"]) || !strings.HasPrefix(stored["Login"], "{{cairn:noecho@") {
		t.Fatalf("stored %v", stored)
	}
	for _, tc := range []struct {
		name       string
		key        seal.Key
		stack      string
		candidates map[string][]string
		want       map[string]string
		lost       []string
	}{
		{"the resolved values", key, "service", map[string][]string{"DatabaseSecretArn": {arn}, "Login": {mixed}},
			map[string]string{"DatabaseSecretArn": arn, "Login": mixed, "Literal": bundle, "Image": "nginx:1.27"}, nil},
		{"one among others", key, "service", map[string][]string{"DatabaseSecretArn": {"arn:other", arn}, "Login": {"admin:pw", mixed}},
			map[string]string{"DatabaseSecretArn": arn, "Login": mixed, "Literal": bundle, "Image": "nginx:1.27"}, nil},
		{"a changed value", key, "service", map[string][]string{"DatabaseSecretArn": {arn + "-rotated"}, "Login": {mixed}},
			map[string]string{"DatabaseSecretArn": stored["DatabaseSecretArn"], "Login": mixed, "Literal": bundle, "Image": "nginx:1.27"}, []string{"DatabaseSecretArn"}},
		{"another parameter's value", key, "service", map[string][]string{"DatabaseSecretArn": {mixed}, "Login": {arn}},
			map[string]string{"DatabaseSecretArn": stored["DatabaseSecretArn"], "Login": stored["Login"], "Literal": bundle, "Image": "nginx:1.27"}, []string{"DatabaseSecretArn", "Login"}},
		{"another stack's seal", key, "edge", map[string][]string{"DatabaseSecretArn": {arn}, "Login": {mixed}},
			map[string]string{"DatabaseSecretArn": stored["DatabaseSecretArn"], "Login": stored["Login"], "Literal": bundle, "Image": "nginx:1.27"}, []string{"DatabaseSecretArn", "Login"}},
		{"another key", other, "service", map[string][]string{"DatabaseSecretArn": {arn}, "Login": {mixed}},
			map[string]string{"DatabaseSecretArn": stored["DatabaseSecretArn"], "Login": stored["Login"], "Literal": bundle, "Image": "nginx:1.27"}, []string{"DatabaseSecretArn", "Login"}},
		{"no candidates", key, "service", nil,
			map[string]string{"DatabaseSecretArn": stored["DatabaseSecretArn"], "Login": stored["Login"], "Literal": bundle, "Image": "nginx:1.27"}, []string{"DatabaseSecretArn", "Login"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, lost := RecoverNoEcho(tc.key, tc.stack, stored, tc.candidates)
			if !maps.Equal(got, tc.want) || !slices.Equal(lost, tc.lost) {
				t.Errorf("RecoverNoEcho =\n %v, lost %v\nwant\n %v, lost %v", got, lost, tc.want, tc.lost)
			}
		})
	}

	// A seal made before seals were keyed comes back under a key too.
	unkeyed := map[string]string{"DatabaseSecretArn": SealNoEcho(seal.Unkeyed, "service", "DatabaseSecretArn", arn)}
	if got, lost := RecoverNoEcho(key, "service", unkeyed, map[string][]string{"DatabaseSecretArn": {arn}}); got["DatabaseSecretArn"] != arn || lost != nil {
		t.Errorf("an unkeyed seal: %v, lost %v", got, lost)
	}
	// What comes back unseals as any stored value does: the SecureString it holds is read.
	got, _ := RecoverNoEcho(key, "service", stored, map[string][]string{"DatabaseSecretArn": {arn}, "Login": {mixed}})
	delete(got, "Literal")
	plain, err := Unseal(got, Plain{Key: key, Stack: "service", SSM: map[string]string{"/shop/pw": "pw"}})
	if err != nil || plain["Login"] != "admin:pw" || plain["DatabaseSecretArn"] != arn {
		t.Errorf("Unseal of the recovered values = %v, %v", plain, err)
	}
}
