package snslocal_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/cairn-dev/cairn/internal/awslocal/snslocal"
)

// TestFilterPolicies: a subscription with a filter policy receives only what its policy
// selects, by message attributes (the default scope) or by the JSON message body.
func TestFilterPolicies(t *testing.T) {
	var q queues
	c, _ := newClient(t, snslocal.Options{Send: q.send})
	ctx := context.Background()
	topic, err := c.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("events")})
	if err != nil {
		t.Fatal(err)
	}
	sub := func(queue string, attrs map[string]string) string {
		out, err := c.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
			Endpoint: aws.String("arn:aws:sqs:us-east-1:000000000000:" + queue), Attributes: attrs})
		if err != nil {
			t.Fatalf("subscribe %s: %v", queue, err)
		}
		return aws.ToString(out.SubscriptionArn)
	}
	sub("all", nil)
	sub("big-orders", map[string]string{"FilterPolicy": `{"kind":["order"],"amount":[{"numeric":[">=",100]}]}`})
	sub("eu", map[string]string{"FilterPolicy": `{"region":[{"prefix":"eu-"}]}`, "FilterPolicyScope": "MessageBody"})
	arn := sub("not-test", map[string]string{"FilterPolicy": `{"env":[{"anything-but":"test"}]}`})

	publish := func(body string, attrs map[string]types.MessageAttributeValue) []string {
		t.Helper()
		if _, err := c.Publish(ctx, &sns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String(body), MessageAttributes: attrs}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range q.take() {
			got = append(got, m.queue[len("arn:aws:sqs:us-east-1:000000000000:"):])
		}
		return got
	}
	str := func(v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	num := func(v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(v)}
	}
	for _, tt := range []struct {
		name  string
		body  string
		attrs map[string]types.MessageAttributeValue
		want  string
	}{
		{"big order", `{"region":"us-east-1"}`, map[string]types.MessageAttributeValue{"kind": str("order"), "amount": num("250"), "env": str("prod")}, "all big-orders not-test"},
		{"small order", `plain text`, map[string]types.MessageAttributeValue{"kind": str("order"), "amount": num("5")}, "all"},
		{"eu body", `{"region":"eu-west-1"}`, map[string]types.MessageAttributeValue{"env": str("test")}, "all eu"},
		{"no attributes", `{}`, nil, "all"},
	} {
		if got := publish(tt.body, tt.attrs); join(got) != tt.want {
			t.Errorf("%s: delivered to %q, want %q", tt.name, join(got), tt.want)
		}
	}
	attrs, err := c.GetSubscriptionAttributes(ctx, &sns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(arn)})
	if err != nil || attrs.Attributes["FilterPolicy"] != `{"env":[{"anything-but":"test"}]}` || attrs.Attributes["FilterPolicyScope"] != "MessageAttributes" {
		t.Fatalf("GetSubscriptionAttributes = %v %v", attrs, err)
	}
	if _, err := c.SetSubscriptionAttributes(ctx, &sns.SetSubscriptionAttributesInput{SubscriptionArn: aws.String(arn),
		AttributeName: aws.String("FilterPolicy"), AttributeValue: aws.String(`{"env":[{"bogus":1}]}`)}); err == nil {
		t.Fatal("an invalid filter policy was accepted")
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}
