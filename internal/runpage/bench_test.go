package runpage

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/benchbundle"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
)

// bigRun is a finished run of the n stacks of benchbundle, each started once the stacks it
// depends on ended, with the parameters and outputs such a run records.
func bigRun(n int) *run.Run {
	r := &run.Run{ID: "20261207-060000000-1a2b3c4d", Deployment: "big", Mode: run.ModeDeploy, Status: run.Succeeded, StartedAt: t0, Stacks: map[string]*run.Stack{}}
	url := func(i int) string {
		return fmt.Sprintf("https://sqs.us-east-1.amazonaws.com/123456789012/big-%s-Queue-%08X", benchbundle.Name(i), i*7919)
	}
	ends := make([]time.Time, n)
	for i, s := range benchbundle.Stacks(n) {
		st := &run.Stack{Name: s.Name, StackName: "big-" + s.Name, Intent: run.IntentDeploy, Phase: run.Done, ChangeSetName: "cairn-R-1", ChangeSetType: "CREATE", Changes: 1,
			Parameters: map[string]string{"Size": fmt.Sprint(i % 100)}, Outputs: map[string]string{"Url": url(i), "Arn": "arn:aws:sqs:us-east-1:123456789012:big-" + s.Name + "-Queue"}}
		start := t0
		for _, d := range s.Deps() {
			st.Requires = append(st.Requires, benchbundle.Name(d))
			start = later(start, ends[d])
		}
		for j, d := range s.Lookups {
			st.Parameters[fmt.Sprintf("In%d", j+1)] = url(d)
		}
		st.StartedAt, st.ExecutedAt = start.Add(time.Second), start.Add(4*time.Second)
		st.FinishedAt = start.Add(time.Duration(10+i%17) * time.Second)
		ends[i] = st.FinishedAt
		r.Stacks[s.Name] = st
		r.FinishedAt = later(r.FinishedAt, st.FinishedAt)
	}
	r.UpdatedAt = r.FinishedAt
	return r
}

// TestBigRunPageSize: the page of a run of 200 stacks stays small, and says what it is
// made of.
func TestBigRunPageSize(t *testing.T) {
	page, err := RenderRun(Run{Report: report.Input{Run: bigRun(200)}})
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	parts := map[string]int{}
	cut := func(name, from, to string) {
		i, j := strings.Index(s, from), strings.Index(s, to)
		if i >= 0 && j > i {
			parts[name] = j - i
		}
	}
	cut("graph", `<div class="graph">`, `<section aria-labelledby="timeline-h">`)
	cut("timeline", `<section aria-labelledby="timeline-h">`, `<section aria-labelledby="stacks-h">`)
	cut("stacks", `<section aria-labelledby="stacks-h">`, `</main>`)
	t.Logf("the page of a 200-stack run: %d bytes (%d KB): graph %d, timeline %d, stacks %d", len(page), len(page)>>10, parts["graph"], parts["timeline"], parts["stacks"])
	if len(page) > 512<<10 {
		t.Errorf("the page of a 200-stack run is %d bytes, want under 512 KB", len(page))
	}
}

// BenchmarkRenderRun200 renders the page of a run of 200 stacks.
func BenchmarkRenderRun200(b *testing.B) {
	in := Run{Report: report.Input{Run: bigRun(200)}}
	b.ReportAllocs()
	var size int
	for b.Loop() {
		page, err := RenderRun(in)
		if err != nil {
			b.Fatal(err)
		}
		size = len(page)
	}
	b.ReportMetric(float64(size), "bytes/page")
}
