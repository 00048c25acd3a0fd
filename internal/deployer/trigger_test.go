package deployer

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/lambdajob"
)

// TestEveryRecordBecomesATurnsTrigger decodes the records AWS sends the deploy queue
// (events/) into the trigger of the run each concerns, and merges a batch's triggers as
// Handle does: uploads begin their run (the same upload delivered twice begins it once),
// heartbeats and checks ask a step of the run they name (a check handed on by a step that
// could not be made, of the stacks it names too), a replan begins the plan of the
// apply run it names, and what no turn can serve fails its record alone.
func TestEveryRecordBecomesATurnsTrigger(t *testing.T) {
	record := func(file string) events.SQSMessage {
		t.Helper()
		b, err := os.ReadFile("../../events/" + file)
		if err != nil {
			t.Fatal(err)
		}
		var ev events.SQSEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatal(err)
		}
		return ev.Records[0]
	}
	withBody := func(id, body string) events.SQSMessage { return events.SQSMessage{MessageId: id, Body: body} }
	put := record("s3-put-sqs.json")
	again := put
	again.MessageId = "redelivered"
	records := []events.SQSMessage{
		put, again,
		record("s3-plan-sqs.json"),
		record("s3-approval-sqs.json"),
		record("deploy-heartbeat.json"),
		record("deploy-check.json"),
		// A step that could not be made hands the stacks its stack events named on.
		withBody("handed-on", `{"cairn":"check","deployment":"shop","run":"20261130-080000-1a2b3c4d","stacks":["000000000000/us-east-1/shop-app","shop-app"]}`),
		withBody("replan", `{"cairn":"replan","deployment":"shop","run":"20261130-080000-1a2b3c4d"}`),
		withBody("junk", `not json`),
		withBody("unknown", `{"hello":"world"}`),
		withBody("beat-without-run", `{"cairn":"heartbeat","deployment":"shop"}`),
		withBody("test-event", `{"Event":"s3:TestEvent"}`),
	}
	d := &Driver{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	batch := lambdajob.NewBatch[stepKey](Trigger.merge)
	var failed []string
	for _, rec := range records {
		asks, err := d.decode(context.Background(), rec, log)
		if err != nil {
			failed = append(failed, rec.MessageId)
			continue
		}
		for _, a := range asks {
			batch.Add(a.key, rec.MessageId, a.trigger)
		}
	}
	if want := []string{"junk", "unknown", "beat-without-run"}; !slices.Equal(failed, want) {
		t.Errorf("failed records %v, want %v", failed, want)
	}
	got := map[stepKey]Trigger{}
	batch.Run(func(k stepKey, tr Trigger) error { got[k] = tr; return nil }, nil)

	var uploads, approvals, plans, replans, steps int
	for k, tr := range got {
		if tr.step {
			steps++
			if k.deployment != "shop" || k.run != "20261130-080000-1a2b3c4d" {
				t.Errorf("a step asked of %v, want shop's run named in the messages", k)
			}
		}
		for _, b := range tr.starts {
			switch {
			case b.replan != "":
				replans++
				if k.run != "replan:20261130-080000-1a2b3c4d" {
					t.Errorf("replan keyed %v", k)
				}
			case b.up.Kind == bucket.ApprovalUpload:
				approvals++
			case b.up.Kind == bucket.PlanUpload:
				plans++
			case b.up.Kind == bucket.DeployUpload:
				uploads++
				if k.run != b.upload.RunID() || k.deployment != b.up.Deployment {
					t.Errorf("upload of %s keyed %v, want its run %s", b.upload.Key, k, b.upload.RunID())
				}
			}
		}
	}
	if uploads != 1 || approvals != 1 || plans != 1 || replans != 1 || steps != 1 {
		t.Errorf("turns: %d uploads (the same one twice), %d approvals, %d plans, %d replans, %d runs stepped; want 1 each",
			uploads, approvals, plans, replans, steps)
	}
	hb := got[stepKey{"shop", "20261130-080000-1a2b3c4d"}]
	if len(hb.Beats) != 1 {
		t.Errorf("the heartbeat and the check of one run merge into one step with the heartbeat's chain: %+v", hb)
	}
	if want := []string{"000000000000/us-east-1/shop-app", "shop-app"}; !slices.Equal(hb.Stacks, want) {
		t.Errorf("the step looks at stacks %v, want those the handed-on check names %v", hb.Stacks, want)
	}
}
