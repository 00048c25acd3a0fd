package deployer_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
)

const line = "testdata/line"

// BenchmarkLineOfFive deploys five stacks in a line through the emulator on the wall
// clock's pace, as `cairn local up` runs them (3s heartbeats): each takes 4s in
// CloudFormation (a 1s change set, then one 3s resource). It reports the time from the
// first stack event to the last CREATE_COMPLETE divided by the 20s the stacks themselves
// take (goal: at most 1.15), and CloudFormation calls per stack.
func BenchmarkLineOfFive(b *testing.B) {
	for b.Loop() {
		w := newWorld(b, worldOptions{Speed: time.Millisecond, NoSkip: true, Heartbeat: 3 * time.Second,
			ChangeSetDelay: time.Second, ResourceDelay: 3 * time.Second})
		doc := w.wait("line", w.push("line", copyBundle(b, line)))
		if doc.Run.Status != run.Succeeded {
			b.Fatalf("run %s: %s", doc.Run.Status, doc.Run.Reason)
		}
		calls := 0
		for _, n := range w.cfnCalls() {
			calls += n
		}
		first, last := w.eventSpan(doc)
		b.ReportMetric(last.Sub(first).Seconds()/20, "ratio")
		b.ReportMetric(last.Sub(first).Seconds(), "s-makespan")
		b.ReportMetric(float64(calls)/5, "cfn-calls/stack")
	}
}

// eventSpan returns the times of the first stack event and the last one of the run's
// stacks, as CloudFormation recorded them.
func (w *world) eventSpan(doc *rundoc.Document) (first, last time.Time) {
	w.t.Helper()
	for _, s := range doc.Run.Stacks {
		p := cloudformation.NewDescribeStackEventsPaginator(w.cfnc, &cloudformation.DescribeStackEventsInput{StackName: aws.String(s.StackName)})
		for p.HasMorePages() {
			page, err := p.NextPage(context.Background())
			if err != nil {
				w.t.Fatal(err)
			}
			for _, e := range page.StackEvents {
				t := aws.ToTime(e.Timestamp)
				if first.IsZero() || t.Before(first) {
					first = t
				}
				if t.After(last) {
					last = t
				}
			}
		}
	}
	return first, last
}
