package config

import (
	"archive/zip"
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/bundle"
)

// benchTemplate declares up to three inputs (with defaults, so a stack may set fewer)
// and an output every stack can read.
const benchTemplate = `AWSTemplateFormatVersion: "2010-09-09"
Parameters:
  In1: {Type: String, Default: ""}
  In2: {Type: String, Default: ""}
  In3: {Type: String, Default: ""}
  Size: {Type: Number}
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      Tags:
        - {Key: in, Value: !Join [",", [!Ref In1, !Ref In2, !Ref In3]]}
Outputs:
  Arn: {Value: !GetAtt Queue.Arn}
  Url: {Value: !Ref Queue}
`

// generated10k returns a zipped bundle of n stacks over four templates. Each stack depends
// on 0 to 6 earlier stacks (3 on average), half through requires and half through output
// lookups, so the graph is acyclic and about as dense as a large real platform.
func generated10k(tb testing.TB, n int) (data []byte, edges int) {
	r := rand.New(rand.NewPCG(1, 2))
	var cfg strings.Builder
	cfg.WriteString("namespace: bench\ntags: {team: platform}\nstacks:\n")
	for i := range n {
		fmt.Fprintf(&cfg, "  - name: stack-%05d\n    template_path: templates/t%d.yaml\n", i, i%4)
		deps := map[int]bool{}
		if i > 0 {
			for range r.IntN(7) {
				deps[r.IntN(i)] = true
			}
		}
		var requires []string
		params := []string{fmt.Sprintf("Size: %q", fmt.Sprint(i%100))}
		slot := 1
		for d := range deps {
			edges++
			if slot <= 3 && r.IntN(2) == 0 {
				params = append(params, fmt.Sprintf("In%d: ${output stack-%05d::Url}", slot, d))
				slot++
				continue
			}
			requires = append(requires, fmt.Sprintf("stack-%05d", d))
		}
		if len(requires) > 0 {
			fmt.Fprintf(&cfg, "    requires: [%s]\n", strings.Join(requires, ", "))
		}
		cfg.WriteString("    parameters:\n")
		for _, p := range params {
			fmt.Fprintf(&cfg, "      %s\n", p)
		}
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	files := map[string]string{"cairn.yaml": cfg.String()}
	for i := range 4 {
		files[fmt.Sprintf("templates/t%d.yaml", i)] = benchTemplate + fmt.Sprintf("Description: template %d\n", i)
	}
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes(), edges
}

// BenchmarkLoad10k reads, loads, validates and builds the graph (with its deploy order)
// of a generated 10,000-stack bundle. Goal: under 200 ms and 128 MB. It reports ms per
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
