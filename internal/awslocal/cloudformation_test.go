package awslocal

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// The emulator routes CloudFormation, its custom resource responses and its control
// endpoint; stack status events reach a queue through the event bus.
func TestCloudFormationIsWiredIn(t *testing.T) {
	e, err := New(Options{CloudFormation: CloudFormationTimings{ResourceDelay: 10 * time.Millisecond, ChangeSetDelay: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.SQS().CreateQueue("events", nil); err != nil {
		t.Fatal(err)
	}
	if err := e.PutRule("stack-events", EventPattern{Source: []string{"aws.cloudformation"}, DetailType: []string{"CloudFormation Stack Status Change"}}, e.SQS().QueueARN("events")); err != nil {
		t.Fatal(err)
	}
	cf := cloudformation.NewFromConfig(cfg)
	body := `{"Resources":{"T":{"Type":"AWS::SNS::Topic"}},"Outputs":{"Arn":{"Value":{"Ref":"T"},"Export":{"Name":"wired-topic"}}}}`
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("wired"), TemplateBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	w := cloudformation.NewStackCreateCompleteWaiter(cf, func(o *cloudformation.StackCreateCompleteWaiterOptions) {
		o.MinDelay = 50 * time.Millisecond
		o.MaxDelay = 100 * time.Millisecond
	})
	if err := w.Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("wired")}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	exports, err := cf.ListExports(ctx, &cloudformation.ListExportsInput{})
	if err != nil || len(exports.Exports) != 1 || *exports.Exports[0].Name != "wired-topic" {
		t.Fatalf("exports %+v, %v", exports, err)
	}
	if n := e.Calls()["cloudformation.CreateStack"]; n != 1 {
		t.Fatalf("cloudformation.CreateStack counted %d times", n)
	}
	resp, err := http.Get(e.URL() + "/_local/cloudformation/executed-change-sets")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("control endpoint: %v %v", resp, err)
	}
	resp.Body.Close()
	q := sqs.NewFromConfig(cfg)
	url := e.SQS().QueueURL("events")
	var statuses []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !contains(statuses, "CREATE_COMPLETE"); {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			var ev struct {
				DetailType string `json:"detail-type"`
				Detail     struct {
					StatusDetails struct{ Status string } `json:"status-details"`
				}
			}
			if err := json.Unmarshal([]byte(*m.Body), &ev); err != nil {
				t.Fatal(err)
			}
			statuses = append(statuses, ev.Detail.StatusDetails.Status)
		}
	}
	if !contains(statuses, "CREATE_IN_PROGRESS") || !contains(statuses, "CREATE_COMPLETE") {
		t.Fatalf("stack status events %v", statuses)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
