package awslocal

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// DefaultTimeout is a registered function's timeout unless WithTimeout says otherwise.
const DefaultTimeout = time.Minute

// function is a Lambda function: recorded by a stack (AWS::Lambda::Function) or by
// RegisterFunction, and invocable once an in-process handler is registered for it.
type function struct {
	name    string
	handler lambda.Handler // nil until registered
	timeout time.Duration
	env     map[string]string
	code    FunctionCode
}

// FunctionOption configures a registered function.
type FunctionOption func(*function)

// WithTimeout sets the function's timeout: the invocation context's deadline, as Lambda's.
func WithTimeout(d time.Duration) FunctionOption {
	return func(f *function) { f.timeout = d }
}

// RegisterFunction makes handler (anything lambda.Start accepts, or a lambda.Handler)
// invocable as function name by Invoke, event source mappings and schedules.
func (e *Emulator) RegisterFunction(name string, handler any, opts ...FunctionOption) error {
	if name == "" {
		return errors.New("register function: empty name")
	}
	if err := validateHandler(handler); err != nil {
		return fmt.Errorf("register function %s: %w", name, err)
	}
	h, ok := handler.(lambda.Handler)
	if !ok {
		h = lambda.NewHandler(handler)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.funcs[name]
	if f == nil {
		// Not made by a stack: registering makes it.
		f = &function{name: name, timeout: DefaultTimeout}
		e.funcs[name] = f
	}
	f.handler = h
	for _, o := range opts {
		o(f)
	}
	e.funcsChangedLocked()
	return nil
}

// funcsChangedLocked wakes what waits for a function's handler. Called with mu held.
func (e *Emulator) funcsChangedLocked() {
	close(e.funcsChanged)
	e.funcsChanged = make(chan struct{})
}

// defineFunction records a function a stack made or changed, keeping a registered handler.
func (e *Emulator) defineFunction(name string, timeout time.Duration, env map[string]string, code FunctionCode) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.funcs[name]
	if f == nil {
		f = &function{name: name}
		e.funcs[name] = f
	}
	f.timeout, f.env, f.code = timeout, env, code
	e.funcsChangedLocked()
}

func (e *Emulator) removeFunction(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.funcs, name)
	e.funcsChangedLocked()
}

// FunctionConfig describes a function as Lambda's GetFunctionConfiguration would.
type FunctionConfig struct {
	Name, ARN   string
	Timeout     time.Duration
	Environment map[string]string
	// Bound says an in-process handler is registered for it.
	Bound bool
	// Code is where its code was read from when a stack last created or updated it.
	Code FunctionCode
}

// Function returns the function named name, made by a stack or registered.
func (e *Emulator) Function(name string) (FunctionConfig, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.funcs[name]
	if f == nil {
		return FunctionConfig{}, false
	}
	env := map[string]string{}
	for k, v := range f.env {
		env[k] = v
	}
	return FunctionConfig{Name: name, ARN: e.functionARN(name), Timeout: f.timeout, Environment: env, Bound: f.handler != nil, Code: f.code}, true
}

// Functions lists the functions of the home account and region, by name.
func (e *Emulator) Functions() []FunctionConfig {
	e.mu.Lock()
	names := sortedKeys(e.funcs)
	e.mu.Unlock()
	out := make([]FunctionConfig, 0, len(names))
	for _, n := range names {
		if f, ok := e.Function(n); ok {
			out = append(out, f)
		}
	}
	return out
}

func (e *Emulator) functionARN(name string) string {
	return "arn:aws:lambda:" + e.opts.Region + ":" + e.opts.AccountID + ":function:" + name
}

// functionName accepts a function name, ARN or partial ARN, as Lambda does.
func functionName(nameOrARN string) string {
	if i := strings.Index(nameOrARN, ":function:"); i >= 0 {
		n, _, _ := strings.Cut(nameOrARN[i+len(":function:"):], ":")
		return n
	}
	if n, _, ok := strings.Cut(nameOrARN, ":"); ok {
		return n
	}
	return nameOrARN
}

// awaitHandler blocks until the function has a handler; false when ctx ends first.
func (e *Emulator) awaitHandler(ctx context.Context, name string) bool {
	for {
		e.mu.Lock()
		f, changed := e.funcs[name], e.funcsChanged
		bound := f != nil && f.handler != nil
		e.mu.Unlock()
		if bound {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// functionExists reports whether a function with that ARN (or name) exists.
func (e *Emulator) functionExists(arn string) bool {
	name := functionName(arn)
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.funcs[name]
	return ok
}

// functionRuns reports whether the function of that ARN (or name) has a handler in process.
func (e *Emulator) functionRuns(arn string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.funcs[functionName(arn)]
	return f != nil && f.handler != nil
}

// invokeEvent invokes a function asynchronously (InvocationType Event), as CloudFormation
// does a custom resource's: what the invocation returns or fails with is only logged.
func (e *Emulator) invokeEvent(_ context.Context, arn string, payload []byte) error {
	name := functionName(arn)
	if !e.functionRuns(name) {
		return fmt.Errorf("Function not found: %s", arn)
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if _, err := e.Invoke(e.ctx, name, payload); err != nil {
			e.log.Warn("lambda: asynchronous invocation failed", "function", name, "err", err)
		}
	}()
	return nil
}

// notifyFunction delivers an SNS or S3 notification to a function subscribed to it, when
// a handler runs the function in process (asynchronously, as Lambda does).
func (e *Emulator) notifyFunction(ctx context.Context, fn string, event []byte) error {
	if !e.functionRuns(fn) {
		e.log.Debug("a notification for a function that does not run in process", "function", fn)
		return nil
	}
	return e.invokeEvent(ctx, fn, event)
}

// validateHandler applies lambda.Start's rules up front, so a bad handler fails at
// registration rather than at the first event.
func validateHandler(h any) error {
	if _, ok := h.(lambda.Handler); ok {
		return nil
	}
	t := reflect.TypeOf(h)
	if t == nil || t.Kind() != reflect.Func {
		return fmt.Errorf("handler is %T, want a func or a lambda.Handler", h)
	}
	ctxType := reflect.TypeOf((*context.Context)(nil)).Elem()
	errType := reflect.TypeOf((*error)(nil)).Elem()
	switch {
	case t.NumIn() > 2:
		return fmt.Errorf("handler takes %d arguments, at most 2 (context.Context, event) allowed", t.NumIn())
	case t.NumIn() == 2 && !t.In(0).Implements(ctxType):
		return errors.New("handler's first of two arguments must be a context.Context")
	case t.NumOut() > 2:
		return fmt.Errorf("handler returns %d values, at most 2 (result, error) allowed", t.NumOut())
	case t.NumOut() >= 1 && !t.Out(t.NumOut()-1).Implements(errType):
		return errors.New("handler's last return value must be an error")
	}
	return nil
}

// Invoke calls function with payload, as Lambda's synchronous Invoke does, and returns its
// JSON response. The context carries a deadline of the function's timeout and a
// lambdacontext.LambdaContext.
func (e *Emulator) Invoke(ctx context.Context, name string, payload []byte) ([]byte, error) {
	e.working.Add(1)
	defer e.working.Add(-1)
	e.mu.Lock()
	var f function
	p := e.funcs[name]
	if p != nil {
		f = *p // a copy: a stack update or a registration may change the record meanwhile
	}
	known := sortedKeys(e.funcs)
	e.mu.Unlock()
	if p == nil {
		return nil, fmt.Errorf("invoke %s: no such function (registered: %v)", name, known)
	}
	if f.handler == nil {
		return nil, fmt.Errorf("invoke %s: the function exists but no in-process handler is registered for it", name)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID:       newID(),
		InvokedFunctionArn: e.functionARN(name),
	})
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("panic: %v", p)}
			}
		}()
		out, err := f.handler.Invoke(ctx, payload)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("invoke %s: %w", name, r.err)
		}
		return r.out, nil
	case <-ctx.Done():
		// Lambda stops the function at its timeout; the handler's goroutine is abandoned.
		return nil, fmt.Errorf("invoke %s: Task timed out after %.2f seconds", name, f.timeout.Seconds())
	}
}

// ESMOptions configures an SQS event source mapping.
type ESMOptions struct {
	// BatchSize is the most records per invocation (default 10).
	BatchSize int
	// ReportBatchItemFailures makes a response's batchItemFailures return only those
	// records to the queue.
	ReportBatchItemFailures bool
	// MaxBatchingWindow gathers records for up to this long before invoking.
	MaxBatchingWindow time.Duration
	// MaxConcurrency is the most batches invoked at once (ScalingConfig's
	// MaximumConcurrency, 2 to 1000). Without it the emulator runs DefaultESMConcurrency.
	MaxConcurrency int
}

// DefaultESMConcurrency is how many batches an SQS mapping without MaxConcurrency invokes
// at once. Lambda's guide: "When messages are available, Lambda starts processing five
// batches at a time with five concurrent invocations of your function", and scales up
// from there while messages remain; the emulator stays at those five, since its queues
// are never deep enough to need more and five already lets a batch that lingers hold up
// nothing behind it.
const DefaultESMConcurrency = 5

// AddEventSourceMapping polls the queue and invokes function with events.SQSEvent batches,
// as Lambda does: records of a successful invocation are deleted; records of a failed one
// (or reported in batchItemFailures) return after the queue's visibility timeout and go
// to its dead-letter queue after maxReceiveCount.
func (e *Emulator) AddEventSourceMapping(queueName, function string, o ESMOptions) error {
	e.mu.Lock()
	_, ok := e.funcs[function]
	e.mu.Unlock()
	if !ok {
		return fmt.Errorf("event source mapping %s -> %s: no such function: register it first", queueName, function)
	}
	return e.startMapping(newID(), queueName, function, o)
}

// mapping is one running SQS event source mapping.
type mapping struct {
	queue, function string
	o               ESMOptions
	cancel          context.CancelFunc
}

// startMapping starts (or restarts) the mapping id. Its poller receives only while the
// function has a handler, so messages wait in the queue for one, as for a function whose
// code is still being deployed.
func (e *Emulator) startMapping(id, queueName, function string, o ESMOptions) error {
	if o.BatchSize <= 0 {
		o.BatchSize = 10
	}
	if o.BatchSize > 10 {
		return fmt.Errorf("event source mapping %s -> %s: batch size %d: the emulator supports at most 10", queueName, function, o.BatchSize)
	}
	if o.MaxConcurrency == 0 {
		o.MaxConcurrency = DefaultESMConcurrency
	}
	if o.MaxConcurrency < 2 || o.MaxConcurrency > 1000 {
		return fmt.Errorf("event source mapping %s -> %s: MaximumConcurrency %d is not valid: 2 to 1000", queueName, function, o.MaxConcurrency)
	}
	// Fail now on a missing queue rather than in the poller.
	if err := e.queueNamed(queueName); err != nil {
		return fmt.Errorf("event source mapping %s -> %s: %w", queueName, function, err)
	}
	e.stopMapping(id)
	ctx, cancel := context.WithCancel(e.ctx)
	m := &mapping{queue: queueName, function: function, o: o, cancel: cancel}
	e.mu.Lock()
	e.mappings[id] = m
	e.mu.Unlock()
	// Each poller receives and invokes one batch at a time, so MaxConcurrency of them
	// invoke at most that many batches at once, as Lambda's pollers do.
	for range o.MaxConcurrency {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.poll(ctx, m)
		}()
	}
	return nil
}

// stopMapping stops the mapping id: its poller takes no more messages (a batch it is
// invoking finishes). It does not wait, because a stack deleting a mapping may hold locks
// the function being invoked needs.
func (e *Emulator) stopMapping(id string) {
	e.mu.Lock()
	m := e.mappings[id]
	delete(e.mappings, id)
	e.mu.Unlock()
	if m != nil {
		m.cancel()
	}
}

func (e *Emulator) poll(ctx context.Context, m *mapping) {
	queueName, function, o := m.queue, m.function, m.o
	for ctx.Err() == nil {
		if !e.awaitHandler(ctx, function) {
			return
		}
		msgs, err := e.home.sqs.Receive(ctx, queueName, o.BatchSize, 20*time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			e.log.Error("event source mapping: receive failed", "queue", queueName, "function", function, "err", err)
			select {
			case <-e.opts.Clock.After(time.Second):
			case <-ctx.Done():
				return
			}
			continue
		}
		if len(msgs) == 0 {
			continue
		}
		if o.MaxBatchingWindow > 0 && len(msgs) < o.BatchSize {
			more, err := e.home.sqs.Receive(ctx, queueName, o.BatchSize-len(msgs), o.MaxBatchingWindow)
			if err == nil {
				msgs = append(msgs, more...)
			}
		}
		e.deliverBatch(queueName, function, o, msgs)
	}
}

func (e *Emulator) deliverBatch(queueName, function string, o ESMOptions, msgs []events.SQSMessage) {
	payload, err := json.Marshal(events.SQSEvent{Records: msgs})
	if err != nil {
		e.log.Error("event source mapping: encode event", "err", err)
		return
	}
	out, err := e.Invoke(e.ctx, function, payload)
	if err != nil {
		e.log.Info("event source mapping: invocation failed; records return after the visibility timeout",
			"queue", queueName, "function", function, "records", len(msgs), "err", err)
		return
	}
	failed := map[string]bool{}
	if o.ReportBatchItemFailures && len(out) > 0 && string(out) != "null" {
		var resp events.SQSEventResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			e.log.Info("event source mapping: response is not a batch response; deleting the batch", "function", function, "err", err)
		}
		ids := map[string]bool{}
		for _, m := range msgs {
			ids[m.MessageId] = true
		}
		for _, f := range resp.BatchItemFailures {
			if !ids[f.ItemIdentifier] {
				// Lambda treats an unknown or empty identifier as failure of the whole batch.
				e.log.Info("event source mapping: batchItemFailures names an unknown record; the whole batch fails",
					"function", function, "itemIdentifier", f.ItemIdentifier)
				return
			}
			failed[f.ItemIdentifier] = true
		}
	}
	for _, m := range msgs {
		if failed[m.MessageId] {
			continue
		}
		if err := e.home.sqs.Delete(queueName, m.ReceiptHandle); err != nil {
			e.log.Error("event source mapping: delete record", "queue", queueName, "messageId", m.MessageId, "err", err)
		}
	}
}

// queueNamed asks the home SQS, in process, for the queue's URL.
func (e *Emulator) queueNamed(name string) error {
	body, _ := json.Marshal(map[string]string{"QueueName": name})
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("X-Amz-Target", "AmazonSQS.GetQueueUrl")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	w := httptest.NewRecorder()
	e.home.sqs.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		return fmt.Errorf("queue %s: %s", name, strings.TrimSpace(w.Body.String()))
	}
	return nil
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
