package yamlnode

import (
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/benchbundle"
)

// BenchmarkParseYAMLv3 is BenchmarkParse's config parsed by yaml.v3 alone, the figure
// Parse is compared with (docs/code.md).
func BenchmarkParseYAMLv3(b *testing.B) {
	cfg := []byte(benchbundle.Config("bench", benchbundle.Stacks(10_000)))
	b.ReportAllocs()
	b.SetBytes(int64(len(cfg)))
	for b.Loop() {
		var n yaml.Node
		if err := yaml.Unmarshal(cfg, &n); err != nil {
			b.Fatal(err)
		}
	}
}
