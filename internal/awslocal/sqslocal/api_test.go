package sqslocal_test

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-dev/cairn/internal/awslocal/sqslocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

// keys returns the sorted keys of a JSON object.
func keys(t *testing.T, v any) string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v is not a JSON object", v)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// TestReceiveGivesLambdaRecords checks that the Go API hands event source mappings records
// with exactly the keys Lambda's SQS event has (compared with a recorded event) and that
// messages sent in process are visible to SDK clients and the other way round.
func TestReceiveGivesLambdaRecords(t *testing.T) {
	e := newEnv(t, "")
	url, err := e.svc.CreateQueue("deploy", map[string]string{"VisibilityTimeout": "120"})
	if err != nil {
		t.Fatal(err)
	}
	if url != e.srv.URL+"/000000000000/deploy" {
		t.Fatalf("url = %s", url)
	}
	arn := e.svc.QueueARN("deploy")
	if arn != "arn:aws:sqs:us-east-1:000000000000:deploy" {
		t.Fatalf("arn = %s", arn)
	}
	id, err := e.svc.Send(e.ctx, arn, "test", map[string]events.SQSMessageAttribute{"kind": {DataType: "String", StringValue: aws.String("order")}}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if recs, err := e.svc.Receive(e.ctx, "deploy", 10, 0); err != nil || len(recs) != 0 {
		t.Fatalf("delayed message received: %v %v", recs, err)
	}
	e.clock.Advance(5 * time.Second)
	recs, err := e.svc.Receive(e.ctx, "deploy", 10, 0)
	if err != nil || len(recs) != 1 {
		t.Fatalf("receive = %v, %v", recs, err)
	}
	r := recs[0]
	if r.MessageId != id || r.Body != "test" || r.Md5OfBody != "098f6bcd4621d373cade4e832627b4f6" || r.EventSource != "aws:sqs" ||
		r.EventSourceARN != arn || r.AWSRegion != "us-east-1" || r.Attributes["ApproximateReceiveCount"] != "1" {
		t.Fatalf("record = %+v", r)
	}

	raw, err := os.ReadFile("testdata/lambda-sqs-event.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][]map[string]any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(events.SQSEvent{Records: recs})
	var got map[string][]map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	w, g := want["Records"][0], got["Records"][0]
	for _, level := range []struct {
		name       string
		want, have any
	}{
		{"record", w, g},
		{"attributes", w["attributes"], g["attributes"]},
		{"message attribute", w["messageAttributes"].(map[string]any)["kind"], g["messageAttributes"].(map[string]any)["kind"]},
	} {
		if keys(t, level.have) != keys(t, level.want) {
			t.Errorf("%s keys = %s, Lambda sends %s", level.name, keys(t, level.have), keys(t, level.want))
		}
	}

	// Not yet deleted: invisible for the queue's 120 s, then back with a second receive count.
	e.clock.Advance(119 * time.Second)
	if again, _ := e.svc.Receive(e.ctx, "deploy", 10, 0); len(again) != 0 {
		t.Fatal("visible before the queue's visibility timeout")
	}
	if err := e.svc.ChangeVisibility("deploy", r.ReceiptHandle, 0); err != nil {
		t.Fatal(err)
	}
	again, err := e.svc.Receive(e.ctx, "deploy", 10, 0)
	if err != nil || len(again) != 1 || again[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("after ChangeVisibility 0: %+v %v", again, err)
	}
	if err := e.svc.Delete("deploy", again[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	if a := e.attrs(t, url); a["ApproximateNumberOfMessages"]+a["ApproximateNumberOfMessagesNotVisible"] != "00" {
		t.Fatalf("after delete: %v", a)
	}

	// A message sent through the SDK reaches the in-process consumer.
	if _, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("from sdk")}); err != nil {
		t.Fatal(err)
	}
	if recs, err := e.svc.Receive(e.ctx, "deploy", 1, 0); err != nil || len(recs) != 1 || recs[0].Body != "from sdk" {
		t.Fatalf("in-process receive of an SDK message: %+v %v", recs, err)
	}
}

func TestGoAPIErrors(t *testing.T) {
	e := newEnv(t, "")
	tests := []struct {
		name string
		call func() error
		code string
	}{
		{"send to missing queue", func() error {
			_, err := e.svc.Send(e.ctx, e.svc.QueueARN("missing"), "x", nil, 0)
			return err
		}, "QueueDoesNotExist"},
		{"send to a url, not an arn", func() error {
			_, err := e.svc.Send(e.ctx, "http://x/000000000000/q", "x", nil, 0)
			return err
		}, "InvalidParameterValue"},
		{"receive from missing queue", func() error {
			_, err := e.svc.Receive(e.ctx, "missing", 1, 0)
			return err
		}, "QueueDoesNotExist"},
		{"delete from missing queue", func() error { return e.svc.Delete("missing", "x") }, "QueueDoesNotExist"},
		{"bad queue name", func() error {
			_, err := e.svc.CreateQueue("bad/name", nil)
			return err
		}, "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var se *sqslocal.Error
			if err := tt.call(); !errors.As(err, &se) || se.Code != tt.code {
				t.Fatalf("err = %v, want code %s", err, tt.code)
			}
		})
	}
}

// TestCloseEndsLongPolls makes sure a shutdown does not hang on a waiting consumer.
func TestCloseEndsLongPolls(t *testing.T) {
	fake := clock.NewFake(epoch)
	svc, err := sqslocal.New(sqslocal.Options{Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateQueue("q", nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := svc.Receive(t.Context(), "q", 1, 20*time.Second)
		done <- err
	}()
	if !fake.WaitForWaiters(1, 10*time.Second) {
		t.Fatal("the long poll never started waiting")
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("long poll after close: %v", err)
	}
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestIsAction(t *testing.T) {
	for action, want := range map[string]bool{"SendMessage": true, "ChangeMessageVisibilityBatch": true, "Publish": false, "CreateTopic": false} {
		if got := sqslocal.IsAction(action); got != want {
			t.Errorf("IsAction(%s) = %v", action, got)
		}
	}
}
