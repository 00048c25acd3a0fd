package drift

import (
	"fmt"
	"testing"
)

// BenchmarkPass10k is the pure part of one pass over a sweep of 10,000 stacks in 100
// graphs: observe five finished detections, then schedule the next ones.
func BenchmarkPass10k(b *testing.B) {
	sw := &Sweep{ID: "S", StartedAt: swept}
	var seen []Detection
	for gi := range 100 {
		g := &Graph{Name: fmt.Sprintf("g%03d", gi), Namespace: "shop", Key: fmt.Sprintf("g%03d", gi)}
		for si := range 100 {
			s := &Stack{Name: fmt.Sprintf("s%03d", si), StackName: fmt.Sprintf("shop-g%03d-s%03d", gi, si), Status: Pending}
			if gi == 0 && si < 5 {
				s.Status, s.DetectionID = Detecting, fmt.Sprint("det-", si)
				seen = append(seen, Detection{Ref: Ref{gi, si}, Status: "DETECTION_COMPLETE", DriftStatus: "IN_SYNC"})
			}
			g.Stacks = append(g.Stacks, s)
		}
		sw.Graphs = append(sw.Graphs, g)
	}
	b.ReportAllocs()
	for b.Loop() {
		next := Observe(sw, seen, swept, DefaultMaxAge)
		if _, start := Schedule(next, DefaultConcurrency, map[int]string{}); len(start) != DefaultConcurrency {
			b.Fatalf("%d detections to start", len(start))
		}
	}
}
