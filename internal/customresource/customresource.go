// Package customresource serves CloudFormation custom resources whose requests arrive
// through an SNS topic subscribed by an SQS queue, and answers every request.
//
// CloudFormation waits up to an hour for an answer that never comes, and a stack whose
// failed Create was answered with an empty PhysicalResourceId ends in ROLLBACK_FAILED
// (Empire's port allocator did both). So a Handler answers through the ResponseURL on
// success, on error, on panic and before the Lambda deadline, answers a failed Create with a
// non-empty marker id that a later Delete accepts, and refuses to send anything to a host
// that is not CloudFormation's response bucket or an explicitly configured emulator host
// (following no redirect, so the body reaches that host or nobody).
// A message it cannot answer (malformed, refused or unreachable ResponseURL) is reported as
// an SQS batch item failure, so the queue retries it a bounded number of times (its
// maxReceiveCount) and then moves it to the dead-letter queue.
package customresource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/events"

	"github.com/cairn-dev/cairn/internal/clock"
)

const (
	// MaxResponseBytes is CloudFormation's limit on the size of a response body.
	MaxResponseBytes = 4096
	// HostsEnv names the environment variable listing hosts (host or host:port, separated
	// by commas) that may receive responses besides https *.amazonaws.com; `cairn local up`
	// sets it to the emulator's address.
	HostsEnv = "CAIRN_RESPONSE_URL_HOSTS"

	failedCreatePrefix = "failed-create-"
)

// Result is what a Provider returns for a request that succeeded.
type Result struct {
	// PhysicalResourceID names the resource. Required for Create; on Update a different id
	// tells CloudFormation the resource was replaced (it then deletes the old one); empty on
	// Update or Delete keeps the request's id.
	PhysicalResourceID string
	// Data holds the attributes templates read with Fn::GetAtt.
	Data map[string]any
	// NoEcho hides Data from DescribeStack* output and from this package's logs; set it when
	// a value is secret.
	NoEcho bool
}

// Provider creates, updates and deletes the resources of one custom resource type. Its
// methods must be idempotent: SQS may deliver a request more than once.
type Provider interface {
	Create(ctx context.Context, req cfn.Event) (Result, error)
	Update(ctx context.Context, req cfn.Event) (Result, error)
	Delete(ctx context.Context, req cfn.Event) (Result, error)
}

// Options configure a Handler. The zero value is usable in AWS.
type Options struct {
	// AllowedHosts may receive responses over http or https, besides https hosts under
	// amazonaws.com. An entry with a port matches that host:port only; an entry without a
	// port matches the host on any port. See HostsFromEnv.
	AllowedHosts []string
	// HTTPClient sends the response PUT; default: a client with a 10-second timeout. The
	// handler uses a copy that never follows redirects, whatever CheckRedirect says: the
	// allow-list applies to the host that receives the body, not only to the first one.
	HTTPClient *http.Client
	// Clock measures the deadline and the retry backoff; default clock.Real.
	Clock clock.Clock
	// Logger receives structured logs; default slog.Default().
	Logger *slog.Logger
	// SafetyMargin is how long before the context's deadline a request still running is
	// answered FAILED, leaving time for the PUT; default 5s.
	SafetyMargin time.Duration
	// PutAttempts bounds the tries of the response PUT; default 4.
	PutAttempts int
	// PutBackoff is the wait after the first failed PUT, doubled after each; default 250ms.
	PutBackoff time.Duration
}

// Handler dispatches custom resource requests to the Provider registered for their
// ResourceType and answers them. Register every Provider before serving.
type Handler struct {
	providers map[string]Provider
	allowed   []string
	client    *http.Client
	clock     clock.Clock
	log       *slog.Logger
	margin    time.Duration
	attempts  int
	backoff   time.Duration
}

// New returns a Handler with no providers.
func New(opts Options) *Handler {
	h := &Handler{
		providers: map[string]Provider{},
		client:    opts.HTTPClient,
		clock:     opts.Clock,
		log:       opts.Logger,
		margin:    opts.SafetyMargin,
		attempts:  opts.PutAttempts,
		backoff:   opts.PutBackoff,
	}
	for _, a := range opts.AllowedHosts {
		if a = strings.ToLower(strings.TrimSpace(a)); a != "" {
			h.allowed = append(h.allowed, a)
		}
	}
	if h.client == nil {
		h.client = &http.Client{Timeout: 10 * time.Second}
	}
	c := *h.client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	h.client = &c
	if h.clock == nil {
		h.clock = clock.Real
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.margin <= 0 {
		h.margin = 5 * time.Second
	}
	if h.attempts <= 0 {
		h.attempts = 4
	}
	if h.backoff <= 0 {
		h.backoff = 250 * time.Millisecond
	}
	return h
}

// Register makes p serve requests whose ResourceType is resourceType (e.g.
// "Custom::PortAllocation").
func (h *Handler) Register(resourceType string, p Provider) {
	h.providers[resourceType] = p
}

// HostsFromEnv returns the hosts listed in HostsEnv.
func HostsFromEnv() []string {
	return ParseHosts(os.Getenv(HostsEnv))
}

// ParseHosts splits a comma- or space-separated list of hosts.
func ParseHosts(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
}

// FailedCreateID is the PhysicalResourceId answered for a Create that failed: never
// empty, so CloudFormation's rollback can delete it, and unique to the request.
func FailedCreateID(requestID string) string { return failedCreatePrefix + requestID }

// ParseFailedCreateID reports whether id is a FailedCreateID and returns its request id.
func ParseFailedCreateID(id string) (requestID string, ok bool) {
	return strings.CutPrefix(id, failedCreatePrefix)
}

// HandleSQS serves one batch from the queue. It never returns an error: each record that
// could not be answered is listed in BatchItemFailures (the event source mapping must have
// ReportBatchItemFailures), so only that record is retried and, after maxReceiveCount
// receives, dead-lettered.
func (h *Handler) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var (
		mu     sync.Mutex
		failed []string
		wg     sync.WaitGroup
	)
	for _, rec := range ev.Records {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.handleRecord(ctx, rec); err != nil {
				mu.Lock()
				failed = append(failed, rec.MessageId)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Strings(failed)
	var resp events.SQSEventResponse
	for _, id := range failed {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	return resp, nil
}

// handleRecord answers one record's request; an error means it was not answered.
func (h *Handler) handleRecord(ctx context.Context, rec events.SQSMessage) error {
	log := h.log.With("message_id", rec.MessageId, "receive_count", rec.Attributes["ApproximateReceiveCount"])
	req, err := Decode(rec.Body)
	if err != nil {
		log.Error("custom resource message is malformed: not answered, left to SQS retries and the dead-letter queue", "err", err)
		return err
	}
	log = log.With("request_id", req.RequestID, "stack_id", req.StackID, "logical_id", req.LogicalResourceID,
		"request_type", string(req.RequestType), "resource_type", req.ResourceType)
	target, err := h.checkURL(req.ResponseURL)
	if err != nil {
		log.Error("refusing to answer: not answered, left to SQS retries and the dead-letter queue", "err", err)
		return err
	}
	log = log.With("response_host", target)

	resp := h.dispatch(ctx, log, req)
	body, err := encode(resp)
	if err != nil {
		log.Error("cannot encode the response: not answered", "err", err)
		return err
	}
	if err := h.put(ctx, req.ResponseURL, body); err != nil {
		log.Error("response not delivered: left to SQS retries and the dead-letter queue", "err", err)
		return err
	}
	attrs := []any{"status", string(resp.Status), "physical_id", resp.PhysicalResourceID}
	if resp.Reason != "" {
		attrs = append(attrs, "reason", resp.Reason)
	}
	if !resp.NoEcho && len(resp.Data) > 0 {
		attrs = append(attrs, "data", resp.Data)
	}
	log.Info("custom resource request answered", attrs...)
	return nil
}

// Decode extracts the custom resource request from an SQS message body: an SNS
// notification whose Message is the request, or the request itself when the subscription
// uses raw message delivery. It returns an error for anything that cannot be answered.
func Decode(body string) (cfn.Event, error) {
	var probe struct {
		Type        string `json:"Type"`
		RequestType string `json:"RequestType"`
	}
	if err := json.Unmarshal([]byte(body), &probe); err != nil {
		return cfn.Event{}, fmt.Errorf("SQS message body is not JSON (%v): expected an SNS notification carrying a CloudFormation custom resource request", err)
	}
	msg := body
	switch {
	case probe.Type == "Notification":
		var n events.SNSEntity
		if err := json.Unmarshal([]byte(body), &n); err != nil {
			return cfn.Event{}, fmt.Errorf("SNS notification in the SQS message is malformed: %v", err)
		}
		msg = n.Message
	case probe.RequestType != "":
	default:
		return cfn.Event{}, fmt.Errorf("SQS message body is neither an SNS notification (Type %q) nor a custom resource request: check what publishes to the topic", probe.Type)
	}
	var req cfn.Event
	if err := json.Unmarshal([]byte(msg), &req); err != nil {
		return cfn.Event{}, fmt.Errorf("SNS message is not a CloudFormation custom resource request: %v", err)
	}
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"RequestType", string(req.RequestType)}, {"RequestId", req.RequestID}, {"ResponseURL", req.ResponseURL},
		{"StackId", req.StackID}, {"LogicalResourceId", req.LogicalResourceID}, {"ResourceType", req.ResourceType},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return cfn.Event{}, fmt.Errorf("custom resource request lacks %s", strings.Join(missing, ", "))
	}
	return req, nil
}

// checkURL allows https on amazonaws.com (CloudFormation's presigned S3 URLs) and the
// configured hosts, and returns the host to log (never the URL: its query is a credential).
func (h *Handler) checkURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("ResponseURL is not a URL")
	}
	host := strings.ToLower(u.Host)
	if u.User != nil {
		return host, fmt.Errorf("ResponseURL for host %s carries user information; CloudFormation never sends that", host)
	}
	name := strings.ToLower(u.Hostname())
	if u.Scheme == "https" && (strings.HasSuffix(name, ".amazonaws.com") || strings.HasSuffix(name, ".amazonaws.com.cn")) {
		return host, nil
	}
	if u.Scheme == "https" || u.Scheme == "http" {
		for _, a := range h.allowed {
			if a == host || (!strings.Contains(a, ":") && a == name) {
				return host, nil
			}
		}
	}
	return host, fmt.Errorf("ResponseURL %s://%s is neither an https amazonaws.com host nor listed in %s (%s): if this is your emulator, add its host:port there",
		u.Scheme, host, HostsEnv, strings.Join(h.allowed, ","))
}

type outcome struct {
	res Result
	err error
}

// dispatch runs the provider and builds the response; it always returns one to send.
func (h *Handler) dispatch(ctx context.Context, log *slog.Logger, req cfn.Event) cfn.Response {
	resp := cfn.Response{
		Status:             cfn.StatusFailed,
		RequestID:          req.RequestID,
		LogicalResourceID:  req.LogicalResourceID,
		StackID:            req.StackID,
		PhysicalResourceID: req.PhysicalResourceID,
	}
	if req.RequestType == cfn.RequestCreate || resp.PhysicalResourceID == "" {
		resp.PhysicalResourceID = FailedCreateID(req.RequestID)
	}
	p, ok := h.providers[req.ResourceType]
	if !ok {
		if req.RequestType == cfn.RequestDelete {
			// Nothing here created it, so nothing is left behind; failing would only
			// leave the stack in DELETE_FAILED.
			log.Warn("delete of a resource type this function does not serve: answered SUCCESS")
			resp.Status = cfn.StatusSuccess
			return resp
		}
		resp.Reason = fmt.Sprintf("this function serves %s, not %s: check the resource's Type and ServiceToken",
			strings.Join(h.types(), ", "), req.ResourceType)
		return resp
	}
	res, err := h.invoke(ctx, log, p, req)
	if err != nil {
		resp.Reason = fmt.Sprintf("%s %s %s: %v (request %s)", req.RequestType, req.ResourceType, req.LogicalResourceID, err, req.RequestID)
		return resp
	}
	if res.PhysicalResourceID == "" && req.RequestType == cfn.RequestCreate {
		resp.Reason = fmt.Sprintf("Create %s %s: the provider returned no physical resource id; this is a bug in cairn, report it with request %s",
			req.ResourceType, req.LogicalResourceID, req.RequestID)
		return resp
	}
	if res.PhysicalResourceID != "" {
		resp.PhysicalResourceID = res.PhysicalResourceID
	}
	resp.Status = cfn.StatusSuccess
	resp.Data = res.Data
	resp.NoEcho = res.NoEcho
	return resp
}

func (h *Handler) types() []string {
	ts := make([]string, 0, len(h.providers))
	for t := range h.providers {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	return ts
}

// invoke calls the provider, turning a panic into an error and giving up SafetyMargin
// before the context's deadline so that the answer still reaches CloudFormation.
func (h *Handler) invoke(ctx context.Context, log *slog.Logger, p Provider, req cfn.Event) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timeout <-chan time.Time
	var budget time.Duration
	if dl, ok := ctx.Deadline(); ok {
		budget = dl.Sub(h.clock.Now()) - h.margin
		timeout = h.clock.After(budget)
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				log.Error("provider panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				done <- outcome{err: fmt.Errorf("internal error (panic: %v); this is a bug in cairn: report it with this request id, and retry the stack operation", r)}
			}
		}()
		var o outcome
		switch req.RequestType {
		case cfn.RequestCreate:
			o.res, o.err = p.Create(ctx, req)
		case cfn.RequestUpdate:
			o.res, o.err = p.Update(ctx, req)
		case cfn.RequestDelete:
			o.res, o.err = p.Delete(ctx, req)
		default:
			o.err = fmt.Errorf("unknown RequestType %q: expected Create, Update or Delete", req.RequestType)
		}
		done <- o
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-timeout:
		log.Error("provider timed out; answering FAILED before the Lambda deadline", "budget", budget.String())
		return Result{}, fmt.Errorf("timed out after %s, %s before the function's deadline: retry the stack operation; if it keeps timing out, raise the function's timeout",
			budget.Round(time.Millisecond), h.margin)
	}
}

// encode marshals resp within MaxResponseBytes: oversized data turns the answer into
// FAILED (templates would otherwise read attributes that are missing), and an oversized
// reason is truncated.
func encode(resp cfn.Response) ([]byte, error) {
	b, err := json.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("marshal response: %w", err)
	}
	if len(b) > MaxResponseBytes && len(resp.Data) > 0 {
		resp.Status = cfn.StatusFailed
		resp.Data = nil
		resp.Reason = fmt.Sprintf("the response would be %d bytes, over CloudFormation's %d-byte limit: the resource returned too much data (request %s)",
			len(b), MaxResponseBytes, resp.RequestID)
		if b, err = json.Marshal(resp); err != nil {
			return nil, fmt.Errorf("marshal response: %w", err)
		}
	}
	for len(b) > MaxResponseBytes && resp.Reason != "" {
		cut := max(len(resp.Reason)-(len(b)-MaxResponseBytes)-len("…"), 0)
		for cut > 0 && !utf8.RuneStart(resp.Reason[cut]) {
			cut--
		}
		resp.Reason = resp.Reason[:cut] + "…"
		if cut == 0 {
			resp.Reason = ""
		}
		if b, err = json.Marshal(resp); err != nil {
			return nil, fmt.Errorf("marshal response: %w", err)
		}
	}
	if len(b) > MaxResponseBytes {
		return nil, fmt.Errorf("response is %d bytes even without a reason, over the %d-byte limit (physical id %d bytes)", len(b), MaxResponseBytes, len(resp.PhysicalResourceID))
	}
	return b, nil
}

// put sends body to the ResponseURL, retrying network errors, throttling and server
// errors with backoff a bounded number of times.
func (h *Handler) put(ctx context.Context, rawURL string, body []byte) error {
	wait := h.backoff
	var err error
	attempt := 1
	for ; ; attempt++ {
		var retry bool
		if retry, err = h.putOnce(ctx, rawURL, body); err == nil {
			return nil
		}
		if !retry || attempt >= h.attempts {
			break
		}
		select {
		case <-h.clock.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("PUT response: %w (after %d attempts; last: %v)", ctx.Err(), attempt, err)
		}
		wait *= 2
	}
	return fmt.Errorf("PUT response: %w (after %d attempts)", err, attempt)
}

// putOnce sends one PUT without a Content-Type (the presigned URL is signed without one)
// and reports whether a failure is worth retrying.
func (h *Handler) putOnce(ctx context.Context, rawURL string, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, rawURL, bytes.NewReader(body))
	if err != nil {
		return false, errors.New("cannot build the request for the ResponseURL")
	}
	res, err := h.client.Do(req)
	if err != nil {
		// url.Error repeats the URL, whose query string is a credential: keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return ctx.Err() == nil, err
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	if res.StatusCode/100 == 2 {
		return false, nil
	}
	if res.StatusCode/100 == 3 {
		// Only the host the allow-list let through may receive the body; a redirect
		// elsewhere (or anywhere) is a failed delivery. The location's query, like the
		// ResponseURL's, may be a credential: only its host is said.
		to := "no location"
		if loc, err := res.Location(); err == nil {
			to = loc.Host
		}
		return false, fmt.Errorf("HTTP %d redirect to %s refused: a response goes only to the ResponseURL's host; CloudFormation's presigned URLs never redirect", res.StatusCode, to)
	}
	retryable := []int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout}
	return slices.Contains(retryable, res.StatusCode), fmt.Errorf("HTTP %d: %s", res.StatusCode, strings.TrimSpace(string(msg)))
}
