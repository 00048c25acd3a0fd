package sqslocal

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
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
