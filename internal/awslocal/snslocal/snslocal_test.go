package snslocal_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal/snslocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

type sent struct {
	queue, body string
	attrs       map[string]events.SQSMessageAttribute
}

type queues struct {
	mu   sync.Mutex
	msgs []sent
}

func (q *queues) send(_ context.Context, arn, body string, attrs map[string]events.SQSMessageAttribute) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, sent{arn, body, attrs})
	return nil
}

func (q *queues) take() []sent {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.msgs
	q.msgs = nil
	return out
}

func newClient(t *testing.T, opts snslocal.Options) (*sns.Client, *snslocal.Service) {
	t.Helper()
	svc, err := snslocal.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	cfg, err := config.LoadDefaultConfig(context.Background(), awsclient.WithSafeBodies(), config.WithRegion("us-east-1"), config.WithBaseEndpoint(srv.URL),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")), config.WithRetryMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	return sns.NewFromConfig(cfg), svc
}

func TestPublishToSubscribedQueues(t *testing.T) {
	var q queues
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c, svc := newClient(t, snslocal.Options{Send: q.send, Clock: clock.NewFake(at)})
	ctx := context.Background()
	topic, err := c.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("ports")})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("ports")})
	if err != nil || aws.ToString(again.TopicArn) != aws.ToString(topic.TopicArn) {
		t.Fatalf("CreateTopic is not idempotent: %v %v", again, err)
	}
	const enveloped, raw = "arn:aws:sqs:us-east-1:000000000000:ports", "arn:aws:sqs:us-east-1:000000000000:raw"
	sub, err := c.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(enveloped)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(raw),
		Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		t.Fatal(err)
	}
	subs, err := c.ListSubscriptionsByTopic(ctx, &sns.ListSubscriptionsByTopicInput{TopicArn: topic.TopicArn})
	if err != nil || len(subs.Subscriptions) != 2 {
		t.Fatalf("ListSubscriptionsByTopic = %+v, %v; want 2", subs, err)
	}
	pub, err := c.Publish(ctx, &sns.PublishInput{TopicArn: topic.TopicArn, Subject: aws.String("AWS CloudFormation custom resource request"),
		Message:           aws.String(`{"RequestType":"Create"}`),
		MessageAttributes: map[string]types.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("port")}}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := q.take()
	if len(msgs) != 2 {
		t.Fatalf("delivered %d messages, want 2", len(msgs))
	}
	for _, m := range msgs {
		switch m.queue {
		case raw:
			if m.body != `{"RequestType":"Create"}` || aws.ToString(m.attrs["kind"].StringValue) != "port" {
				t.Fatalf("raw delivery = %q %+v", m.body, m.attrs)
			}
		case enveloped:
			var n events.SNSEntity
			if err := json.Unmarshal([]byte(m.body), &n); err != nil {
				t.Fatal(err)
			}
			if n.Type != "Notification" || n.MessageID != aws.ToString(pub.MessageId) || n.TopicArn != aws.ToString(topic.TopicArn) ||
				n.Message != `{"RequestType":"Create"}` || n.Subject != "AWS CloudFormation custom resource request" ||
				!n.Timestamp.Equal(at) || n.SignatureVersion != "1" || n.Signature == "" || n.SigningCertURL == "" || n.UnsubscribeURL == "" {
				t.Fatalf("envelope = %+v", n)
			}
			if attr, _ := n.MessageAttributes["kind"].(map[string]any); attr["Type"] != "String" || attr["Value"] != "port" {
				t.Fatalf("envelope attributes = %+v", n.MessageAttributes)
			}
		default:
			t.Fatalf("delivered to unknown queue %s", m.queue)
		}
	}

	if _, err := c.Unsubscribe(ctx, &sns.UnsubscribeInput{SubscriptionArn: sub.SubscriptionArn}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Publish(ctx, aws.ToString(topic.TopicArn), "", "in-process"); err != nil {
		t.Fatal(err)
	}
	if msgs := q.take(); len(msgs) != 1 || msgs[0].queue != raw || msgs[0].body != "in-process" {
		t.Fatalf("after unsubscribe: %+v", msgs)
	}

	list, err := c.ListTopics(ctx, &sns.ListTopicsInput{})
	if err != nil || len(list.Topics) != 1 {
		t.Fatalf("ListTopics = %+v, %v", list, err)
	}
	if _, err := c.DeleteTopic(ctx, &sns.DeleteTopicInput{TopicArn: topic.TopicArn}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Publish(ctx, &sns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String("x")})
	var nf *types.NotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("publish to a deleted topic: %v, want NotFoundException", err)
	}
}

func TestErrors(t *testing.T) {
	c, _ := newClient(t, snslocal.Options{})
	ctx := context.Background()
	tests := []struct {
		name string
		call func() error
		code string
	}{
		{"bad topic name", func() error {
			_, err := c.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("no spaces")})
			return err
		}, "InvalidParameter"},
		{"subscribe to missing topic", func() error {
			_, err := c.Subscribe(ctx, &sns.SubscribeInput{TopicArn: aws.String("arn:aws:sns:us-east-1:000000000000:nope"), Protocol: aws.String("sqs"), Endpoint: aws.String("arn:aws:sqs:us-east-1:000000000000:q")})
			return err
		}, "NotFound"},
		{"unsupported protocol", func() error {
			_, err := c.Subscribe(ctx, &sns.SubscribeInput{TopicArn: aws.String("arn:aws:sns:us-east-1:000000000000:nope"), Protocol: aws.String("carrier-pigeon"), Endpoint: aws.String("a@b.c")})
			return err
		}, "InvalidParameter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ae smithy.APIError
			if err := tt.call(); !errors.As(err, &ae) || ae.ErrorCode() != tt.code {
				t.Fatalf("error = %v, want code %s", err, tt.code)
			}
		})
	}
}

func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	first, err := snslocal.New(snslocal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	arn, err := first.CreateTopic("events", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Subscribe(arn, "sqs", "arn:aws:sqs:us-east-1:000000000000:q", nil); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	var q queues
	c, _ := newClient(t, snslocal.Options{Dir: dir, Send: q.send})
	if _, err := c.Publish(context.Background(), &sns.PublishInput{TopicArn: aws.String(arn), Message: aws.String("hello")}); err != nil {
		t.Fatal(err)
	}
	if msgs := q.take(); len(msgs) != 1 {
		t.Fatalf("after restart, delivered %d messages, want 1", len(msgs))
	}
}

// A Lambda subscription gets the message as the SNS event Lambda receives; an email one is
// recorded, pending confirmation, and gets nothing.
func TestLambdaAndEmailSubscriptions(t *testing.T) {
	var mu sync.Mutex
	var invoked []events.SNSEvent
	q := &queues{}
	c, _ := newClient(t, snslocal.Options{Send: q.send, Invoke: func(_ context.Context, fn string, b []byte) error {
		var ev events.SNSEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			return err
		}
		if fn != "arn:aws:lambda:us-east-1:000000000000:function:notify" {
			t.Errorf("invoked %s", fn)
		}
		mu.Lock()
		invoked = append(invoked, ev)
		mu.Unlock()
		return nil
	}})
	ctx := context.Background()
	topic, err := c.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("lambda"), Endpoint: aws.String("arn:aws:lambda:us-east-1:000000000000:function:notify")}); err != nil {
		t.Fatal(err)
	}
	mail, err := c.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("email"), Endpoint: aws.String("ops@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := c.GetSubscriptionAttributes(ctx, &sns.GetSubscriptionAttributesInput{SubscriptionArn: mail.SubscriptionArn})
	if err != nil || attrs.Attributes["PendingConfirmation"] != "true" {
		t.Fatalf("email subscription %v %v", attrs, err)
	}
	if _, err := c.Publish(ctx, &sns.PublishInput{TopicArn: topic.TopicArn, Subject: aws.String("new"), Message: aws.String("order 1")}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(invoked) != 1 || len(invoked[0].Records) != 1 {
		t.Fatalf("invoked %+v", invoked)
	}
	r := invoked[0].Records[0]
	if r.EventSource != "aws:sns" || r.SNS.Message != "order 1" || r.SNS.Subject != "new" || r.SNS.TopicArn != aws.ToString(topic.TopicArn) || r.SNS.Timestamp.IsZero() {
		t.Errorf("record %+v", r)
	}
	if got := q.take(); len(got) != 0 {
		t.Errorf("queues got %v", got)
	}
}

// TestCorruptStateIsRefused: a state file that does not decode stops the emulator, naming
// the file, rather than starting empty over it.
func TestCorruptStateIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sns.json")
	if err := os.WriteFile(path, []byte(`{"topics": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := snslocal.New(snslocal.Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "sns emulator: state "+path+" is corrupt (") {
		t.Fatalf("New over a corrupt state: %v", err)
	}
}
