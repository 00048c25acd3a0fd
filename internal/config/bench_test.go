package config

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/benchbundle"
	"github.com/cairn-dev/cairn/internal/bundle"
)

func generated10k(tb testing.TB, n int) (data []byte, edges int) {
	data, edges, err := benchbundle.Zip("bench", n)
	if err != nil {
		tb.Fatal(err)
	}
	return data, edges
}

// BenchmarkLoad10k reads, loads, validates and builds the graph (with its deploy order)
// of a generated 10,000-stack bundle. Goal: under 100 ms and 64 MB. It reports ms per
// load, MB allocated per load, and the MB still live holding the loaded config and graph.
func BenchmarkLoad10k(b *testing.B) {
	data, edges := generated10k(b, 10_000)
	b.Logf("bundle: %d bytes zipped, %d dependencies", len(data), edges)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpuStart := cpuTime(b)
	start := time.Now()
	var keep []any
	for i := 0; b.Loop(); i++ {
		bd, err := bundle.FromZip(data)
		if err != nil {
			b.Fatal(err)
		}
		c, err := Load(bd)
		if err != nil {
			b.Fatal(err)
		}
		g, err := c.Graph()
		if err != nil {
			b.Fatal(err)
		}
		order, err := g.Order()
		if err != nil || len(order) != 10_000 {
			b.Fatalf("order: %d stacks, %v", len(order), err)
		}
		keep = []any{c, g}
	}
	elapsed := time.Since(start)
	cpu := cpuTime(b) - cpuStart
	runtime.ReadMemStats(&after)
	runtime.GC()
	var live runtime.MemStats
	runtime.ReadMemStats(&live)
	runtime.KeepAlive(keep)
	b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/load")
	// CPU time (this process, all threads, GC included) tells the cost apart from waiting
	// for a CPU on a shared machine.
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/load")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/(1<<20), "MB-alloc/load")
	b.ReportMetric(float64(int64(live.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "MB-live")
}

// TestGeneratedBundleLoads checks the benchmark's input is valid (the benchmark itself only
// runs with -bench), with a smaller size to keep the test quick under -race.
func TestGeneratedBundleLoads(t *testing.T) {
	data, edges := generated10k(t, 500)
	bd, err := bundle.FromZip(data)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(bd)
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.Graph()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range c.Stacks {
		n += len(g.Dependencies(s.Name))
	}
	if n != edges {
		t.Errorf("graph has %d dependencies, generated %d", n, edges)
	}
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRefuseDoublingNested loads the hostile bundle of twenty templates each nesting
// the next twice (2,097,150 nested stacks) until it is refused: each template is read
// and checked once, so the figure is that of a 21-template bundle, not of two million.
func BenchmarkRefuseDoublingNested(b *testing.B) {
	files := benchbundle.DoublingNested("bench", 20)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(nestedBundle(files)); err == nil {
			b.Fatal("the doubling bundle loaded")
		}
	}
}
