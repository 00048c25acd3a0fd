// Package cfnlocal is the local emulator's CloudFormation: a test double of AWS
// CloudFormation that speaks the query protocol the SDKs and the AWS CLI use, simulates
// stack life cycles on a clock (real or virtual), and lets tests inject faults and drift.
//
// Stacks are plain data. A stack operation is a schedule of resource steps on the clock;
// every request first advances all stacks to Clock.Now(), and one background goroutine
// wakes at the next due time so events, custom resource requests and timeouts happen even
// when nobody asks. A template's resources are a graph of logical ids (DependsOn, Ref and
// GetAtt edges, and the names one resource gives another): they are made in the order of
// the graph's walker (package graph), the one the run engine uses for stacks, and deleted
// in its reverse.
package cfnlocal

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairn-dev/cairn/internal/clock"
)

// ResponsePath is where custom resource ResponseURLs point, below Options.BaseURL.
const ResponsePath = "/_local/cfn-response/"

const xmlns = "http://cloudformation.amazonaws.com/doc/2010-05-15/"

// Options configures a Service. Zero values get defaults.
type Options struct {
	Region, AccountID string // defaults us-east-1, 000000000000
	Clock             clock.Clock
	Dir               string // "" keeps state in memory; else state persists under Dir
	// GetObject fetches TemplateURL content from the emulator's S3.
	GetObject func(ctx context.Context, bucket, key string) ([]byte, error)
	// Publish sends custom resource requests and stack notifications to SNS.
	Publish func(ctx context.Context, topicARN, subject, message string) error
	// PutEvent sends stack status and drift detection events to EventBridge.
	PutEvent func(ctx context.Context, evt events.CloudWatchEvent) error
	// BaseURL is the emulator's URL; custom resource ResponseURLs are below it. While it
	// returns "" (the emulator does not listen yet) no stack advances; call Wake once it
	// is known.
	BaseURL func() string
	Logger  *slog.Logger

	// ResourceDelay is how long each resource operation takes (default 1s).
	ResourceDelay time.Duration
	// ChangeSetDelay is how long a change set takes to create (default 1s).
	ChangeSetDelay time.Duration
	// ChangeSetDelayMax and ResourceDelayMax, when above ChangeSetDelay and ResourceDelay,
	// make each change set and each resource operation take a time drawn uniformly between
	// the two: in AWS they take seconds to tens of seconds and vary, and a deployer that
	// only ever meets one fixed time is not measured by it.
	ChangeSetDelayMax, ResourceDelayMax time.Duration
	// DelaySeed seeds those draws (default 1): the same seed and the same operations in
	// the same order take the same times.
	DelaySeed uint64
	// CustomResourceTimeout is how long a stack waits for a custom resource response when
	// the resource sets no ServiceTimeout (default 2 minutes; AWS waits an hour).
	CustomResourceTimeout time.Duration
	// PageSize is the page size of paginated answers (default 100).
	PageSize int
	// SSMParameter resolves AWS::SSM::Parameter::Value<...> parameters; by default a
	// deterministic fake value (an ami- id for image ids) is used.
	SSMParameter func(name, typ string) (string, error)
	// DynamicReference resolves the key of a {{resolve:SERVICE:KEY}} dynamic reference
	// (SERVICE ssm, ssm-secure or secretsmanager) to its value, failing in the words of
	// AWS (ErrReferenceNotFound, wrapped, for an ssm parameter that does not exist); nil
	// leaves references as written. See dynamic.go for when it is called.
	DynamicReference func(service, key string) (string, error)
	// Providers make the real resources of the types they serve (see Provider), by type.
	Providers map[string]Provider
	// FunctionRuns reports whether the Lambda function of an ARN runs in process (a handler
	// is bound to it); custom resources whose ServiceToken names one are sent to it with
	// InvokeFunction, the others are answered by a stand-in (see StandIn). Called with the
	// emulator's lock held.
	FunctionRuns func(functionARN string) bool
	// InvokeFunction invokes a function asynchronously (InvocationType Event) with payload.
	InvokeFunction func(ctx context.Context, functionARN string, payload []byte) error
	// Alarm returns the state of the CloudWatch alarm of an ARN and when it was last set,
	// for rollback triggers (ok false: no such alarm); nil: no alarm exists.
	Alarm func(arn string) (state string, changed time.Time, ok bool)
}

// Service is the CloudFormation emulator.
type Service struct {
	o   Options
	clk clock.Clock
	log *slog.Logger

	mu sync.Mutex
	// flushMu orders the side effects a background tick sends (events, notifications)
	// before the requests that could observe its changes: ticks hold it, requests share it.
	flushMu   sync.RWMutex
	st        persisted
	byID      map[string]*stack
	outbox    []func(context.Context)
	scheduled time.Time // due time the background loop waits for
	calls     map[string]int
	callCount int
	templates map[string]*template     // parsed templates by body; they are never mutated
	j         *journal                 // the state's journal under Dir (persist.go)
	delays    map[string]time.Duration // resource delays by stack name (SetResourceDelay)
	// made records every change set created, deleted or not (MadeChangeSets).
	made   []MadeChangeSet
	drawMu sync.Mutex
	draws  *rand.Rand // of the delays between Options' delays and their Max (draw)

	wake   chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup
	closed bool
}

// persisted is everything the emulator keeps; it is written to Dir as JSON.
type persisted struct {
	Seq        int
	Stacks     []*stack
	ChangeSets []*changeSet
	Executed   []ExecutedChangeSet
	Faults     []*Fault
	StandIns   []*StandIn
	Signals    []*SignalStandIn
	Drifts     []*driftDetection
}

// New starts a Service and its background goroutine; Close stops it.
func New(o Options) (*Service, error) {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "000000000000"
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ResourceDelay <= 0 {
		o.ResourceDelay = time.Second
	}
	if o.ChangeSetDelay <= 0 {
		o.ChangeSetDelay = time.Second
	}
	if o.DelaySeed == 0 {
		o.DelaySeed = 1
	}
	if o.CustomResourceTimeout <= 0 {
		o.CustomResourceTimeout = 2 * time.Minute
	}
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	if o.BaseURL == nil {
		o.BaseURL = func() string { return "http://localhost" }
	}
	s := &Service{
		o: o, clk: o.Clock, log: o.Logger,
		byID:      map[string]*stack{},
		calls:     map[string]int{},
		templates: map[string]*template{},
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		draws:     rand.New(rand.NewPCG(o.DelaySeed, 0x63666e)),
	}
	if o.Dir != "" {
		if err := s.load(); err != nil {
			return nil, err
		}
	}
	s.wg.Add(1)
	go s.loop()
	return s, nil
}

// Close stops the background goroutine and saves state when Dir is set.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.done)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.save()
	if s.j != nil {
		if cerr := s.j.f.Close(); err == nil {
			err = cerr
		}
		s.j = nil
	}
	return err
}

// loop wakes at the next due time of any stack so progress happens without requests.
func (s *Service) loop() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		next, ok := s.nextDue()
		s.scheduled = next
		if !ok {
			s.scheduled = time.Time{}
		}
		now := s.clk.Now()
		s.mu.Unlock()
		var tick <-chan time.Time
		if ok && s.addressed() {
			tick = s.clk.After(next.Sub(now))
		}
		select {
		case <-s.done:
			return
		case <-s.wake:
		case <-tick:
			// Requests wait for what the tick sends, so no caller sees a stack's new status
			// before its events and notifications are out.
			s.flushMu.Lock()
			s.mu.Lock()
			s.advance(s.clk.Now())
			if err := s.save(); err != nil {
				s.log.Error("cloudformation emulator: save state", "err", err)
			}
			out := s.takeOutbox()
			s.mu.Unlock()
			s.flush(out)
			s.flushMu.Unlock()
		}
	}
}

// addressed reports whether the emulator's address (Options.BaseURL) is known, without
// which stacks do not advance.
func (s *Service) addressed() bool { return s.o.BaseURL() != "" }

// Wake resumes stacks once the emulator's address is known (its server started): what fell
// due meanwhile happens now.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// poke makes the background loop recompute its due time when due is earlier than what it
// waits for. Called with mu held.
func (s *Service) poke(due time.Time) {
	if !s.scheduled.IsZero() && !due.Before(s.scheduled) {
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Service) takeOutbox() []func(context.Context) {
	out := s.outbox
	s.outbox = nil
	return out
}

// flush runs side effects (SNS, EventBridge) outside mu, in the order one request or tick
// produced them. No lock is held, so a subscriber may call back into the emulator.
func (s *Service) flush(out []func(context.Context)) {
	if len(out) == 0 {
		return
	}
	for _, f := range out {
		f(context.Background())
	}
}

func (s *Service) nextSeq() int {
	s.st.Seq++
	return s.st.Seq
}

// apiError is an error answered to the caller with its AWS code and HTTP status.
type apiError struct {
	Code, Message string
	Status        int
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func validation(format string, args ...any) error {
	return &apiError{Code: "ValidationError", Message: fmt.Sprintf(format, args...), Status: http.StatusBadRequest}
}

func stackNotFound(name string) error {
	return validation("Stack with id %s does not exist", name)
}

type handler func(s *Service, f form) (any, error)

var actions = map[string]handler{}

// ServeHTTP answers CloudFormation query protocol requests.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqID := hashUUID("request", fmt.Sprint(time.Now().UnixNano()), r.RemoteAddr)
	w.Header().Set("x-amzn-RequestId", reqID)
	if err := r.ParseForm(); err != nil {
		writeError(w, reqID, &apiError{Code: "MalformedQueryString", Message: err.Error(), Status: 400})
		return
	}
	action := r.Form.Get("Action")
	h, ok := actions[action]
	if !ok {
		writeError(w, reqID, &apiError{Code: "InvalidAction", Message: fmt.Sprintf("The action %q is not valid for this web service (the emulator implements %d CloudFormation actions).", action, len(actions)), Status: 400})
		return
	}
	s.flushMu.RLock()
	defer s.flushMu.RUnlock()
	s.mu.Lock()
	s.calls[action]++
	s.callCount++
	if s.throttled() {
		s.mu.Unlock()
		writeError(w, reqID, &apiError{Code: "Throttling", Message: "Rate exceeded", Status: 400})
		return
	}
	res, err := s.call(h, form{r.Form})
	s.touch(s.requestStack(form{r.Form}))
	if serr := s.save(); serr != nil {
		s.log.Error("cloudformation emulator: save state", "err", serr)
	}
	out := s.takeOutbox()
	s.mu.Unlock()
	s.flush(out)
	s.log.Debug("cloudformation", "action", action, "err", err)
	if err != nil {
		writeError(w, reqID, err)
		return
	}
	writeResult(w, reqID, action, res)
}

type responseMetadata struct {
	RequestID string `xml:"RequestId"`
}

func writeResult(w http.ResponseWriter, reqID, action string, res any) {
	type envelope struct {
		XMLName  xml.Name
		Xmlns    string           `xml:"xmlns,attr"`
		Result   any              `xml:",omitempty"`
		Metadata responseMetadata `xml:"ResponseMetadata"`
	}
	env := envelope{XMLName: xml.Name{Local: action + "Response"}, Xmlns: xmlns, Metadata: responseMetadata{reqID}}
	if res == nil {
		res = struct{}{}
	}
	env.Result = resultWrapper{name: action + "Result", v: res}
	b, err := xml.Marshal(env)
	if err != nil {
		writeError(w, reqID, fmt.Errorf("encode %s response: %w", action, err))
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(b)
}

// resultWrapper renders v under the element <ActionResult>.
type resultWrapper struct {
	name string
	v    any
}

func (r resultWrapper) MarshalXML(e *xml.Encoder, _ xml.StartElement) error {
	return e.EncodeElement(r.v, xml.StartElement{Name: xml.Name{Local: r.name}})
}

func writeError(w http.ResponseWriter, reqID string, err error) {
	var ae *apiError
	var ve *validationError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &ve):
		ae = &apiError{Code: "ValidationError", Message: err.Error(), Status: 400}
	default:
		ae = &apiError{Code: "InternalFailure", Message: err.Error(), Status: 500}
	}
	typ := "Sender"
	if ae.Status >= 500 {
		typ = "Receiver"
	}
	type xerr struct {
		Type    string
		Code    string
		Message string
	}
	type envelope struct {
		XMLName   xml.Name `xml:"ErrorResponse"`
		Xmlns     string   `xml:"xmlns,attr"`
		Error     xerr
		RequestID string `xml:"RequestId"`
	}
	b, _ := xml.Marshal(envelope{Xmlns: xmlns, Error: xerr{typ, ae.Code, ae.Message}, RequestID: reqID})
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(ae.Status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(b)
}

// form reads query protocol parameters.
type form struct{ v map[string][]string }

func (f form) get(k string) string {
	if l := f.v[k]; len(l) > 0 {
		return l[0]
	}
	return ""
}

func (f form) has(k string) bool { _, ok := f.v[k]; return ok }

// list returns the values of k.member.1, k.member.2, ...
func (f form) list(k string) []string {
	var out []string
	for i := 1; ; i++ {
		key := fmt.Sprintf("%s.member.%d", k, i)
		if !f.has(key) {
			return out
		}
		out = append(out, f.get(key))
	}
}

// structs returns the members k.member.N.Field as maps of Field to value.
func (f form) structs(k string) []map[string]string {
	var out []map[string]string
	for i := 1; ; i++ {
		prefix := fmt.Sprintf("%s.member.%d.", k, i)
		m := map[string]string{}
		for key, v := range f.v {
			if strings.HasPrefix(key, prefix) && len(v) > 0 {
				m[strings.TrimPrefix(key, prefix)] = v[0]
			}
		}
		if len(m) == 0 {
			return out
		}
		out = append(out, m)
	}
}

// xtime renders timestamps the way CloudFormation does.
type xtime time.Time

func (t xtime) MarshalText() ([]byte, error) {
	return []byte(time.Time(t).UTC().Format("2006-01-02T15:04:05.000Z")), nil
}

func tp(t time.Time) *xtime {
	if t.IsZero() {
		return nil
	}
	x := xtime(t)
	return &x
}

// page slices items for a NextToken, which is the index of the first item as a string.
func page[T any](items []T, token string, size int) ([]T, string, error) {
	start := 0
	if token != "" {
		if _, err := fmt.Sscanf(token, "%d", &start); err != nil || start < 0 || start > len(items) {
			return nil, "", validation("Invalid NextToken %q", token)
		}
	}
	end := min(start+size, len(items))
	next := ""
	if end < len(items) {
		next = fmt.Sprint(end)
	}
	return items[start:end], next, nil
}

// parse parses a template body, remembering the result: a simulation evaluates the same
// few templates thousands of times. Called with mu held.
func (s *Service) parse(body string) (*template, error) {
	if t, ok := s.templates[body]; ok {
		return t, nil
	}
	t, err := parseTemplate(body)
	if err == nil {
		err = unrecognizedTypes(t)
	}
	if err != nil {
		return nil, err
	}
	if len(s.templates) > 500 {
		clear(s.templates)
	}
	s.templates[body] = t
	return t, nil
}

// requestStack is the stack a request names (by StackName, or by a change set's ARN), for
// saving what the request changed of it. Called with mu held.
func (s *Service) requestStack(f form) *stack {
	if st := s.findStack(f.get("StackName")); st != nil {
		return st
	}
	if cs := s.findChangeSet(f.get("ChangeSetName"), ""); cs != nil {
		return s.byID[cs.StackID]
	}
	return nil
}

// call advances the simulation and runs h; a panic becomes an InternalFailure answer
// instead of a crashed emulator with its lock held. Called with mu held.
func (s *Service) call(h handler, f form) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("cloudformation emulator: handler panicked", "panic", p, "action", f.get("Action"))
			res, err = nil, &apiError{Code: "InternalFailure", Message: fmt.Sprintf("the CloudFormation emulator failed on %s: %v", f.get("Action"), p), Status: 500}
		}
	}()
	s.advance(s.clk.Now())
	return h(s, f)
}

// Actions lists the actions this emulator serves, sorted.
func Actions() []string { return sortedKeys(actions) }
