package snslocal

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairn-dev/cairn/internal/awslocal/eventpattern"
)

// Publish sends message to every subscription of a topic and returns the message id, for
// in-process callers such as the CloudFormation emulator's custom resources.
func (s *Service) Publish(ctx context.Context, topicARN, subject, message string) (string, error) {
	return s.publish(ctx, topicARN, subject, message, nil)
}

// messageAttribute is an SNS message attribute (Type String, Number or Binary).
type messageAttribute struct {
	DataType    string
	StringValue string
	BinaryValue []byte
}

func (s *Service) publish(ctx context.Context, topicARN, subject, message string, attrs map[string]messageAttribute) (string, error) {
	id, _, err := s.publishFIFO(ctx, topicARN, subject, message, attrs, fifoIDs{})
	return id, err
}

// fifoIDs are the message group and deduplication ids of a message to a FIFO topic.
type fifoIDs struct{ group, dedup string }

// publishFIFO publishes a message; to a FIFO topic it needs a MessageGroupId, and a
// MessageDeduplicationId unless the topic has ContentBasedDeduplication (then the SHA-256
// of the message is the id), and both are carried to FIFO queue subscriptions. It returns
// the message id and, for a FIFO topic, its sequence number. See
// https://docs.aws.amazon.com/sns/latest/api/API_Publish.html (MessageGroupId: "This
// parameter applies only to FIFO (first-in-first-out) topics ... is required for FIFO topics").
func (s *Service) publishFIFO(ctx context.Context, topicARN, subject, message string, attrs map[string]messageAttribute, ids fifoIDs) (string, string, error) {
	if message == "" {
		return "", "", invalid("Empty message")
	}
	if len(message) > 256*1024 {
		return "", "", invalid("Message too long")
	}
	s.mu.Lock()
	t, ok := s.topics[topicARN]
	var subs []subscription
	seq := ""
	var err error
	if ok {
		for _, sub := range t.Subscriptions {
			subs = append(subs, *sub)
		}
		if ids, seq, err = s.fifoLocked(t, message, ids); err == nil && seq != "" {
			s.persistLocked()
		}
	}
	s.mu.Unlock()
	if !ok {
		return "", "", notFound("Topic does not exist")
	}
	if err != nil {
		return "", "", err
	}
	id := newID()
	now := s.opts.Clock.Now().UTC()
	for _, sub := range subs {
		if !sub.accepts(message, attrs) {
			continue
		}
		if sub.Protocol == "lambda" {
			s.invoke(ctx, id, topicARN, sub, subject, message, now, attrs)
			continue
		}
		if sub.Protocol != "sqs" {
			continue // recorded endpoints get nothing
		}
		body := message
		var sqsAttrs map[string]events.SQSMessageAttribute
		if sub.Attributes["RawMessageDelivery"] == "true" {
			sqsAttrs = map[string]events.SQSMessageAttribute{}
			for k, a := range attrs {
				v := events.SQSMessageAttribute{DataType: a.DataType, BinaryValue: a.BinaryValue}
				if a.BinaryValue == nil {
					sv := a.StringValue
					v.StringValue = &sv
				}
				sqsAttrs[k] = v
			}
		} else {
			body = s.envelope(id, topicARN, sub.ARN, subject, message, now.Format("2006-01-02T15:04:05.000Z"), attrs)
		}
		var err error
		switch {
		case seq != "" && s.opts.SendFIFO != nil:
			err = s.opts.SendFIFO(ctx, sub.Endpoint, body, sqsAttrs, ids.group, ids.dedup)
		case s.opts.Send != nil:
			err = s.opts.Send(ctx, sub.Endpoint, body, sqsAttrs)
		}
		if err != nil {
			// AWS retries and eventually drops; the emulator logs and goes on.
			s.opts.Logger.Error("sns emulator: delivery failed", "topic", topicARN, "subscription", sub.ARN, "endpoint", sub.Endpoint, "err", err)
		}
	}
	return id, seq, nil
}

// fifoLocked checks the ids of a message to topic t and gives it its sequence number; a
// standard topic's messages have none ("").
func (s *Service) fifoLocked(t *topic, message string, ids fifoIDs) (fifoIDs, string, error) {
	if t.Attributes["FifoTopic"] != "true" {
		return ids, "", nil
	}
	if ids.group == "" {
		return ids, "", invalid("The MessageGroupId parameter is required for FIFO topics")
	}
	if ids.dedup == "" {
		if t.Attributes["ContentBasedDeduplication"] != "true" {
			return ids, "", invalid("The topic should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
		}
		sum := sha256.Sum256([]byte(message))
		ids.dedup = hex.EncodeToString(sum[:])
	}
	t.Sequence++
	return ids, fmt.Sprintf("%020d", t.Sequence), nil
}

// envelopeAttribute is a message attribute as the Notification envelope carries it.
type envelopeAttribute struct {
	Type  string `json:"Type"`
	Value string `json:"Value"`
}

// notification is the standard SNS envelope; fields are in AWS's order.
type notification struct {
	Type              string                       `json:"Type"`
	MessageID         string                       `json:"MessageId"`
	TopicArn          string                       `json:"TopicArn"`
	Subject           string                       `json:"Subject,omitempty"`
	Message           string                       `json:"Message"`
	Timestamp         string                       `json:"Timestamp"`
	SignatureVersion  string                       `json:"SignatureVersion"`
	Signature         string                       `json:"Signature"`
	SigningCertURL    string                       `json:"SigningCertURL"`
	UnsubscribeURL    string                       `json:"UnsubscribeURL"`
	MessageAttributes map[string]envelopeAttribute `json:"MessageAttributes,omitempty"`
}

func (s *Service) envelope(id, topicARN, subARN, subject, message, ts string, attrs map[string]messageAttribute) string {
	host := "https://sns." + s.opts.Region + ".amazonaws.com"
	sig := make([]byte, 256)
	_, _ = rand.Read(sig)
	n := notification{
		Type: "Notification", MessageID: id, TopicArn: topicARN, Subject: subject, Message: message, Timestamp: ts,
		SignatureVersion: "1",
		Signature:        base64.StdEncoding.EncodeToString(sig),
		SigningCertURL:   host + "/SimpleNotificationService-0000000000000000000000.pem",
		UnsubscribeURL:   host + "/?Action=Unsubscribe&SubscriptionArn=" + url.QueryEscape(subARN),
	}
	if len(attrs) > 0 {
		n.MessageAttributes = map[string]envelopeAttribute{}
		for k, a := range attrs {
			v := a.StringValue
			if a.BinaryValue != nil {
				v = base64.StdEncoding.EncodeToString(a.BinaryValue)
			}
			n.MessageAttributes[k] = envelopeAttribute{Type: a.DataType, Value: v}
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(n)
	return strings.TrimSpace(b.String())
}

// invoke delivers a message to a Lambda subscription as the events.SNSEvent Lambda gets.
func (s *Service) invoke(ctx context.Context, id, topicARN string, sub subscription, subject, message string, now time.Time, attrs map[string]messageAttribute) {
	if s.opts.Invoke == nil {
		return
	}
	var n events.SNSEntity
	_ = json.Unmarshal([]byte(s.envelope(id, topicARN, sub.ARN, subject, message, now.Format("2006-01-02T15:04:05.000Z"), attrs)), &n)
	n.Timestamp = now
	ev, _ := json.Marshal(events.SNSEvent{Records: []events.SNSEventRecord{{EventVersion: "1.0", EventSource: "aws:sns", EventSubscriptionArn: sub.ARN, SNS: n}}})
	if err := s.opts.Invoke(ctx, sub.Endpoint, ev); err != nil {
		s.opts.Logger.Error("sns emulator: delivery failed", "topic", topicARN, "subscription", sub.ARN, "endpoint", sub.Endpoint, "err", err)
	}
}

func (sub subscription) accepts(message string, attrs map[string]messageAttribute) bool {
	policy := sub.Attributes["FilterPolicy"]
	if policy == "" {
		return true
	}
	p, err := eventpattern.Parse([]byte(policy))
	if err != nil {
		return false
	}
	var doc any
	if sub.Attributes["FilterPolicyScope"] == "MessageBody" {
		if json.Unmarshal([]byte(message), &doc) != nil {
			return false
		}
		return p.Match(doc)
	}
	m := map[string]any{}
	for k, a := range attrs {
		base, _, _ := strings.Cut(a.DataType, ".")
		switch base {
		case "String":
			if a.DataType == "String.Array" {
				var list []any
				if json.Unmarshal([]byte(a.StringValue), &list) == nil {
					m[k] = list
				}
				continue
			}
			m[k] = a.StringValue
		case "Number":
			if f, err := strconv.ParseFloat(a.StringValue, 64); err == nil {
				m[k] = f
			}
		}
	}
	return p.Match(m)
}
