package localcairn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/localcairn"
)

// env is an emulator with cairn provisioned and SDK clients addressing it.
type env struct {
	e     *awslocal.Emulator
	c     *localcairn.Cairn
	s3    *s3.Client
	sqs   *sqs.Client
	sns   *sns.Client
	cfn   *cloudformation.Client
	ctx   context.Context
	clock clock.Clock
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// start serves an emulator keeping its state in dir ("" for memory) and provisions cairn.
func start(t *testing.T, dir string, o localcairn.Options) *env {
	t.Helper()
	e, err := awslocal.New(awslocal.Options{Dir: dir, Logger: quiet(), CloudFormation: awslocal.CloudFormationTimings{
		ResourceDelay: 10 * time.Millisecond, ChangeSetDelay: 10 * time.Millisecond, CustomResourceTimeout: 10 * time.Second,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start("127.0.0.1:0"); err != nil {
		e.Close()
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			e.Close()
		}
	})
	ctx := context.Background()
	c, err := localcairn.Provision(ctx, e, o)
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return &env{e: e, c: c, s3: awsclient.S3(cfg), sqs: sqs.NewFromConfig(cfg), sns: sns.NewFromConfig(cfg),
		cfn: cloudformation.NewFromConfig(cfg), ctx: ctx, clock: e.Clock()}
}

// receive long-polls queueURL until a message whose body satisfies match arrives, deleting
// it, and fails the test after ten empty polls. Messages that do not match are returned in
// skipped.
func (v *env) receive(t *testing.T, queueURL string, match func(body string) bool) (body string, skipped []string) {
	t.Helper()
	for empty := 0; empty < 10; {
		out, err := v.sqs.ReceiveMessage(v.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatalf("receive from %s: %v", queueURL, err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range out.Messages {
			if _, err := v.sqs.DeleteMessage(v.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
			if b := aws.ToString(m.Body); body == "" && match(b) {
				body = b
			} else {
				skipped = append(skipped, b)
			}
		}
		if body != "" {
			return body, skipped
		}
	}
	t.Fatalf("no matching message arrived in %s; other messages: %q", queueURL, skipped)
	return "", nil
}

func TestProvisionSendsUploadsToTheDeployQueue(t *testing.T) {
	v := start(t, "", localcairn.Options{})
	// Keys that are no uploads go first: when the last upload has arrived, none of them
	// may have.
	tests := []struct {
		key    string
		notify bool
	}{
		{"state/shop/shop.json", false},
		{"runs/x/1.json", false},
		{"deploymentsX/x.zip", false},
		{"deployments/x.json", false},
		{"plans/x/plan-1.json", false}, // the deployer's own plan documents
		{"plans/x.zip", true},
		{"approvals/x/plan-1", true},
		{"deployments/x.zip", true},
	}
	var skipped []string
	for _, tt := range tests {
		put, err := v.s3.PutObject(v.ctx, &s3.PutObjectInput{Bucket: aws.String(v.c.Bucket), Key: aws.String(tt.key), Body: strings.NewReader("data")})
		if err != nil {
			t.Fatalf("put %s: %v", tt.key, err)
		}
		if !tt.notify {
			continue
		}
		body, other := v.receive(t, v.c.Deploy.URL, func(b string) bool { return strings.Contains(b, `"Records"`) })
		skipped = append(skipped, other...)
		var ev events.S3Event
		if err := json.Unmarshal([]byte(body), &ev); err != nil || len(ev.Records) != 1 {
			t.Fatalf("%s: message is not one S3 event record (%v): %s", tt.key, err, body)
		}
		r := ev.Records[0]
		key, _ := url.QueryUnescape(r.S3.Object.Key)
		if key != tt.key || r.S3.Bucket.Name != v.c.Bucket || !strings.HasPrefix(r.EventName, "ObjectCreated:") ||
			r.S3.Object.VersionID == "" || r.S3.Object.VersionID != aws.ToString(put.VersionId) {
			t.Fatalf("%s: got event %s for s3://%s/%s version %q; want ObjectCreated for this key with version %q (versioning on)",
				tt.key, r.EventName, r.S3.Bucket.Name, key, r.S3.Object.VersionID, aws.ToString(put.VersionId))
		}
	}
	for _, b := range skipped {
		if !strings.Contains(b, "s3:TestEvent") {
			t.Errorf("unexpected message in the deploy queue: %s", b)
		}
	}
}

// TestEveryNamespaceByDefault: without Namespaces, local mode allows every namespace: the
// deployer gets an empty CAIRN_NAMESPACES, and the stack events of a stack of any namespace
// reach the deploy queue (cairn's own stack's do not, see above).
func TestEveryNamespaceByDefault(t *testing.T) {
	v := start(t, "", localcairn.Options{})
	if env := strings.Join(v.c.Env(), "\n"); !strings.Contains(env, "CAIRN_NAMESPACES=\n") {
		t.Errorf("CAIRN_NAMESPACES is not empty:\n%s", env)
	}
	out, err := v.cfn.CreateStack(v.ctx, &cloudformation.CreateStackInput{StackName: aws.String("finance-ledger"), TemplateBody: aws.String(
		"Resources:\n  Handle:\n    Type: AWS::CloudFormation::WaitConditionHandle\n")})
	if err != nil {
		t.Fatal(err)
	}
	v.receive(t, v.c.Deploy.URL, func(b string) bool { return strings.Contains(b, aws.ToString(out.StackId)) })
}

func TestProvisionRoutesStackEvents(t *testing.T) {
	v := start(t, "", localcairn.Options{})
	out, err := v.cfn.CreateStack(v.ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-events"), TemplateBody: aws.String(
		"Resources:\n  Handle:\n    Type: AWS::CloudFormation::WaitConditionHandle\n")})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.StackId)
	body, _ := v.receive(t, v.c.Deploy.URL, func(b string) bool {
		return strings.Contains(b, id) && strings.Contains(b, "CREATE_COMPLETE")
	})
	var ev events.CloudWatchEvent
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		t.Fatal(err)
	}
	var detail struct {
		StackID       string `json:"stack-id"`
		StatusDetails struct {
			Status string `json:"status"`
		} `json:"status-details"`
	}
	if err := json.Unmarshal(ev.Detail, &detail); err != nil {
		t.Fatal(err)
	}
	if ev.Source != "aws.cloudformation" || ev.DetailType != localcairn.StackStatusChange || detail.StackID != id || detail.StatusDetails.Status != "CREATE_COMPLETE" {
		t.Fatalf("got %s / %s for %s status %s; want a stack status change of %s", ev.Source, ev.DetailType, detail.StackID, detail.StatusDetails.Status, id)
	}

	// Drift detection status changes go to the drift queue.
	det, err := v.cfn.DetectStackDrift(v.ctx, &cloudformation.DetectStackDriftInput{StackName: aws.String(id)})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = v.receive(t, v.c.Drift.URL, func(b string) bool { return strings.Contains(b, localcairn.DriftStatusChange) })
	if !strings.Contains(body, id) || !strings.Contains(body, aws.ToString(det.StackDriftDetectionId)) {
		t.Fatalf("drift event names neither stack %s nor detection %s: %s", id, aws.ToString(det.StackDriftDetectionId), body)
	}
}

func TestProvisionResources(t *testing.T) {
	v := start(t, "", localcairn.Options{})

	t.Run("exports", func(t *testing.T) {
		out, err := v.cfn.ListExports(v.ctx, &cloudformation.ListExportsInput{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, x := range out.Exports {
			got[aws.ToString(x.Name)] = aws.ToString(x.Value)
		}
		want := map[string]string{
			"cairn-bucket-name":             v.c.Bucket,
			"cairn-ports-service-token":     v.c.PortsTopic,
			"cairn-notifications-topic-arn": v.c.Notifications,
			"cairn-policy-role-arn":         v.c.PolicyRole,
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("exports %v, want %v", got, want)
		}
		if v.c.Bucket != "cairn-000000000000-us-east-1" || !strings.HasPrefix(v.c.PortsTopic, "arn:aws:sns:us-east-1:000000000000:cairn-PortsTopic") {
			t.Fatalf("names differ from the ones CloudFormation gives infra's resources: bucket %s, ports topic %s", v.c.Bucket, v.c.PortsTopic)
		}
	})

	t.Run("versioning", func(t *testing.T) {
		out, err := v.s3.GetBucketVersioning(v.ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(v.c.Bucket)})
		if err != nil || out.Status != s3types.BucketVersioningStatusEnabled {
			t.Fatalf("versioning %q, %v; want Enabled", out.Status, err)
		}
	})

	t.Run("queues", func(t *testing.T) {
		for _, q := range []struct {
			main, dlq           localcairn.Queue
			visibility, receive string
		}{
			{v.c.Deploy, v.c.DeployDLQ, "300", "10"},
			{v.c.Ports, v.c.PortsDLQ, "120", "5"},
			{v.c.Drift, v.c.DriftDLQ, "360", "5"},
		} {
			out, err := v.sqs.GetQueueAttributes(v.ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.main.URL),
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
			if err != nil {
				t.Fatal(err)
			}
			var redrive struct {
				DeadLetterTargetArn string `json:"deadLetterTargetArn"`
				MaxReceiveCount     any    `json:"maxReceiveCount"`
			}
			if err := json.Unmarshal([]byte(out.Attributes["RedrivePolicy"]), &redrive); err != nil {
				t.Fatalf("%s: redrive policy %q: %v", q.main.Name, out.Attributes["RedrivePolicy"], err)
			}
			if out.Attributes["VisibilityTimeout"] != q.visibility || redrive.DeadLetterTargetArn != q.dlq.ARN || strings.Trim(jsonString(redrive.MaxReceiveCount), `"`) != q.receive {
				t.Errorf("%s: visibility %s, redrive %+v; want visibility %s, redrive to %s after %s receives",
					q.main.Name, out.Attributes["VisibilityTimeout"], redrive, q.visibility, q.dlq.ARN, q.receive)
			}
		}
	})

	t.Run("ports topic to ports queue", func(t *testing.T) {
		if _, err := v.sns.Publish(v.ctx, &sns.PublishInput{TopicArn: aws.String(v.c.PortsTopic), Message: aws.String(`{"RequestType":"Create"}`)}); err != nil {
			t.Fatal(err)
		}
		body, _ := v.receive(t, v.c.Ports.URL, func(string) bool { return true })
		var n events.SNSEntity
		if err := json.Unmarshal([]byte(body), &n); err != nil || n.Type != "Notification" || n.TopicArn != v.c.PortsTopic || n.Message != `{"RequestType":"Create"}` {
			t.Fatalf("ports queue got %s (%v); want the SNS envelope of the message (no raw delivery)", body, err)
		}
	})

	t.Run("env", func(t *testing.T) {
		env := map[string]string{}
		for _, kv := range v.c.Env() {
			k, val, _ := strings.Cut(kv, "=")
			env[k] = val
		}
		u, _ := url.Parse(v.e.URL())
		want := map[string]string{
			"CAIRN_BUCKET":              v.c.Bucket,
			"CAIRN_NOTIFICATIONS_TOPIC": v.c.Notifications,
			"CAIRN_DEPLOY_QUEUE_URL":    v.c.Deploy.URL,
			"CAIRN_DRIFT_QUEUE_URL":     v.c.Drift.URL,
			"CAIRN_PORT_POOLS":          localcairn.DefaultPortPools,
			"CAIRN_NAMESPACES":          "", // every namespace
			"CAIRN_RESPONSE_URL_HOSTS":  u.Host,
			"CAIRN_HEARTBEAT_SECONDS":   "3",
			"CAIRN_SSM_PATHS":           "", // every parameter, as every namespace
			"CAIRN_SEAL_KEY_ID":         env["CAIRN_SEAL_KEY_ID"],
			"CAIRN_POLICY_FUNCTION":     v.c.Functions[localcairn.PolicyFunction],
		}
		// The seal key is the stack's own HMAC key, made in the emulator's KMS.
		if k, err := v.e.KMS().Describe(env["CAIRN_SEAL_KEY_ID"]); err != nil || k.Spec != "HMAC_256" || k.ARN != env["CAIRN_SEAL_KEY_ID"] {
			t.Errorf("CAIRN_SEAL_KEY_ID=%s: %+v %v", env["CAIRN_SEAL_KEY_ID"], k, err)
		}
		if !reflect.DeepEqual(env, want) {
			t.Fatalf("Env() = %v, want %v", env, want)
		}
	})
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestProvisionIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	o := localcairn.Options{PortPools: "default=20000-20099"}
	first := start(t, dir, o)
	again, err := localcairn.Provision(first.ctx, first.e, o)
	if err != nil {
		t.Fatalf("second provision on the same emulator: %v", err)
	}
	if !reflect.DeepEqual(again, first.c) {
		t.Fatalf("second provision returned %+v, first %+v", again, first.c)
	}
	if err := first.e.Close(); err != nil {
		t.Fatal(err)
	}

	// A new emulator on the same folder: everything is found again, nothing re-created.
	second := start(t, dir, o)
	if second.c.StackID != first.c.StackID || second.c.PortsTopic != first.c.PortsTopic || second.c.Deploy.ARN != first.c.Deploy.ARN {
		t.Fatalf("after a restart: %+v; before: %+v", second.c, first.c)
	}
	st, err := second.cfn.DescribeStacks(second.ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(localcairn.StackName)})
	if err != nil || len(st.Stacks) != 1 || st.Stacks[0].StackStatus != cfntypes.StackStatusCreateComplete {
		t.Fatalf("cairn stack after a restart: %+v, %v; want one, CREATE_COMPLETE (not updated)", st, err)
	}
	subs, err := second.sns.ListSubscriptionsByTopic(second.ctx, &sns.ListSubscriptionsByTopicInput{TopicArn: aws.String(second.c.PortsTopic)})
	if err != nil || len(subs.Subscriptions) != 1 {
		t.Fatalf("ports topic subscriptions %+v, %v; want exactly one", subs, err)
	}
	// Rules live in memory only: the restarted emulator still routes stack events.
	out, err := second.cfn.CreateStack(second.ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-again"), TemplateBody: aws.String(
		"Resources:\n  Handle:\n    Type: AWS::CloudFormation::WaitConditionHandle\n")})
	if err != nil {
		t.Fatal(err)
	}
	second.receive(t, second.c.Deploy.URL, func(b string) bool { return strings.Contains(b, aws.ToString(out.StackId)) })
}

// TestProvisionUpdatesChangedOptions: options that change the template (as CDK context
// would) update cairn's stack in place, and the functions' environment with it.
func TestProvisionUpdatesChangedOptions(t *testing.T) {
	v := start(t, "", localcairn.Options{})
	c, err := localcairn.Provision(v.ctx, v.e, localcairn.Options{PortPools: "default=30000-30099", Namespaces: []string{"shop", "web"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.StackID != v.c.StackID || c.Deploy.URL != v.c.Deploy.URL {
		t.Fatalf("the stack was re-created (%s, was %s); want it updated", c.StackID, v.c.StackID)
	}
	st, err := v.cfn.DescribeStacks(v.ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(localcairn.StackName)})
	if err != nil || st.Stacks[0].StackStatus != cfntypes.StackStatusUpdateComplete {
		t.Fatalf("cairn stack %+v %v, want UPDATE_COMPLETE", st, err)
	}
	env := strings.Join(c.Env(), "\n")
	if !strings.Contains(env, "CAIRN_PORT_POOLS=default=30000-30099") || !strings.Contains(env, "CAIRN_NAMESPACES=shop,web") {
		t.Fatalf("functions' environment after the update:\n%s", env)
	}
	// Stacks of the new namespace reach the deployer too.
	out, err := v.cfn.CreateStack(v.ctx, &cloudformation.CreateStackInput{StackName: aws.String("web-site"), TemplateBody: aws.String(
		"Resources:\n  Handle:\n    Type: AWS::CloudFormation::WaitConditionHandle\n")})
	if err != nil {
		t.Fatal(err)
	}
	v.receive(t, c.Deploy.URL, func(b string) bool { return strings.Contains(b, aws.ToString(out.StackId)) })
}

// TestStackHasTheSynthesizedResources: `cairn local up` shows cairn's stack with exactly the
// resources of the template infra/ synthesizes, all made.
func TestStackHasTheSynthesizedResources(t *testing.T) {
	v := start(t, "", localcairn.Options{})
	body, err := localcairn.Template(localcairn.Options{DriftSchedule: localcairn.DefaultDriftSchedule, PortPools: localcairn.DefaultPortPools, Namespaces: []string{"shop"}})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resources map[string]struct{ Type string }
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	res, err := v.cfn.DescribeStackResources(v.ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(localcairn.StackName)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range res.StackResources {
		got[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.ResourceType)
		if r.ResourceStatus != cfntypes.ResourceStatusCreateComplete {
			t.Errorf("%s: %s", aws.ToString(r.LogicalResourceId), r.ResourceStatus)
		}
	}
	if len(got) != len(doc.Resources) || len(got) < 40 {
		t.Fatalf("stack has %d resources, the synthesized template %d", len(got), len(doc.Resources))
	}
	for id, r := range doc.Resources {
		if got[id] != r.Type {
			t.Errorf("resource %s: stack has %q, template %q", id, got[id], r.Type)
		}
	}
	// Read back from the services that made them, the untouched resources are in sync with
	// the template.
	det, err := v.cfn.DetectStackDrift(v.ctx, &cloudformation.DetectStackDriftInput{StackName: aws.String(localcairn.StackName)})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st, err := v.cfn.DescribeStackDriftDetectionStatus(v.ctx, &cloudformation.DescribeStackDriftDetectionStatusInput{StackDriftDetectionId: det.StackDriftDetectionId})
		if err != nil {
			t.Fatal(err)
		}
		if st.DetectionStatus != cfntypes.StackDriftDetectionStatusDetectionInProgress {
			if st.StackDriftStatus != cfntypes.StackDriftStatusInSync {
				drifts, _ := v.cfn.DescribeStackResourceDrifts(v.ctx, &cloudformation.DescribeStackResourceDriftsInput{StackName: aws.String(localcairn.StackName),
					StackResourceDriftStatusFilters: []cfntypes.StackResourceDriftStatus{cfntypes.StackResourceDriftStatusModified, cfntypes.StackResourceDriftStatusDeleted}})
				for _, d := range drifts.StackResourceDrifts {
					t.Errorf("%s %s: %+v", aws.ToString(d.LogicalResourceId), d.StackResourceDriftStatus, d.PropertyDifferences)
				}
				t.Fatalf("cairn's stack, untouched, is %s", st.StackDriftStatus)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("drift detection did not complete")
		}
	}
}

// TestTemplateTakesTheLocalContext: the options land where the CDK puts the context values.
func TestTemplateTakesTheLocalContext(t *testing.T) {
	body, err := localcairn.Template(localcairn.Options{DriftSchedule: "rate(6 hours)", PortPools: "default=1000-1999", Namespaces: []string{"shop", "web"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"ScheduleExpression":"rate(6 hours)"`, `"CAIRN_PORT_POOLS":"default=1000-1999"`, `"CAIRN_NAMESPACES":"shop,web"`, `":stack/shop-"`, `":stack/web-"`} {
		if !strings.Contains(body, want) {
			t.Errorf("template lacks %s", want)
		}
	}
	if strings.Contains(body, "rate(1 day)") || strings.Contains(body, "default=20000-29999") {
		t.Error("template keeps cdk.json's defaults")
	}
}

func TestProvisionNeedsAStartedEmulator(t *testing.T) {
	e, err := awslocal.New(awslocal.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := localcairn.Provision(context.Background(), e, localcairn.Options{}); err == nil || !strings.Contains(err.Error(), "Start") {
		t.Fatalf("Provision on an emulator not started: %v; want an error saying to start it", err)
	}
}

// recorder is a Lambda handler of SQS events that passes each record's body on.
func recorder(bodies chan<- string) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		for _, r := range ev.Records {
			bodies <- r.Body
		}
		return events.SQSEventResponse{}, nil
	}
}

// waitFor returns the first body satisfying match, failing after ten seconds without one.
func waitFor(t *testing.T, bodies <-chan string, match func(string) bool) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case b := <-bodies:
			if match(b) {
				return b
			}
		case <-timeout:
			t.Fatal("the handler was not invoked with the expected event")
		}
	}
}

func TestRegisterWiresHandlers(t *testing.T) {
	v := start(t, "", localcairn.Options{})
	deployer, ports, drift := make(chan string, 100), make(chan string, 100), make(chan string, 100)
	driftHandler := func(_ context.Context, payload json.RawMessage) (*events.SQSEventResponse, error) {
		var ev events.SQSEvent
		if err := json.Unmarshal(payload, &ev); err == nil && len(ev.Records) > 0 {
			for _, r := range ev.Records {
				drift <- r.Body
			}
			return &events.SQSEventResponse{}, nil
		}
		drift <- string(payload)
		return nil, nil
	}
	if err := v.c.Register(v.e, localcairn.Handlers{Deployer: recorder(deployer), Ports: recorder(ports), Drift: driftHandler}); err != nil {
		t.Fatal(err)
	}

	if _, err := v.s3.PutObject(v.ctx, &s3.PutObjectInput{Bucket: aws.String(v.c.Bucket), Key: aws.String("deployments/shop.zip"), Body: bytes.NewReader([]byte("zip"))}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, deployer, func(b string) bool { return strings.Contains(b, "deployments/shop.zip") })

	if _, err := v.sns.Publish(v.ctx, &sns.PublishInput{TopicArn: aws.String(v.c.PortsTopic), Message: aws.String("request")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ports, func(b string) bool {
		var n events.SNSEntity
		return json.Unmarshal([]byte(b), &n) == nil && n.Message == "request" && n.TopicArn == v.c.PortsTopic
	})

	if _, err := v.sqs.SendMessage(v.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(v.c.Drift.URL), MessageBody: aws.String(`{"cairn":"drift-continue","sweep":"s1"}`)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, drift, func(b string) bool { return strings.Contains(b, `"sweep":"s1"`) })

	// Invocable by the function's name.
	if _, err := v.e.Invoke(v.ctx, v.c.Functions[localcairn.DeployerFunction], []byte(`{"Records":[]}`)); err != nil {
		t.Fatalf("invoke the registered deployer: %v", err)
	}
}

func TestRegisterSkipsMissingHandlers(t *testing.T) {
	v := start(t, "", localcairn.Options{})
	if err := v.c.Register(v.e, localcairn.Handlers{}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.e.Invoke(v.ctx, v.c.Functions[localcairn.PortsFunction], []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "no in-process handler") {
		t.Fatalf("invoking a function without a handler: %v", err)
	}
}

func TestDriftSchedule(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	e, err := awslocal.New(awslocal.Options{Clock: fake, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	// The cairn stack settles on the emulator's clock: move it on until Provision returns.
	type result struct {
		c   *localcairn.Cairn
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := localcairn.Provision(context.Background(), e, localcairn.Options{DriftSchedule: "rate(6 hours)"})
		done <- result{c, err}
	}()
	var r result
	for provisioned := false; !provisioned; {
		select {
		case r = <-done:
			provisioned = true
		case <-time.After(time.Millisecond):
			fake.Advance(100 * time.Millisecond)
		}
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	fired := make(chan string, 10)
	if err := r.c.Register(e, localcairn.Handlers{Drift: func(_ context.Context, ev events.CloudWatchEvent) error {
		fired <- ev.DetailType + " " + strings.Join(ev.Resources, ",")
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	// The schedule starts in the background: move the clock on, an hour at a time, until it
	// fires.
	var got string
	for hours := 0; got == ""; hours++ {
		if hours > 1000 {
			t.Fatal("the drift schedule never fired")
		}
		select {
		case got = <-fired:
		case <-time.After(5 * time.Millisecond):
			fake.Advance(time.Hour)
		}
	}
	if !strings.HasPrefix(got, "Scheduled Event arn:aws:events:us-east-1:000000000000:rule/cairn-DriftSchedule") {
		t.Fatalf("drift function got %q; want the scheduled event of the template's DriftSchedule rule", got)
	}
}
