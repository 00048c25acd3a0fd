// Package snslocal emulates Amazon SNS (query protocol) for cairn's local mode: topics,
// SQS subscriptions (with RawMessageDelivery) and Publish delivering the standard
// Notification envelope, which is how CloudFormation custom-resource requests reach the
// ports Lambda. It is a test double of AWS, never a production path.
package snslocal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairn-dev/cairn/internal/awslocal/eventpattern"
	"github.com/cairn-dev/cairn/internal/awslocal/statefile"
	"github.com/cairn-dev/cairn/internal/clock"
)

// Options configures a Service.
type Options struct {
	Region    string // default us-east-1
	AccountID string // default 000000000000
	Clock     clock.Clock
	// Dir, when set, persists topics and subscriptions in Dir/sns.json.
	Dir string
	// Send enqueues a message on an SQS queue by ARN; subscriptions of protocol sqs use it.
	Send func(ctx context.Context, queueARN, body string, attrs map[string]events.SQSMessageAttribute) error
	// SendFIFO enqueues a message of a FIFO topic on an SQS (FIFO) queue by ARN, with the
	// message group and deduplication ids the publisher gave (or the topic derived).
	// Nil: such messages go through Send without them.
	SendFIFO func(ctx context.Context, queueARN, body string, attrs map[string]events.SQSMessageAttribute, groupID, dedupID string) error
	// Invoke invokes a Lambda function asynchronously with an events.SNSEvent; subscriptions
	// of protocol lambda use it. Nil: such messages are not delivered.
	Invoke func(ctx context.Context, functionARN string, event []byte) error
	Logger *slog.Logger
}

// Service is one emulated SNS endpoint; Services share nothing.
type Service struct {
	opts Options
	path string

	mu     sync.Mutex
	topics map[string]*topic // by ARN
}

type topic struct {
	ARN           string            `json:"arn"`
	Attributes    map[string]string `json:"attributes,omitempty"`
	Tags          map[string]string `json:"tags,omitempty"`
	Subscriptions []*subscription   `json:"subscriptions,omitempty"`
	// Sequence is the last SequenceNumber a FIFO topic gave a message.
	Sequence uint64 `json:"sequence,omitempty"`
}

type subscription struct {
	ARN        string            `json:"arn"`
	Protocol   string            `json:"protocol"`
	Endpoint   string            `json:"endpoint"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// Error is an SNS API error, answered with its code and HTTP status.
type Error struct {
	Code    string
	Status  int
	Message string
}

func (e *Error) Error() string { return "sns " + e.Code + ": " + e.Message }

func notFound(format string, args ...any) *Error {
	return &Error{Code: "NotFound", Status: 404, Message: fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) *Error {
	return &Error{Code: "InvalidParameter", Status: 400, Message: "Invalid parameter: " + fmt.Sprintf(format, args...)}
}

// New returns a Service, loading Dir/sns.json when it exists.
func New(opts Options) (*Service, error) {
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if opts.AccountID == "" {
		opts.AccountID = "000000000000"
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Service{opts: opts, topics: map[string]*topic{}}
	if opts.Dir != "" {
		if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("sns emulator: create state folder: %w", err)
		}
		s.path = filepath.Join(opts.Dir, "sns.json")
		if err := statefile.Read(s.path, &s.topics); err != nil {
			return nil, fmt.Errorf("sns emulator: %w", err)
		}
	}
	return s, nil
}

// Close writes the state a last time.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saveLocked()
}

func (s *Service) saveLocked() error {
	if s.path == "" {
		return nil
	}
	if err := statefile.Write(s.path, s.topics, 0o644); err != nil {
		return fmt.Errorf("sns emulator: save state: %w", err)
	}
	return nil
}

func (s *Service) persistLocked() {
	if err := s.saveLocked(); err != nil {
		s.opts.Logger.Error("sns emulator: state will not survive a restart", "err", err)
	}
}

// TopicARN returns the ARN a topic of that name has in this emulator.
func (s *Service) TopicARN(name string) string {
	return "arn:aws:sns:" + s.opts.Region + ":" + s.opts.AccountID + ":" + name
}

// CreateTopic creates a topic (or returns the existing one) and returns its ARN.
func (s *Service) CreateTopic(name string, attrs, tags map[string]string) (string, error) {
	if name == "" || len(name) > 256 || strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) >= 0 {
		return "", invalid("Topic Name")
	}
	if strings.HasSuffix(name, ".fifo") != (attrs["FifoTopic"] == "true") {
		return "", invalid("Fifo Topic names must end with .fifo and must be made up of only uppercase and lowercase ASCII letters, numbers, underscores, and hyphens, and must be between 1 and 256 characters long.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	arn := s.TopicARN(name)
	if t, ok := s.topics[arn]; ok {
		for k, v := range attrs {
			if t.Attributes[k] != v {
				return "", invalid("Attributes Reason: Topic already exists with different attributes")
			}
		}
		return arn, nil
	}
	t := &topic{ARN: arn, Attributes: map[string]string{}, Tags: tags}
	for k, v := range attrs {
		t.Attributes[k] = v
	}
	s.topics[arn] = t
	s.persistLocked()
	return arn, nil
}

// DeleteTopic deletes a topic and its subscriptions; deleting a missing topic succeeds, as in AWS.
func (s *Service) DeleteTopic(arn string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.topics, arn)
	s.persistLocked()
	return nil
}

// Subscribe subscribes an endpoint to a topic and returns the subscription ARN: an SQS
// queue (protocol "sqs", endpoint a queue ARN) or a Lambda function ("lambda", a function
// ARN), which get the topic's messages; email, SMS, HTTP, mobile and Firehose endpoints are
// recorded (those that confirm stay pending) and get nothing. Subscribing the same endpoint
// twice returns the first ARN.
func (s *Service) Subscribe(topicARN, protocol, endpoint string, attrs map[string]string) (string, error) {
	switch protocol {
	case "sqs":
		if !strings.HasPrefix(endpoint, "arn:aws:sqs:") {
			return "", invalid("SQS endpoint ARN")
		}
	case "lambda":
		if !strings.HasPrefix(endpoint, "arn:aws:lambda:") {
			return "", invalid("Invalid parameter: Lambda endpoint ARN")
		}
	case "email", "email-json":
		if !strings.Contains(endpoint, "@") {
			return "", invalid("Invalid parameter: Email address")
		}
	case "http", "https":
		if !strings.HasPrefix(endpoint, protocol+"://") {
			return "", invalid("Invalid parameter: Endpoint must match the specified protocol")
		}
	case "sms", "application", "firehose":
	default:
		return "", invalid("Invalid parameter: Amazon SNS does not support this protocol string: %s", protocol)
	}
	for k, v := range attrs {
		if err := checkSubscriptionAttribute(k, v); err != nil {
			return "", err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.topics[topicARN]
	if !ok {
		return "", notFound("Topic does not exist")
	}
	for _, sub := range t.Subscriptions {
		if sub.Protocol == protocol && sub.Endpoint == endpoint {
			return sub.ARN, nil
		}
	}
	sub := &subscription{ARN: topicARN + ":" + newID(), Protocol: protocol, Endpoint: endpoint, Attributes: map[string]string{}}
	for k, v := range attrs {
		sub.Attributes[k] = v
	}
	t.Subscriptions = append(t.Subscriptions, sub)
	s.persistLocked()
	return sub.ARN, nil
}

// Unsubscribe removes a subscription; a missing one is not an error.
func (s *Service) Unsubscribe(subscriptionARN string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.topics {
		for i, sub := range t.Subscriptions {
			if sub.ARN == subscriptionARN {
				t.Subscriptions = append(t.Subscriptions[:i], t.Subscriptions[i+1:]...)
				s.persistLocked()
				return nil
			}
		}
	}
	return nil
}

// checkSubscriptionAttribute validates an attribute Subscribe or SetSubscriptionAttributes sets.
func checkSubscriptionAttribute(name, value string) error {
	switch name {
	case "RawMessageDelivery":
		if value != "true" && value != "false" {
			return invalid("Attributes Reason: RawMessageDelivery: Invalid value [%s]. Must be true or false.", value)
		}
	case "FilterPolicy":
		if value == "" {
			return nil
		}
		if _, err := eventpattern.Parse([]byte(value)); err != nil {
			return invalid("Filter policy: %v", err)
		}
	case "FilterPolicyScope":
		if value != "MessageAttributes" && value != "MessageBody" {
			return invalid("Attributes Reason: FilterPolicyScope: Invalid value [%s]. Please use either MessageBody or MessageAttributes", value)
		}
	case "RedrivePolicy":
		if value != "" && !json.Valid([]byte(value)) {
			return invalid("RedrivePolicy: failed to parse JSON.")
		}
	default:
		return invalid("AttributeName")
	}
	return nil
}

// SetSubscriptionAttribute sets one attribute (RawMessageDelivery, FilterPolicy,
// FilterPolicyScope, RedrivePolicy) of a subscription; an empty FilterPolicy removes it.
func (s *Service) SetSubscriptionAttribute(subscriptionARN, name, value string) error {
	if err := checkSubscriptionAttribute(name, value); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := s.subscriptionLocked(subscriptionARN)
	if sub == nil {
		return notFound("Subscription does not exist")
	}
	if value == "" && name != "RawMessageDelivery" {
		delete(sub.Attributes, name)
	} else {
		sub.Attributes[name] = value
	}
	s.persistLocked()
	return nil
}

func (s *Service) subscriptionLocked(arn string) *subscription {
	for _, t := range s.topics {
		for _, sub := range t.Subscriptions {
			if sub.ARN == arn {
				return sub
			}
		}
	}
	return nil
}

// SubscriptionAttributes returns a subscription's attributes as GetSubscriptionAttributes
// does.
func (s *Service) SubscriptionAttributes(subscriptionARN string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := s.subscriptionLocked(subscriptionARN)
	if sub == nil {
		return nil, notFound("Subscription does not exist")
	}
	topicARN := sub.ARN[:strings.LastIndexByte(sub.ARN, ':')]
	out := map[string]string{
		"SubscriptionArn": sub.ARN, "TopicArn": topicARN, "Protocol": sub.Protocol, "Endpoint": sub.Endpoint,
		"Owner": s.opts.AccountID, "ConfirmationWasAuthenticated": "true", "PendingConfirmation": strconv.FormatBool(sub.pending()),
		"RawMessageDelivery": "false",
	}
	for k, v := range sub.Attributes {
		out[k] = v
	}
	if _, ok := out["FilterPolicy"]; ok && out["FilterPolicyScope"] == "" {
		out["FilterPolicyScope"] = "MessageAttributes"
	}
	return out, nil
}

// SetTopicAttribute sets one attribute of a topic (DisplayName, Policy, DeliveryPolicy,
// KmsMasterKeyId, ...).
func (s *Service) SetTopicAttribute(topicARN, name, value string) error {
	switch name {
	case "DisplayName", "Policy", "DeliveryPolicy", "KmsMasterKeyId", "TracingConfig", "SignatureVersion", "ArchivePolicy", "DataProtectionPolicy":
	default:
		return invalid("AttributeName")
	}
	if name == "Policy" && value != "" && !json.Valid([]byte(value)) {
		return invalid("Policy: failed to parse JSON.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.topics[topicARN]
	if !ok {
		return notFound("Topic does not exist")
	}
	if value == "" {
		delete(t.Attributes, name)
	} else {
		t.Attributes[name] = value
	}
	s.persistLocked()
	return nil
}

func (s *Service) listTopics() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.topics))
	for arn := range s.topics {
		out = append(out, arn)
	}
	sort.Strings(out)
	return out
}

func (s *Service) subscriptions(topicARN string) ([]subscription, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []subscription
	for _, t := range s.topics {
		if topicARN != "" && t.ARN != topicARN {
			continue
		}
		for _, sub := range t.Subscriptions {
			out = append(out, *sub)
		}
	}
	if topicARN != "" {
		if _, ok := s.topics[topicARN]; !ok {
			return nil, notFound("Topic does not exist")
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ARN < out[j].ARN })
	return out, nil
}

func (s *Service) topicAttributes(arn string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.topics[arn]
	if !ok {
		return nil, notFound("Topic does not exist")
	}
	confirmed := len(t.Subscriptions)
	out := map[string]string{
		"TopicArn":                arn,
		"Owner":                   s.opts.AccountID,
		"DisplayName":             "",
		"SubscriptionsConfirmed":  fmt.Sprint(confirmed),
		"SubscriptionsPending":    "0",
		"SubscriptionsDeleted":    "0",
		"EffectiveDeliveryPolicy": `{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":20,"maxDelayTarget":20,"numRetries":3,"numMaxDelayRetries":0,"numNoDelayRetries":0,"numMinDelayRetries":0,"backoffFunction":"linear"},"disableSubscriptionOverrides":false}}`,
	}
	for k, v := range t.Attributes {
		out[k] = v
	}
	return out, nil
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Exists reports whether the topic with that ARN exists.
func (s *Service) Exists(topicARN string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.topics[topicARN]
	return ok
}

// accepts applies the subscription's filter policy: to the message attributes (String as
// text, Number as a number, String.Array as its JSON array; Binary is never matched) or,
// with FilterPolicyScope MessageBody, to the message parsed as JSON.
// pending reports whether the endpoint would have to confirm the subscription (email and
// HTTP endpoints), which the emulator's never do.
func (sub subscription) pending() bool {
	switch sub.Protocol {
	case "email", "email-json", "http", "https":
		return true
	}
	return false
}

// TopicAttributes returns a topic's attributes as GetTopicAttributes does.
func (s *Service) TopicAttributes(topicARN string) (map[string]string, error) {
	return s.topicAttributes(topicARN)
}

// SubscriptionARN returns the ARN of the topic's subscription of endpoint, "" when there
// is none.
func (s *Service) SubscriptionARN(topicARN, protocol, endpoint string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.topics[topicARN]; ok {
		for _, sub := range t.Subscriptions {
			if sub.Protocol == protocol && sub.Endpoint == endpoint {
				return sub.ARN
			}
		}
	}
	return ""
}
