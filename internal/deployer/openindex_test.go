package deployer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/run"
)

// TestStackEventsFindTheirRunWithoutListing: while a run is open, each stack it started
// has an entry of the open-run index by stack, naming the run; once it ended, none is
// left, and a batch of ten late stack status events of its stacks (the exact EventBridge
// JSON in SQS) costs one read each and the invocation's one listing of the open runs,
// whatever the number of stacks, rather than a listing per event.
func TestStackEventsFindTheirRunWithoutListing(t *testing.T) {
	w := newWorld(t, worldOptions{Speed: 50 * time.Millisecond}) // slow enough to see each stack's entry
	version := w.push("line", copyBundle(t, line))
	var seen map[string]bool
	for seen = map[string]bool{}; len(seen) < 5; {
		for _, k := range w.keysUnder(layout.OpenStacksPrefix) {
			seen[k] = true
		}
		if docs := w.runs("line"); len(docs) > 0 && docs[len(docs)-1].Run.Status != run.Running {
			break
		}
	}
	doc := w.wait("line", version)
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("run %s: %s", doc.Run.Status, doc.Run.Reason)
	}
	for name, s := range doc.Run.Stacks {
		if !seen[layout.OpenStackKey(s.StackName)] {
			t.Errorf("stack %s (%s) was never in the open-run index while the run was open (seen %v)", name, s.StackName, seen)
		}
	}
	// The run's document says it ended before its last step cleans up after it.
	for deadline := time.Now().Add(10 * time.Second); len(w.keysUnder(layout.OpenRunsPrefix)) != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the open-run index keeps %v after the run ended", w.keysUnder(layout.OpenRunsPrefix))
		}
	}

	var sample events.SQSEvent
	if err := json.Unmarshal(mustRead(t, "../../events/stack-status-change.json"), &sample); err != nil {
		t.Fatal(err)
	}
	var batch events.SQSEvent
	for i := range 10 {
		s := doc.Run.Stacks[fmt.Sprintf("s%d", i%5+1)]
		rec := sample.Records[0]
		rec.MessageId = fmt.Sprintf("late-%d", i)
		rec.Body = strings.ReplaceAll(rec.Body, "arn:aws:cloudformation:us-east-1:000000000000:stack/shop-app/5b0f3f20-6a1f-11f0-9c2b-0affd3a1e5b1", s.StackID)
		batch.Records = append(batch.Records, rec)
	}
	calls := &callCounter{}
	out, err := w.instance(calls).Handle(context.Background(), batch)
	if err != nil || len(out.BatchItemFailures) != 0 {
		t.Fatalf("late events: %v %v", out.BatchItemFailures, err)
	}
	got := calls.take()
	if got["S3.ListObjectsV2"] != 1 || got["S3.GetObject"] != 10 || total(got, "") != 11 {
		t.Errorf("ten late events cost %v, want one listing (of the open runs) and ten reads", got)
	}
}

// keysUnder lists the keys under prefix, subfolders included.
func (w *world) keysUnder(prefix string) []string {
	w.t.Helper()
	out, err := w.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	if err != nil {
		w.t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}
