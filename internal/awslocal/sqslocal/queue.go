package sqslocal

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// queue is one queue (standard or FIFO) with its messages, persisted as JSON.
type queue struct {
	Name string `json:"name"`
	// Attributes holds the settable attributes, defaults included.
	Attributes map[string]string `json:"attributes"`
	Tags       map[string]string `json:"tags,omitempty"`
	Created    time.Time         `json:"created"`
	Modified   time.Time         `json:"modified"`
	Messages   []*message        `json:"messages"`
	// Purged is when the last PurgeQueue was accepted: another is refused for 60 seconds.
	Purged time.Time `json:"purged,omitzero"`
	// Sequence is the last SequenceNumber a FIFO queue gave a message.
	Sequence uint64 `json:"sequence,omitempty"`
	// Sent remembers a FIFO queue's accepted deduplication ids for five minutes, by scope
	// key (the id, or group and id with DeduplicationScope messageGroup).
	Sent map[string]sentRecord `json:"sent,omitempty"`

	wake chan struct{} // closed and replaced when a message may have become receivable
}

// message is one message and its delivery state.
type message struct {
	ID               string               `json:"id"`
	Body             string               `json:"body"`
	Attributes       map[string]attribute `json:"attributes,omitempty"`
	SystemAttributes map[string]attribute `json:"systemAttributes,omitempty"`
	SenderID         string               `json:"senderId"`
	Sent             time.Time            `json:"sent"`
	// VisibleAt is when the message can next be received: after its delay before the first
	// receive, after its visibility timeout afterwards.
	VisibleAt     time.Time `json:"visibleAt"`
	ReceiveCount  int       `json:"receiveCount"`
	FirstReceived time.Time `json:"firstReceived,omitzero"`
	Receipt       string    `json:"receipt,omitempty"`
	// DeadLetterSource is the ARN of the queue a redriven message came from.
	DeadLetterSource string `json:"deadLetterSource,omitempty"`
	// GroupID, DeduplicationID and Sequence are a FIFO queue's message group, the
	// deduplication id the message was accepted under and its SequenceNumber.
	GroupID         string `json:"groupId,omitempty"`
	DeduplicationID string `json:"deduplicationId,omitempty"`
	Sequence        string `json:"sequence,omitempty"`
}

// sentRecord is a FIFO message accepted under a deduplication id: a duplicate sent before
// Until is accepted, answered with the first message's id and sequence number, and dropped.
type sentRecord struct {
	MessageID string    `json:"messageId"`
	Sequence  string    `json:"sequence"`
	Until     time.Time `json:"until"`
}

// deduplicationInterval is how long a FIFO queue remembers a deduplication id.
const deduplicationInterval = 5 * time.Minute

// purgeInterval is how long after a PurgeQueue another is refused.
const purgeInterval = 60 * time.Second

// attribute is a message attribute in the JSON protocol's shape.
type attribute struct {
	DataType         string   `json:"DataType"`
	StringValue      *string  `json:"StringValue,omitempty"`
	BinaryValue      []byte   `json:"BinaryValue,omitempty"`
	StringListValues []string `json:"StringListValues,omitempty"`
	BinaryListValues [][]byte `json:"BinaryListValues,omitempty"`
}

var queueDefaults = map[string]string{
	"DelaySeconds":                  "0",
	"MaximumMessageSize":            "262144",
	"MessageRetentionPeriod":        "345600",
	"ReceiveMessageWaitTimeSeconds": "0",
	"VisibilityTimeout":             "30",
	"SqsManagedSseEnabled":          "true",
}

// intRanges are the numeric attributes and the values AWS accepts.
var intRanges = map[string][2]int{
	"DelaySeconds":                  {0, 900},
	"MaximumMessageSize":            {1024, 1048576},
	"MessageRetentionPeriod":        {60, 1209600},
	"ReceiveMessageWaitTimeSeconds": {0, 20},
	"VisibilityTimeout":             {0, 43200},
	"KmsDataKeyReusePeriodSeconds":  {60, 86400},
}

// fifoDefaults are the FIFO attributes a FIFO queue has when nobody set them.
var fifoDefaults = map[string]string{
	"FifoQueue":                 "true",
	"ContentBasedDeduplication": "false",
	"DeduplicationScope":        "queue",
	"FifoThroughputLimit":       "perQueue",
}

// settable lists the attributes CreateQueue and SetQueueAttributes accept.
var settable = map[string]bool{
	"DelaySeconds": true, "MaximumMessageSize": true, "MessageRetentionPeriod": true,
	"ReceiveMessageWaitTimeSeconds": true, "VisibilityTimeout": true, "KmsDataKeyReusePeriodSeconds": true,
	"Policy": true, "RedrivePolicy": true, "RedriveAllowPolicy": true, "KmsMasterKeyId": true,
	"SqsManagedSseEnabled": true,
}

// fifoOnly lists the attributes only FIFO queues have (FifoQueue itself only at creation).
var fifoOnly = map[string]bool{
	"ContentBasedDeduplication": true, "DeduplicationScope": true, "FifoThroughputLimit": true,
}

// readOnly lists the attributes only GetQueueAttributes returns.
var readOnly = []string{
	"QueueArn", "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
	"ApproximateNumberOfMessagesDelayed", "CreatedTimestamp", "LastModifiedTimestamp",
}

var (
	queueNameRE     = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)
	fifoQueueNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,75}\.fifo$`)
	// groupIDRE is what MessageGroupId and MessageDeduplicationId may hold: 1 to 128
	// characters of a-z, A-Z, 0-9 and !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~.
	groupIDRE = regexp.MustCompile(`^[\x21-\x7e]{1,128}$`)
)

// fifo reports whether q is a FIFO queue.
func (q *queue) fifo() bool { return q.Attributes["FifoQueue"] == "true" }

func (q *queue) intAttr(name string) int {
	n, _ := strconv.Atoi(q.Attributes[name])
	return n
}

// signalLocked wakes the long polls waiting on q.
func (q *queue) signalLocked() {
	if q.wake != nil {
		close(q.wake)
		q.wake = nil
	}
}

func (q *queue) waitLocked() <-chan struct{} {
	if q.wake == nil {
		q.wake = make(chan struct{})
	}
	return q.wake
}

// redrive returns the dead-letter queue name and maxReceiveCount of q's RedrivePolicy.
func (q *queue) redrive() (dlq string, maxReceives int, ok bool) {
	p, err := parseRedrive(q.Attributes["RedrivePolicy"])
	if err != nil || p.target == "" {
		return "", 0, false
	}
	return p.target[strings.LastIndex(p.target, ":")+1:], p.max, true
}

type redrivePolicy struct {
	target string
	max    int
}

func parseRedrive(v string) (redrivePolicy, error) {
	if v == "" {
		return redrivePolicy{}, nil
	}
	var raw struct {
		Target string          `json:"deadLetterTargetArn"`
		Max    json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return redrivePolicy{}, err
	}
	n, err := strconv.Atoi(strings.Trim(string(raw.Max), `"`))
	if err != nil || n < 1 || n > 1000 || !strings.HasPrefix(raw.Target, "arn:") {
		return redrivePolicy{}, errInvalidParameter("bad RedrivePolicy")
	}
	return redrivePolicy{target: raw.Target, max: n}, nil
}

// checkAttributesLocked validates attributes a client wants to set on a queue that is
// (or is made) FIFO or not.
func (s *Service) checkAttributesLocked(attrs map[string]string, fifo bool) error {
	for name, v := range attrs {
		if fifoOnly[name] {
			if !fifo {
				return senderError("InvalidAttributeName", "", "Unknown Attribute %s.", name)
			}
			allowed := map[string][]string{"ContentBasedDeduplication": {"true", "false"},
				"DeduplicationScope": {"messageGroup", "queue"}, "FifoThroughputLimit": {"perQueue", "perMessageGroupId"}}[name]
			if !slices.Contains(allowed, v) {
				return senderError("InvalidAttributeValue", "", "Invalid value for the parameter %s: %q (want %s).", name, v, strings.Join(allowed, " or "))
			}
			continue
		}
		if name == "FifoQueue" {
			continue // checked by CreateQueue, refused by SetQueueAttributes
		}
		if !settable[name] {
			return senderError("InvalidAttributeName", "", "Unknown Attribute %s.", name)
		}
		if r, ok := intRanges[name]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < r[0] || n > r[1] {
				return senderError("InvalidAttributeValue", "", "Invalid value for the parameter %s: %q is not an integer from %d to %d.", name, v, r[0], r[1])
			}
		}
		switch name {
		case "Policy", "RedriveAllowPolicy":
			if v != "" && !json.Valid([]byte(v)) {
				return senderError("InvalidAttributeValue", "", "Invalid value for the parameter %s: not a JSON document.", name)
			}
		case "RedrivePolicy":
			p, err := parseRedrive(v)
			if err != nil {
				return senderError("InvalidAttributeValue", "",
					`Value %s for parameter RedrivePolicy is invalid. Reason: want {"deadLetterTargetArn":"arn:aws:sqs:...","maxReceiveCount":1..1000}.`, v)
			}
			if p.target != "" {
				dlq, ok := s.queues[p.target[strings.LastIndex(p.target, ":")+1:]]
				if !ok {
					return senderError("InvalidAttributeValue", "",
						"Value %s for parameter RedrivePolicy is invalid. Reason: Dead-letter target %s does not exist: create it first.", v, p.target)
				}
				if dlq.fifo() != fifo {
					return senderError("InvalidParameterValue", "",
						"Value %s for parameter RedrivePolicy is invalid. Reason: Dead-letter queue must be same type of queue as the source.", v)
				}
			}
		}
	}
	return nil
}

type createQueueInput struct {
	QueueName  string
	Attributes map[string]string
	Tags       map[string]string
}

type queueURLOutput struct{ QueueUrl string }

func (s *Service) createQueue(in *createQueueInput) (*queueURLOutput, error) {
	if in.QueueName == "" {
		return nil, errMissingParameter("QueueName")
	}
	fifo := false
	switch v, ok := in.Attributes["FifoQueue"]; {
	case !ok || v == "false":
	case v == "true":
		fifo = true
	default:
		return nil, senderError("InvalidAttributeValue", "", "Invalid value for the parameter FifoQueue: %q (want true or false).", v)
	}
	switch {
	case fifo && !fifoQueueNameRE.MatchString(in.QueueName):
		return nil, errInvalidParameter("The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length (got %q).", in.QueueName)
	case !fifo && strings.HasSuffix(in.QueueName, ".fifo"):
		// SQS takes a name ending in .fifo as a FIFO queue's only with FifoQueue=true.
		return nil, errInvalidParameter("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length (a FIFO queue's name ends in .fifo, and it needs the attribute FifoQueue=true; got %q)", in.QueueName)
	case !fifo && !queueNameRE.MatchString(in.QueueName):
		return nil, errInvalidParameter("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length (got %q)", in.QueueName)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkAttributesLocked(in.Attributes, fifo); err != nil {
		return nil, err
	}
	if q, ok := s.queues[in.QueueName]; ok {
		for k, v := range in.Attributes {
			if q.Attributes[k] != v {
				return nil, senderError("QueueNameExists", "QueueAlreadyExists",
					"A queue named %s already exists with a different value for attribute %s (%q, not %q): delete it or use the same attributes", in.QueueName, k, q.Attributes[k], v)
			}
		}
		return &queueURLOutput{QueueUrl: s.QueueURL(in.QueueName)}, nil
	}
	now := s.clock.Now()
	q := &queue{Name: in.QueueName, Attributes: map[string]string{}, Created: now, Modified: now}
	for k, v := range queueDefaults {
		q.Attributes[k] = v
	}
	if fifo {
		for k, v := range fifoDefaults {
			q.Attributes[k] = v
		}
	}
	for k, v := range in.Attributes {
		if k == "FifoQueue" && !fifo {
			continue // a standard queue has no FifoQueue attribute
		}
		q.Attributes[k] = v
	}
	if len(in.Tags) > 0 {
		q.Tags = maps.Clone(in.Tags)
	}
	s.queues[in.QueueName] = q
	s.persistLocked()
	s.log.Info("sqs queue created", "queue", in.QueueName)
	return &queueURLOutput{QueueUrl: s.QueueURL(in.QueueName)}, nil
}

// queueLocked finds a queue; s.mu must be held.
func (s *Service) queueLocked(name string) (*queue, error) {
	q, ok := s.queues[name]
	if !ok {
		return nil, errNoQueue(name)
	}
	return q, nil
}

func (s *Service) getQueueURL(name string) (*queueURLOutput, error) {
	if name == "" {
		return nil, errMissingParameter("QueueName")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.queueLocked(name); err != nil {
		return nil, err
	}
	return &queueURLOutput{QueueUrl: s.QueueURL(name)}, nil
}

func (s *Service) deleteQueue(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(name)
	if err != nil {
		return err
	}
	delete(s.queues, name)
	q.signalLocked()
	s.persistLocked()
	s.log.Info("sqs queue deleted", "queue", name)
	return nil
}

func (s *Service) purgeQueue(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(name)
	if err != nil {
		return err
	}
	now := s.clock.Now()
	if !q.Purged.IsZero() && now.Before(q.Purged.Add(purgeInterval)) {
		return senderError("PurgeQueueInProgress", "AWS.SimpleQueueService.PurgeQueueInProgress",
			"Only one PurgeQueue operation on %s is allowed every 60 seconds (the last was %s ago): wait and purge again.",
			name, now.Sub(q.Purged).Round(time.Second))
	}
	q.Messages, q.Purged = nil, now
	s.persistLocked()
	return nil
}

// listQueues returns the URLs of queues whose names start with prefix, in name order. With
// maxResults > 0 it returns one page and the token of the next ("" on the last page).
func (s *Service) listQueues(prefix string, maxResults int, token string) (urls []string, next string, err error) {
	after := ""
	if token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil {
			return nil, "", errInvalidParameter("Invalid NextToken %q: pass the NextToken a previous ListQueues returned", token)
		}
		after = string(b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name := range s.queues {
		if strings.HasPrefix(name, prefix) && name > after {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if maxResults > 0 && len(names) > maxResults {
		names = names[:maxResults]
		next = base64.RawURLEncoding.EncodeToString([]byte(names[maxResults-1]))
	}
	for _, n := range names {
		urls = append(urls, s.QueueURL(n))
	}
	return urls, next, nil
}

func (s *Service) setQueueAttributes(name string, attrs map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(name)
	if err != nil {
		return err
	}
	if _, ok := attrs["FifoQueue"]; ok {
		// FifoQueue is given at creation only.
		return senderError("InvalidAttributeName", "", "Unknown Attribute FifoQueue.")
	}
	if err := s.checkAttributesLocked(attrs, q.fifo()); err != nil {
		return err
	}
	for k, v := range attrs {
		if v == "" && (k == "RedrivePolicy" || k == "Policy" || k == "RedriveAllowPolicy") {
			delete(q.Attributes, k)
			continue
		}
		q.Attributes[k] = v
	}
	q.Modified = s.clock.Now()
	q.signalLocked() // a shorter wait or visibility can change what a long poll should do
	s.persistLocked()
	return nil
}

func (s *Service) getQueueAttributes(name string, names []string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(name)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	s.expireLocked(q, now)
	all := maps.Clone(q.Attributes)
	var visible, inFlight, delayed int
	for _, m := range q.Messages {
		switch {
		case !m.VisibleAt.After(now):
			visible++
		case m.ReceiveCount == 0:
			delayed++
		default:
			inFlight++
		}
	}
	all["QueueArn"] = s.QueueARN(name)
	all["ApproximateNumberOfMessages"] = strconv.Itoa(visible)
	all["ApproximateNumberOfMessagesNotVisible"] = strconv.Itoa(inFlight)
	all["ApproximateNumberOfMessagesDelayed"] = strconv.Itoa(delayed)
	all["CreatedTimestamp"] = strconv.FormatInt(q.Created.Unix(), 10)
	all["LastModifiedTimestamp"] = strconv.FormatInt(q.Modified.Unix(), 10)
	out := map[string]string{}
	for _, n := range names {
		if n == "All" {
			return all, nil
		}
		if !settable[n] && !slices.Contains(readOnly, n) && n != "FifoQueue" && !fifoOnly[n] {
			return nil, senderError("InvalidAttributeName", "", "Unknown Attribute %s.", n)
		}
		if v, ok := all[n]; ok {
			out[n] = v
		}
	}
	return out, nil
}

// expireLocked drops messages older than the queue's retention period.
func (s *Service) expireLocked(q *queue, now time.Time) {
	keep := now.Add(-time.Duration(q.intAttr("MessageRetentionPeriod")) * time.Second)
	q.Messages = slices.DeleteFunc(q.Messages, func(m *message) bool { return m.Sent.Before(keep) })
}

type sendInput struct {
	MessageBody             string
	DelaySeconds            *int                 `json:",omitempty"`
	MessageAttributes       map[string]attribute `json:",omitempty"`
	MessageSystemAttributes map[string]attribute `json:",omitempty"`
	MessageDeduplicationId  string               `json:",omitempty"`
	MessageGroupId          string               `json:",omitempty"`
}

type sendOutput struct {
	MessageId                    string
	MD5OfMessageBody             string
	MD5OfMessageAttributes       string `json:",omitempty"`
	MD5OfMessageSystemAttributes string `json:",omitempty"`
	SequenceNumber               string `json:",omitempty"`
}

// validBody reports whether every character is one SQS accepts:
// #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.
func validBody(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case r == 0x9 || r == 0xA || r == 0xD:
		case r >= 0x20 && r <= 0xD7FF:
		case r >= 0xE000 && r <= 0xFFFD:
		case r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
	}
	return true
}

func checkAttributes(attrs map[string]attribute, system bool) (size int, err error) {
	if len(attrs) > 10 {
		return 0, errInvalidParameter("Number of message attributes [%d] exceeds the allowed maximum [10].", len(attrs))
	}
	for name, a := range attrs {
		if name == "" || len(name) > 256 || strings.HasPrefix(strings.ToLower(name), "aws.") || strings.HasPrefix(strings.ToLower(name), "amazon.") {
			if !system {
				return 0, errInvalidParameter("Message attribute name %q is invalid: use 1-256 characters not starting with AWS. or Amazon.", name)
			}
		}
		if system && name != "AWSTraceHeader" {
			return 0, errInvalidParameter("Message system attribute name %q is invalid: only AWSTraceHeader is supported.", name)
		}
		base, _, _ := strings.Cut(a.DataType, ".")
		switch base {
		case "String", "Number":
			if a.StringValue == nil || *a.StringValue == "" {
				return 0, errInvalidParameter("Message attribute '%s' must contain a non-empty value of message attribute type '%s'.", name, a.DataType)
			}
			if base == "Number" {
				if _, err := strconv.ParseFloat(*a.StringValue, 64); err != nil {
					return 0, errInvalidParameter("Message attribute '%s' of type Number has value %q, which is not a number.", name, *a.StringValue)
				}
			}
			size += len(*a.StringValue)
		case "Binary":
			if len(a.BinaryValue) == 0 {
				return 0, errInvalidParameter("Message attribute '%s' must contain a non-empty value of message attribute type '%s'.", name, a.DataType)
			}
			size += len(a.BinaryValue)
		default:
			return 0, errInvalidParameter("The type of message attribute '%s' is invalid: %q (want String, Number or Binary, optionally with .suffix).", name, a.DataType)
		}
		size += len(name) + len(a.DataType)
	}
	return size, nil
}

// sendMessage enqueues one message.
func (s *Service) sendMessage(name string, in *sendInput) (*sendOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(name)
	if err != nil {
		return nil, err
	}
	out, err := s.sendLocked(q, in)
	if err != nil {
		return nil, err
	}
	s.persistLocked()
	return out, nil
}

func (s *Service) sendLocked(q *queue, in *sendInput) (*sendOutput, error) {
	if in.MessageBody == "" {
		return nil, errMissingParameter("MessageBody")
	}
	if !validBody(in.MessageBody) {
		return nil, senderError("InvalidMessageContents", "", "Invalid binary character in the message body: SQS accepts #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF")
	}
	size, err := checkAttributes(in.MessageAttributes, false)
	if err != nil {
		return nil, err
	}
	if _, err := checkAttributes(in.MessageSystemAttributes, true); err != nil {
		return nil, err
	}
	if limit := q.intAttr("MaximumMessageSize"); size+len(in.MessageBody) > limit {
		return nil, errInvalidParameter("One or more parameters are invalid. Reason: Message must be shorter than %d bytes.", limit)
	}
	delay := q.intAttr("DelaySeconds")
	if in.DelaySeconds != nil {
		delay = *in.DelaySeconds
		if delay < 0 || delay > 900 {
			return nil, errInvalidParameter("Value %d for parameter DelaySeconds is invalid. Reason: must be between 0 and 900, if provided.", delay)
		}
	}
	now := s.clock.Now()
	if q.fifo() {
		return s.sendFIFOLocked(q, in, now)
	}
	if in.MessageDeduplicationId != "" {
		return nil, errInvalidParameter("Value %s for parameter MessageDeduplicationId is invalid. Reason: The request includes a parameter that is not valid for this queue type.", in.MessageDeduplicationId)
	}
	if in.MessageGroupId != "" && !groupIDRE.MatchString(in.MessageGroupId) {
		return nil, errInvalidParameter("Value %s for parameter MessageGroupId is invalid. Reason: 1 to 128 characters of a-z, A-Z, 0-9 and punctuation.", in.MessageGroupId)
	}
	m := &message{
		ID:               newID(),
		Body:             in.MessageBody,
		Attributes:       in.MessageAttributes,
		SystemAttributes: in.MessageSystemAttributes,
		SenderID:         s.opts.AccountID,
		Sent:             now,
		VisibleAt:        now.Add(time.Duration(delay) * time.Second),
	}
	q.Messages = append(q.Messages, m)
	if delay == 0 {
		q.signalLocked()
	}
	return &sendOutput{
		MessageId:                    m.ID,
		MD5OfMessageBody:             md5Hex(m.Body),
		MD5OfMessageAttributes:       md5OfAttributes(m.Attributes),
		MD5OfMessageSystemAttributes: md5OfAttributes(m.SystemAttributes),
	}, nil
}

// sendFIFOLocked enqueues a message on a FIFO queue: in its group's order, with a
// sequence number, once per deduplication id in five minutes (the explicit id, else the
// SHA-256 of the body when the queue has ContentBasedDeduplication). A duplicate is
// accepted and answered as the first was, and not delivered.
// See https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/using-messagededuplicationid-property.html
func (s *Service) sendFIFOLocked(q *queue, in *sendInput, now time.Time) (*sendOutput, error) {
	if in.MessageGroupId == "" {
		return nil, errMissingParameter("MessageGroupId")
	}
	if !groupIDRE.MatchString(in.MessageGroupId) {
		return nil, errInvalidParameter("Value %s for parameter MessageGroupId is invalid. Reason: 1 to 128 characters of a-z, A-Z, 0-9 and punctuation.", in.MessageGroupId)
	}
	if in.DelaySeconds != nil && *in.DelaySeconds != 0 {
		// FIFO queues take the queue's delay only.
		return nil, errInvalidParameter("Value %d for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.", *in.DelaySeconds)
	}
	dedup := in.MessageDeduplicationId
	switch {
	case dedup != "" && !groupIDRE.MatchString(dedup):
		return nil, errInvalidParameter("Value %s for parameter MessageDeduplicationId is invalid. Reason: 1 to 128 characters of a-z, A-Z, 0-9 and punctuation.", dedup)
	case dedup == "" && q.Attributes["ContentBasedDeduplication"] != "true":
		return nil, errInvalidParameter("The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
	case dedup == "":
		sum := sha256.Sum256([]byte(in.MessageBody))
		dedup = hex.EncodeToString(sum[:])
	}
	key := dedup
	if q.Attributes["DeduplicationScope"] == "messageGroup" {
		key = in.MessageGroupId + "\x00" + dedup
	}
	for k, r := range q.Sent {
		if !now.Before(r.Until) {
			delete(q.Sent, k)
		}
	}
	out := &sendOutput{
		MD5OfMessageBody:             md5Hex(in.MessageBody),
		MD5OfMessageAttributes:       md5OfAttributes(in.MessageAttributes),
		MD5OfMessageSystemAttributes: md5OfAttributes(in.MessageSystemAttributes),
	}
	if r, ok := q.Sent[key]; ok {
		out.MessageId, out.SequenceNumber = r.MessageID, r.Sequence
		return out, nil
	}
	q.Sequence = max(q.Sequence+1, uint64(now.UnixNano()))
	m := &message{
		ID:               newID(),
		Body:             in.MessageBody,
		Attributes:       in.MessageAttributes,
		SystemAttributes: in.MessageSystemAttributes,
		SenderID:         s.opts.AccountID,
		Sent:             now,
		VisibleAt:        now.Add(time.Duration(q.intAttr("DelaySeconds")) * time.Second),
		GroupID:          in.MessageGroupId,
		DeduplicationID:  dedup,
		// SQS's sequence numbers are large increasing integers of 20 digits or more.
		Sequence: fmt.Sprintf("%020d", q.Sequence),
	}
	if q.Sent == nil {
		q.Sent = map[string]sentRecord{}
	}
	q.Sent[key] = sentRecord{MessageID: m.ID, Sequence: m.Sequence, Until: now.Add(deduplicationInterval)}
	q.Messages = append(q.Messages, m)
	if !m.VisibleAt.After(now) {
		q.signalLocked()
	}
	out.MessageId, out.SequenceNumber = m.ID, m.Sequence
	return out, nil
}

type batchError struct {
	Id          string
	Code        string
	Message     string
	SenderFault bool
}

func entryError(id string, err error) batchError {
	if e, ok := err.(*Error); ok {
		return batchError{Id: id, Code: e.Code, Message: e.Message, SenderFault: e.Sender}
	}
	return batchError{Id: id, Code: "InternalError", Message: err.Error()}
}

var batchIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// checkBatch validates what applies to a whole batch request.
func checkBatch(ids []string) error {
	if len(ids) == 0 {
		return senderError("EmptyBatchRequest", "AWS.SimpleQueueService.EmptyBatchRequest", "There should be at least one entry in the request.")
	}
	if len(ids) > 10 {
		return senderError("TooManyEntriesInBatchRequest", "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
			"Maximum number of entries per request are 10. You have sent %d.", len(ids))
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if !batchIDRE.MatchString(id) {
			return senderError("InvalidBatchEntryId", "AWS.SimpleQueueService.InvalidBatchEntryId",
				"A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long (got %q).", id)
		}
		if seen[id] {
			return senderError("BatchEntryIdsNotDistinct", "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", "Id %s repeated.", id)
		}
		seen[id] = true
	}
	return nil
}

type sendBatchEntry struct {
	Id string
	sendInput
}

type sendBatchResult struct {
	Id string
	sendOutput
}

type sendBatchOutput struct {
	Successful []sendBatchResult
	Failed     []batchError
}

func (s *Service) sendMessageBatch(name string, entries []sendBatchEntry) (*sendBatchOutput, error) {
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.Id
	}
	if err := checkBatch(ids); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(name)
	if err != nil {
		return nil, err
	}
	out := &sendBatchOutput{Successful: []sendBatchResult{}, Failed: []batchError{}}
	for _, e := range entries {
		res, err := s.sendLocked(q, &e.sendInput)
		if err != nil {
			out.Failed = append(out.Failed, entryError(e.Id, err))
			continue
		}
		out.Successful = append(out.Successful, sendBatchResult{Id: e.Id, sendOutput: *res})
	}
	s.persistLocked()
	return out, nil
}

type receiveParams struct {
	max          int
	wait         time.Duration
	waitSet      bool // false: the queue's ReceiveMessageWaitTimeSeconds applies
	visibility   int  // seconds; -1: the queue's VisibilityTimeout
	systemAttrs  []string
	messageAttrs []string
}

type receivedMessage struct {
	MessageId              string
	ReceiptHandle          string
	MD5OfBody              string
	Body                   string
	Attributes             map[string]string    `json:",omitempty"`
	MD5OfMessageAttributes string               `json:",omitempty"`
	MessageAttributes      map[string]attribute `json:",omitempty"`
}

// receive takes up to p.max receivable messages, long polling when none is. It never holds
// s.mu while waiting, and it returns when ctx ends or the Service closes.
func (s *Service) receive(ctx context.Context, name string, p receiveParams) ([]receivedMessage, error) {
	var deadline <-chan time.Time
	for first := true; ; first = false {
		s.mu.Lock()
		q, err := s.queueLocked(name)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		if first {
			if !p.waitSet {
				p.wait = time.Duration(q.intAttr("ReceiveMessageWaitTimeSeconds")) * time.Second
			}
			if p.wait > 0 {
				deadline = s.clock.After(p.wait)
			}
		}
		now := s.clock.Now()
		got := s.takeLocked(q, p, now)
		if len(got) > 0 || p.wait <= 0 || s.closed {
			s.mu.Unlock()
			return got, nil
		}
		wake := q.waitLocked()
		var next <-chan time.Time
		if soonest, ok := nextVisible(q, now); ok {
			next = s.clock.After(soonest.Sub(now))
		}
		s.mu.Unlock()
		select {
		case <-wake:
		case <-next:
		case <-deadline:
			return []receivedMessage{}, nil
		case <-s.done:
			return []receivedMessage{}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// nextVisible returns when the next delayed or in-flight message of q becomes receivable.
func nextVisible(q *queue, now time.Time) (time.Time, bool) {
	var soonest time.Time
	for _, m := range q.Messages {
		if m.VisibleAt.After(now) && (soonest.IsZero() || m.VisibleAt.Before(soonest)) {
			soonest = m.VisibleAt
		}
	}
	return soonest, !soonest.IsZero()
}

// takeLocked marks up to p.max receivable messages in flight and returns them, moving a
// message to the dead-letter queue instead when this receive would exceed maxReceiveCount.
func (s *Service) takeLocked(q *queue, p receiveParams, now time.Time) []receivedMessage {
	s.expireLocked(q, now)
	visibility := p.visibility
	if visibility < 0 {
		visibility = q.intAttr("VisibilityTimeout")
	}
	dlqName, maxReceives, hasDLQ := q.redrive()
	dlq := s.queues[dlqName]
	out := []receivedMessage{}
	var candidates []*message
	if q.fifo() {
		candidates = fifoCandidates(q, now)
	} else {
		for _, m := range q.Messages {
			if !m.VisibleAt.After(now) {
				candidates = append(candidates, m)
			}
		}
	}
	changed := false
	for _, m := range candidates {
		if len(out) >= p.max {
			break
		}
		changed = true
		if hasDLQ && dlq != nil && dlq != q && m.ReceiveCount >= maxReceives {
			q.Messages = slices.DeleteFunc(q.Messages, func(x *message) bool { return x == m })
			m.Receipt = ""
			m.VisibleAt = now
			m.DeadLetterSource = s.QueueARN(q.Name)
			dlq.Messages = append(dlq.Messages, m)
			dlq.signalLocked()
			s.log.Info("sqs message moved to dead-letter queue", "queue", q.Name, "dlq", dlqName, "messageId", m.ID, "receives", m.ReceiveCount)
			continue
		}
		m.ReceiveCount++
		if m.FirstReceived.IsZero() {
			m.FirstReceived = now
		}
		m.Receipt = newReceipt(m.ID)
		m.VisibleAt = now.Add(time.Duration(visibility) * time.Second)
		out = append(out, s.render(m, p))
	}
	if changed {
		s.persistLocked()
	}
	return out
}

// fifoCandidates lists the messages of a FIFO queue a receive may take now, in the order
// it takes them: a group with a message in flight (or not yet visible) gives none, so each
// group is received in order, one batch at a time; and groups come one after the other,
// the group of the oldest receivable message first, so that a receive returns as many
// messages of one group as it can, as SQS does.
// See https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/FIFO-queues-understanding-logic.html
func fifoCandidates(q *queue, now time.Time) []*message {
	blocked := map[string]bool{}
	for _, m := range q.Messages {
		if m.VisibleAt.After(now) {
			blocked[m.GroupID] = true
		}
	}
	var groups []string
	byGroup := map[string][]*message{}
	for _, m := range q.Messages {
		if blocked[m.GroupID] {
			continue
		}
		if _, ok := byGroup[m.GroupID]; !ok {
			groups = append(groups, m.GroupID)
		}
		byGroup[m.GroupID] = append(byGroup[m.GroupID], m)
	}
	var out []*message
	for _, g := range groups {
		out = append(out, byGroup[g]...)
	}
	return out
}

// render shapes a message as ReceiveMessage returns it, with the requested attributes.
func (s *Service) render(m *message, p receiveParams) receivedMessage {
	r := receivedMessage{MessageId: m.ID, ReceiptHandle: m.Receipt, MD5OfBody: md5Hex(m.Body), Body: m.Body}
	system := map[string]string{
		"SenderId":                         m.SenderID,
		"SentTimestamp":                    millis(m.Sent),
		"ApproximateReceiveCount":          strconv.Itoa(m.ReceiveCount),
		"ApproximateFirstReceiveTimestamp": millis(m.FirstReceived),
	}
	if a, ok := m.SystemAttributes["AWSTraceHeader"]; ok {
		system["AWSTraceHeader"] = deref(a.StringValue)
	}
	if m.DeadLetterSource != "" {
		system["DeadLetterQueueSourceArn"] = m.DeadLetterSource
	}
	if m.GroupID != "" {
		system["MessageGroupId"] = m.GroupID
	}
	if m.Sequence != "" {
		system["MessageDeduplicationId"] = m.DeduplicationID
		system["SequenceNumber"] = m.Sequence
	}
	for _, n := range p.systemAttrs {
		if n == "All" {
			r.Attributes = system
			break
		}
		if v, ok := system[n]; ok {
			if r.Attributes == nil {
				r.Attributes = map[string]string{}
			}
			r.Attributes[n] = v
		}
	}
	for name, a := range m.Attributes {
		if wanted(name, p.messageAttrs) {
			if r.MessageAttributes == nil {
				r.MessageAttributes = map[string]attribute{}
			}
			r.MessageAttributes[name] = a
		}
	}
	r.MD5OfMessageAttributes = md5OfAttributes(r.MessageAttributes)
	return r
}

// wanted matches a message attribute name against MessageAttributeNames: All, .*, prefix.* or exact.
func wanted(name string, patterns []string) bool {
	for _, p := range patterns {
		switch {
		case p == "All" || p == ".*":
			return true
		case strings.HasSuffix(p, ".*") && strings.HasPrefix(name, strings.TrimSuffix(p, "*")):
			return true
		case p == name:
			return true
		}
	}
	return false
}

// inFlightLocked finds the message a receipt handle names. It returns a nil message, and no
// error, when the handle is well formed but stale: the message is gone or was received again.
func inFlightLocked(q *queue, handle string) (m *message, index int, err error) {
	id, ok := receiptMessageID(handle)
	if !ok {
		return nil, -1, errReceiptInvalid(handle)
	}
	for i, m := range q.Messages {
		if m.ID == id && m.Receipt == handle {
			return m, i, nil
		}
	}
	return nil, -1, nil
}

func (s *Service) deleteMessage(name, handle string) error {
	if handle == "" {
		return errMissingParameter("ReceiptHandle")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(name)
	if err != nil {
		return err
	}
	return s.deleteLocked(q, handle)
}

func (s *Service) deleteLocked(q *queue, handle string) error {
	m, i, err := inFlightLocked(q, handle)
	if err != nil || m == nil {
		return err
	}
	q.Messages = slices.Delete(q.Messages, i, i+1)
	s.persistLocked()
	return nil
}

func (s *Service) changeVisibility(name, handle string, seconds int) error {
	if handle == "" {
		return errMissingParameter("ReceiptHandle")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(name)
	if err != nil {
		return err
	}
	return s.changeVisibilityLocked(q, handle, seconds)
}

func (s *Service) changeVisibilityLocked(q *queue, handle string, seconds int) error {
	if seconds < 0 || seconds > 43200 {
		return errInvalidParameter("Value %d for parameter VisibilityTimeout is invalid. Reason: must be between 0 and 43200.", seconds)
	}
	m, _, err := inFlightLocked(q, handle)
	if err != nil {
		return err
	}
	now := s.clock.Now()
	if m == nil || !m.VisibleAt.After(now) {
		return senderError("MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight",
			"Message with receipt handle %s is not in flight (deleted, visible again or received since): receive it again", handle)
	}
	m.VisibleAt = now.Add(time.Duration(seconds) * time.Second)
	if seconds == 0 {
		q.signalLocked()
	}
	s.persistLocked()
	return nil
}

type receiptEntry struct {
	Id                string
	ReceiptHandle     string
	VisibilityTimeout int `json:",omitempty"`
}

type idResult struct{ Id string }

type batchOutput struct {
	Successful []idResult
	Failed     []batchError
}

// receiptBatch runs one receipt-handle operation per entry and reports each.
func (s *Service) receiptBatch(name string, entries []receiptEntry, op func(*queue, receiptEntry) error) (*batchOutput, error) {
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.Id
	}
	if err := checkBatch(ids); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(name)
	if err != nil {
		return nil, err
	}
	out := &batchOutput{Successful: []idResult{}, Failed: []batchError{}}
	for _, e := range entries {
		err := error(nil)
		if e.ReceiptHandle == "" {
			err = errMissingParameter("ReceiptHandle")
		} else {
			err = op(q, e)
		}
		if err != nil {
			out.Failed = append(out.Failed, entryError(e.Id, err))
			continue
		}
		out.Successful = append(out.Successful, idResult{Id: e.Id})
	}
	return out, nil
}

func (s *Service) tagQueue(name string, tags map[string]string, remove []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(name)
	if err != nil {
		return err
	}
	if q.Tags == nil {
		q.Tags = map[string]string{}
	}
	for k, v := range tags {
		q.Tags[k] = v
	}
	for _, k := range remove {
		delete(q.Tags, k)
	}
	s.persistLocked()
	return nil
}

func (s *Service) listQueueTags(name string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLocked(name)
	if err != nil {
		return nil, err
	}
	return maps.Clone(q.Tags), nil
}
