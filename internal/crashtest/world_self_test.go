package crashtest

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// The world itself: its deployer can be invoked before localcairn.Start returns, because
// provisioning queues the s3:TestEvent that storing the bucket's notification
// configuration sends, and the event source mapping delivers it as soon as the deployer is
// registered. That invocation must run with what the start gave the world, and leave the
// world's lock free, whatever the goroutine that called Start does next. Here it does
// nothing more after Start (as if descheduled right there): the interleaving that once in
// a while hung the suite, every plain world waiting forever for a lock nobody held.
func TestDeployerInvokedBeforeStartReturns(t *testing.T) {
	ctx := context.Background()
	w := prepareWorld(t, newInjector(nil), "")
	local, err := w.start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := local.Emulator.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	queue := sqs.NewFromConfig(cfg)
	deadline := time.Now().Add(20 * time.Second)
	var lastFree time.Time
	for {
		processes, free := w.processesIfFree()
		if free {
			lastFree = time.Now()
		}
		in, err := queueCounts(ctx, queue, local.Cairn.Deploy.URL)
		if err != nil {
			t.Fatal(err)
		}
		if free && processes == 1 && in == "" {
			return // the test event was handled in a process of its own and left the queue
		}
		if time.Now().After(deadline) {
			held := "never free since Start returned"
			if !lastFree.IsZero() {
				held = "last free " + time.Since(lastFree).Round(time.Millisecond).String() + " ago"
			}
			t.Fatalf("20 s after Start: %d deployer process(es), want 1; deploy queue %q, want empty; the world's lock %s\nemulator and deployer logs:\n%s",
				processes, in, held, tail(w.logs.String(), 40))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// processesIfFree is how many deployer processes the world started, and whether its lock
// was free to say so (it never waits for it).
func (w *world) processesIfFree() (int, bool) {
	if !w.mu.TryLock() {
		return 0, false
	}
	defer w.mu.Unlock()
	return w.processes, true
}
