package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/bundle"
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

// written lists the objects cairn wrote in its bucket: runs, state, locks and plans.
func (w *world) written() []string {
	w.t.Helper()
	var keys []string
	for _, prefix := range []string{layout.RunsPrefix, layout.StatePrefix, layout.LocksPrefix, layout.PlansPrefix} {
		out, err := w.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
		if err != nil {
			w.t.Fatal(err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// TestForgedEventOfAnotherBucketIsRefused sends the deploy queue S3 events, in the exact
// JSON S3 sends, naming a bucket other than cairn's: an upload of a valid bundle at
// deployments/shop.zip there, and an approval object there. The deployer refuses both,
// says so in its log, and records or deploys nothing.
func TestForgedEventOfAnotherBucketIsRefused(t *testing.T) {
	for _, key := range []string{"deployments/shop.zip", "approvals/shop/20261130-080000000-1a2b3c4d"} {
		t.Run(key, func(t *testing.T) {
			w := newWorld(t, worldOptions{})
			ctx := context.Background()
			const other = "someone-elses-bucket"
			must(t, func() error {
				_, err := w.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(other)})
				return err
			})
			must(t, func() error {
				_, err := w.s3.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(other),
					VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}})
				return err
			})
			zip, err := bundle.Zip(copyBundle(t, chain))
			if err != nil {
				t.Fatal(err)
			}
			put, err := w.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(other), Key: aws.String(key), Body: bytes.NewReader(zip)})
			if err != nil {
				t.Fatal(err)
			}
			var sample events.SQSEvent
			if err := json.Unmarshal(mustRead(t, "../../events/s3-put-sqs.json"), &sample); err != nil {
				t.Fatal(err)
			}
			var body events.S3Event
			if err := json.Unmarshal([]byte(sample.Records[0].Body), &body); err != nil {
				t.Fatal(err)
			}
			r := &body.Records[0]
			r.S3.Bucket.Name, r.S3.Bucket.Arn = other, "arn:aws:s3:::"+other
			r.S3.Object.Key, r.S3.Object.VersionID, r.EventTime = key, aws.ToString(put.VersionId), w.clk.Now()
			forged, _ := json.Marshal(body)
			if _, err := w.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(w.queue), MessageBody: aws.String(string(forged))}); err != nil {
				t.Fatal(err)
			}
			w.waitLog(`msg="deploy: upload refused: the event names another bucket than cairn's; nothing is recorded or changed" bucket=` + other)
			time.Sleep(100 * time.Millisecond) // virtual minutes: anything the event started would show
			if keys := w.written(); len(keys) > 0 {
				t.Errorf("the forged event wrote %v", keys)
			}
			if stacks := w.stacks(); len(stacks) != 0 {
				t.Errorf("the forged event deployed %d stack(s)", len(stacks))
			}
		})
	}
}
