package sqslocal_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// sendFIFO sends body to a FIFO queue in group, with an explicit deduplication id unless
// dedup is "".
func (e *env) sendFIFO(t *testing.T, url, group, dedup, body string) *sqs.SendMessageOutput {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageGroupId: aws.String(group)}
	if dedup != "" {
		in.MessageDeduplicationId = aws.String(dedup)
	}
	out, err := e.sqs.SendMessage(e.ctx, in)
	if err != nil {
		t.Fatalf("send %q to group %s: %v", body, group, err)
	}
	return out
}

func bodies(msgs []types.Message) string {
	var out []string
	for _, m := range msgs {
		out = append(out, aws.ToString(m.Body))
	}
	return strings.Join(out, ",")
}

func TestFIFOQueueAttributes(t *testing.T) {
	e := newEnv(t, "")
	url := e.createQueue(t, "orders.fifo", map[string]string{"FifoQueue": "true"})
	a := e.attrs(t, url, types.QueueAttributeNameAll)
	for k, want := range map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "false",
		"DeduplicationScope": "queue", "FifoThroughputLimit": "perQueue"} {
		if a[k] != want {
			t.Errorf("%s = %q, want %q (all: %v)", k, a[k], want, a)
		}
	}
	if _, err := e.sqs.SetQueueAttributes(e.ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url),
		Attributes: map[string]string{"ContentBasedDeduplication": "true"}}); err != nil {
		t.Fatalf("turn on content-based deduplication: %v", err)
	}
	_, err := e.sqs.SetQueueAttributes(e.ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url),
		Attributes: map[string]string{"FifoQueue": "false"}})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "InvalidAttributeName" {
		t.Fatalf("change FifoQueue: err = %v, want InvalidAttributeName (FifoQueue is set at creation only)", err)
	}
	std := e.createQueue(t, "plain", nil)
	if a := e.attrs(t, std, types.QueueAttributeNameAll); a["FifoQueue"] != "" {
		t.Fatalf("a standard queue has FifoQueue=%q", a["FifoQueue"])
	}
}

func TestFIFOSendValidation(t *testing.T) {
	e := newEnv(t, "")
	fifo := e.createQueue(t, "v.fifo", map[string]string{"FifoQueue": "true"})
	std := e.createQueue(t, "v", nil)
	tests := []struct {
		name string
		in   sqs.SendMessageInput
		code string
	}{
		{"no group", sqs.SendMessageInput{QueueUrl: &fifo, MessageDeduplicationId: aws.String("d")}, "MissingParameter"},
		{"no deduplication id without content-based deduplication", sqs.SendMessageInput{QueueUrl: &fifo, MessageGroupId: aws.String("g")}, "InvalidParameterValue"},
		{"a per-message delay", sqs.SendMessageInput{QueueUrl: &fifo, MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d"), DelaySeconds: 5}, "InvalidParameterValue"},
		{"a group id with a space", sqs.SendMessageInput{QueueUrl: &fifo, MessageGroupId: aws.String("a b"), MessageDeduplicationId: aws.String("d")}, "InvalidParameterValue"},
		{"a deduplication id on a standard queue", sqs.SendMessageInput{QueueUrl: &std, MessageDeduplicationId: aws.String("d")}, "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.MessageBody = aws.String("m")
			_, err := e.sqs.SendMessage(e.ctx, &in)
			var api smithy.APIError
			if !errors.As(err, &api) || api.ErrorCode() != tt.code {
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
		})
	}
}

// TestFIFOGroupOrderAndBlocking: messages of a group come in the order sent, and a group
// with a message in flight gives no other until that one is deleted or visible again;
// other groups are not held up.
func TestFIFOGroupOrderAndBlocking(t *testing.T) {
	e := newEnv(t, "")
	url := e.createQueue(t, "jobs.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "30"})
	for _, m := range []struct{ group, body string }{{"a", "a1"}, {"b", "b1"}, {"a", "a2"}, {"a", "a3"}, {"b", "b2"}} {
		e.sendFIFO(t, url, m.group, "", m.body)
	}
	first := e.receive(t, url, 2)
	if got := bodies(first); got != "a1,a2" {
		t.Fatalf("first receive = %s, want a1,a2 (as many of the oldest group as asked)", got)
	}
	if g := first[0].Attributes["MessageGroupId"]; g != "a" {
		t.Fatalf("MessageGroupId attribute = %q", g)
	}
	if s0, s1 := first[0].Attributes["SequenceNumber"], first[1].Attributes["SequenceNumber"]; len(s0) < 20 || s0 >= s1 {
		t.Fatalf("sequence numbers %q, %q: want increasing numbers of 20 digits", s0, s1)
	}
	// Group a is in flight: only b comes, in order.
	if got := bodies(e.receive(t, url, 10)); got != "b1,b2" {
		t.Fatalf("while a is in flight: %s, want b1,b2", got)
	}
	if got := bodies(e.receive(t, url, 10)); got != "" {
		t.Fatalf("both groups in flight: %s, want nothing", got)
	}
	// Deleting a1 alone does not free the group: a2 is still in flight.
	if _, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: first[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if got := bodies(e.receive(t, url, 10)); got != "" {
		t.Fatalf("a2 still in flight: %s, want nothing", got)
	}
	// The visibility timeouts end: a2 comes back before a3, and b (whose oldest message
	// is older than a's) first.
	e.clock.Advance(31 * time.Second)
	if got := bodies(e.receive(t, url, 10)); got != "b1,b2,a2,a3" {
		t.Fatalf("after the visibility timeout: %s, want b1,b2,a2,a3", got)
	}
}

// TestFIFODeduplication: a message with a deduplication id seen in the last five minutes is
// accepted, answered with the first message's id, and not delivered, even after the first
// was deleted; content-based deduplication hashes the body; DeduplicationScope
// messageGroup keeps groups apart.
func TestFIFODeduplication(t *testing.T) {
	e := newEnv(t, "")
	url := e.createQueue(t, "d.fifo", map[string]string{"FifoQueue": "true"})
	one := e.sendFIFO(t, url, "g", "x", "first")
	dup := e.sendFIFO(t, url, "g", "x", "second")
	if aws.ToString(dup.MessageId) != aws.ToString(one.MessageId) || aws.ToString(dup.SequenceNumber) != aws.ToString(one.SequenceNumber) {
		t.Fatalf("duplicate answered %s/%s, want the first's %s/%s", aws.ToString(dup.MessageId), aws.ToString(dup.SequenceNumber),
			aws.ToString(one.MessageId), aws.ToString(one.SequenceNumber))
	}
	got := e.receive(t, url, 10)
	if bodies(got) != "first" {
		t.Fatalf("received %s, want first only", bodies(got))
	}
	if got[0].Attributes["MessageDeduplicationId"] != "x" {
		t.Fatalf("MessageDeduplicationId attribute = %q", got[0].Attributes["MessageDeduplicationId"])
	}
	if _, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: got[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(4 * time.Minute)
	e.sendFIFO(t, url, "g", "x", "within five minutes")
	if b := bodies(e.receive(t, url, 10)); b != "" {
		t.Fatalf("a duplicate within five minutes of the first was delivered: %s", b)
	}
	e.clock.Advance(time.Minute)
	e.sendFIFO(t, url, "g", "x", "after five minutes")
	if b := bodies(e.receive(t, url, 10)); b != "after five minutes" {
		t.Fatalf("five minutes later: %s", b)
	}

	content := e.createQueue(t, "c.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	e.sendFIFO(t, content, "g", "", "same")
	e.sendFIFO(t, content, "h", "", "same")
	e.sendFIFO(t, content, "g", "", "other")
	if b := bodies(e.receive(t, content, 10)); b != "same,other" {
		t.Fatalf("content-based deduplication: %s, want same,other", b)
	}

	scoped := e.createQueue(t, "s.fifo", map[string]string{"FifoQueue": "true", "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"})
	e.sendFIFO(t, scoped, "g", "x", "g-x")
	e.sendFIFO(t, scoped, "h", "x", "h-x")
	e.sendFIFO(t, scoped, "g", "x", "g-x again")
	if b := bodies(e.receive(t, scoped, 10)); b != "g-x,h-x" {
		t.Fatalf("deduplication scoped by group: %s, want g-x,h-x", b)
	}
}

func TestFIFOBatchAndPersistence(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, dir)
	url := e.createQueue(t, "b.fifo", map[string]string{"FifoQueue": "true"})
	out, err := e.sqs.SendMessageBatch(e.ctx, &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("1"), MessageBody: aws.String("one"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("1")},
		{Id: aws.String("2"), MessageBody: aws.String("two"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("2")},
		{Id: aws.String("3"), MessageBody: aws.String("no group"), MessageDeduplicationId: aws.String("3")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Successful) != 2 || len(out.Failed) != 1 || aws.ToString(out.Failed[0].Code) != "MissingParameter" {
		t.Fatalf("batch: %d ok, failed %+v", len(out.Successful), out.Failed)
	}
	if aws.ToString(out.Successful[0].SequenceNumber) == "" {
		t.Fatal("a FIFO batch entry has no SequenceNumber")
	}
	if err := e.svc.Close(); err != nil {
		t.Fatal(err)
	}
	again := newEnv(t, dir)
	again.clock.Set(e.clock.Now())
	again.sendFIFO(t, url, "g", "1", "duplicate after a restart")
	if b := bodies(again.receive(t, url, 10)); b != "one,two" {
		t.Fatalf("after a restart: %s, want one,two (the deduplication ids survive)", b)
	}
}
