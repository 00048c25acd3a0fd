package config

import (
	"testing"

	"github.com/cairn-dev/cairn/internal/benchbundle"
	"github.com/cairn-dev/cairn/internal/bundle"
	"gopkg.in/yaml.v3"
)

func BenchmarkScratchYAML(b *testing.B) {
	cfg := []byte(benchbundle.Config("bench", benchbundle.Stacks(10000)))
	b.Logf("config %d bytes", len(cfg))
	b.ReportAllocs()
	for b.Loop() {
		var n yaml.Node
		if err := yaml.Unmarshal(cfg, &n); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScratchZip(b *testing.B) {
	data, _ := generated10k(b, 10000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bundle.FromZip(data); err != nil {
			b.Fatal(err)
		}
	}
}

func TestScratchMergedParams(t *testing.T) {
	files := map[string]string{
		"cairn.yaml": "namespace: x\ndefaults: &p\n  parameters: {Size: \"1\"}\nstacks:\n  - <<: *p\n    name: a\n    template_path: templates/t.yaml\n",
		"templates/t.yaml": benchbundle.Template,
	}
	b := nestedBundle(files)
	b.Config = []byte(files["cairn.yaml"])
	_, err := Load(b)
	t.Log(err)
}
