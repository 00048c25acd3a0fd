package snslocal_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awslocal/snslocal"
)

// TestPublishValidatesMessageAttributes: Publish refuses attributes SNS refuses (an
// unparsable Number, an unknown type, an empty value) with InvalidParameter, so nothing
// reaches a raw-delivery subscriber that SQS would then drop; valid Numbers go through.
func TestPublishValidatesMessageAttributes(t *testing.T) {
	var q queues
	c, _ := newClient(t, snslocal.Options{Send: q.send})
	ctx := context.Background()
	topic, err := c.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String("arn:aws:sqs:us-east-1:000000000000:raw"), Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		t.Fatal(err)
	}
	str := func(typ, v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String(typ), StringValue: aws.String(v)}
	}
	for _, tt := range []struct {
		name string
		attr types.MessageAttributeValue
		want string // "" when accepted
	}{
		{"word as Number", str("Number", "many"), "Could not cast message attribute 'n' value to number."},
		{"NaN as Number", str("Number", "NaN"), "Could not cast message attribute 'n' value to number."},
		{"two points", str("Number", "1.2.3"), "Could not cast message attribute 'n' value to number."},
		{"unknown type", str("Integer", "1"), "The message attribute 'n' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String."},
		{"empty String", str("String", ""), "The message attribute 'n' must contain non-empty message attribute value for message attribute type 'String'."},
		{"integer", str("Number", "-42"), ""},
		{"decimal with exponent", str("Number", "1.5e3"), ""},
		{"custom Number type", str("Number.price", "9.99"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Publish(ctx, &sns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String("m"),
				MessageAttributes: map[string]types.MessageAttributeValue{"n": tt.attr}})
			got := q.take()
			if tt.want == "" {
				if err != nil || len(got) != 1 || *got[0].attrs["n"].StringValue != *tt.attr.StringValue {
					t.Fatalf("valid attribute: err %v, delivered %+v", err, got)
				}
				return
			}
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidParameter" || ae.ErrorMessage() != tt.want {
				t.Fatalf("err = %v, want InvalidParameter %q", err, tt.want)
			}
			if len(got) != 0 {
				t.Fatalf("a refused message was delivered: %+v", got)
			}
		})
	}
}
