// Package lambdajob is the skeleton cairn's event-driven functions share — the deployer (its
// runs) and the drift function (its sweeps) — so both have one shape: the configuration
// a function reads from its environment (Env, Handler), the delayed SQS messages that
// continue a job later instead of a Lambda waiting for AWS (Queue), and the routing of an
// SQS batch to one step per job, the records of a step that failed reported back for
// redelivery (Batch). What a step does, and when a job continues, is each driver's (and
// its pure core's) to decide; each keeps its job's document under a lease or a lock of its
// own.
package lambdajob

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-dev/cairn/internal/awsclient"
)

// Env reads a function's configuration from the environment, gathering every variable
// that is missing or malformed into one error (Err), so a misconfigured function says all
// of it at once.
type Env struct {
	function string
	missing  []string
	bad      []string
}

// NewEnv reads the environment of function (as its errors name it: "deployer").
func NewEnv(function string) *Env { return &Env{function: function} }

// Required is the value of key; a missing or empty one is reported by Err.
func (e *Env) Required(key string) string {
	v := os.Getenv(key)
	if v == "" {
		e.missing = append(e.missing, key)
	}
	return v
}

// Optional is the value of key, "" when unset.
func (e *Env) Optional(key string) string { return os.Getenv(key) }

// Int is key's whole number from lo to hi (what it counts: want, "seconds"), 0 when unset;
// anything else is reported by Err.
func (e *Env) Int(key string, lo, hi int, want string) int {
	v := os.Getenv(key)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		e.bad = append(e.bad, fmt.Sprintf("%s=%q: want a whole number of %s from %d to %d", key, v, want, lo, hi))
		return 0
	}
	return n
}

// Check reports err, if any, as the problem of key's value.
func (e *Env) Check(key string, err error) {
	if err != nil {
		e.bad = append(e.bad, fmt.Sprintf("%s: %v", key, err))
	}
}

// Err says everything missing or malformed, or is nil.
func (e *Env) Err() error {
	var parts []string
	if len(e.missing) > 0 {
		parts = append(parts, fmt.Sprintf("%s misconfigured: set %s", e.function, strings.Join(e.missing, " and ")))
	}
	parts = append(parts, e.bad...)
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(parts, "; "))
}

// Handler builds a function's Lambda handler H as functions/ and `cairn local up` run it:
// its configuration C from the environment (fromEnv), the SDK's from awsclient.ForFunction
// (with AWS_ENDPOINT_URL deciding where it talks), then build.
func Handler[C, H any](ctx context.Context, fromEnv func() (C, error), build func(aws.Config, C) (H, error)) (H, error) {
	var none H
	c, err := fromEnv()
	if err != nil {
		return none, err
	}
	awsCfg, err := awsclient.ForFunction(ctx)
	if err != nil {
		return none, err
	}
	return build(awsCfg, c)
}

// MaxDelay is the longest SQS delays a message.
const MaxDelay = 15 * time.Minute

// Delay is d in whole seconds as SendMessage's DelaySeconds takes it: rounded up, from 0
// to MaxDelay.
func Delay(d time.Duration) int32 {
	s := int32((d + time.Second - 1) / time.Second)
	return min(max(s, 0), int32(MaxDelay/time.Second))
}

// SQSAPI sends a Queue's messages.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Queue is the function's own queue, where it sends the messages that continue its jobs
// later: a run's heartbeats and delayed checks, an upload waiting for the lock, a sweep's
// continuation.
type Queue struct {
	SQS SQSAPI
	URL string
}

// Send sends msg as JSON, delivered after delay (at most MaxDelay).
func (q Queue) Send(ctx context.Context, msg any, delay time.Duration) error {
	body, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return q.SendBody(ctx, string(body), delay)
}

// SendBody sends body as it is (the message of an event re-sent to wait), delivered after
// delay.
func (q Queue) SendBody(ctx context.Context, body string, delay time.Duration) error {
	_, err := q.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(body), DelaySeconds: Delay(delay)})
	return err
}

// Batch gathers the steps one SQS batch asks for: one per job K however many of the
// batch's records ask for it, their triggers T merged, and the records to report failed.
type Batch[K comparable, T any] struct {
	merge  func(T, T) T
	order  []K
	steps  map[K]*request[T]
	failed []events.SQSBatchItemFailure
}

type request[T any] struct {
	trigger T
	records []string
}

// NewBatch returns an empty batch; merge folds the trigger of another record of a job into
// the job's (nil: the first record's is kept).
func NewBatch[K comparable, T any](merge func(T, T) T) *Batch[K, T] {
	return &Batch[K, T]{merge: merge, steps: map[K]*request[T]{}}
}

// Fail reports record id failed: SQS delivers it again, and after the queue's
// maxReceiveCount moves it to the dead-letter queue.
func (b *Batch[K, T]) Fail(id string) {
	for _, f := range b.failed {
		if f.ItemIdentifier == id {
			return // a record of several jobs (an S3 event of several uploads) fails once
		}
	}
	b.failed = append(b.failed, events.SQSBatchItemFailure{ItemIdentifier: id})
}

// Add asks, for record id, for a step of job k with trigger t.
func (b *Batch[K, T]) Add(k K, id string, t T) {
	r := b.steps[k]
	switch {
	case r == nil:
		r = &request[T]{trigger: t}
		b.steps[k] = r
		b.order = append(b.order, k)
	case b.merge != nil:
		r.trigger = b.merge(r.trigger, t)
	}
	r.records = append(r.records, id)
}

// Asked reports whether the batch asked for a step of job k.
func (b *Batch[K, T]) Asked(k K) bool { return b.steps[k] != nil }

// Run makes each job's step once, in the order the batch first asked for them; a step
// that fails (step's error, which onFail is told) fails every record that asked for it.
func (b *Batch[K, T]) Run(step func(K, T) error, onFail func(K, error)) {
	for _, k := range b.order {
		r := b.steps[k]
		if err := step(k, r.trigger); err != nil {
			if onFail != nil {
				onFail(k, err)
			}
			for _, id := range r.records {
				b.Fail(id)
			}
		}
	}
}

// Response is the handler's answer: the records that failed (batchItemFailures, never
// nil, as Lambda reads an empty list as "all succeeded").
func (b *Batch[K, T]) Response() events.SQSEventResponse {
	return events.SQSEventResponse{BatchItemFailures: append([]events.SQSBatchItemFailure{}, b.failed...)}
}
