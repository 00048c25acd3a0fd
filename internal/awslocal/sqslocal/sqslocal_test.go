package sqslocal_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal/sqslocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type env struct {
	svc    *sqslocal.Service
	srv    *httptest.Server
	sqs    *sqs.Client
	clock  *clock.Fake
	ctx    context.Context
	region string
}

// newEnv starts a Service on a fake clock behind an httptest server and an SDK client for it.
func newEnv(t *testing.T, dir string) *env {
	t.Helper()
	e := &env{clock: clock.NewFake(epoch), ctx: context.Background(), region: "us-east-1"}
	var base string
	svc, err := sqslocal.New(sqslocal.Options{Region: e.region, AccountID: "000000000000", Clock: e.clock, Dir: dir,
		BaseURL: func() string { return base }})
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	e.srv = httptest.NewServer(svc)
	base = e.srv.URL
	t.Cleanup(func() {
		e.srv.Close()
		if err := svc.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	e.sqs = newClient(t, e.srv.URL)
	return e
}

func newClient(t *testing.T, url string) *sqs.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(), awsclient.WithSafeBodies(), config.WithRegion("us-east-1"), config.WithBaseEndpoint(url),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired))
	if err != nil {
		t.Fatal(err)
	}
	return sqs.NewFromConfig(cfg)
}

func (e *env) createQueue(t *testing.T, name string, attrs map[string]string) string {
	t.Helper()
	out, err := e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

func (e *env) send(t *testing.T, url, body string) string {
	t.Helper()
	out, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	return aws.ToString(out.MessageId)
}

func (e *env) receive(t *testing.T, url string, max int32) []types.Message {
	t.Helper()
	out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: max,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"}})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	return out.Messages
}

func (e *env) attrs(t *testing.T, url string, names ...types.QueueAttributeName) map[string]string {
	t.Helper()
	out, err := e.sqs.GetQueueAttributes(e.ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: names})
	if err != nil {
		t.Fatalf("get queue attributes: %v", err)
	}
	return out.Attributes
}

func TestQueueLifecycle(t *testing.T) {
	e := newEnv(t, "")
	url := e.createQueue(t, "orders", map[string]string{"VisibilityTimeout": "60"})
	if want := e.srv.URL + "/000000000000/orders"; url != want {
		t.Fatalf("queue url = %s, want %s", url, want)
	}
	if again := e.createQueue(t, "orders", map[string]string{"VisibilityTimeout": "60"}); again != url {
		t.Fatalf("idempotent create returned %s", again)
	}
	_, err := e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"), Attributes: map[string]string{"VisibilityTimeout": "10"}})
	var exists *types.QueueNameExists
	if !errors.As(err, &exists) || exists.ErrorCode() != "QueueAlreadyExists" {
		t.Fatalf("create with other attributes: err = %v, want QueueNameExists with legacy code QueueAlreadyExists", err)
	}
	e.createQueue(t, "orders-dlq", nil)
	e.createQueue(t, "billing", nil)

	got, err := e.sqs.GetQueueUrl(e.ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("orders")})
	if err != nil || aws.ToString(got.QueueUrl) != url {
		t.Fatalf("get queue url = %v, %v", got, err)
	}
	list, err := e.sqs.ListQueues(e.ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{url, url + "-dlq"}; strings.Join(list.QueueUrls, ",") != strings.Join(want, ",") {
		t.Fatalf("list queues = %v, want %v", list.QueueUrls, want)
	}

	var pages []string
	for in := (&sqs.ListQueuesInput{MaxResults: aws.Int32(2)}); ; {
		page, err := e.sqs.ListQueues(e.ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, strings.Join(page.QueueUrls, ","))
		if page.NextToken == nil {
			break
		}
		in.NextToken = page.NextToken
	}
	if want := []string{e.srv.URL + "/000000000000/billing," + url, url + "-dlq"}; strings.Join(pages, " | ") != strings.Join(want, " | ") {
		t.Fatalf("pages = %q, want %q", pages, want)
	}

	if _, err := e.sqs.DeleteQueue(e.ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
	_, err = e.sqs.GetQueueUrl(e.ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("orders")})
	var missing *types.QueueDoesNotExist
	if !errors.As(err, &missing) || missing.ErrorCode() != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Fatalf("get deleted queue: err = %v, want QueueDoesNotExist with legacy code", err)
	}
	_, err = e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")})
	if !errors.As(err, &missing) {
		t.Fatalf("send to deleted queue: err = %v, want QueueDoesNotExist", err)
	}
}

func TestCreateQueueRejects(t *testing.T) {
	e := newEnv(t, "")
	tests := []struct {
		name  string
		queue string
		attrs map[string]string
		code  string
	}{
		{"bad name", "has space", nil, "InvalidParameterValue"},
		{"unknown attribute", "q1", map[string]string{"Colour": "blue"}, "InvalidAttributeName"},
		{"visibility out of range", "q2", map[string]string{"VisibilityTimeout": "50000"}, "InvalidAttributeValue"},
		{"redrive to a missing queue", "q3", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:nope","maxReceiveCount":3}`}, "InvalidAttributeValue"},
		{"policy not json", "q4", map[string]string{"Policy": "{"}, "InvalidAttributeValue"},
		{"fifo name without FifoQueue", "q5.fifo", nil, "InvalidParameterValue"},
		{"FifoQueue without the .fifo suffix", "q6", map[string]string{"FifoQueue": "true"}, "InvalidParameterValue"},
		{"ContentBasedDeduplication on a standard queue", "q7", map[string]string{"ContentBasedDeduplication": "true"}, "InvalidAttributeName"},
		{"DeduplicationScope out of range", "q8.fifo", map[string]string{"FifoQueue": "true", "DeduplicationScope": "everything"}, "InvalidAttributeValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String(tt.queue), Attributes: tt.attrs})
			var api smithy.APIError
			if !errors.As(err, &api) || api.ErrorCode() != tt.code {
				t.Fatalf("err = %v, want code %s", err, tt.code)
			}
		})
	}
}

func TestQueueAttributes(t *testing.T) {
	e := newEnv(t, "")
	dlq := e.createQueue(t, "dlq", nil)
	url := e.createQueue(t, "work", map[string]string{"DelaySeconds": "5"})
	all := e.attrs(t, url, types.QueueAttributeNameAll)
	for k, want := range map[string]string{
		"QueueArn": "arn:aws:sqs:us-east-1:000000000000:work", "VisibilityTimeout": "30", "DelaySeconds": "5",
		"MessageRetentionPeriod": "345600", "ReceiveMessageWaitTimeSeconds": "0", "MaximumMessageSize": "262144",
		"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0", "ApproximateNumberOfMessagesDelayed": "0",
		"CreatedTimestamp": strconv.FormatInt(epoch.Unix(), 10),
	} {
		if all[k] != want {
			t.Errorf("attribute %s = %q, want %q", k, all[k], want)
		}
	}
	redrive := `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":"4"}`
	policy := `{"Version":"2012-10-17","Statement":[]}`
	e.clock.Advance(time.Minute)
	_, err := e.sqs.SetQueueAttributes(e.ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{
		"VisibilityTimeout": "45", "RedrivePolicy": redrive, "Policy": policy, "DelaySeconds": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	got := e.attrs(t, url, types.QueueAttributeNameVisibilityTimeout, types.QueueAttributeNameRedrivePolicy,
		types.QueueAttributeNamePolicy, types.QueueAttributeNameDelaySeconds, types.QueueAttributeNameLastModifiedTimestamp)
	want := map[string]string{"VisibilityTimeout": "45", "RedrivePolicy": redrive, "Policy": policy, "DelaySeconds": "0",
		"LastModifiedTimestamp": strconv.FormatInt(epoch.Add(time.Minute).Unix(), 10)}
	if len(got) != len(want) {
		t.Errorf("named attributes = %v, want exactly %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, got[k], v)
		}
	}
	_, err = e.sqs.GetQueueAttributes(e.ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlq), AttributeNames: []types.QueueAttributeName{"Colour"}})
	var bad *types.InvalidAttributeName
	if !errors.As(err, &bad) {
		t.Fatalf("unknown attribute name: err = %v, want InvalidAttributeName", err)
	}
}

// The SDK checks MD5OfMessageBody itself; MD5OfMessageAttributes is checked here against
// digests AWS returned for the same attributes.
func TestSendMessageDigests(t *testing.T) {
	e := newEnv(t, "")
	str := func(dataType, v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String(dataType), StringValue: aws.String(v)}
	}
	tests := []struct {
		name  string
		attrs map[string]types.MessageAttributeValue
		want  string
	}{
		{"one string", map[string]types.MessageAttributeValue{"SellerName": str("String", "Example Store")}, "cd28f3b68aeee4b2eac9c66f2f694b58"},
		{"two strings, sorted by name", map[string]types.MessageAttributeValue{
			"test_attribute_name_2": str("String", "test_attribute_value_2"),
			"test_attribute_name_1": str("String", "test_attribute_value_1")}, "d53f3b558fe951154770f25cb63dbba9"},
		{"binary", map[string]types.MessageAttributeValue{"test_attribute_name": {DataType: aws.String("Binary"), BinaryValue: []byte("test_attribute_value")}}, "23f6bd27ea87aab7dfeadcc9aebee495"},
		{"number and string", map[string]types.MessageAttributeValue{"ordinal": str("Number", "1"), "category": str("String", "test")}, "d21ae90c49061e927f57df5f5d72be1f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := e.createQueue(t, strings.NewReplacer(" ", "-", ",", "").Replace(tt.name), nil)
			body := "body of " + tt.name + " ünïcödé"
			out, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: tt.attrs})
			if err != nil {
				t.Fatal(err)
			}
			if got := aws.ToString(out.MD5OfMessageAttributes); got != tt.want {
				t.Fatalf("MD5OfMessageAttributes = %s, want %s", got, tt.want)
			}
			msgs := e.receive(t, url, 1)
			if len(msgs) != 1 || aws.ToString(msgs[0].Body) != body || aws.ToString(msgs[0].MD5OfMessageAttributes) != tt.want {
				t.Fatalf("received %+v", msgs)
			}
			for k, v := range tt.attrs {
				if got := msgs[0].MessageAttributes[k]; aws.ToString(got.StringValue) != aws.ToString(v.StringValue) ||
					aws.ToString(got.DataType) != aws.ToString(v.DataType) || string(got.BinaryValue) != string(v.BinaryValue) {
					t.Errorf("attribute %s = %+v", k, got)
				}
			}
			if _, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: msgs[0].ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestBinaryAndSystemAttributes(t *testing.T) {
	e := newEnv(t, "")
	url := e.createQueue(t, "bin", nil)
	out, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("b"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"blob":      {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 255}},
			"cust.kind": {DataType: aws.String("String.json"), StringValue: aws.String(`{"a":1}`)},
			"skip":      {DataType: aws.String("String"), StringValue: aws.String("not asked for")},
		},
		MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
			"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-5759e988-bd862e3fe1be46a994272793")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if out.MD5OfMessageAttributes == nil || out.MD5OfMessageSystemAttributes == nil {
		t.Fatalf("missing attribute digests: %+v", out)
	}
	recv, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAWSTraceHeader, types.MessageSystemAttributeNameApproximateReceiveCount},
		MessageAttributeNames:       []string{"blob", "cust.*"}})
	if err != nil || len(recv.Messages) != 1 {
		t.Fatalf("receive: %v %+v", err, recv)
	}
	m := recv.Messages[0]
	if string(m.MessageAttributes["blob"].BinaryValue) != "\x00\x01\x02\xff" || m.MessageAttributes["cust.kind"].StringValue == nil || len(m.MessageAttributes) != 2 {
		t.Fatalf("message attributes = %+v", m.MessageAttributes)
	}
	if m.Attributes["AWSTraceHeader"] != "Root=1-5759e988-bd862e3fe1be46a994272793" || m.Attributes["ApproximateReceiveCount"] != "1" || len(m.Attributes) != 2 {
		t.Fatalf("system attributes = %v", m.Attributes)
	}
	if aws.ToString(m.MD5OfMessageAttributes) == aws.ToString(out.MD5OfMessageAttributes) {
		t.Fatal("the receive digest must cover only the returned attributes")
	}
}

func TestLongPollWokenBySend(t *testing.T) {
	e := newEnv(t, "")
	url := e.createQueue(t, "poll", nil)
	type result struct {
		msgs []types.Message
		err  error
	}
	done := make(chan result, 1)
	go func() {
		out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{msgs: out.Messages}
	}()
	if !e.clock.WaitForWaiters(1, 10*time.Second) {
		t.Fatal("the long poll never started waiting")
	}
	select {
	case r := <-done:
		t.Fatalf("long poll returned before any message: %+v", r)
	default:
	}
	id := e.send(t, url, "wake up") // the fake clock never moves: only the send can end the poll
	r := <-done
	if r.err != nil || len(r.msgs) != 1 || aws.ToString(r.msgs[0].MessageId) != id {
		t.Fatalf("long poll = %+v", r)
	}
}

func TestLongPollTimesOutOnClock(t *testing.T) {
	e := newEnv(t, "")
	url := e.createQueue(t, "idle", map[string]string{"ReceiveMessageWaitTimeSeconds": "20"})
	done := make(chan int, 1)
	go func() {
		out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}) // queue default wait
		if err != nil {
			done <- -1
			return
		}
		done <- len(out.Messages)
	}()
	if !e.clock.WaitForWaiters(1, 10*time.Second) {
		t.Fatal("the long poll never started waiting")
	}
	e.clock.Advance(20 * time.Second)
	if n := <-done; n != 0 {
		t.Fatalf("long poll after its wait time returned %d", n)
	}
}

func TestLongPollEndsWithContext(t *testing.T) {
	e := newEnv(t, "")
	e.createQueue(t, "ctx", nil)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() {
		_, err := e.svc.Receive(ctx, "ctx", 10, 20*time.Second)
		done <- err
	}()
	if !e.clock.WaitForWaiters(1, 10*time.Second) {
		t.Fatal("the long poll never started waiting")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("receive after cancel: %v", err)
	}
}

func TestDelayAndVisibility(t *testing.T) {
	e := newEnv(t, "")
	url := e.createQueue(t, "timing", nil)
	_, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("later"), DelaySeconds: 10})
	if err != nil {
		t.Fatal(err)
	}
	counts := func() string {
		a := e.attrs(t, url, types.QueueAttributeNameAll)
		return a["ApproximateNumberOfMessages"] + "/" + a["ApproximateNumberOfMessagesNotVisible"] + "/" + a["ApproximateNumberOfMessagesDelayed"]
	}
	if got := counts(); got != "0/0/1" {
		t.Fatalf("visible/in flight/delayed = %s, want 0/0/1", got)
	}
	if msgs := e.receive(t, url, 10); len(msgs) != 0 {
		t.Fatalf("delayed message received early: %+v", msgs)
	}
	e.clock.Advance(9 * time.Second)
	if msgs := e.receive(t, url, 10); len(msgs) != 0 {
		t.Fatal("delayed message received one second early")
	}
	e.clock.Advance(time.Second)
	if got := counts(); got != "1/0/0" {
		t.Fatalf("after delay visible/in flight/delayed = %s, want 1/0/0", got)
	}
	out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), VisibilityTimeout: 40,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive: %v %+v", err, out)
	}
	first := out.Messages[0]
	if first.Attributes["ApproximateReceiveCount"] != "1" || first.Attributes["SentTimestamp"] != strconv.FormatInt(epoch.UnixMilli(), 10) ||
		first.Attributes["ApproximateFirstReceiveTimestamp"] != strconv.FormatInt(epoch.Add(10*time.Second).UnixMilli(), 10) {
		t.Fatalf("system attributes = %v", first.Attributes)
	}
	if got := counts(); got != "0/1/0" {
		t.Fatalf("in flight visible/in flight/delayed = %s, want 0/1/0", got)
	}
	e.clock.Advance(39 * time.Second)
	if msgs := e.receive(t, url, 10); len(msgs) != 0 {
		t.Fatal("message visible before its visibility timeout")
	}
	e.clock.Advance(time.Second)
	again := e.receive(t, url, 10)
	if len(again) != 1 || again[0].Attributes["ApproximateReceiveCount"] != "2" || aws.ToString(again[0].ReceiptHandle) == aws.ToString(first.ReceiptHandle) {
		t.Fatalf("second receive = %+v", again)
	}
	// ChangeMessageVisibility to 0 releases it at once; with the stale handle it fails.
	if _, err := e.sqs.ChangeMessageVisibility(e.ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: first.ReceiptHandle, VisibilityTimeout: 0}); err == nil {
		t.Fatal("changing visibility with a stale receipt handle succeeded")
	}
	if _, err := e.sqs.ChangeMessageVisibility(e.ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: again[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
		t.Fatal(err)
	}
	third := e.receive(t, url, 10)
	if len(third) != 1 || third[0].Attributes["ApproximateReceiveCount"] != "3" {
		t.Fatalf("after visibility 0: %+v", third)
	}
	// A stale handle deletes nothing; the current one deletes.
	if _, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: first.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if got := counts(); got != "0/1/0" {
		t.Fatalf("after stale delete: %s", got)
	}
	if _, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: third[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if got := counts(); got != "0/0/0" {
		t.Fatalf("after delete: %s", got)
	}
	_, err = e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("not a handle!")})
	var invalid *types.ReceiptHandleIsInvalid
	if !errors.As(err, &invalid) {
		t.Fatalf("delete with garbage handle: %v", err)
	}
}

func TestQueueDelaySecondsDefault(t *testing.T) {
	e := newEnv(t, "")
	url := e.createQueue(t, "slow", map[string]string{"DelaySeconds": "30"})
	e.send(t, url, "x")
	if msgs := e.receive(t, url, 1); len(msgs) != 0 {
		t.Fatal("queue DelaySeconds not applied")
	}
	e.clock.Advance(30 * time.Second)
	if msgs := e.receive(t, url, 1); len(msgs) != 1 {
		t.Fatal("message not visible after the queue's delay")
	}
}

func TestRedriveToDeadLetterQueue(t *testing.T) {
	e := newEnv(t, "")
	dlq := e.createQueue(t, "jobs-dlq", nil)
	url := e.createQueue(t, "jobs", map[string]string{"VisibilityTimeout": "30",
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:jobs-dlq","maxReceiveCount":3}`})
	id := e.send(t, url, "poison")
	for i := 1; i <= 3; i++ {
		msgs := e.receive(t, url, 1)
		if len(msgs) != 1 || msgs[0].Attributes["ApproximateReceiveCount"] != strconv.Itoa(i) {
			t.Fatalf("receive %d = %+v", i, msgs)
		}
		e.clock.Advance(30 * time.Second) // the consumer fails: no delete, visibility runs out
	}
	if msgs := e.receive(t, url, 1); len(msgs) != 0 {
		t.Fatalf("fourth receive from the source queue returned %+v; want the message moved", msgs)
	}
	moved := e.receive(t, dlq, 1)
	if len(moved) != 1 || aws.ToString(moved[0].MessageId) != id || aws.ToString(moved[0].Body) != "poison" {
		t.Fatalf("dead-letter queue holds %+v", moved)
	}
	if src := moved[0].Attributes["DeadLetterQueueSourceArn"]; src != "arn:aws:sqs:us-east-1:000000000000:jobs" {
		t.Fatalf("DeadLetterQueueSourceArn = %q", src)
	}
	if a := e.attrs(t, url, types.QueueAttributeNameAll); a["ApproximateNumberOfMessages"] != "0" || a["ApproximateNumberOfMessagesNotVisible"] != "0" {
		t.Fatalf("source queue still counts the message: %v", a)
	}
}

func TestBatchPartialFailure(t *testing.T) {
	e := newEnv(t, "")
	url := e.createQueue(t, "batch", nil)
	sent, err := e.sqs.SendMessageBatch(e.ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("one")},
		{Id: aws.String("b"), MessageBody: aws.String("two"), DelaySeconds: 901},
		{Id: aws.String("c"), MessageBody: aws.String("three"), MessageAttributes: map[string]types.MessageAttributeValue{
			"k": {DataType: aws.String("String"), StringValue: aws.String("v")}}},
		{Id: aws.String("d"), MessageBody: aws.String("bad \x01 char")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sent.Successful) != 2 || aws.ToString(sent.Successful[0].Id) != "a" || aws.ToString(sent.Successful[1].Id) != "c" || sent.Successful[1].MD5OfMessageAttributes == nil {
		t.Fatalf("successful = %+v", sent.Successful)
	}
	failed := map[string]string{}
	for _, f := range sent.Failed {
		failed[aws.ToString(f.Id)] = aws.ToString(f.Code)
		if !f.SenderFault {
			t.Errorf("entry %s: sender fault not set", aws.ToString(f.Id))
		}
	}
	if failed["b"] != "InvalidParameterValue" || failed["d"] != "InvalidMessageContents" || len(failed) != 2 {
		t.Fatalf("failed = %v", failed)
	}

	msgs := e.receive(t, url, 10)
	if len(msgs) != 2 {
		t.Fatalf("received %d messages, want 2", len(msgs))
	}
	vis, err := e.sqs.ChangeMessageVisibilityBatch(e.ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: []types.ChangeMessageVisibilityBatchRequestEntry{
		{Id: aws.String("x"), ReceiptHandle: msgs[0].ReceiptHandle, VisibilityTimeout: 100},
		{Id: aws.String("y"), ReceiptHandle: aws.String("garbage!")},
	}})
	if err != nil || len(vis.Successful) != 1 || len(vis.Failed) != 1 || aws.ToString(vis.Failed[0].Code) != "ReceiptHandleIsInvalid" {
		t.Fatalf("change visibility batch = %+v, %v", vis, err)
	}
	del, err := e.sqs.DeleteMessageBatch(e.ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("one"), ReceiptHandle: msgs[0].ReceiptHandle},
		{Id: aws.String("two"), ReceiptHandle: msgs[1].ReceiptHandle},
		{Id: aws.String("three"), ReceiptHandle: aws.String("garbage!")},
	}})
	if err != nil || len(del.Successful) != 2 || len(del.Failed) != 1 || aws.ToString(del.Failed[0].Id) != "three" {
		t.Fatalf("delete batch = %+v, %v", del, err)
	}
	if a := e.attrs(t, url, types.QueueAttributeNameAll); a["ApproximateNumberOfMessagesNotVisible"] != "0" {
		t.Fatalf("after batch delete: %v", a)
	}

	tests := []struct {
		name    string
		entries []types.SendMessageBatchRequestEntry
		target  any
	}{
		{"too many", make11(), new(*types.TooManyEntriesInBatchRequest)},
		{"repeated id", []types.SendMessageBatchRequestEntry{{Id: aws.String("a"), MessageBody: aws.String("1")}, {Id: aws.String("a"), MessageBody: aws.String("2")}}, new(*types.BatchEntryIdsNotDistinct)},
		{"bad id", []types.SendMessageBatchRequestEntry{{Id: aws.String("a b"), MessageBody: aws.String("1")}}, new(*types.InvalidBatchEntryId)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.sqs.SendMessageBatch(e.ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: tt.entries})
			if !errors.As(err, tt.target) {
				t.Fatalf("err = %v, want %T", err, tt.target)
			}
		})
	}
}

func make11() []types.SendMessageBatchRequestEntry {
	var out []types.SendMessageBatchRequestEntry
	for i := range 11 {
		out = append(out, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String("m")})
	}
	return out
}

func TestReceiveValidation(t *testing.T) {
	e := newEnv(t, "")
	url := e.createQueue(t, "v", nil)
	for i := range 12 {
		e.send(t, url, "m"+strconv.Itoa(i))
	}
	_, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 11})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "InvalidParameterValue" {
		t.Fatalf("MaxNumberOfMessages 11: %v", err)
	}
	if msgs := e.receive(t, url, 10); len(msgs) != 10 {
		t.Fatalf("received %d, want 10", len(msgs))
	}
	if msgs := e.receive(t, url, 10); len(msgs) != 2 {
		t.Fatalf("received %d, want the 2 left", len(msgs))
	}
}

func TestPurgeQueue(t *testing.T) {
	e := newEnv(t, "")
	url := e.createQueue(t, "purge", nil)
	e.send(t, url, "a")
	e.send(t, url, "b")
	if _, err := e.sqs.PurgeQueue(e.ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
	if a := e.attrs(t, url, types.QueueAttributeNameApproximateNumberOfMessages); a["ApproximateNumberOfMessages"] != "0" {
		t.Fatalf("after purge: %v", a)
	}
	// A second purge within 60 seconds is refused, as SQS refuses it; after 60 it is taken.
	e.clock.Advance(59 * time.Second)
	_, err := e.sqs.PurgeQueue(e.ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
	var busy *types.PurgeQueueInProgress
	if !errors.As(err, &busy) {
		t.Fatalf("second purge within 60s: err = %v, want PurgeQueueInProgress", err)
	}
	e.clock.Advance(time.Second)
	if _, err := e.sqs.PurgeQueue(e.ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("purge 60s after the last: %v", err)
	}
}

func TestTags(t *testing.T) {
	e := newEnv(t, "")
	out, err := e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String("tagged"), Tags: map[string]string{"team": "payments"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.sqs.TagQueue(e.ctx, &sqs.TagQueueInput{QueueUrl: out.QueueUrl, Tags: map[string]string{"env": "dev"}}); err != nil {
		t.Fatal(err)
	}
	if tags, err := e.sqs.ListQueueTags(e.ctx, &sqs.ListQueueTagsInput{QueueUrl: out.QueueUrl}); err != nil || len(tags.Tags) != 2 || tags.Tags["team"] != "payments" {
		t.Fatalf("tags = %+v, %v", tags, err)
	}
	if _, err := e.sqs.UntagQueue(e.ctx, &sqs.UntagQueueInput{QueueUrl: out.QueueUrl, TagKeys: []string{"team"}}); err != nil {
		t.Fatal(err)
	}
	tags, err := e.sqs.ListQueueTags(e.ctx, &sqs.ListQueueTagsInput{QueueUrl: out.QueueUrl})
	if err != nil || len(tags.Tags) != 1 || tags.Tags["env"] != "dev" {
		t.Fatalf("tags = %+v, %v", tags, err)
	}
}

func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	first := newEnv(t, dir)
	url := first.createQueue(t, "kept", map[string]string{"VisibilityTimeout": "77"})
	first.send(t, url, "in flight")
	first.send(t, url, "waiting")
	inFlight := first.receive(t, url, 1)
	if len(inFlight) != 1 || aws.ToString(inFlight[0].Body) != "in flight" {
		t.Fatalf("received %+v, want the first message sent", inFlight)
	}
	first.srv.Close()
	if err := first.svc.Close(); err != nil {
		t.Fatal(err)
	}

	second := newEnv(t, dir)
	url = second.srv.URL + "/000000000000/kept"
	if a := second.attrs(t, url, types.QueueAttributeNameAll); a["VisibilityTimeout"] != "77" || a["ApproximateNumberOfMessages"] != "1" || a["ApproximateNumberOfMessagesNotVisible"] != "1" {
		t.Fatalf("attributes after restart: %v", a)
	}
	msgs := second.receive(t, url, 10)
	if len(msgs) != 1 || aws.ToString(msgs[0].Body) != "waiting" {
		t.Fatalf("after restart received %+v, want only the waiting message", msgs)
	}
	// The receipt handle from before the restart still deletes.
	if _, err := second.sqs.DeleteMessage(second.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: inFlight[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if a := second.attrs(t, url, types.QueueAttributeNameAll); a["ApproximateNumberOfMessagesNotVisible"] != "1" {
		t.Fatalf("after deleting the old in-flight message: %v", a)
	}
}

func TestTwoServicesAreIndependent(t *testing.T) {
	a, b := newEnv(t, ""), newEnv(t, "")
	a.createQueue(t, "only-in-a", nil)
	_, err := b.sqs.GetQueueUrl(b.ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("only-in-a")})
	var missing *types.QueueDoesNotExist
	if !errors.As(err, &missing) {
		t.Fatalf("second emulator sees the first one's queue: %v", err)
	}
}

// TestJSONErrorShape checks the raw JSON 1.0 error: __type, message, the legacy code header
// and the request id, as AWS sends them.
func TestJSONErrorShape(t *testing.T) {
	e := newEnv(t, "")
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/", strings.NewReader(`{"QueueName":"nope"}`))
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.GetQueueUrl")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 400 || body["__type"] != "com.amazonaws.sqs#QueueDoesNotExist" || !strings.Contains(body["message"], "nope") {
		t.Fatalf("status %d body %v", resp.StatusCode, body)
	}
	if h := resp.Header.Get("x-amzn-query-error"); h != "AWS.SimpleQueueService.NonExistentQueue;Sender" {
		t.Fatalf("x-amzn-query-error = %q", h)
	}
	if resp.Header.Get("x-amzn-RequestId") == "" || resp.Header.Get("Content-Type") != "application/x-amz-json-1.0" {
		t.Fatalf("headers = %v", resp.Header)
	}
	ok, err := http.Post(e.srv.URL+"/", "application/x-amz-json-1.0", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, ok.Body)
	ok.Body.Close()
	if ok.Header.Get("x-amzn-RequestId") == "" {
		t.Fatal("an error answer without a request id")
	}
}

// TestConcurrentConsumers delivers every message to exactly one of several competing
// consumers while producers are still sending.
func TestConcurrentConsumers(t *testing.T) {
	e := newEnv(t, "")
	url := e.createQueue(t, "busy", nil)
	const producers, perProducer, consumers = 4, 25, 4
	errs := make(chan error, producers+consumers)
	for p := range producers {
		go func() {
			for i := range perProducer {
				if _, err := e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(strconv.Itoa(p*1000 + i))}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	seen := make(chan string, producers*perProducer*2)
	stop := make(chan struct{})
	for range consumers {
		go func() {
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 3})
				if err != nil {
					errs <- err
					return
				}
				for _, m := range out.Messages {
					seen <- aws.ToString(m.Body)
					if _, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	got := map[string]int{}
	for len(got) < producers*perProducer {
		got[<-seen]++
	}
	close(stop)
	for range producers + consumers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(seen)
	for b := range seen {
		got[b]++
	}
	for b, n := range got {
		if n != 1 {
			t.Errorf("message %s delivered %d times", b, n)
		}
	}
}
