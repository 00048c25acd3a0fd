package template

import (
	"os"
	"testing"
)

// BenchmarkParseCheck parses and checks the web shop's service template (ECS, IAM, load
// balancer: 12 resource types) against the specification, as validate does once per
// distinct template of a bundle.
func BenchmarkParseCheck(b *testing.B) {
	body, err := os.ReadFile("../../testdata/bundles/webshop/templates/service.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		t, err := Parse(body)
		if err != nil {
			b.Fatal(err)
		}
		if p := t.Check(); len(p) != 0 {
			b.Fatalf("problems: %v", p)
		}
		t.Needs()
	}
}
