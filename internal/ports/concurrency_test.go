package ports_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"

	"github.com/cairn-dev/cairn/internal/ports"
)

// fixture values the concurrency test rewrites to make distinct resources.
const (
	fixtureLogicalID = "WebPort"
	createRequestID  = "c4d5e6f7-0001-4a1b-9c2d-3e4f5a6b7c8d"
	deleteRequestID  = "c4d5e6f7-0007-4a1b-9c2d-3e4f5a6b7c8d"
)

// runConcurrently delivers n copies of fixture, each for its own resource, from workers
// goroutines, each its own function instance, so only the conditional writes on the pool
// document keep them apart.
func runConcurrently(t *testing.T, e *env, workers, n int, fixture string, physical func(i int) string, requestID string) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		h := e.instance(t)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				ev := e.fixture(t, fixture, physical(i),
					fixtureLogicalID, fmt.Sprintf("Port%03d", i), requestID, fmt.Sprintf("%s-%03d", requestID, i))
				out, err := h.HandleSQS(context.Background(), ev)
				if err != nil || len(out.BatchItemFailures) != 0 {
					t.Errorf("event %d: %v %v", i, out.BatchItemFailures, err)
				}
			}
		}()
	}
	wg.Wait()
}

// 200 allocations from 20 goroutines against the emulator's S3 give 200 distinct ports, and
// 200 deletes leave the pool empty.
func TestConcurrentAllocations(t *testing.T) {
	const workers, n = 20, 200
	e := newEnv(t, nil)

	runConcurrently(t, e, workers, n, "create-web-port.json", func(int) string { return "" }, createRequestID)
	byLogical := map[string]cfn.Response{}
	seen := map[string]string{}
	e.recv.mu.Lock()
	for _, a := range e.recv.answers {
		if a.Status != cfn.StatusSuccess {
			t.Errorf("%s: %s %s", a.LogicalResourceID, a.Status, a.Reason)
			continue
		}
		byLogical[a.LogicalResourceID] = a
		port := a.Data["Port"].(string)
		if other, dup := seen[port]; dup {
			t.Errorf("port %s given to %s and %s", port, other, a.LogicalResourceID)
		}
		seen[port] = a.LogicalResourceID
	}
	e.recv.mu.Unlock()
	if len(byLogical) != n || len(seen) != n {
		t.Fatalf("%d resources got %d distinct ports, want %d and %d", len(byLogical), len(seen), n, n)
	}
	stored := allocated(t, e.client, "default")
	if len(stored) != n {
		t.Fatalf("pool default stores %d blocks, want %d", len(stored), n)
	}
	sortedPorts := slices.Sorted(func(yield func(string) bool) {
		for p := range seen {
			if !yield(p) {
				return
			}
		}
	})
	sort.Strings(stored)
	if !slices.Equal(sortedPorts, stored) {
		t.Fatalf("stored blocks %v differ from answered ports %v", stored, sortedPorts)
	}

	runConcurrently(t, e, workers, n, "delete-web-port.json", func(i int) string {
		return byLogical[fmt.Sprintf("Port%03d", i)].PhysicalResourceID
	}, deleteRequestID)
	if _, answers := e.recv.counts(); answers != 2*n {
		t.Errorf("%d answers, want %d", answers, 2*n)
	}
	if left := allocated(t, e.client, "default"); len(left) != 0 {
		t.Fatalf("pool default still holds %d blocks after deleting all: %v", len(left), left)
	}
}

// BenchmarkAllocate reports how many allocations per second concurrent Creates achieve
// against the emulator's S3, and their 99th-percentile latency: from one function instance
// (writers queue in process) and from one instance per goroutine (writers conflict and
// retry).
func BenchmarkAllocate(b *testing.B) {
	for _, shared := range []bool{true, false} {
		name := "instances=one"
		if !shared {
			name = "instances=per-goroutine"
		}
		b.Run(name, func(b *testing.B) { benchmarkAllocate(b, shared) })
	}
}

func benchmarkAllocate(b *testing.B, shared bool) {
	client := newS3(b)
	pools := ports.Pools{"bench": {First: 1024, Last: 65535}}
	newAllocator := func() *ports.Allocator {
		return ports.NewAllocator(ports.NewStore(client, bucket, nil), pools, nil, slog.New(slog.DiscardHandler))
	}
	one := newAllocator()
	var (
		mu  sync.Mutex
		lat []time.Duration
		seq atomic.Int64
	)
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		a := one
		if !shared {
			a = newAllocator()
		}
		for pb.Next() {
			i := seq.Add(1)
			req := cfn.Event{
				RequestType: cfn.RequestCreate, RequestID: fmt.Sprintf("bench-%d", i), ResourceType: ports.ResourceType,
				StackID:           "arn:aws:cloudformation:us-east-1:123456789012:stack/bench/0000",
				LogicalResourceID: fmt.Sprintf("Port%d", i), ResourceProperties: map[string]any{"Pool": "bench"},
			}
			t0 := time.Now()
			if _, err := a.Create(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
			d := time.Since(t0)
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "allocs/s")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
}
