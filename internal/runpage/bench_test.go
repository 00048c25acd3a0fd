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
// depends on ended, with the parameters, outputs and resource events such a run records.
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
		// Its queue's events, as CloudFormation writes them for a creation.
		q := run.ResourceEvent{LogicalID: "Queue", Type: "AWS::SQS::Queue", Status: "CREATE_IN_PROGRESS", Time: st.ExecutedAt.Add(time.Second)}
		initiated, done := q, q
		initiated.PhysicalID, initiated.Reason = url(i), "Resource creation Initiated"
		done.PhysicalID, done.Status, done.Time = url(i), "CREATE_COMPLETE", st.FinishedAt.Add(-time.Second)
		st.Events = []run.ResourceEvent{q, initiated, done}
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
	cut("graph", `<div class="graph`, `<section aria-labelledby="timeline-h">`)
	cut("timeline", `<section aria-labelledby="timeline-h">`, `<section aria-labelledby="stacks-h">`)
	cut("stacks", `<section aria-labelledby="stacks-h">`, `</main>`)
	for rest := s; ; {
		i := strings.Index(rest, `<table class="resources">`)
		if i < 0 {
			break
		}
		j := strings.Index(rest[i:], "</details>")
		parts["resources"] += j
		rest = rest[i+j:]
	}
	t.Logf("the page of a 200-stack run: %d bytes (%d KB): graph %d, timeline %d, stacks %d (their resources and events %d)", len(page), len(page)>>10, parts["graph"], parts["timeline"], parts["stacks"], parts["resources"])
	// 395 KB without the resources' events; they add about 170 KB (3 events a stack).
	if len(page) > 640<<10 {
		t.Errorf("the page of a 200-stack run is %d bytes, want under 640 KB", len(page))
	}
	if parts["resources"] == 0 {
		t.Error("the page shows no stack's resources")
	}
}

// BenchmarkRenderRun200 renders the page of a run of 200 stacks, with their resources'
// events; BenchmarkRenderRun200NoEvents without (as runs kept none before).
func BenchmarkRenderRun200(b *testing.B) { benchRender(b, bigRun(200)) }

func BenchmarkRenderRun200NoEvents(b *testing.B) {
	r := bigRun(200)
	for _, s := range r.Stacks {
		s.Events = nil
	}
	benchRender(b, r)
}

func benchRender(b *testing.B, r *run.Run) {
	in := Run{Report: report.Input{Run: r}}
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
