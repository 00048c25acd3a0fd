package deploy_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/cairn-dev/cairn/internal/benchbundle"
	"github.com/cairn-dev/cairn/internal/run"
)

// BenchmarkPush500 pushes 500 stacks (benchbundle's first 500, max_concurrency 50, one
// queue each) through the emulator on its virtual clock, then pushes the same bundle
// again, in an account of only those stacks and in one with 2,000 unrelated stacks. It
// reports the push's wall time, the deployer's CloudFormation reads and writes per stack
// and S3 requests per step, the unchanged re-push's reads and writes (goal: none written,
// at most 5 reads alone), and the deployer's peak heap during the re-push (the heaviest
// invocation: the 500-stack bundle loaded and planned; sampled every millisecond, while
// nothing but the deployer and the emulator's answers to it runs).
func BenchmarkPush500(b *testing.B) {
	dir := b.TempDir()
	if err := benchbundle.Write(dir, "bench", 500); err != nil {
		b.Fatal(err)
	}
	edit(b, dir, "cairn.yaml", "stacks:\n", "max_concurrency: 50\nstacks:\n")
	for _, others := range []int{0, 2000} {
		b.Run(fmt.Sprintf("others-%d", others), func(b *testing.B) {
			for b.Loop() {
				calls := &callCounter{}
				w := newWorld(b, worldOptions{Calls: calls})
				w.unrelatedStacks(others)
				start := time.Now()
				doc := w.waitRun("bench", w.push("bench", dir), 10*time.Minute)
				wall := time.Since(start)
				if doc.Run.Status != run.Succeeded {
					b.Fatalf("push: %s (%s)", doc.Run.Status, doc.Run.Reason)
				}
				push := calls.take()
				reads, writes := split(push, "CloudFormation.")
				s3 := total(push, "S3.")

				runtime.GC()
				stop := sampleHeap()
				again := w.waitRun("bench", w.push("bench", dir), 5*time.Minute)
				peak := stop()
				repush := calls.take()
				rReads, rWrites := split(repush, "CloudFormation.")
				if again.Run.Status != run.Succeeded {
					b.Fatalf("re-push: %s (%s)", again.Run.Status, again.Run.Reason)
				}
				b.ReportMetric(wall.Seconds(), "s-push")
				b.ReportMetric(doc.Run.FinishedAt.Sub(doc.Run.StartedAt).Seconds(), "virtual-s-push")
				b.ReportMetric(float64(reads)/500, "cfn-reads/stack")
				b.ReportMetric(float64(writes)/500, "cfn-writes/stack")
				b.ReportMetric(float64(s3)/float64(doc.Steps), "s3/step")
				b.ReportMetric(float64(rReads), "repush-cfn-reads")
				b.ReportMetric(float64(rWrites), "repush-cfn-writes")
				b.ReportMetric(float64(peak)/(1<<20), "MB-deployer-peak")
				b.Logf("500 stacks, %d unrelated: push %v wall (%v virtual, %d steps), %.1f CloudFormation reads and %.1f writes per stack, %.1f S3 requests per step; re-push %d reads, %d writes; deployer peak heap %.1f MB\n  push calls: %v\n  re-push calls: %v",
					others, wall.Round(time.Millisecond), doc.Run.FinishedAt.Sub(doc.Run.StartedAt).Round(time.Second), doc.Steps,
					float64(reads)/500, float64(writes)/500, float64(s3)/float64(doc.Steps), rReads, rWrites, float64(peak)/(1<<20), push, repush)
			}
		})
	}
}

// unrelatedStacks creates n stacks of one resource that no cairn graph knows.
func (w *world) unrelatedStacks(n int) {
	w.t.Helper()
	const body = "Resources:\n  Handle:\n    Type: AWS::CloudFormation::WaitConditionHandle\n"
	for i := range n {
		if _, err := w.cfnc.CreateStack(context.Background(), &cloudformation.CreateStackInput{
			StackName: aws.String(fmt.Sprintf("other-%04d", i)), TemplateBody: aws.String(body),
		}); err != nil {
			w.t.Fatal(err)
		}
	}
}

// split sums the counts of prefix's reads (Describe, List, Get) and writes.
func split(calls map[string]int, prefix string) (reads, writes int) {
	for k, n := range calls {
		op, ok := strings.CutPrefix(k, prefix)
		switch {
		case !ok, strings.Contains(op, " "):
		case strings.HasPrefix(op, "Describe"), strings.HasPrefix(op, "List"), strings.HasPrefix(op, "Get"):
			reads += n
		default:
			writes += n
		}
	}
	return reads, writes
}

// total sums the counts of prefix's calls (not the per-key counts of S3 reads).
func total(calls map[string]int, prefix string) int {
	n := 0
	for k, c := range calls {
		if strings.HasPrefix(k, prefix) && !strings.Contains(k, " ") {
			n += c
		}
	}
	return n
}

// sampleHeap samples the live heap every millisecond until the returned function is
// called, which returns the most it grew above where it started.
func sampleHeap() func() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base, peak := read(), uint64(0)
	done, stopped := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				if v := read(); v > base {
					mu.Lock()
					peak = max(peak, v-base)
					mu.Unlock()
				}
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}
