package customresource_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/events"

	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/customresource"
)

// receiver is a ResponseURL endpoint that records what CloudFormation would receive.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []received
	status   int
}

type received struct {
	method      string
	contentType []string
	body        []byte
	resp        cfn.Response
}

func newReceiver(t *testing.T, status int) *receiver {
	t.Helper()
	r := &receiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		got := received{method: req.Method, contentType: req.Header.Values("Content-Type"), body: body}
		if err := json.Unmarshal(body, &got.resp); err != nil {
			t.Errorf("response body is not JSON: %v: %s", err, body)
		}
		r.mu.Lock()
		r.requests = append(r.requests, got)
		r.mu.Unlock()
		w.WriteHeader(r.status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) host() string { u, _ := url.Parse(r.URL); return u.Host }

func (r *receiver) got() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.requests...)
}

// provider is a Provider whose behaviour each test sets.
type provider struct {
	create, update, del func(ctx context.Context, req cfn.Event) (customresource.Result, error)
}

func (p provider) Create(ctx context.Context, req cfn.Event) (customresource.Result, error) {
	return p.create(ctx, req)
}
func (p provider) Update(ctx context.Context, req cfn.Event) (customresource.Result, error) {
	return p.update(ctx, req)
}
func (p provider) Delete(ctx context.Context, req cfn.Event) (customresource.Result, error) {
	return p.del(ctx, req)
}

func request(typ cfn.RequestType, responseURL string) cfn.Event {
	return cfn.Event{
		RequestType:        typ,
		RequestID:          "2f6e3a3c-0b5e-4d8e-9c59-1b3ea3f1c001",
		ResponseURL:        responseURL + "/arn%3Aaws%3Acloudformation%3Aus-east-1%3A123456789012%3Astack/shop-app/1a2b%7CWebPort%7C2f6e?X-Amz-Signature=secret",
		ResourceType:       "Custom::Thing",
		LogicalResourceID:  "WebPort",
		StackID:            "arn:aws:cloudformation:us-east-1:123456789012:stack/shop-app/1a2b3c4d-0000-0000-0000-000000000000",
		ResourceProperties: map[string]any{"ServiceToken": "arn:aws:sns:us-east-1:123456789012:cairn-ports", "Name": "x"},
	}
}

// sqsEvent wraps each request the way SNS delivers it to an SQS queue (without raw
// message delivery) and the queue hands it to Lambda.
func sqsEvent(t *testing.T, reqs ...cfn.Event) events.SQSEvent {
	t.Helper()
	var ev events.SQSEvent
	for i, r := range reqs {
		msg, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		ev.Records = append(ev.Records, sqsRecord(t, i, snsBody(t, string(msg))))
	}
	return ev
}

func snsBody(t *testing.T, message string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"Type":             "Notification",
		"MessageId":        "5f1c1e9e-6a53-5b2a-8f0e-3c1d2b9a7e11",
		"TopicArn":         "arn:aws:sns:us-east-1:123456789012:cairn-ports",
		"Subject":          "AWS CloudFormation custom resource request",
		"Message":          message,
		"Timestamp":        "2026-11-30T08:00:00.000Z",
		"SignatureVersion": "1",
		"Signature":        "EXAMPLE",
		"SigningCertURL":   "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-example.pem",
		"UnsubscribeURL":   "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sqsRecord(t *testing.T, i int, body string) events.SQSMessage {
	t.Helper()
	return events.SQSMessage{
		MessageId:      "msg-" + string(rune('a'+i)),
		ReceiptHandle:  "handle",
		Body:           body,
		Attributes:     map[string]string{"ApproximateReceiveCount": "1"},
		EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:cairn-ports",
		EventSource:    "aws:sqs",
		AWSRegion:      "us-east-1",
	}
}

func newHandler(r *receiver, p customresource.Provider, opts customresource.Options) *customresource.Handler {
	if r != nil {
		opts.AllowedHosts = append(opts.AllowedHosts, r.host())
	}
	if opts.PutBackoff == 0 {
		opts.PutBackoff = time.Millisecond
	}
	h := customresource.New(opts)
	h.Register("Custom::Thing", p)
	return h
}

func ok(id string, data map[string]any) func(context.Context, cfn.Event) (customresource.Result, error) {
	return func(context.Context, cfn.Event) (customresource.Result, error) {
		return customresource.Result{PhysicalResourceID: id, Data: data}, nil
	}
}

func fail(msg string) func(context.Context, cfn.Event) (customresource.Result, error) {
	return func(context.Context, cfn.Event) (customresource.Result, error) {
		return customresource.Result{}, errors.New(msg)
	}
}

func TestAnswers(t *testing.T) {
	big := map[string]any{"Blob": strings.Repeat("x", 5000)}
	tests := []struct {
		name         string
		typ          cfn.RequestType
		physicalID   string
		resourceType string
		p            provider
		wantStatus   cfn.StatusType
		wantID       string
		wantReason   []string
		wantData     map[string]any
		wantNoEcho   bool
	}{
		{name: "create succeeds", typ: cfn.RequestCreate, p: provider{create: ok("thing-1", map[string]any{"Port": "20000"})},
			wantStatus: cfn.StatusSuccess, wantID: "thing-1", wantData: map[string]any{"Port": "20000"}},
		{name: "create fails with marker id", typ: cfn.RequestCreate, p: provider{create: fail("pool web is exhausted")},
			wantStatus: cfn.StatusFailed, wantID: "failed-create-2f6e3a3c-0b5e-4d8e-9c59-1b3ea3f1c001",
			wantReason: []string{"Create Custom::Thing WebPort", "pool web is exhausted", "2f6e3a3c-0b5e-4d8e-9c59-1b3ea3f1c001"}},
		{name: "create panics", typ: cfn.RequestCreate,
			p:          provider{create: func(context.Context, cfn.Event) (customresource.Result, error) { panic("index out of range") }},
			wantStatus: cfn.StatusFailed, wantID: "failed-create-2f6e3a3c-0b5e-4d8e-9c59-1b3ea3f1c001",
			wantReason: []string{"panic: index out of range", "bug in cairn"}},
		{name: "create without physical id is a bug", typ: cfn.RequestCreate, p: provider{create: ok("", nil)},
			wantStatus: cfn.StatusFailed, wantID: "failed-create-2f6e3a3c-0b5e-4d8e-9c59-1b3ea3f1c001", wantReason: []string{"no physical resource id"}},
		{name: "update keeps id when provider returns none", typ: cfn.RequestUpdate, physicalID: "thing-1", p: provider{update: ok("", nil)},
			wantStatus: cfn.StatusSuccess, wantID: "thing-1"},
		{name: "update replaces", typ: cfn.RequestUpdate, physicalID: "thing-1", p: provider{update: ok("thing-2", nil)},
			wantStatus: cfn.StatusSuccess, wantID: "thing-2"},
		{name: "update fails keeps id", typ: cfn.RequestUpdate, physicalID: "thing-1", p: provider{update: fail("boom")},
			wantStatus: cfn.StatusFailed, wantID: "thing-1", wantReason: []string{"boom"}},
		{name: "delete fails keeps id", typ: cfn.RequestDelete, physicalID: "thing-1", p: provider{del: fail("s3 unavailable")},
			wantStatus: cfn.StatusFailed, wantID: "thing-1", wantReason: []string{"s3 unavailable"}},
		{name: "unknown type create", typ: cfn.RequestCreate, resourceType: "Custom::Other", p: provider{},
			wantStatus: cfn.StatusFailed, wantID: "failed-create-2f6e3a3c-0b5e-4d8e-9c59-1b3ea3f1c001",
			wantReason: []string{"serves Custom::Thing, not Custom::Other", "ServiceToken"}},
		{name: "unknown type delete succeeds", typ: cfn.RequestDelete, physicalID: "x-1", resourceType: "Custom::Other", p: provider{},
			wantStatus: cfn.StatusSuccess, wantID: "x-1"},
		{name: "unknown request type", typ: "Replace", physicalID: "thing-1", p: provider{},
			wantStatus: cfn.StatusFailed, wantID: "thing-1", wantReason: []string{`unknown RequestType "Replace"`}},
		{name: "oversized data fails but keeps the new id for the rollback delete", typ: cfn.RequestCreate, p: provider{create: ok("thing-1", big)},
			wantStatus: cfn.StatusFailed, wantID: "thing-1", wantReason: []string{"over CloudFormation's 4096-byte limit"}},
		{name: "oversized reason is truncated", typ: cfn.RequestCreate, p: provider{create: fail(strings.Repeat("é", 3000))},
			wantStatus: cfn.StatusFailed, wantID: "failed-create-2f6e3a3c-0b5e-4d8e-9c59-1b3ea3f1c001", wantReason: []string{"éé…"}},
		{name: "secret data is NoEcho", typ: cfn.RequestCreate,
			p: provider{create: func(context.Context, cfn.Event) (customresource.Result, error) {
				return customresource.Result{PhysicalResourceID: "s-1", Data: map[string]any{"Password": "p"}, NoEcho: true}, nil
			}},
			wantStatus: cfn.StatusSuccess, wantID: "s-1", wantData: map[string]any{"Password": "p"}, wantNoEcho: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newReceiver(t, http.StatusOK)
			req := request(tt.typ, r.URL)
			req.PhysicalResourceID = tt.physicalID
			if tt.resourceType != "" {
				req.ResourceType = tt.resourceType
			}
			h := newHandler(r, tt.p, customresource.Options{})
			out, err := h.HandleSQS(context.Background(), sqsEvent(t, req))
			if err != nil || len(out.BatchItemFailures) != 0 {
				t.Fatalf("HandleSQS = %+v, %v; want every record answered", out, err)
			}
			got := r.got()
			if len(got) != 1 {
				t.Fatalf("got %d PUTs, want 1", len(got))
			}
			g := got[0]
			if g.method != http.MethodPut || len(g.contentType) != 0 {
				t.Errorf("request: %s with Content-Type %q; want PUT without Content-Type", g.method, g.contentType)
			}
			if len(g.body) > customresource.MaxResponseBytes {
				t.Errorf("body is %d bytes, over %d", len(g.body), customresource.MaxResponseBytes)
			}
			resp := g.resp
			if resp.Status != tt.wantStatus || resp.PhysicalResourceID != tt.wantID {
				t.Errorf("answer %s %q, want %s %q (reason %q)", resp.Status, resp.PhysicalResourceID, tt.wantStatus, tt.wantID, resp.Reason)
			}
			if resp.RequestID != req.RequestID || resp.StackID != req.StackID || resp.LogicalResourceID != req.LogicalResourceID {
				t.Errorf("answer identifies %s/%s/%s, want the request's", resp.RequestID, resp.StackID, resp.LogicalResourceID)
			}
			for _, w := range tt.wantReason {
				if !strings.Contains(resp.Reason, w) {
					t.Errorf("reason %q lacks %q", resp.Reason, w)
				}
			}
			if len(tt.wantReason) == 0 && resp.Reason != "" {
				t.Errorf("unexpected reason %q", resp.Reason)
			}
			if tt.wantData != nil && !jsonEqual(resp.Data, tt.wantData) {
				t.Errorf("data %v, want %v", resp.Data, tt.wantData)
			}
			if resp.NoEcho != tt.wantNoEcho {
				t.Errorf("NoEcho %v, want %v", resp.NoEcho, tt.wantNoEcho)
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// A provider still running shortly before the Lambda deadline is answered FAILED, and its
// context is cancelled.
func TestTimeoutAnswersBeforeDeadline(t *testing.T) {
	r := newReceiver(t, http.StatusOK)
	start := time.Now()
	fake := clock.NewFake(start)
	cancelled := make(chan struct{})
	p := provider{create: func(ctx context.Context, _ cfn.Event) (customresource.Result, error) {
		<-ctx.Done()
		close(cancelled)
		return customresource.Result{}, ctx.Err()
	}}
	h := newHandler(r, p, customresource.Options{Clock: fake, SafetyMargin: 5 * time.Second})
	// The real deadline is far away; only the fake clock reaches it.
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(time.Hour))
	defer cancel()
	done := make(chan events.SQSEventResponse)
	go func() {
		out, _ := h.HandleSQS(ctx, sqsEvent(t, request(cfn.RequestCreate, r.URL)))
		done <- out
	}()
	if !fake.WaitForWaiters(1, 10*time.Second) {
		t.Fatal("handler never started waiting for the deadline")
	}
	fake.Advance(time.Hour - 5*time.Second)
	out := <-done
	<-cancelled
	if len(out.BatchItemFailures) != 0 {
		t.Fatalf("batch failures %v, want the record answered", out.BatchItemFailures)
	}
	got := r.got()
	if len(got) != 1 || got[0].resp.Status != cfn.StatusFailed || !strings.Contains(got[0].resp.Reason, "timed out") ||
		got[0].resp.PhysicalResourceID != customresource.FailedCreateID(got[0].resp.RequestID) {
		t.Fatalf("answers %+v, want one FAILED timed out with the marker id", got)
	}
}

// Records that cannot be answered are reported as batch item failures, so SQS retries
// them up to maxReceiveCount and then dead-letters them; the others are answered.
func TestUnanswerableRecordsAreBatchFailures(t *testing.T) {
	good := newReceiver(t, http.StatusOK)
	failing := newReceiver(t, http.StatusInternalServerError)
	forbidden := newReceiver(t, http.StatusForbidden)
	foreign := newReceiver(t, http.StatusOK) // not in the allow-list

	valid := request(cfn.RequestCreate, good.URL)
	msg, _ := json.Marshal(valid)
	missing := valid
	missing.StackID = ""
	missingMsg, _ := json.Marshal(missing)

	tests := []struct {
		name      string
		body      string
		receiver  *receiver
		wantPUTs  int
		wantCount int // batch failures
	}{
		{name: "answered", body: snsBody(t, string(msg)), receiver: good, wantPUTs: 1},
		{name: "raw message delivery answered", body: string(msg), receiver: good, wantPUTs: 1},
		{name: "body not JSON", body: "hello", wantCount: 1},
		{name: "SNS message not JSON", body: snsBody(t, "{not json"), wantCount: 1},
		{name: "SNS subscription confirmation", body: `{"Type":"SubscriptionConfirmation","Message":"confirm"}`, wantCount: 1},
		{name: "request lacks StackId", body: snsBody(t, string(missingMsg)), wantCount: 1},
		{name: "ResponseURL fails with 500, retried", body: bodyFor(t, failing.URL), receiver: failing, wantPUTs: 3, wantCount: 1},
		{name: "ResponseURL forbidden, not retried", body: bodyFor(t, forbidden.URL), receiver: forbidden, wantPUTs: 1, wantCount: 1},
		{name: "ResponseURL on a foreign host refused", body: bodyFor(t, foreign.URL), receiver: foreign, wantPUTs: 0, wantCount: 1},
		{name: "ResponseURL unreachable", body: bodyFor(t, unreachableURL()), wantCount: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := customresource.New(customresource.Options{
				AllowedHosts: []string{good.host(), failing.host(), forbidden.host(), unreachableHost},
				PutAttempts:  3, PutBackoff: time.Millisecond,
			})
			h.Register("Custom::Thing", provider{create: ok("thing-1", nil)})
			before := 0
			if tt.receiver != nil {
				before = len(tt.receiver.got())
			}
			ev := events.SQSEvent{Records: []events.SQSMessage{sqsRecord(t, 0, tt.body)}}
			out, err := h.HandleSQS(context.Background(), ev)
			if err != nil {
				t.Fatalf("HandleSQS error %v: a batch error would retry every record", err)
			}
			if len(out.BatchItemFailures) != tt.wantCount {
				t.Fatalf("batch failures %v, want %d", out.BatchItemFailures, tt.wantCount)
			}
			if tt.wantCount == 1 && out.BatchItemFailures[0].ItemIdentifier != "msg-a" {
				t.Errorf("failure names %q, want msg-a", out.BatchItemFailures[0].ItemIdentifier)
			}
			if tt.receiver != nil {
				if n := len(tt.receiver.got()) - before; n != tt.wantPUTs {
					t.Errorf("%d PUTs, want %d", n, tt.wantPUTs)
				}
			}
		})
	}
}

// An allowed host answering with a redirect must not get the response delivered elsewhere:
// the redirect is a failed delivery (left to SQS retries and the dead-letter queue), and
// the host it points to receives nothing, whichever client the handler was given.
func TestResponsePUTFollowsNoRedirect(t *testing.T) {
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
		for _, client := range []string{"default", "given"} {
			t.Run(fmt.Sprintf("%d %s client", status, client), func(t *testing.T) {
				outside := newReceiver(t, http.StatusOK) // not in the allow-list
				var redirects int
				var mu sync.Mutex
				allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					redirects++
					mu.Unlock()
					io.Copy(io.Discard, r.Body)
					http.Redirect(w, r, outside.URL+"/collect?"+r.URL.RawQuery, status)
				}))
				t.Cleanup(allowed.Close)
				var logs syncBuffer
				opts := customresource.Options{
					AllowedHosts: []string{strings.TrimPrefix(allowed.URL, "http://")},
					PutAttempts:  3, PutBackoff: time.Millisecond,
					Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				}
				if client == "given" {
					opts.HTTPClient = &http.Client{Timeout: 5 * time.Second}
				}
				h := customresource.New(opts)
				h.Register("Custom::Thing", provider{create: ok("thing-1", nil)})
				out, err := h.HandleSQS(context.Background(), sqsEvent(t, request(cfn.RequestCreate, allowed.URL)))
				if err != nil {
					t.Fatal(err)
				}
				if len(out.BatchItemFailures) != 1 {
					t.Errorf("batch failures %v, want the record: a redirect is not a delivery", out.BatchItemFailures)
				}
				if got := outside.got(); len(got) != 0 {
					t.Fatalf("the host outside the allow-list received %d request(s), first %s %s", len(got), got[0].method, got[0].body)
				}
				mu.Lock()
				defer mu.Unlock()
				if redirects != 1 {
					t.Errorf("the allowed host got %d PUTs, want 1 (a redirect is not retried)", redirects)
				}
				if want := fmt.Sprintf("HTTP %d redirect to %s refused", status, outside.host()); !strings.Contains(logs.String(), want) {
					t.Errorf("logs lack %q:\n%s", want, logs.String())
				}
				if strings.Contains(logs.String(), "X-Amz-Signature=secret") {
					t.Errorf("logs show the ResponseURL's signature:\n%s", logs.String())
				}
			})
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the handler's concurrent records.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

const unreachableHost = "127.0.0.1:1"

func unreachableURL() string { return "http://" + unreachableHost }

func bodyFor(t *testing.T, responseURL string) string {
	t.Helper()
	b, _ := json.Marshal(request(cfn.RequestCreate, responseURL))
	return snsBody(t, string(b))
}

func TestBatchReportsOnlyFailedRecords(t *testing.T) {
	r := newReceiver(t, http.StatusOK)
	h := newHandler(r, provider{create: ok("thing-1", nil)}, customresource.Options{})
	ev := sqsEvent(t, request(cfn.RequestCreate, r.URL), request(cfn.RequestCreate, "https://example.com"), request(cfn.RequestCreate, r.URL))
	out, err := h.HandleSQS(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.BatchItemFailures) != 1 || out.BatchItemFailures[0].ItemIdentifier != "msg-b" {
		t.Fatalf("batch failures %v, want only msg-b", out.BatchItemFailures)
	}
	if n := len(r.got()); n != 2 {
		t.Errorf("%d answers, want 2", n)
	}
}

// Only CloudFormation's https response bucket and configured hosts get a PUT.
func TestResponseURLValidation(t *testing.T) {
	tests := []struct {
		url  string
		want bool
	}{
		{"https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/arn?X-Amz-Signature=x", true},
		{"https://cloudformation-custom-resource-response-cnnorth1.s3.cn-north-1.amazonaws.com.cn/arn", true},
		{"http://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/arn", false},
		{"https://s3.amazonaws.com.evil.example/arn", false},
		{"https://evilamazonaws.com/arn", false},
		{"https://s3.amazonaws.com@evil.example/arn", false},
		{"https://user@s3.amazonaws.com/arn", false},
		{"http://127.0.0.1:4566/cfn-responses/x", true},
		{"http://127.0.0.1:4567/cfn-responses/x", false},
		{"http://emulator.local:9000/x", true},
		{"ftp://127.0.0.1:4566/x", false},
		{"://bad", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			var puts int
			h := customresource.New(customresource.Options{
				AllowedHosts: []string{"127.0.0.1:4566", "Emulator.Local"},
				PutAttempts:  1,
				HTTPClient: &http.Client{Transport: roundTrip(func(*http.Request) (*http.Response, error) {
					puts++
					return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
				})},
			})
			req := request(cfn.RequestDelete, "")
			req.ResponseURL = tt.url
			req.PhysicalResourceID = "x"
			b, _ := json.Marshal(req)
			out, _ := h.HandleSQS(context.Background(), events.SQSEvent{Records: []events.SQSMessage{sqsRecord(t, 0, snsBody(t, string(b)))}})
			if got := puts == 1 && len(out.BatchItemFailures) == 0; got != tt.want {
				t.Errorf("answered = %v (puts %d, failures %v), want %v", got, puts, out.BatchItemFailures, tt.want)
			}
		})
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestHosts(t *testing.T) {
	t.Setenv(customresource.HostsEnv, "127.0.0.1:4566, localhost\n")
	got := customresource.HostsFromEnv()
	if strings.Join(got, "|") != "127.0.0.1:4566|localhost" {
		t.Fatalf("HostsFromEnv = %q", got)
	}
	if id, ok := customresource.ParseFailedCreateID(customresource.FailedCreateID("r-1")); !ok || id != "r-1" {
		t.Fatalf("ParseFailedCreateID round trip = %q, %v", id, ok)
	}
	if _, ok := customresource.ParseFailedCreateID("default:20000:ab"); ok {
		t.Fatal("an allocation id parsed as a failed-create marker")
	}
}

// Decode never panics, and whatever it accepts can be answered.
func FuzzDecode(f *testing.F) {
	req, _ := json.Marshal(request(cfn.RequestCreate, "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com"))
	sns, _ := json.Marshal(map[string]any{"Type": "Notification", "Message": string(req)})
	for _, seed := range []string{string(sns), string(req), "", "null", "{}", `{"Type":"Notification","Message":"{}"}`, `{"RequestType":1}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		ev, err := customresource.Decode(body)
		if err != nil {
			return
		}
		if ev.RequestType == "" || ev.RequestID == "" || ev.ResponseURL == "" || ev.StackID == "" || ev.LogicalResourceID == "" || ev.ResourceType == "" {
			t.Fatalf("Decode accepted a request lacking required fields: %+v", ev)
		}
	})
}
