package deployer_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
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

// BenchmarkRunCPU pushes runs of 50, 200, 500 and 1,000 stacks (benchbundle's first n,
// max_concurrency 50) through the emulator on its virtual clock, and reports the CPU time
// per stack of the deployer (the samples of a CPU profile taken from the upload to the
// run's end whose goroutines carry the deployer's handler's label) and of the whole
// process (the emulator and the test's polling too: user and system, every thread, GC
// included), and the S3 requests per stack. Goal: the deployer's flat in n, its cost
// linear in the stacks. The push creates the stacks.
func BenchmarkRunCPU(b *testing.B) {
	for _, n := range []int{50, 200, 500, 1000} {
		b.Run(fmt.Sprintf("stacks=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			if err := benchbundle.Write(dir, "bench", n); err != nil {
				b.Fatal(err)
			}
			edit(b, dir, "cairn.yaml", "stacks:\n", "max_concurrency: 50\nstacks:\n")
			for b.Loop() {
				calls := &callCounter{}
				// At 20 times the wall clock's pace (a step takes the time it takes on the
				// virtual clock too), with change sets of 2 s and resources of 5 s, each
				// stack's events and checks make their own steps, as in AWS.
				w := newWorld(b, worldOptions{Calls: calls, Speed: 20 * time.Millisecond})
				runtime.GC()
				var prof bytes.Buffer
				if err := pprof.StartCPUProfile(&prof); err != nil {
					b.Skipf("cannot profile (another profile runs: -cpuprofile?): %v", err)
				}
				cpu := processCPU(b)
				doc := w.waitRun("bench", w.push("bench", dir), 20*time.Minute)
				used := processCPU(b) - cpu
				pprof.StopCPUProfile()
				if doc.Run.Status != run.Succeeded {
					b.Fatalf("push: %s (%s)", doc.Run.Status, doc.Run.Reason)
				}
				if dir := os.Getenv("CAIRN_RUNCPU_PROFILES"); dir != "" { // for go tool pprof -tagfocus function=deployer
					if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("run-%d.pprof", n)), prof.Bytes(), 0o644); err != nil {
						b.Fatal(err)
					}
				}
				deployer, sampled, err := labelledCPU(prof.Bytes())
				if err != nil {
					b.Fatal(err)
				}
				s3 := total(calls.take(), "S3.")
				perStack := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
				b.ReportMetric(perStack(deployer), "deployer-cpu-ms/stack")
				b.ReportMetric(perStack(used), "process-cpu-ms/stack")
				b.ReportMetric(float64(s3)/float64(n), "s3/stack")
				b.Logf("%d stacks: the deployer %v CPU (%.1f ms a stack), the process %v (%v sampled); %d steps, %d S3 requests",
					n, deployer.Round(time.Millisecond), perStack(deployer), used.Round(time.Millisecond), sampled.Round(time.Millisecond), doc.Steps, s3)
			}
		})
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
