// Package sqslocal emulates Amazon SQS for cairn's local mode and tests.
//
// It serves both wire protocols AWS serves — AWS JSON 1.0, which the current SDKs speak,
// and the query protocol with XML answers, which older clients such as Debian's AWS CLI
// still use — and offers the same queues to in-process callers (S3 notifications, SNS
// fan-out, Lambda event source mappings) through a Go API. All time comes from a
// clock.Clock, so delays, visibility timeouts and long polls run on a virtual clock in
// tests. It is a test double of AWS, never a production path.
package sqslocal

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairn-dev/cairn/internal/awslocal/statefile"
	"github.com/cairn-dev/cairn/internal/clock"
)

// Options configure a Service.
type Options struct {
	Region, AccountID string
	// Clock is the time source of delays, visibility timeouts and long polls; nil means clock.Real.
	Clock clock.Clock
	// Dir, when set, persists every queue and message in Dir/sqs.json; "" keeps state in memory.
	Dir string
	// BaseURL returns the emulator's address, e.g. "http://127.0.0.1:4566"; queue URLs are
	// BaseURL()+"/"+AccountID+"/"+name. It is a function because the port is often known
	// only after the listener starts.
	BaseURL func() string
	Logger  *slog.Logger
}

// Service is one emulated SQS endpoint. Several Services in one process share nothing.
type Service struct {
	opts  Options
	clock clock.Clock
	log   *slog.Logger
	path  string // state file, "" in memory

	mu     sync.Mutex
	queues map[string]*queue
	tasks  []*moveTask // message move tasks, oldest first
	closed bool
	done   chan struct{} // closed by Close to end long polls
}

// state is the persisted form of a Service.
type state struct {
	Version int               `json:"version"`
	Queues  map[string]*queue `json:"queues"`
	Tasks   []*moveTask       `json:"moveTasks,omitempty"`
}

const stateVersion = 1

// New returns a Service, loading Dir/sqs.json when Dir is set and the file exists.
func New(o Options) (*Service, error) {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "000000000000"
	}
	if o.BaseURL == nil {
		o.BaseURL = func() string { return "http://127.0.0.1:4566" }
	}
	s := &Service{opts: o, clock: o.Clock, log: o.Logger, queues: map[string]*queue{}, done: make(chan struct{})}
	if s.clock == nil {
		s.clock = clock.Real
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if o.Dir != "" {
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("sqs state directory %s: %w", o.Dir, err)
		}
		s.path = filepath.Join(o.Dir, "sqs.json")
		b, err := os.ReadFile(s.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("read sqs state: %w", err)
		default:
			var st state
			if err := json.Unmarshal(b, &st); err != nil {
				return nil, fmt.Errorf("sqs state %s is corrupt (%v): fix or delete the file", s.path, err)
			}
			if st.Version != stateVersion {
				return nil, fmt.Errorf("sqs state %s has version %d, this build reads %d: delete the file", s.path, st.Version, stateVersion)
			}
			for name, q := range st.Queues {
				if q.Attributes == nil {
					q.Attributes = map[string]string{}
				}
				s.queues[name] = q
			}
			s.tasks = st.Tasks
		}
	}
	return s, nil
}

// Close ends every long poll and writes the state a last time.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.done)
	return s.saveLocked()
}

// saveLocked writes the state file atomically; s.mu must be held.
func (s *Service) saveLocked() error {
	if s.path == "" {
		return nil
	}
	if err := statefile.Write(s.path, state{Version: stateVersion, Queues: s.queues, Tasks: s.tasks}, 0o644); err != nil {
		return fmt.Errorf("write sqs state: %w", err)
	}
	return nil
}

// persistLocked saves after a change; a failed write is logged, not returned, because the
// change already happened in memory and the caller's request succeeded.
func (s *Service) persistLocked() {
	if err := s.saveLocked(); err != nil {
		s.log.Error("sqs state not saved", "path", s.path, "err", err)
	}
}

// QueueARN returns the ARN a queue of that name has (or would have) in this emulator.
func (s *Service) QueueARN(name string) string {
	return "arn:aws:sqs:" + s.opts.Region + ":" + s.opts.AccountID + ":" + name
}

// QueueURL returns the URL a queue of that name has (or would have) in this emulator.
func (s *Service) QueueURL(name string) string {
	return strings.TrimRight(s.opts.BaseURL(), "/") + "/" + s.opts.AccountID + "/" + name
}

// CreateQueue creates a queue, or returns the existing one's URL when its attributes agree.
func (s *Service) CreateQueue(name string, attrs map[string]string) (string, error) {
	out, err := s.createQueue(&createQueueInput{QueueName: name, Attributes: attrs})
	if err != nil {
		return "", err
	}
	return out.QueueUrl, nil
}

// Send enqueues a message on the queue with that ARN, as SNS and S3 notifications do.
// A delay of 0 applies the queue's DelaySeconds.
func (s *Service) Send(ctx context.Context, queueARN, body string, attrs map[string]events.SQSMessageAttribute, delay time.Duration) (string, error) {
	return s.SendGroup(ctx, queueARN, body, attrs, delay, "", "")
}

// SendGroup is Send with a FIFO queue's message group and deduplication ids, as SNS
// delivers a FIFO topic's messages.
func (s *Service) SendGroup(ctx context.Context, queueARN, body string, attrs map[string]events.SQSMessageAttribute, delay time.Duration, groupID, dedupID string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	name := queueARN[strings.LastIndex(queueARN, ":")+1:]
	if !strings.HasPrefix(queueARN, "arn:") || name == "" {
		return "", errInvalidParameter("%q is not a queue ARN (want arn:aws:sqs:REGION:ACCOUNT:NAME)", queueARN)
	}
	in := &sendInput{MessageBody: body, MessageGroupId: groupID, MessageDeduplicationId: dedupID}
	if delay > 0 {
		d := int(delay / time.Second)
		in.DelaySeconds = &d
	}
	if len(attrs) > 0 {
		in.MessageAttributes = map[string]attribute{}
		for k, v := range attrs {
			in.MessageAttributes[k] = attribute{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
		}
	}
	out, err := s.sendMessage(name, in)
	if err != nil {
		return "", err
	}
	return out.MessageId, nil
}

// Receive takes up to maxMessages messages (1..10) from the named queue, waiting up to wait for one
// to arrive, and returns them in the exact record shape Lambda's SQS event carries. They stay
// invisible for the queue's VisibilityTimeout.
func (s *Service) Receive(ctx context.Context, queueName string, maxMessages int, wait time.Duration) ([]events.SQSMessage, error) {
	msgs, err := s.receive(ctx, queueName, receiveParams{max: min(max(maxMessages, 1), 10), wait: wait, waitSet: true, visibility: -1,
		systemAttrs: []string{"All"}, messageAttrs: []string{"All"}})
	if err != nil {
		return nil, err
	}
	arn := s.QueueARN(queueName)
	out := make([]events.SQSMessage, 0, len(msgs))
	for _, m := range msgs {
		rec := events.SQSMessage{
			MessageId:              m.MessageId,
			ReceiptHandle:          m.ReceiptHandle,
			Body:                   m.Body,
			Md5OfBody:              m.MD5OfBody,
			Md5OfMessageAttributes: m.MD5OfMessageAttributes,
			Attributes:             m.Attributes,
			MessageAttributes:      map[string]events.SQSMessageAttribute{},
			EventSourceARN:         arn,
			EventSource:            "aws:sqs",
			AWSRegion:              s.opts.Region,
		}
		for k, a := range m.MessageAttributes {
			rec.MessageAttributes[k] = events.SQSMessageAttribute{
				DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue,
				StringListValues: []string{}, BinaryListValues: [][]byte{},
			}
		}
		out = append(out, rec)
	}
	return out, nil
}

// Delete removes a received message; a stale receipt handle is accepted and changes nothing,
// as in AWS.
func (s *Service) Delete(queueName, receiptHandle string) error {
	return s.deleteMessage(queueName, receiptHandle)
}

// ChangeVisibility makes a received message visible again after d (0: now).
func (s *Service) ChangeVisibility(queueName, receiptHandle string, d time.Duration) error {
	return s.changeVisibility(queueName, receiptHandle, int(d/time.Second))
}

// newID returns a random UUID (version 4) for message and request ids.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newReceipt returns a receipt handle naming the message; each receive gets a new one.
func newReceipt(messageID string) string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString([]byte(messageID + ":" + hex.EncodeToString(b[:])))
}

// receiptMessageID returns the message id a receipt handle names.
func receiptMessageID(handle string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(handle)
	if err != nil {
		return "", false
	}
	id, _, ok := strings.Cut(string(b), ":")
	return id, ok && id != ""
}

func millis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// Exists reports whether the queue with that ARN exists.
func (s *Service) Exists(queueARN string) bool {
	if queueARN != s.QueueARN(queueARN[strings.LastIndex(queueARN, ":")+1:]) {
		return false // another region or account
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.queues[queueARN[strings.LastIndex(queueARN, ":")+1:]]
	return ok
}

// SetAttributes sets queue attributes as SetQueueAttributes does ("" removes
// RedrivePolicy, Policy and RedriveAllowPolicy).
func (s *Service) SetAttributes(queueName string, attrs map[string]string) error {
	return s.setQueueAttributes(queueName, attrs)
}

// Attributes returns every attribute of a queue, as GetQueueAttributes with All does.
func (s *Service) Attributes(queueName string) (map[string]string, error) {
	return s.getQueueAttributes(queueName, []string{"All"})
}

// DeleteQueue deletes a queue and its messages.
func (s *Service) DeleteQueue(queueName string) error {
	return s.deleteQueue(queueName)
}

// Defaults returns the value each settable attribute of a standard or FIFO queue has when
// nobody set it.
func Defaults(fifo bool) map[string]string {
	out := maps.Clone(queueDefaults)
	if fifo {
		maps.Copy(out, fifoDefaults)
		delete(out, "FifoQueue")
	}
	return out
}

// Tag adds tags to a queue, as TagQueue does.
func (s *Service) Tag(queueName string, tags map[string]string) error {
	return s.tagQueue(queueName, tags, nil)
}
