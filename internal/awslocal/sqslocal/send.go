package sqslocal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// sendInput is a message to send: SendMessage's request, or an entry of SendMessageBatch.
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
