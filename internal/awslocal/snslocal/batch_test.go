package snslocal_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awslocal/snslocal"
)

// TestPublishBatch: PublishBatch publishes each entry as Publish would, reports each
// entry's success or failure by its id, and refuses malformed batches as a whole.
func TestPublishBatch(t *testing.T) {
	var q queues
	c, _ := newClient(t, snslocal.Options{Send: q.send})
	ctx := context.Background()
	topic, err := c.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("batch")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String("arn:aws:sqs:us-east-1:000000000000:q"), Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		t.Fatal(err)
	}
	out, err := c.PublishBatch(ctx, &sns.PublishBatchInput{TopicArn: topic.TopicArn, PublishBatchRequestEntries: []types.PublishBatchRequestEntry{
		{Id: aws.String("one"), Message: aws.String("first"), MessageAttributes: map[string]types.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("a")}}},
		{Id: aws.String("bad"), Message: aws.String("x"), MessageAttributes: map[string]types.MessageAttributeValue{"n": {DataType: aws.String("Number"), StringValue: aws.String("many")}}},
		{Id: aws.String("two"), Message: aws.String("second")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Successful) != 2 || aws.ToString(out.Successful[0].Id) != "one" || aws.ToString(out.Successful[1].Id) != "two" || aws.ToString(out.Successful[0].MessageId) == "" {
		t.Fatalf("successful: %+v", out.Successful)
	}
	if len(out.Failed) != 1 || aws.ToString(out.Failed[0].Id) != "bad" || aws.ToString(out.Failed[0].Code) != "InvalidParameter" || !out.Failed[0].SenderFault {
		t.Fatalf("failed: %+v", out.Failed)
	}
	got := q.take()
	if len(got) != 2 || got[0].body != "first" || got[1].body != "second" || aws.ToString(got[0].attrs["kind"].StringValue) != "a" {
		t.Fatalf("delivered %+v", got)
	}

	eleven := make([]types.PublishBatchRequestEntry, 11)
	for i := range eleven {
		eleven[i] = types.PublishBatchRequestEntry{Id: aws.String(fmt.Sprint("m", i)), Message: aws.String("m")}
	}
	for _, tt := range []struct {
		name    string
		topic   *string
		entries []types.PublishBatchRequestEntry
		code    string
	}{
		{"no entries", topic.TopicArn, []types.PublishBatchRequestEntry{}, "EmptyBatchRequest"},
		{"eleven entries", topic.TopicArn, eleven, "TooManyEntriesInBatchRequest"},
		{"the same id twice", topic.TopicArn, []types.PublishBatchRequestEntry{{Id: aws.String("a"), Message: aws.String("1")}, {Id: aws.String("a"), Message: aws.String("2")}}, "BatchEntryIdsNotDistinct"},
		{"an id with a dot", topic.TopicArn, []types.PublishBatchRequestEntry{{Id: aws.String("a.b"), Message: aws.String("1")}}, "InvalidBatchEntryId"},
		{"a missing topic", aws.String("arn:aws:sns:us-east-1:000000000000:nope"), []types.PublishBatchRequestEntry{{Id: aws.String("a"), Message: aws.String("1")}}, "NotFound"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.PublishBatch(ctx, &sns.PublishBatchInput{TopicArn: tt.topic, PublishBatchRequestEntries: tt.entries})
			var api smithy.APIError
			if !errors.As(err, &api) || api.ErrorCode() != tt.code {
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
		})
	}
}
