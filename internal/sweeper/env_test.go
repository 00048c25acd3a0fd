package sweeper_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/drift"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
	"github.com/cairn-dev/cairn/internal/sweeper"
)

const bucket = "cairn-state"

var epoch = time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)

// env is the emulator (S3, SQS, SNS and CloudFormation behind one httptest server) on a
// virtual clock, with SDK clients, cairn's bucket, drift queue and notifications topic,
// and the drift function registered as Lambda would run it.
type env struct {
	t        *testing.T
	clk      *clock.Fake
	e        *awslocal.Emulator
	cfnSvc   *cfnlocal.Service
	url      string
	s3       *s3.Client
	cfn      *cloudformation.Client
	sqs      *sqs.Client
	sns      *sns.Client
	queueURL string
	notesURL string
	topic    string
	flight   *detections
	d        *sweeper.Driver
}

type envOptions struct {
	concurrency int
	// detectDelay is how long each CloudFormation resource operation (and so a drift
	// detection) takes on the virtual clock.
	detectDelay time.Duration
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	if o.detectDelay == 0 {
		o.detectDelay = time.Second
	}
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	v := &env{t: t, clk: clock.NewFake(epoch), flight: &detections{inflight: map[string]bool{}}}
	e, err := awslocal.New(awslocal.Options{Clock: v.clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	v.e = e
	svc, err := cfnlocal.New(cfnlocal.Options{Clock: v.clk, PutEvent: e.PutEvent, BaseURL: e.URL, Logger: quiet, ResourceDelay: o.detectDelay})
	if err != nil {
		t.Fatal(err)
	}
	v.cfnSvc = svc
	e.RegisterService("cloudformation", v.flight.wrap(svc))
	e.Mount("/_local/cloudformation/", svc.ControlHandler())
	srv := httptest.NewServer(e.Handler())
	e.SetURL(srv.URL)
	v.url = srv.URL
	t.Cleanup(func() {
		srv.Close()
		svc.Close()
		e.Close()
	})
	cfg, err := config.LoadDefaultConfig(ctx, awsclient.WithSafeBodies(), config.WithRegion("us-east-1"), config.WithBaseEndpoint(srv.URL),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	if err != nil {
		t.Fatal(err)
	}
	v.s3 = s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	v.cfn = cloudformation.NewFromConfig(cfg)
	v.sqs = sqs.NewFromConfig(cfg)
	v.sns = sns.NewFromConfig(cfg)
	v.must(v.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}))
	v.must(v.s3.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}))
	var queueARN, notesARN string
	v.queueURL, queueARN = v.queue("cairn-drift")
	v.notesURL, notesARN = v.queue("notifications")
	top, err := v.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("cairn-notifications")})
	if err != nil {
		t.Fatal(err)
	}
	v.topic = aws.ToString(top.TopicArn)
	v.must(v.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: top.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(notesARN)}))
	if err := e.PutRule("drift-status", awslocal.EventPattern{Source: []string{"aws.cloudformation"}, DetailType: []string{sweeper.DriftStatusChange}}, queueARN); err != nil {
		t.Fatal(err)
	}
	v.d, err = sweeper.New(sweeper.Config{
		Bucket: bucket, QueueURL: v.queueURL, Topic: v.topic, Concurrency: o.concurrency,
		Budget:        func() *rate.Limiter { return rate.NewLimiter(rate.Inf, 1) },
		ContinueAfter: 30 * time.Second,
		Clock:         v.clk, Logger: quiet,
	}, sweeper.Clients{S3: v.s3, CFN: v.cfn, SQS: v.sqs, SNS: v.sns})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RegisterFunction("drift", v.d.Handle); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v *env) must(_ any, err error) {
	v.t.Helper()
	if err != nil {
		v.t.Fatal(err)
	}
}

func (v *env) queue(name string) (string, string) {
	v.t.Helper()
	ctx := context.Background()
	out, err := v.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		v.t.Fatal(err)
	}
	a, err := v.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
	if err != nil {
		v.t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl), a.Attributes["QueueArn"]
}

// deployment pushes the bundle in dir as deployments/NAME.zip, creates its stacks through
// CloudFormation with cairn's tags, and writes the persistent graph as a deploy would.
func (v *env) deployment(dir, name, namespace string, stacks ...string) *state.Graph {
	v.t.Helper()
	ctx := context.Background()
	zipped, err := bundle.Zip(dir)
	if err != nil {
		v.t.Fatal(err)
	}
	put, err := v.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("deployments/" + name + ".zip"), Body: bytes.NewReader(zipped)})
	if err != nil {
		v.t.Fatal(err)
	}
	tmpl, err := os.ReadFile(dir + "/templates/app.yaml")
	if err != nil {
		v.t.Fatal(err)
	}
	g := &state.Graph{Bundle: state.BundleRef{VersionID: aws.ToString(put.VersionId), GitRef: "refs/heads/main"}, Stacks: map[string]*state.Stack{}}
	for _, s := range stacks {
		st := &state.Stack{Name: s, StackName: namespace + "-" + s}
		g.Stacks[s] = st
		v.createStack(st.StackName, string(tmpl), state.StackTags(namespace, name, g.Bundle, st))
	}
	v.clk.Advance(time.Hour)
	for _, st := range g.Stacks {
		out, err := v.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(st.StackName)})
		if err != nil {
			v.t.Fatal(err)
		}
		if s := out.Stacks[0].StackStatus; s != cfntypes.StackStatusCreateComplete {
			v.t.Fatalf("stack %s is %s, want CREATE_COMPLETE", st.StackName, s)
		}
		st.StackID, st.Status = aws.ToString(out.Stacks[0].StackId), "CREATE_COMPLETE"
	}
	v.writeGraph(namespace, name, g)
	return g
}

func (v *env) createStack(name, body string, tags map[string]string) {
	v.t.Helper()
	var tt []cfntypes.Tag
	for k, val := range tags {
		tt = append(tt, cfntypes.Tag{Key: aws.String(k), Value: aws.String(val)})
	}
	if _, err := v.cfn.CreateStack(context.Background(), &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body), Tags: tt}); err != nil {
		v.t.Fatalf("create stack %s: %v", name, err)
	}
}

func (v *env) store() *statestore.Store {
	return &statestore.Store{S3: v.s3, Bucket: bucket, Clock: v.clk, Logger: slog.New(slog.DiscardHandler)}
}

func (v *env) writeGraph(namespace, key string, g *state.Graph) {
	v.t.Helper()
	ctx := context.Background()
	st := v.store()
	l, err := st.Acquire(ctx, namespace, key, "test-deploy", statestore.Owner{Function: "cairn-deployer", RequestID: "req-1"})
	if err != nil {
		v.t.Fatal(err)
	}
	if _, err := st.Read(ctx, l); err != nil && !errors.Is(err, statestore.ErrNotFound) {
		v.t.Fatal(err)
	}
	if err := st.Write(ctx, l, g); err != nil {
		v.t.Fatal(err)
	}
	if err := st.Release(ctx, l); err != nil {
		v.t.Fatal(err)
	}
}

// invoke calls the drift function with payload as Lambda would.
func (v *env) invoke(payload []byte) []byte {
	v.t.Helper()
	out, err := v.e.Invoke(context.Background(), "drift", payload)
	if err != nil {
		v.t.Fatalf("invoke drift: %v", err)
	}
	return out
}

// receive takes every visible message of url.
func (v *env) receive(url string) []sqstypes.Message {
	v.t.Helper()
	var all []sqstypes.Message
	for {
		out, err := v.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
		if err != nil {
			v.t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return all
		}
		all = append(all, out.Messages...)
	}
}

// deliver invokes the drift function with msgs as the SQS event source mapping would and
// deletes the records that did not fail.
func (v *env) deliver(msgs []sqstypes.Message) events.SQSEventResponse {
	v.t.Helper()
	ev := events.SQSEvent{}
	for _, m := range msgs {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
			Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes, EventSource: "aws:sqs",
			EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:cairn-drift", AWSRegion: "us-east-1",
		})
	}
	payload, _ := json.Marshal(ev)
	var resp events.SQSEventResponse
	if err := json.Unmarshal(v.invoke(payload), &resp); err != nil {
		v.t.Fatal(err)
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	for _, m := range msgs {
		if !failed[aws.ToString(m.MessageId)] {
			v.must(v.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(v.queueURL), ReceiptHandle: m.ReceiptHandle}))
		}
	}
	return resp
}

// pump moves the virtual clock on and delivers the drift queue's messages (continuations
// and drift status events) until no sweep is open; it returns how many batches it took.
func (v *env) pump(maxRounds int) int {
	v.t.Helper()
	for i := range maxRounds {
		if len(v.openSweeps()) == 0 {
			return i
		}
		v.clk.Advance(30 * time.Second)
		for msgs := v.receive(v.queueURL); len(msgs) > 0; msgs = v.receive(v.queueURL) {
			for len(msgs) > 0 {
				n := min(10, len(msgs))
				if resp := v.deliver(msgs[:n]); len(resp.BatchItemFailures) > 0 {
					v.t.Fatalf("drift function failed records: %+v", resp.BatchItemFailures)
				}
				msgs = msgs[n:]
			}
		}
	}
	v.t.Fatalf("sweep still open after %d rounds", maxRounds)
	return 0
}

// openSweeps lists the sweeps whose document exists. (The emulator's S3 still lists
// objects deleted in a versioned bucket, so each listed one is looked at.)
func (v *env) openSweeps() []string {
	v.t.Helper()
	ids, err := v.d.OpenSweeps(context.Background())
	if err != nil {
		v.t.Fatal(err)
	}
	var open []string
	for _, id := range ids {
		_, err := v.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(layout.SweepKey(id))})
		if err == nil {
			open = append(open, id)
		}
	}
	return open
}

// reports returns the JSON reports under drift/NAME/, oldest first.
func (v *env) reports(name string) []*drift.Report {
	v.t.Helper()
	out, err := v.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(layout.DriftReportsOf(name))})
	if err != nil {
		v.t.Fatal(err)
	}
	var rs []*drift.Report
	for _, o := range out.Contents {
		if !strings.HasSuffix(aws.ToString(o.Key), ".json") {
			continue
		}
		r, err := v.d.ReadReport(context.Background(), aws.ToString(o.Key))
		if err != nil {
			v.t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rs
}

func (v *env) object(key string) string {
	v.t.Helper()
	out, err := v.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		v.t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	return string(b)
}

// notifications returns the subjects and messages published to the topic so far.
func (v *env) notifications() []string {
	v.t.Helper()
	var out []string
	for _, m := range v.receive(v.notesURL) {
		var n struct{ Subject, Message string }
		if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &n); err != nil {
			v.t.Fatalf("notification is not an SNS envelope: %v", err)
		}
		out = append(out, n.Subject+"\n"+n.Message)
		v.must(v.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(v.notesURL), ReceiptHandle: m.ReceiptHandle}))
	}
	return out
}

// tamper changes a resource out of band through the emulator's control endpoint, as
// `cairn local tamper` does.
func (v *env) tamper(stack, logicalID, property, value string) {
	v.t.Helper()
	body, _ := json.Marshal(map[string]string{"stack": stack, "logicalId": logicalID, "property": property, "value": value})
	resp, err := http.Post(v.url+"/_local/cloudformation/tamper", "application/json", bytes.NewReader(body))
	if err != nil {
		v.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		v.t.Fatalf("tamper: %s: %s", resp.Status, b)
	}
}

// scheduledEvent is the exact scheduled event JSON of events/scheduled-event.json, with
// its time moved to now so the sweep is of this test's stacks.
func (v *env) scheduledEvent() []byte {
	v.t.Helper()
	b, err := os.ReadFile("../../events/scheduled-event.json")
	if err != nil {
		v.t.Fatal(err)
	}
	return bytes.Replace(b, []byte(`"2026-11-30T12:00:00Z"`), []byte(`"`+v.clk.Now().UTC().Format(time.RFC3339)+`"`), 1)
}
