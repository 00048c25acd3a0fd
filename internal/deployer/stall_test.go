package deployer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-dev/cairn/internal/awserr"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
)

// waitLog waits (a minute of wall time at most) until the deployer's log holds want.
func (w *world) waitLog(want string) {
	w.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(w.logs.String(), want) {
		if time.Now().After(deadline) {
			w.t.Fatalf("the log never said %q; it ends:\n%s", want, tail(w.logs.String(), 40))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFor polls cond for a minute of wall time.
func (w *world) waitFor(what string, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// loseHeartbeat drops every message of the deploy queue, the run's heartbeat among them,
// until the queue stays empty and the run makes no step: its heartbeat chain is lost. SQS
// takes one PurgeQueue a minute (PurgeQueueInProgress otherwise): a refused purge waits
// for the next round, on the world's clock, which runs ahead.
func (w *world) loseHeartbeat(deployment, version string) *rundoc.Document {
	w.t.Helper()
	ctx := context.Background()
	var doc *rundoc.Document
	for quiet := 0; quiet < 5; {
		var busy *sqstypes.PurgeQueueInProgress
		if _, err := w.sqs.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(w.queue)}); err != nil && !errors.As(err, &busy) {
			w.t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		q, err := w.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(w.queue), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		if err != nil {
			w.t.Fatal(err)
		}
		var now *rundoc.Document
		for _, d := range w.runs(deployment) {
			if d.Bundle.VersionID == version {
				now = d
			}
		}
		empty := q.Attributes["ApproximateNumberOfMessages"] == "0" && q.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0" && q.Attributes["ApproximateNumberOfMessagesDelayed"] == "0"
		if empty && now != nil && doc != nil && now.Steps == doc.Steps {
			quiet++
		} else {
			quiet = 0
		}
		doc = now
	}
	if doc.Run.Status != run.Running {
		w.t.Fatalf("the run ended before its heartbeat could be lost: %s", doc.Run.Status)
	}
	return doc
}

// TestLostHeartbeatIsResumed loses the heartbeat of a run that advances by heartbeats only
// (no stack events): the next trigger of any kind, here a push of another deployment,
// resumes it once its chain has been quiet for StallAfter, long before the lease would
// free the lock. With the lock force-unlocked meanwhile, the run is closed instead, as
// abandoned: it no longer says running, leaves the index of open runs, and the change sets
// it never executed are deleted.
func TestLostHeartbeatIsResumed(t *testing.T) {
	for _, unlock := range []bool{false, true} {
		t.Run(map[bool]string{false: "resumed", true: "unlocked meanwhile"}[unlock], func(t *testing.T) {
			// A two-minute heartbeat and resources of three minutes each leave time to lose
			// the heartbeat (and the delayed checks) mid-run; the lease (12 hours) never
			// ends within the test.
			w := newWorld(t, worldOptions{NoStackEvents: true, Heartbeat: 2 * time.Minute, ResourceDelay: 3 * time.Minute})
			v1 := w.push("shop", copyBundle(t, chain))
			w.waitFor("the run's first step", func() bool {
				for _, d := range w.runs("shop") {
					if d.Bundle.VersionID == v1 && d.Steps > 0 {
						return true
					}
				}
				return false
			})
			lost := w.loseHeartbeat("shop", v1)
			since := w.clk.Now()
			if unlock {
				if _, err := w.store().ForceUnlock(context.Background(), "shop", "shop", true); err != nil {
					t.Fatal(err)
				}
			}
			// The other deployment's run ends within seconds (its delayed checks), so it
			// is pushed once the lost chain has been quiet for longer than StallAfter
			// (four heartbeats).
			w.waitFor("the lost chain to count as stalled", func() bool { return w.clk.Now().Sub(since) > 10*time.Minute })
			other := copyBundle(t, chain)
			edit(t, other, "cairn.yaml", "namespace: shop\n", "namespace: web\n")
			if doc := w.wait("web", w.push("web", other)); doc.Run.Status != run.Succeeded {
				t.Fatalf("the other deployment: %s (%s)", doc.Run.Status, doc.Run.Reason)
			}
			doc := w.wait("shop", v1)
			if took := doc.Run.FinishedAt.Sub(since); took > time.Hour {
				t.Errorf("the run ended %s after its heartbeat was lost, want within minutes", took)
			}
			w.waitLog("deploy: the run's heartbeat was lost: a new heartbeat chain resumes it")
			// A run's document says it ended before its clean-up leaves the index (finish
			// follows the save), so the index is waited for, not read once.
			w.waitFor("the open-run index to empty", func() bool { return len(w.openRuns()) == 0 })
			if !unlock {
				if doc.Run.Status != run.Succeeded {
					t.Fatalf("the resumed run: %s (%s); stacks %v", doc.Run.Status, doc.Run.Reason, phases(doc))
				}
				return
			}
			if doc.Run.Status != run.Abandoned || !strings.Contains(doc.Run.Reason, "its lock was removed (released or force-unlocked)") {
				t.Fatalf("the unlocked run: %s (%s), want abandoned", doc.Run.Status, doc.Run.Reason)
			}
			made := 0
			for name, s := range lost.Run.Stacks {
				if s.ChangeSetName == "" {
					continue
				}
				if r := doc.Run.Stacks[name]; r.Phase == run.Done {
					// A step already under way when the heartbeat was found lost executed
					// it before the unlock: it is no longer the abandoned run's to delete.
					continue
				}
				made++
				if _, err := w.cfnc.DescribeChangeSet(context.Background(), &cloudformation.DescribeChangeSetInput{
					StackName: aws.String(s.StackName), ChangeSetName: aws.String(s.ChangeSetName)}); awserr.ErrorCode(err) != "ChangeSetNotFound" {
					t.Errorf("stack %s: change set %s of the abandoned run: %v, want it deleted", name, s.ChangeSetName, err)
				}
				if r := doc.Run.Stacks[name]; r.Phase != run.Blocked || !strings.HasPrefix(r.Reason, "the run lost its lock: ") {
					t.Errorf("stack %s of the abandoned run: %s (%s)", name, r.Phase, r.Reason)
				}
			}
			if made == 0 {
				t.Error("the run had made no change set when its heartbeat was lost: nothing shows they are deleted")
			}
		})
	}
}

// openRuns lists the keys of the index of open runs.
func (w *world) openRuns() []string {
	w.t.Helper()
	out, err := w.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(layout.OpenRunsPrefix)})
	if err != nil {
		w.t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}
