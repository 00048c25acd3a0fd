package deployer_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/deployer"
	"github.com/cairn-dev/cairn/internal/run"
)

// TestHandlerRoutesRecordsByShape invokes the deployer as Lambda would, with the sample
// events of events/ and a few bad records in one batch: only the bad ones are reported as
// failures.
func TestHandlerRoutesRecordsByShape(t *testing.T) {
	w := newWorld(t, worldOptions{})
	record := func(id, body string) events.SQSMessage {
		return events.SQSMessage{MessageId: id, Body: body, EventSource: "aws:sqs"}
	}
	var statusEvent, checkEvent events.SQSEvent
	if err := json.Unmarshal(mustRead(t, "../../events/stack-status-change.json"), &statusEvent); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(mustRead(t, "../../events/deploy-check.json"), &checkEvent); err != nil {
		t.Fatal(err)
	}
	batch := events.SQSEvent{Records: []events.SQSMessage{
		statusEvent.Records[0], // a stack no open run owns: ignored
		checkEvent.Records[0],  // a check of a run that does not exist: ignored
		record("check-without-run", `{"cairn":"check","deployment":"shop"}`),
		record("not-json", "{{{"),
		record("unknown-shape", `{"hello":"world"}`),
		record("heartbeat-without-run", `{"cairn":"heartbeat","deployment":"shop"}`),
		record("heartbeat-of-unknown-run", `{"cairn":"heartbeat","deployment":"shop","run":"20260101-000000-00000000"}`),
		record("s3-test-event", `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2026-11-30T08:00:00Z","Bucket":"cairn-state","RequestId":"1","HostId":"2"}`),
		record("other-object", `{"Records":[{"eventSource":"aws:s3","eventName":"ObjectCreated:Put","eventTime":"2026-11-30T08:00:00Z","s3":{"bucket":{"name":"cairn-state"},"object":{"key":"notes/readme.txt","versionId":"v1","sequencer":"01"}}}]}`),
	}}
	payload, _ := json.Marshal(batch)
	out, err := w.em.Invoke(context.Background(), "deployer", payload)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("response %s: %v", out, err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	slices.Sort(failed)
	if want := []string{"check-without-run", "heartbeat-without-run", "not-json", "unknown-shape"}; !slices.Equal(failed, want) {
		t.Errorf("batch item failures %v, want %v", failed, want)
	}
}

// TestBadMessageDoesNotBlockARun puts a malformed message on the deploy queue next to an
// upload: the run still finishes, and the bad message ends in the dead-letter queue.
func TestBadMessageDoesNotBlockARun(t *testing.T) {
	w := newWorld(t, worldOptions{})
	if _, err := w.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(w.queue), MessageBody: aws.String("this is not an event")}); err != nil {
		t.Fatal(err)
	}
	doc := w.wait("shop", w.push("shop", copyBundle(t, chain)))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("run: %s (%s)", doc.Run.Status, doc.Run.Reason)
	}
	dlq := w.em.SQS().QueueURL(queueName + "-dlq")
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, err := w.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) > 0 {
			if got := aws.ToString(out.Messages[0].Body); got != "this is not an event" {
				t.Fatalf("dead-letter queue holds %q", got)
			}
			return
		}
	}
	t.Fatal("the bad message never reached the dead-letter queue")
}

func TestConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr string
		want    deployer.Config
	}{
		{name: "complete", env: map[string]string{"CAIRN_BUCKET": "b", "CAIRN_DEPLOY_QUEUE_URL": "https://q", "CAIRN_NOTIFICATIONS_TOPIC": "arn:t", "CAIRN_HEARTBEAT_SECONDS": "5", "CAIRN_SEAL_KEY_ID": "k"},
			want: deployer.Config{Bucket: "b", QueueURL: "https://q", Topic: "arn:t", Heartbeat: 5 * time.Second, SealKeyID: "k"}},
		{name: "missing", env: map[string]string{}, wantErr: "deployer misconfigured: set CAIRN_BUCKET and CAIRN_DEPLOY_QUEUE_URL and CAIRN_SEAL_KEY_ID"},
		{name: "no seal key", env: map[string]string{"CAIRN_BUCKET": "b", "CAIRN_DEPLOY_QUEUE_URL": "q"}, wantErr: "deployer misconfigured: set CAIRN_SEAL_KEY_ID"},
		{name: "bad heartbeat", env: map[string]string{"CAIRN_BUCKET": "b", "CAIRN_DEPLOY_QUEUE_URL": "q", "CAIRN_HEARTBEAT_SECONDS": "901", "CAIRN_SEAL_KEY_ID": "k"}, wantErr: `CAIRN_HEARTBEAT_SECONDS="901"`},
		{name: "namespaces", env: map[string]string{"CAIRN_BUCKET": "b", "CAIRN_DEPLOY_QUEUE_URL": "q", "CAIRN_NAMESPACES": "shop,web", "CAIRN_SEAL_KEY_ID": "k"},
			want: deployer.Config{Bucket: "b", QueueURL: "q", Namespaces: config.Namespaces{"shop", "web"}, SealKeyID: "k"}},
		{name: "bad namespaces", env: map[string]string{"CAIRN_BUCKET": "b", "CAIRN_DEPLOY_QUEUE_URL": "q", "CAIRN_NAMESPACES": "shop,a/b", "CAIRN_SEAL_KEY_ID": "k"}, wantErr: `CAIRN_NAMESPACES: namespace "a/b"`},
		{name: "ssm paths", env: map[string]string{"CAIRN_BUCKET": "b", "CAIRN_DEPLOY_QUEUE_URL": "q", "CAIRN_SSM_PATHS": `{"shop": ["/shop/*"]}`, "CAIRN_SEAL_KEY_ID": "k"},
			want: deployer.Config{Bucket: "b", QueueURL: "q", SSMPaths: config.SSMPaths{"shop": {"/shop/*"}}, SealKeyID: "k"}},
		{name: "bad ssm paths", env: map[string]string{"CAIRN_BUCKET": "b", "CAIRN_DEPLOY_QUEUE_URL": "q", "CAIRN_SSM_PATHS": `{"shop": ["/*"]}`, "CAIRN_SEAL_KEY_ID": "k"}, wantErr: `CAIRN_SSM_PATHS: namespace shop: "/*" is not a parameter name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"CAIRN_BUCKET", "CAIRN_DEPLOY_QUEUE_URL", "CAIRN_NOTIFICATIONS_TOPIC", "CAIRN_HEARTBEAT_SECONDS", "CAIRN_NAMESPACES", "CAIRN_SSM_PATHS", "CAIRN_SEAL_KEY_ID"} {
				t.Setenv(k, tc.env[k])
				if _, ok := tc.env[k]; !ok {
					os.Unsetenv(k)
				}
			}
			got, err := deployer.ConfigFromEnv()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.Bucket != tc.want.Bucket || got.QueueURL != tc.want.QueueURL || got.Topic != tc.want.Topic || got.Heartbeat != tc.want.Heartbeat ||
				!slices.Equal(got.Namespaces, tc.want.Namespaces) || got.SealKeyID != tc.want.SealKeyID || !maps.EqualFunc(got.SSMPaths, tc.want.SSMPaths, slices.Equal) {
				t.Errorf("config %+v, %v", got, err)
			}
		})
	}
}

// TestReservedDeploymentNameIsRefused uploads deployments/active.zip: its runs would be
// written where the index of open runs lives (runs/active/), so the deployer refuses it,
// says why, and records or changes nothing.
func TestReservedDeploymentNameIsRefused(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.push("active", copyBundle(t, chain))
	want := `deployment \"active\": the name is reserved (runs/active/ holds the index of open runs): choose another name`
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(w.logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the deployer never refused deployments/active.zip with %q", want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(w.logs.String(), `msg="deploy: upload refused; nothing is recorded or changed" key=deployments/active.zip`) {
		t.Errorf("the refusal does not name the upload:\n%s", tail(w.logs.String(), 40))
	}
	for _, prefix := range []string{layout.RunsPrefix, layout.StatePrefix, layout.LocksPrefix, layout.PlansPrefix} {
		out, err := w.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			t.Errorf("the refused upload wrote %s", aws.ToString(o.Key))
		}
	}
	if stacks := w.stacks(); len(stacks) != 0 {
		t.Errorf("the refused upload created stacks: %v", stacks)
	}
}
