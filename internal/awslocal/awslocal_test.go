package awslocal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

// env is an emulator started on a free port with SDK clients pointed at it.
type env struct {
	e   *awslocal.Emulator
	s3  *s3.Client
	sqs *sqs.Client
	sns *sns.Client
}

func start(t *testing.T, opts awslocal.Options) *env {
	t.Helper()
	e, err := awslocal.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	cfg, err := e.AWSConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &env{e: e, s3: awsclient.S3(cfg), sqs: sqs.NewFromConfig(cfg), sns: sns.NewFromConfig(cfg)}
}

func (v *env) queue(t *testing.T, name string, attrs map[string]string) (url, arn string) {
	t.Helper()
	ctx := context.Background()
	out, err := v.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	a, err := v.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
	if err != nil {
		t.Fatalf("queue %s attributes: %v", name, err)
	}
	return aws.ToString(out.QueueUrl), a.Attributes["QueueArn"]
}

// receive long-polls a queue for one message, skipping S3 test events.
func (v *env) receive(t *testing.T, url string) sqstypes.Message {
	t.Helper()
	for range 5 {
		out, err := v.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 5, MaxNumberOfMessages: 1})
		if err != nil {
			t.Fatalf("receive from %s: %v", url, err)
		}
		if len(out.Messages) == 0 {
			continue
		}
		m := out.Messages[0]
		if _, err := v.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(aws.ToString(m.Body), `"s3:TestEvent"`) {
			continue
		}
		return m
	}
	t.Fatalf("no message arrived on %s", url)
	return sqstypes.Message{}
}

func TestS3NotificationReachesSQSConsumer(t *testing.T) {
	v := start(t, awslocal.Options{})
	ctx := context.Background()
	url, arn := v.queue(t, "deploy", nil)
	if _, err := v.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("cairn-state")}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.s3.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("cairn-state"),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.s3.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
		Bucket: aws.String("cairn-state"),
		NotificationConfiguration: &s3types.NotificationConfiguration{QueueConfigurations: []s3types.QueueConfiguration{{
			QueueArn: aws.String(arn), Events: []s3types.Event{"s3:ObjectCreated:*"},
			Filter: &s3types.NotificationConfigurationFilter{Key: &s3types.S3KeyFilter{FilterRules: []s3types.FilterRule{
				{Name: s3types.FilterRuleNamePrefix, Value: aws.String("deployments/")}}}},
		}}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cairn-state"), Key: aws.String("deployments/shop.zip"), Body: strings.NewReader("v1")}); err != nil {
		t.Fatal(err)
	}
	put, err := v.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cairn-state"), Key: aws.String("deployments/shop.zip"), Body: strings.NewReader("v2")})
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for range 2 {
		var ev events.S3Event
		if err := json.Unmarshal([]byte(aws.ToString(v.receive(t, url).Body)), &ev); err != nil {
			t.Fatal(err)
		}
		if len(ev.Records) != 1 || ev.Records[0].EventName != "ObjectCreated:Put" || ev.Records[0].S3.Object.URLDecodedKey != "deployments/shop.zip" {
			t.Fatalf("event = %+v", ev)
		}
		versions = append(versions, ev.Records[0].S3.Object.VersionID)
	}
	if !strings.Contains(strings.Join(versions, " "), aws.ToString(put.VersionId)) {
		t.Fatalf("event version ids %v do not include the second put's %s", versions, aws.ToString(put.VersionId))
	}
	if versions[0] == versions[1] {
		t.Fatalf("both events carry version %s", versions[0])
	}
}

func TestSNSEnvelopeReachesSQSConsumer(t *testing.T) {
	v := start(t, awslocal.Options{})
	ctx := context.Background()
	url, arn := v.queue(t, "ports", nil)
	topic, err := v.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("custom-resources")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(arn)}); err != nil {
		t.Fatal(err)
	}
	pub, err := v.sns.Publish(ctx, &sns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String(`{"RequestType":"Create"}`), Subject: aws.String("req")})
	if err != nil {
		t.Fatal(err)
	}
	var n events.SNSEntity
	if err := json.Unmarshal([]byte(aws.ToString(v.receive(t, url).Body)), &n); err != nil {
		t.Fatal(err)
	}
	if n.Type != "Notification" || n.MessageID != aws.ToString(pub.MessageId) || n.TopicArn != aws.ToString(topic.TopicArn) || n.Message != `{"RequestType":"Create"}` {
		t.Fatalf("envelope = %+v", n)
	}
}

// waitQueued waits until the queue holds n messages, visible or in flight.
func (v *env) waitQueued(t *testing.T, url string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := v.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
		if err != nil {
			t.Fatal(err)
		}
		visible, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
		hidden, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
		if visible+hidden == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue holds %d messages (%d in flight), want %d", visible+hidden, hidden, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recorder is a Lambda handler that records its invocations and fails as told.
type recorder struct {
	calls chan events.SQSEvent
	fail  func(events.SQSMessage) bool
}

func newRecorder(fail func(events.SQSMessage) bool) *recorder {
	return &recorder{calls: make(chan events.SQSEvent, 100), fail: fail}
}

func (r *recorder) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	if _, ok := ctx.Deadline(); !ok {
		return events.SQSEventResponse{}, errors.New("no deadline")
	}
	r.calls <- ev
	var resp events.SQSEventResponse
	for _, m := range ev.Records {
		if r.fail(m) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	if len(resp.BatchItemFailures) == len(ev.Records) {
		return resp, errors.New("every record failed")
	}
	return resp, nil
}

func (r *recorder) next(t *testing.T) events.SQSEvent {
	t.Helper()
	select {
	case ev := <-r.calls:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("handler was not invoked")
		return events.SQSEvent{}
	}
}

func TestFailingMessageLandsInDLQ(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	v := start(t, awslocal.Options{Clock: fake})
	ctx := context.Background()
	dlqURL, dlqARN := v.queue(t, "deploy-dlq", nil)
	url, _ := v.queue(t, "deploy", map[string]string{
		"VisibilityTimeout": "30",
		"RedrivePolicy":     `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"3"}`,
	})
	rec := newRecorder(func(events.SQSMessage) bool { return true })
	if err := v.e.RegisterFunction("deployer", rec.handle); err != nil {
		t.Fatal(err)
	}
	if err := v.e.AddEventSourceMapping("deploy", "deployer", awslocal.ESMOptions{BatchSize: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("poison")}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		ev := rec.next(t)
		if got := ev.Records[0].Attributes["ApproximateReceiveCount"]; got != strconv.Itoa(i) {
			t.Fatalf("invocation %d: ApproximateReceiveCount = %s", i, got)
		}
		if ev.Records[0].Body != "poison" || ev.Records[0].EventSource != "aws:sqs" {
			t.Fatalf("record = %+v", ev.Records[0])
		}
		fake.Advance(31 * time.Second)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := v.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlqURL)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 1 {
			if aws.ToString(out.Messages[0].Body) != "poison" {
				t.Fatalf("dead letter = %q", aws.ToString(out.Messages[0].Body))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the message never reached the dead-letter queue")
		}
		fake.Advance(31 * time.Second)
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case ev := <-rec.calls:
		t.Fatalf("a fourth invocation happened: %+v", ev)
	default:
	}
}

func TestPartialBatchResponse(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	v := start(t, awslocal.Options{Clock: fake})
	ctx := context.Background()
	url, _ := v.queue(t, "work", map[string]string{"VisibilityTimeout": "30"})
	for _, body := range []string{"ok", "bad"} {
		if _, err := v.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	rec := newRecorder(func(m events.SQSMessage) bool { return m.Body == "bad" })
	if err := v.e.RegisterFunction("worker", rec.handle); err != nil {
		t.Fatal(err)
	}
	if err := v.e.AddEventSourceMapping("work", "worker", awslocal.ESMOptions{BatchSize: 10, ReportBatchItemFailures: true}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for seen["bad"] < 2 {
		ev := rec.next(t)
		for _, r := range ev.Records {
			seen[r.Body]++
		}
		// The clock moves past the visibility timeout only once the invocation ended and
		// its successful record was deleted: otherwise another of the mapping's pollers
		// would receive it again, as Lambda's would from an invocation that outlasted it.
		v.waitQueued(t, url, 1)
		fake.Advance(31 * time.Second)
	}
	if seen["ok"] != 1 {
		t.Fatalf("the successful record was delivered %d times, want once (deliveries %v)", seen["ok"], seen)
	}
}

func TestScheduleFiresOnFakeClock(t *testing.T) {
	start0 := time.Date(2026, 1, 1, 11, 58, 0, 0, time.UTC)
	fake := clock.NewFake(start0)
	v := start(t, awslocal.Options{Clock: fake})
	got := make(chan events.CloudWatchEvent, 10)
	if err := v.e.RegisterFunction("drift", func(ctx context.Context, ev events.CloudWatchEvent) error { got <- ev; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := v.e.AddSchedule("drift-check", "cron(0 12 * * ? *)", "drift"); err != nil {
		t.Fatal(err)
	}
	if !fake.WaitForWaiters(1, 10*time.Second) {
		t.Fatal("the schedule never waited on the clock")
	}
	fake.Advance(time.Minute)
	select {
	case ev := <-got:
		t.Fatalf("fired early: %+v", ev)
	default:
	}
	fake.Advance(time.Minute)
	select {
	case ev := <-got:
		want := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
		if ev.DetailType != "Scheduled Event" || ev.Source != "aws.events" || !ev.Time.Equal(want) ||
			len(ev.Resources) != 1 || !strings.HasSuffix(ev.Resources[0], ":rule/drift-check") || string(ev.Detail) != "{}" {
			t.Fatalf("event = %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("schedule did not fire at 12:00")
	}
}

func TestEventBusRoutesToQueue(t *testing.T) {
	v := start(t, awslocal.Options{})
	url, arn := v.queue(t, "stack-events", nil)
	if err := v.e.PutRule("cfn", awslocal.EventPattern{Source: []string{"aws.cloudformation"}, DetailType: []string{"CloudFormation Stack Status Change"}}, arn); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []events.CloudWatchEvent{
		{Source: "aws.s3", DetailType: "Object Created"},
		{Source: "aws.cloudformation", DetailType: "CloudFormation Stack Status Change", Detail: json.RawMessage(`{"status-details":{"status":"CREATE_COMPLETE"}}`)},
	} {
		if err := v.e.PutEvent(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	var ev events.CloudWatchEvent
	if err := json.Unmarshal([]byte(aws.ToString(v.receive(t, url).Body)), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Source != "aws.cloudformation" || ev.AccountID != "000000000000" || ev.Region != "us-east-1" || ev.ID == "" || !strings.Contains(string(ev.Detail), "CREATE_COMPLETE") {
		t.Fatalf("event = %+v", ev)
	}
	out, err := v.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	if err != nil || len(out.Messages) != 0 {
		t.Fatalf("unmatched event delivered: %+v %v", out, err)
	}
}

func TestEmulatorsAreIsolated(t *testing.T) {
	a := start(t, awslocal.Options{})
	b := start(t, awslocal.Options{})
	ctx := context.Background()
	if _, err := a.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("only-in-a")}); err != nil {
		t.Fatal(err)
	}
	a.queue(t, "only-in-a", nil)
	list, err := b.s3.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(list.Buckets) != 0 {
		t.Fatalf("second emulator sees buckets %+v (%v)", list.Buckets, err)
	}
	queues, err := b.sqs.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(queues.QueueUrls) != 0 {
		t.Fatalf("second emulator sees queues %v (%v)", queues.QueueUrls, err)
	}
}

func TestStatePersistsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	var version, topicARN string
	func() {
		e, err := awslocal.New(awslocal.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		cfg, _ := e.AWSConfig(ctx)
		v := &env{e: e, s3: awsclient.S3(cfg), sqs: sqs.NewFromConfig(cfg), sns: sns.NewFromConfig(cfg)}
		if _, err := v.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("keep")}); err != nil {
			t.Fatal(err)
		}
		if _, err := v.s3.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("keep"),
			VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
			t.Fatal(err)
		}
		out, err := v.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("keep"), Key: aws.String("state/shop.json"), Body: strings.NewReader(`{"generation":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		version = aws.ToString(out.VersionId)
		url, _ := v.queue(t, "kept", nil)
		if _, err := v.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("still here")}); err != nil {
			t.Fatal(err)
		}
		topic, err := v.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("kept")})
		if err != nil {
			t.Fatal(err)
		}
		topicARN = aws.ToString(topic.TopicArn)
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	v := start(t, awslocal.Options{Dir: dir})
	obj, err := v.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("keep"), Key: aws.String("state/shop.json")})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	if string(body) != `{"generation":1}` || aws.ToString(obj.VersionId) != version {
		t.Fatalf("after restart: %s version %s, want version %s", body, aws.ToString(obj.VersionId), version)
	}
	url, _ := v.queue(t, "kept", nil)
	if m := v.receive(t, url); aws.ToString(m.Body) != "still here" {
		t.Fatalf("message after restart = %q", aws.ToString(m.Body))
	}
	topics, err := v.sns.ListTopics(ctx, &sns.ListTopicsInput{})
	if err != nil || len(topics.Topics) != 1 || aws.ToString(topics.Topics[0].TopicArn) != topicARN {
		t.Fatalf("topics after restart = %+v (%v)", topics, err)
	}
}

func postJSON(t *testing.T, url, body string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %s %s", url, resp.Status, b)
	}
}

func TestThrottlingFaultSurfacesAsSDKThrottle(t *testing.T) {
	v := start(t, awslocal.Options{})
	ctx := context.Background()
	if _, err := v.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt")}); err != nil {
		t.Fatal(err)
	}
	topic, err := v.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("t")})
	if err != nil {
		t.Fatal(err)
	}
	url, _ := v.queue(t, "q", nil)
	postJSON(t, v.e.URL()+"/_local/faults", `{"seed": 3, "faults": [
		{"target": "s3.PutObject", "throttleRate": 1},
		{"target": "sqs.*", "throttleRate": 1},
		{"target": "sns.Publish", "throttleRate": 1}]}`)
	once := func(o *retry.StandardOptions) { o.MaxAttempts = 1 }
	tests := []struct {
		name string
		call func() error
		code string
	}{
		{"s3", func() error {
			_, err := v.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("x")},
				func(o *s3.Options) { o.Retryer = retry.NewStandard(once) })
			return err
		}, "SlowDown"},
		{"sqs", func() error {
			_, err := v.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")},
				func(o *sqs.Options) { o.Retryer = retry.NewStandard(once) })
			return err
		}, "RequestThrottled"},
		{"sns", func() error {
			_, err := v.sns.Publish(ctx, &sns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String("x")},
				func(o *sns.Options) { o.Retryer = retry.NewStandard(once) })
			return err
		}, "Throttling"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != tt.code {
				t.Fatalf("error = %v, want code %s", err, tt.code)
			}
			if retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) != aws.TrueTernary {
				t.Fatalf("the SDK does not classify %v as throttling", err)
			}
		})
	}

	// A limited fault is retried through by the SDK's standard retryer.
	req, _ := http.NewRequest(http.MethodDelete, v.e.URL()+"/_local/faults", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	postJSON(t, v.e.URL()+"/_local/calls/reset", "")
	postJSON(t, v.e.URL()+"/_local/faults", `{"faults": [{"target": "s3.PutObject", "throttleRate": 1, "times": 2}]}`)
	fast := func(o *s3.Options) {
		o.Retryer = retry.NewStandard(func(o *retry.StandardOptions) {
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
		})
	}
	if _, err := v.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("x")}, fast); err != nil {
		t.Fatalf("put after two throttles: %v", err)
	}
	resp, err := http.Get(v.e.URL() + "/_local/calls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var calls map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&calls); err != nil {
		t.Fatal(err)
	}
	if calls["s3.PutObject"] != 3 || len(calls) != 1 {
		t.Fatalf("calls = %v, want exactly {s3.PutObject: 3}", calls)
	}
}

func TestCallCountsNameActions(t *testing.T) {
	v := start(t, awslocal.Options{})
	ctx := context.Background()
	if _, err := v.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt")}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := v.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	url, _ := v.queue(t, "q", nil)
	if _, err := v.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.sns.ListTopics(ctx, &sns.ListTopicsInput{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"s3.CreateBucket": 1, "s3.PutObject": 2, "sqs.CreateQueue": 1, "sqs.GetQueueAttributes": 1, "sqs.SendMessage": 1, "sns.ListTopics": 1}
	got := v.e.Calls()
	for k, n := range want {
		if got[k] != n {
			t.Errorf("calls[%s] = %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
	postJSON(t, v.e.URL()+"/_local/calls/reset", "")
	if got := v.e.Calls(); len(got) != 0 {
		t.Fatalf("after reset: %v", got)
	}
}

func TestRegisteredServiceAndMount(t *testing.T) {
	v := start(t, awslocal.Options{})
	v.e.RegisterService("cloudformation", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("cfn"))
	}))
	v.e.Mount("/_local/cloudformation/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("mounted " + r.URL.Path))
	}))
	tests := []struct {
		name, method, path, auth, body, want string
	}{
		{"signed for cloudformation", "POST", "/", "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/cloudformation/aws4_request, SignedHeaders=host, Signature=x", "Action=DescribeStacks", "cfn"},
		{"mounted path", "PUT", "/_local/cloudformation/responses/abc", "", "", "mounted /_local/cloudformation/responses/abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, v.e.URL()+tt.path, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if string(b) != tt.want {
				t.Fatalf("answer = %q, want %q", b, tt.want)
			}
		})
	}
	if got := v.e.Calls()["cloudformation.DescribeStacks"]; got != 1 {
		t.Fatalf("cloudformation.DescribeStacks counted %d times, want 1", got)
	}
}

func TestInvoke(t *testing.T) {
	v := start(t, awslocal.Options{})
	ctx := context.Background()
	if err := v.e.RegisterFunction("echo", func(ctx context.Context, in map[string]string) (map[string]string, error) {
		return map[string]string{"got": in["say"]}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := v.e.RegisterFunction("slow", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, awslocal.WithTimeout(50*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	out, err := v.e.Invoke(ctx, "echo", []byte(`{"say":"hi"}`))
	if err != nil || string(out) != `{"got":"hi"}` {
		t.Fatalf("Invoke = %s, %v", out, err)
	}
	if _, err := v.e.Invoke(ctx, "slow", []byte(`{}`)); err == nil {
		t.Fatal("a handler past its timeout succeeded")
	}
	if _, err := v.e.Invoke(ctx, "nope", nil); err == nil || !strings.Contains(err.Error(), "echo") {
		t.Fatalf("unknown function: %v, want an error naming the registered ones", err)
	}
	for _, bad := range []any{42, func(a, b, c int) error { return nil }, func(int, string) error { return nil }, func() int { return 0 }} {
		if err := v.e.RegisterFunction("bad", bad); err == nil {
			t.Errorf("RegisterFunction(%T) succeeded", bad)
		}
	}
}

func TestLatencyFaultRunsOnTheEmulatorClock(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	v := start(t, awslocal.Options{Clock: fake})
	if err := v.e.SetFaults(awslocal.Fault{Target: "s3.ListBuckets", LatencyMs: 5000}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(v.e.URL() + "/_local/faults")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"latencyMs": 5000`) {
		t.Fatalf("GET /_local/faults = %s", b)
	}
	done := make(chan error, 1)
	go func() {
		_, err := v.s3.ListBuckets(context.Background(), &s3.ListBucketsInput{})
		done <- err
	}()
	if !fake.WaitForWaiters(1, 10*time.Second) {
		t.Fatal("the call never waited on the clock")
	}
	select {
	case err := <-done:
		t.Fatalf("the call finished before its latency passed: %v", err)
	default:
	}
	fake.Advance(5 * time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not finish once its latency passed")
	}
}

func TestRouting(t *testing.T) {
	v := start(t, awslocal.Options{})
	ctx := context.Background()
	if _, err := v.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt")}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("t.json"), Body: strings.NewReader("template")}); err != nil {
		t.Fatal(err)
	}
	v.queue(t, "routed", nil)
	presigned, err := s3.NewPresignClient(v.s3).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("t.json")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, url, target, body, want string
	}{
		{"presigned S3 URL", http.MethodGet, presigned.URL, "", "", "template"},
		{"unsigned SQS JSON by X-Amz-Target", http.MethodPost, v.e.URL() + "/", "AmazonSQS.GetQueueUrl", `{"QueueName":"routed"}`, "/000000000000/routed"},
		{"unsigned request without hints is S3", http.MethodGet, v.e.URL() + "/bkt/t.json", "", "", "template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, tt.url, strings.NewReader(tt.body))
			if tt.target != "" {
				req.Header.Set("X-Amz-Target", tt.target)
				req.Header.Set("Content-Type", "application/x-amz-json-1.0")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), tt.want) {
				t.Fatalf("%s: %s, want it to contain %q", resp.Status, b, tt.want)
			}
		})
	}
}

// TestIdleWhileNothingWorks: the emulator says it is idle only when no function runs and
// no request is being served, which is what lets a world's clock skip ahead
// (clock.Fake.Pace) without skipping over work.
func TestIdleWhileNothingWorks(t *testing.T) {
	v := start(t, awslocal.Options{Clock: clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
	if !v.e.Idle() {
		t.Fatal("a fresh emulator says it is working")
	}
	entered, release := make(chan struct{}), make(chan struct{})
	if err := v.e.RegisterFunction("slow", func(ctx context.Context, ev events.SQSEvent) error {
		close(entered)
		<-release
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := v.e.Invoke(context.Background(), "slow", []byte(`{"Records":[]}`))
		done <- err
	}()
	<-entered
	if v.e.Idle() {
		t.Error("the emulator says it is idle while a function runs")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !v.e.Idle() {
		t.Error("the emulator says it is working after the function returned")
	}
}
