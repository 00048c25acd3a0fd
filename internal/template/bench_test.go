package template

import (
	"os"
	"path/filepath"
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

// BenchmarkCheckCorpus parses and checks every template of the shared real-world corpus
// (skipped when absent), as validate does each distinct template of a bundle, and reports
// the time per template.
func BenchmarkCheckCorpus(b *testing.B) {
	var bodies [][]byte
	for _, pattern := range []string{"aws-samples/*.yaml", "corpus/*.yaml", "corpus/*.yml", "corpus/*.json"} {
		paths, _ := filepath.Glob(filepath.Join(sharedTemplates(), pattern))
		for _, p := range paths {
			if filepath.Base(p) == "parameters.json" {
				continue
			}
			body, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			bodies = append(bodies, body)
		}
	}
	if len(bodies) == 0 {
		b.Skipf("no templates under %s (the shared folder is absent)", sharedTemplates())
	}
	for b.Loop() {
		for _, body := range bodies {
			t, err := Parse(body)
			if err != nil {
				b.Fatal(err)
			}
			t.Inspect()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(bodies)), "µs/template")
	b.ReportMetric(float64(len(bodies)), "templates")
}
