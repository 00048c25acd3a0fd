package sqslocal

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// receiveParams are what ReceiveMessage asks for.
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
