package awslocal

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/cairn-dev/cairn/internal/clock"
)

// TestCustomResourceResumedAfterRestart: an emulator stopped while a stack waits to send a
// custom resource request, and restarted on the same folder after the request fell due,
// sends it with a ResponseURL on its new address (not one it did not know yet), so the
// provider's answer completes the stack.
func TestCustomResourceResumedAfterRestart(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	opts := Options{Dir: dir, Clock: clk, Logger: slog.New(slog.DiscardHandler),
		CloudFormation: CloudFormationTimings{ResourceDelay: time.Second, ChangeSetDelay: time.Second, CustomResourceTimeout: time.Hour}}
	ctx := context.Background()

	e1, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := e1.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if _, err := e1.SQS().CreateQueue("requests", nil); err != nil {
		t.Fatal(err)
	}
	topic, err := e1.SNS().CreateTopic("provider", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e1.SNS().Subscribe(topic, "sqs", e1.SQS().QueueARN("requests"), nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := e1.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"Resources":{
	  "First":{"Type":"AWS::CloudFormation::WaitConditionHandle"},
	  "Port":{"Type":"Custom::PortAllocation","DependsOn":"First","Properties":{"ServiceToken":"` + topic + `","Pool":"default"}}}}`
	if _, err := cloudformation.NewFromConfig(cfg).CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-ports"), TemplateBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	// Stopped while First is being created: the request for Port is not sent yet.
	if err := e1.Close(); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := e1.SQS().Receive(ctx, "requests", 10, 0); len(msgs) != 0 {
		t.Fatalf("a request was sent before the restart: %v", msgs)
	}
	clk.Advance(5 * time.Second) // First is done while the emulator is down

	e2, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e2.Close() })
	// Something reaches CloudFormation before the emulator listens (a request served
	// in process, or its background loop): the stack must not move on without an address.
	probe := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("Action=DescribeStacks&Version=2010-05-15"))
	probe.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	probe.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260301/us-east-1/cloudformation/aws4_request, SignedHeaders=host, Signature=0")
	e2.Handler().ServeHTTP(httptest.NewRecorder(), probe)
	if err := e2.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	msgs, err := e2.SQS().Receive(ctx, "requests", 1, 10*time.Second)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("no custom resource request after the restart: %v %v", msgs, err)
	}
	var env struct{ Message string }
	var req struct{ ResponseURL, RequestId, StackId, LogicalResourceId string }
	if err := json.Unmarshal([]byte(msgs[0].Body), &env); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(env.Message), &req); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(req.ResponseURL, e2.URL()+"/") {
		t.Fatalf("ResponseURL %q is not on the restarted emulator %s", req.ResponseURL, e2.URL())
	}
	answer, _ := json.Marshal(map[string]any{"Status": "SUCCESS", "PhysicalResourceId": "port-20000", "RequestId": req.RequestId,
		"StackId": req.StackId, "LogicalResourceId": req.LogicalResourceId, "Data": map[string]string{"Port": "20000"}})
	put, _ := http.NewRequest(http.MethodPut, req.ResponseURL, bytes.NewReader(answer))
	resp, err := http.DefaultClient.Do(put)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("answer: %v %v", resp, err)
	}
	resp.Body.Close()
	clk.Advance(5 * time.Second)
	cfg2, _ := e2.AWSConfig(ctx)
	out, err := cloudformation.NewFromConfig(cfg2).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("shop-ports")})
	if err != nil || string(out.Stacks[0].StackStatus) != "CREATE_COMPLETE" {
		t.Fatalf("stack after the answer: %+v %v", out, err)
	}
}
