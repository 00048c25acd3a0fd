package sqslocal_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
)

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// TestDeadLetterSourcesAndMessageMoves: ListDeadLetterSourceQueues lists the queues whose
// redrive policy names a dead-letter queue; StartMessageMoveTask moves its messages back
// to the queue each came from (or to a destination), ListMessageMoveTasks reports the
// completed task, and CancelMessageMoveTask refuses a task no longer running.
func TestDeadLetterSourcesAndMessageMoves(t *testing.T) {
	e := newEnv(t, "")
	dlqURL, err := e.svc.CreateQueue("dlq", nil)
	if err != nil {
		t.Fatal(err)
	}
	dlq := e.svc.QueueARN("dlq")
	policy := `{"deadLetterTargetArn":"` + dlq + `","maxReceiveCount":"1"}`
	for _, n := range []string{"b-main", "a-main"} {
		if _, err := e.svc.CreateQueue(n, map[string]string{"RedrivePolicy": policy, "VisibilityTimeout": "0"}); err != nil {
			t.Fatal(err)
		}
	}
	e.svc.CreateQueue("other", nil)
	out, err := e.sqs.ListDeadLetterSourceQueues(e.ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlqURL)})
	if err != nil || strings.Join(out.QueueUrls, ",") != e.srv.URL+"/000000000000/a-main,"+e.srv.URL+"/000000000000/b-main" {
		t.Fatalf("ListDeadLetterSourceQueues: %v %v", err, out)
	}
	page, err := e.sqs.ListDeadLetterSourceQueues(e.ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlqURL), MaxResults: aws.Int32(1)})
	if err != nil || len(page.QueueUrls) != 1 || page.NextToken == nil {
		t.Fatalf("first page: %v %v", err, page)
	}
	if _, err := e.sqs.ListDeadLetterSourceQueues(e.ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(e.srv.URL + "/000000000000/nope")}); apiCode(err) != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("of a missing queue: %v", err)
	}

	mainURL := e.srv.URL + "/000000000000/a-main"
	e.sqs.SendMessage(e.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(mainURL), MessageBody: aws.String("poison")})
	for range 2 {
		e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(mainURL)})
	}
	if _, err := e.sqs.StartMessageMoveTask(e.ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(e.svc.QueueARN("other"))}); apiCode(err) != "InvalidParameterValue" {
		t.Errorf("from a queue that is no dead-letter queue: %v", err)
	}
	if _, err := e.sqs.StartMessageMoveTask(e.ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq), MaxNumberOfMessagesPerSecond: aws.Int32(501)}); apiCode(err) != "InvalidParameterValue" {
		t.Errorf("501 messages a second: %v", err)
	}
	task, err := e.sqs.StartMessageMoveTask(e.ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq)})
	if err != nil || aws.ToString(task.TaskHandle) == "" {
		t.Fatalf("StartMessageMoveTask: %v", err)
	}
	back, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(mainURL)})
	if err != nil || len(back.Messages) != 1 || aws.ToString(back.Messages[0].Body) != "poison" {
		t.Fatalf("the message is not back in its source queue: %v %+v", err, back)
	}
	list, err := e.sqs.ListMessageMoveTasks(e.ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlq)})
	if err != nil || len(list.Results) != 1 || aws.ToString(list.Results[0].Status) != "COMPLETED" || list.Results[0].ApproximateNumberOfMessagesMoved != 1 {
		t.Fatalf("ListMessageMoveTasks: %v %+v", err, list)
	}
	if _, err := e.sqs.CancelMessageMoveTask(e.ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: task.TaskHandle}); apiCode(err) != "ResourceNotFoundException" {
		t.Errorf("CancelMessageMoveTask of a completed task: %v", err)
	}
}
