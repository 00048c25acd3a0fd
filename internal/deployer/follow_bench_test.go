package deployer_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/benchbundle"
	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/loadavg"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/target"
)

// BenchmarkFollow500 is `push --wait` of 500 stacks (benchbundle's first 500,
// max_concurrency 50): the follower as the CLI makes it (a poll every 2 s, each stack's
// resource events read at the CLI's pace, EventBudget) follows the run against the
// emulator. It reports the run's time and the follower's lag, from the run's end as its
// document records it to the follower's return, with each poll's event reads unbounded
// (as before) and bounded (follow.DefaultPerRead). The issue measured 78 s and 124 s.
func BenchmarkFollow500(b *testing.B) {
	dir := b.TempDir()
	if err := benchbundle.Write(dir, "bench", 500); err != nil {
		b.Fatal(err)
	}
	edit(b, dir, "cairn.yaml", "stacks:\n", "max_concurrency: 50\nstacks:\n")
	// before: each poll read the events of every stack in flight (PerRead unbounded).
	for _, c := range []struct {
		name    string
		perRead time.Duration
	}{{"reads-unbounded", time.Hour}, {"reads-per-poll", follow.DefaultPerRead}} {
		b.Run(c.name, func(b *testing.B) {
			var lags, runs []float64
			var loads []string
			for b.Loop() {
				loads = append(loads, loadavg.Read())
				// The emulator's delays as `cairn local up --change-set-delay 1s..4s
				// --resource-delay 1s..3s`, on a clock 5 times the wall clock's pace that
				// never skips, so the follower's reads and polls take their time.
				w := sideWorld(b)
				fl := &follow.Follower{Runs: &history.Store{S3: w.s3, Bucket: bucket}, Clock: w.clk, Poll: 2 * time.Second, Timeout: time.Hour,
					Events: &follow.Events{Clock: w.clk, PerRead: c.perRead, At: func(context.Context, target.Spec) (follow.EventsAPI, error) { return w.cfnc, nil }}}
				version := w.push("bench", dir)
				seen := &resourceCount{}
				doc, err := fl.Follow(context.Background(), follow.Target{Deployment: "bench", Version: version}, seen)
				returned := w.clk.Now()
				if err != nil || doc.Run.Status != run.Succeeded {
					b.Fatalf("follow: %v, run %v", err, doc)
				}
				lag, took := returned.Sub(doc.Run.FinishedAt), doc.Run.FinishedAt.Sub(doc.Run.StartedAt)
				lags, runs = append(lags, lag.Seconds()), append(runs, took.Seconds())
				b.Logf("run %.1f s, push --wait %.1f s (lag %.1f s); %d resource events shown, notes %q (load %s)",
					took.Seconds(), returned.Sub(doc.Run.StartedAt).Seconds(), lag.Seconds(), seen.resources, seen.notes, loads[len(loads)-1])
				w.close()
			}
			b.ReportMetric(medianOf(runs), "virtual-s-run")
			b.ReportMetric(medianOf(lags), "virtual-s-wait-lag")
			b.Logf("500 stacks, %s, median of %d: run %.1f s, push --wait lag %.1f s (virtual), load average %v", c.name, len(lags), medianOf(runs), medianOf(lags), loads)
		})
	}
}

func medianOf(v []float64) float64 {
	rs := make([]sideResult, len(v))
	for i := range v {
		rs[i].ratio = v[i]
	}
	return median(rs, func(r sideResult) float64 { return r.ratio })
}

// resourceCount is an observer of the follower that counts what it is shown.
type resourceCount struct {
	resources int
	notes     []string
}

func (c *resourceCount) Found(*rundoc.Document)             {}
func (c *resourceCount) Stepped(follow.Step)                {}
func (c *resourceCount) Changed(follow.Resource)            { c.resources++ }
func (c *resourceCount) Noted(n string)                     { c.notes = append(c.notes, n) }
func (c *resourceCount) Polled(*rundoc.Document, time.Time) {}
