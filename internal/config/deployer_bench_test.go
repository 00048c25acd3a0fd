package config

import (
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
)

// BenchmarkLoad10kAsTheDeployer is BenchmarkLoad10k with the deployer's options: cairn's
// bucket and Parameter Store paths known, so every stack's S3 locations and dynamic
// references are checked (found once per template: the 10,000 stacks share a few).
func BenchmarkLoad10kAsTheDeployer(b *testing.B) {
	data, _ := generated10k(b, 10_000)
	paths, _ := ParseSSMPaths(`{"*": ["/shared/*"]}`)
	b.ReportAllocs()
	for b.Loop() {
		bd, err := bundle.FromZip(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := (LoadOptions{Bucket: "cairn-state", SSMPaths: paths}).Load(bd); err != nil {
			b.Fatal(err)
		}
	}
}
