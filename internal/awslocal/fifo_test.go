package awslocal_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestStackFIFOQueue: AWS::SQS::Queue with FifoQueue makes a FIFO queue (named NAME.fifo
// when the template names none, as CloudFormation names it), which keeps its groups' order.
func TestStackFIFOQueue(t *testing.T) {
	v := startStacks(t)
	out := v.deploy(t, "shop-fifo", `Resources:
  Orders:
    Type: AWS::SQS::Queue
    Properties: {FifoQueue: true, ContentBasedDeduplication: true}
  Named:
    Type: AWS::SQS::Queue
    Properties: {QueueName: named.fifo, FifoQueue: true, DeduplicationScope: messageGroup, FifoThroughputLimit: perMessageGroupId}
Outputs:
  Orders: {Value: !Ref Orders}
  OrdersName: {Value: !GetAtt Orders.QueueName}
  Named: {Value: !Ref Named}
`)
	if !strings.HasSuffix(out["Orders"], ".fifo") || !strings.HasPrefix(out["OrdersName"], "shop-fifo-Orders-") {
		t.Fatalf("generated FIFO queue name: %v", out)
	}
	ctx := context.Background()
	attrs, err := v.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(out["Named"]), AttributeNames: []sqstypes.QueueAttributeName{"All"}})
	if err != nil || attrs.Attributes["FifoQueue"] != "true" || attrs.Attributes["DeduplicationScope"] != "messageGroup" {
		t.Fatalf("named FIFO queue attributes %v %v", attrs, err)
	}
	for _, b := range []string{"one", "two", "one"} {
		if _, err := v.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(out["Orders"]), MessageBody: aws.String(b), MessageGroupId: aws.String("g")}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := v.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(out["Orders"]), MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range got.Messages {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	if strings.Join(bodies, ",") != "one,two" {
		t.Fatalf("received %v, want one,two (in order, the duplicate dropped)", bodies)
	}
}
