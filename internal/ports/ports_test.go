package ports_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal/s3local"
	"github.com/cairn-dev/cairn/internal/customresource"
	"github.com/cairn-dev/cairn/internal/ports"
)

const (
	bucket = "cairn-test"
	// responseHost is the ResponseURL host in the fixtures; tests point it at a receiver.
	responseHost = "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com"
)

var testPools = ports.Pools{"default": {20000, 29999}, "web": {8000, 8099}, "tiny": {30000, 30002}}

// newS3 serves the emulator's S3 and returns a client of it with cairn's bucket created.
func newS3(tb testing.TB) *s3.Client {
	tb.Helper()
	svc, err := s3local.New(s3local.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(svc)
	tb.Cleanup(srv.Close)
	cfg, err := config.LoadDefaultConfig(context.Background(), awsclient.WithSafeBodies(),
		config.WithRegion("us-east-1"),
		config.WithBaseEndpoint(srv.URL),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	)
	if err != nil {
		tb.Fatal(err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		tb.Fatal(err)
	}
	return client
}

// receiver plays CloudFormation's response bucket.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	answers []cfn.Response
	puts    int
	status  int
}

func newReceiver(tb testing.TB) *receiver {
	tb.Helper()
	r := &receiver{status: http.StatusOK}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.puts++
		if req.Method != http.MethodPut || req.Header.Get("Content-Type") != "" {
			tb.Errorf("response sent as %s with Content-Type %q; CloudFormation wants a PUT without one", req.Method, req.Header.Get("Content-Type"))
		}
		var resp cfn.Response
		if err := json.Unmarshal(body, &resp); err != nil {
			tb.Errorf("response is not JSON: %v", err)
		}
		if r.status == http.StatusOK {
			r.answers = append(r.answers, resp)
		}
		w.WriteHeader(r.status)
	}))
	tb.Cleanup(r.Close)
	return r
}

func (r *receiver) host() string { u, _ := url.Parse(r.URL); return u.Host }

func (r *receiver) setStatus(s int) { r.mu.Lock(); r.status = s; r.mu.Unlock() }

func (r *receiver) counts() (puts, answers int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.puts, len(r.answers)
}

func (r *receiver) last() cfn.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.answers) == 0 {
		return cfn.Response{}
	}
	return r.answers[len(r.answers)-1]
}

type env struct {
	client  ports.S3API
	recv    *receiver
	handler *customresource.Handler
	allowed []string
}

func newEnv(t *testing.T, client ports.S3API, allowed ...string) *env {
	t.Helper()
	if client == nil {
		client = newS3(t)
	}
	e := &env{client: client, recv: newReceiver(t)}
	if allowed == nil {
		allowed = []string{e.recv.host()}
	}
	e.allowed = allowed
	e.handler = e.instance(t)
	return e
}

// instance returns another ports function instance (its own handler and store) on the same
// bucket, as Lambda runs concurrent instances.
func (e *env) instance(t testing.TB) *customresource.Handler {
	t.Helper()
	h, err := ports.NewHandler(e.client, ports.Config{
		Bucket: bucket, Pools: testPools,
		Handler: customresource.Options{AllowedHosts: e.allowed, PutAttempts: 3, PutBackoff: time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// fixture reads an SQS event from testdata, pointing its ResponseURL at the receiver and
// its PhysicalResourceId placeholder at physicalID, then applying more old, new pairs.
func (e *env) fixture(t testing.TB, name, physicalID string, oldnew ...string) events.SQSEvent {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer(append([]string{responseHost, e.recv.URL, "PHYSICAL_ID", physicalID}, oldnew...)...).Replace(string(raw))
	var ev events.SQSEvent
	if err := json.Unmarshal([]byte(s), &ev); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ev
}

// deliver hands the fixture to the handler as Lambda would and returns the answer.
func (e *env) deliver(t *testing.T, name, physicalID string) (cfn.Response, events.SQSEventResponse) {
	t.Helper()
	_, before := e.recv.counts()
	out, err := e.handler.HandleSQS(context.Background(), e.fixture(t, name, physicalID))
	if err != nil {
		t.Fatalf("%s: HandleSQS error %v", name, err)
	}
	if _, after := e.recv.counts(); after == before {
		return cfn.Response{}, out
	}
	return e.recv.last(), out
}

// allocated lists pool's blocks as stored in the bucket.
func allocated(t *testing.T, client ports.S3API, pool string) []string {
	t.Helper()
	allocs, err := ports.NewStore(client, bucket, nil).Allocations(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, a := range allocs {
		out = append(out, a.PortList())
	}
	return out
}

type step struct {
	fixture    string
	physicalOf int // substitute the physical id answered at this earlier step; -1: none
	status     cfn.StatusType
	ports      string // Data.Ports wanted on SUCCESS
	sameIDAs   int    // the physical id must equal that of this earlier step; -1: must be new
	reason     string // substring of Reason wanted on FAILED
	id         string // exact physical id wanted, if set
}

func TestPortAllocation(t *testing.T) {
	const none = -1
	tests := []struct {
		name  string
		steps []step
		pools map[string][]string // blocks left in each pool
	}{
		{name: "duplicate delivery returns the same allocation", steps: []step{
			{fixture: "create-web-port.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20000", sameIDAs: none},
			{fixture: "create-web-port.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20000", sameIDAs: 0},
		}, pools: map[string][]string{"default": {"20000"}}},
		{name: "replayed create with a new request id returns the same allocation", steps: []step{
			{fixture: "create-web-port.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20000", sameIDAs: none},
			{fixture: "create-web-port-replayed.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20000", sameIDAs: 0},
		}, pools: map[string][]string{"default": {"20000"}}},
		{name: "delete before create succeeds and frees nothing", steps: []step{
			{fixture: "delete-never-created.json", physicalOf: none, status: cfn.StatusSuccess, id: "default:20000:0badc0de", sameIDAs: none},
			{fixture: "delete-failed-create.json", physicalOf: none, status: cfn.StatusSuccess, id: "failed-create-c4d5e6f7-0001-4a1b-9c2d-3e4f5a6b7c8d", sameIDAs: none},
			{fixture: "create-web-port.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20000", sameIDAs: none},
		}, pools: map[string][]string{"default": {"20000"}}},
		{name: "delete of a failed create's marker frees a block the timed-out create stored late", steps: []step{
			{fixture: "create-web-port.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20000", sameIDAs: none},
			{fixture: "delete-failed-create.json", physicalOf: none, status: cfn.StatusSuccess, id: "failed-create-c4d5e6f7-0001-4a1b-9c2d-3e4f5a6b7c8d", sameIDAs: none},
		}, pools: map[string][]string{"default": {}}},
		{name: "delete frees, and a duplicate delete succeeds", steps: []step{
			{fixture: "create-web-port.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20000", sameIDAs: none},
			{fixture: "create-admin-ports.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20100,20101,20102", sameIDAs: none},
			{fixture: "delete-web-port.json", physicalOf: 0, status: cfn.StatusSuccess, sameIDAs: 0},
			{fixture: "delete-web-port.json", physicalOf: 0, status: cfn.StatusSuccess, sameIDAs: 0},
		}, pools: map[string][]string{"default": {"20100,20101,20102"}}},
		// A request names its owner (StackId, LogicalResourceId); one naming another
		// owner's allocation is answered as CloudFormation expects of an id the provider
		// does not hold (Delete: SUCCESS; Update: a replacement) and leaves that block alone.
		{name: "delete from another stack naming a live allocation frees nothing", steps: []step{
			{fixture: "create-web-port.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20000", sameIDAs: none},
			{fixture: "delete-foreign-stack.json", physicalOf: 0, status: cfn.StatusSuccess, sameIDAs: 0},
			{fixture: "create-other-stack-preferred.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20001", sameIDAs: none},
		}, pools: map[string][]string{"default": {"20000", "20001"}}},
		{name: "delete from another resource of the same stack frees nothing", steps: []step{
			{fixture: "create-web-port.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20000", sameIDAs: none},
			{fixture: "delete-foreign-logical-id.json", physicalOf: 0, status: cfn.StatusSuccess, sameIDAs: 0},
		}, pools: map[string][]string{"default": {"20000"}}},
		{name: "update from another stack keeping Pool and Count gets its own block", steps: []step{
			{fixture: "create-web-port.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20000", sameIDAs: none},
			{fixture: "update-foreign-stack-preferred.json", physicalOf: 0, status: cfn.StatusSuccess, ports: "20500", sameIDAs: none},
			{fixture: "update-foreign-stack-preferred.json", physicalOf: 0, status: cfn.StatusSuccess, ports: "20500", sameIDAs: 1},
		}, pools: map[string][]string{"default": {"20000", "20500"}}},
		{name: "update from another stack changing Count replaces, and the cleanup delete frees nothing of the owner's", steps: []step{
			{fixture: "create-web-port.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20000", sameIDAs: none},
			{fixture: "update-foreign-stack-count.json", physicalOf: 0, status: cfn.StatusSuccess, ports: "20001,20002", sameIDAs: none},
			{fixture: "delete-foreign-stack.json", physicalOf: 0, status: cfn.StatusSuccess, sameIDAs: 0},
		}, pools: map[string][]string{"default": {"20000", "20001,20002"}}},
		{name: "a taken Preferred port falls back to the lowest free block", steps: []step{
			{fixture: "create-admin-ports.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20100,20101,20102", sameIDAs: none},
			{fixture: "create-api-ports.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20000,20001", sameIDAs: none},
		}, pools: map[string][]string{"default": {"20000,20001", "20100,20101,20102"}}},
		{name: "Preferred outside the pool fails", steps: []step{
			{fixture: "create-preferred-outside.json", physicalOf: none, status: cfn.StatusFailed, sameIDAs: none,
				reason: "property Preferred 20000 (Count 1) is outside pool web (8000-8099)"},
		}, pools: map[string][]string{"web": {}}},
		{name: "update without replacement keeps the port", steps: []step{
			{fixture: "create-web-port.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20000", sameIDAs: none},
			{fixture: "update-web-port-preferred.json", physicalOf: 0, status: cfn.StatusSuccess, ports: "20000", sameIDAs: 0},
		}, pools: map[string][]string{"default": {"20000"}}},
		{name: "update of Count replaces, idempotently; the old block is freed by the cleanup delete", steps: []step{
			{fixture: "create-web-port.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20000", sameIDAs: none},
			{fixture: "update-web-port-count.json", physicalOf: 0, status: cfn.StatusSuccess, ports: "20001,20002", sameIDAs: none},
			{fixture: "update-web-port-count.json", physicalOf: 0, status: cfn.StatusSuccess, ports: "20001,20002", sameIDAs: 1},
			{fixture: "delete-web-port.json", physicalOf: 0, status: cfn.StatusSuccess, sameIDAs: 0},
		}, pools: map[string][]string{"default": {"20001,20002"}}},
		{name: "update of Pool replaces", steps: []step{
			{fixture: "create-web-port.json", physicalOf: none, status: cfn.StatusSuccess, ports: "20000", sameIDAs: none},
			{fixture: "update-web-port-pool.json", physicalOf: 0, status: cfn.StatusSuccess, ports: "8000", sameIDAs: none},
		}, pools: map[string][]string{"default": {"20000"}, "web": {"8000"}}},
		{name: "exhausted pool fails with a marker id and a reason", steps: []step{
			{fixture: "create-tiny-a.json", physicalOf: none, status: cfn.StatusSuccess, ports: "30000,30001", sameIDAs: none},
			{fixture: "create-tiny-b.json", physicalOf: none, status: cfn.StatusFailed, sameIDAs: none,
				id:     "failed-create-c4d5e6f7-0011-4a1b-9c2d-3e4f5a6b7c8d",
				reason: "port pool tiny (30000-30002) is exhausted: no free block of 2 contiguous ports (2 of 3 in use)"},
		}, pools: map[string][]string{"tiny": {"30000,30001"}}},
		{name: "unknown pool fails", steps: []step{
			{fixture: "create-unknown-pool.json", physicalOf: none, status: cfn.StatusFailed, sameIDAs: none,
				reason: `unknown port pool "gpu": the pools are default=20000-29999,tiny=30000-30002,web=8000-8099`},
		}, pools: map[string][]string{"default": {}}},
		{name: "invalid Count fails", steps: []step{
			{fixture: "create-bad-count.json", physicalOf: none, status: cfn.StatusFailed, sameIDAs: none,
				reason: "property Count must be a whole number, got two"},
		}, pools: map[string][]string{"default": {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			var answers []cfn.Response
			for i, s := range tt.steps {
				physical := ""
				if s.physicalOf != none {
					physical = answers[s.physicalOf].PhysicalResourceID
				}
				resp, out := e.deliver(t, s.fixture, physical)
				answers = append(answers, resp)
				if len(out.BatchItemFailures) != 0 {
					t.Fatalf("step %d %s: batch failures %v, want answered", i, s.fixture, out.BatchItemFailures)
				}
				if resp.Status != s.status {
					t.Fatalf("step %d %s: %s (%q), want %s", i, s.fixture, resp.Status, resp.Reason, s.status)
				}
				if resp.PhysicalResourceID == "" {
					t.Errorf("step %d %s: empty PhysicalResourceId", i, s.fixture)
				}
				if s.ports != "" {
					first, _, _ := strings.Cut(s.ports, ",")
					if resp.Data["Ports"] != s.ports || resp.Data["Port"] != first {
						t.Errorf("step %d %s: data %v, want Port %s Ports %s", i, s.fixture, resp.Data, first, s.ports)
					}
				}
				if s.id != "" && resp.PhysicalResourceID != s.id {
					t.Errorf("step %d %s: physical id %q, want %q", i, s.fixture, resp.PhysicalResourceID, s.id)
				}
				if s.sameIDAs != none && resp.PhysicalResourceID != answers[s.sameIDAs].PhysicalResourceID {
					t.Errorf("step %d %s: physical id %q, want step %d's %q", i, s.fixture, resp.PhysicalResourceID, s.sameIDAs, answers[s.sameIDAs].PhysicalResourceID)
				}
				if s.sameIDAs == none && s.id == "" {
					for j, prev := range answers[:i] {
						if prev.PhysicalResourceID == resp.PhysicalResourceID {
							t.Errorf("step %d %s: physical id %q reuses step %d's", i, s.fixture, resp.PhysicalResourceID, j)
						}
					}
				}
				if s.reason != "" && !strings.Contains(resp.Reason, s.reason) {
					t.Errorf("step %d %s: reason %q lacks %q", i, s.fixture, resp.Reason, s.reason)
				}
			}
			for pool, want := range tt.pools {
				if got := allocated(t, e.client, pool); strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("pool %s holds %q, want %q", pool, got, want)
				}
			}
		})
	}
}

// Messages that cannot be answered are left to SQS (batch item failure) and change nothing.
func TestUnanswerableMessages(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		status  int  // the receiver's answer
		foreign bool // the receiver is not in the allow-list
		puts    int
	}{
		{name: "body is not an SNS notification", fixture: "body-not-sns.json", status: http.StatusOK},
		{name: "SNS message is not a request", fixture: "sns-message-not-request.json", status: http.StatusOK},
		{name: "request lacks StackId", fixture: "create-missing-stack-id.json", status: http.StatusOK},
		{name: "ResponseURL on a foreign host", fixture: "create-web-port.json", status: http.StatusOK, foreign: true},
		{name: "ResponseURL fails", fixture: "create-web-port.json", status: http.StatusServiceUnavailable, puts: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var e *env
			if tt.foreign {
				e = newEnv(t, nil, "127.0.0.1:4566")
			} else {
				e = newEnv(t, nil)
			}
			e.recv.setStatus(tt.status)
			ev := e.fixture(t, tt.fixture, "")
			out, err := e.handler.HandleSQS(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.BatchItemFailures) != 1 || out.BatchItemFailures[0].ItemIdentifier != ev.Records[0].MessageId {
				t.Fatalf("batch failures %v, want %s", out.BatchItemFailures, ev.Records[0].MessageId)
			}
			if puts, _ := e.recv.counts(); puts != tt.puts {
				t.Errorf("%d PUTs to the ResponseURL, want %d", puts, tt.puts)
			}
			if tt.puts == 0 {
				if got := allocated(t, e.client, "default"); len(got) != 0 {
					t.Errorf("pool default holds %v after a refused message, want nothing", got)
				}
			}
		})
	}
}

// When the answer could not be delivered, SQS redelivers the message; the redelivery is
// answered with the block the first delivery stored.
func TestRedeliveryAfterFailedResponse(t *testing.T) {
	e := newEnv(t, nil)
	e.recv.setStatus(http.StatusInternalServerError)
	if _, out := e.deliver(t, "create-web-port.json", ""); len(out.BatchItemFailures) != 1 {
		t.Fatalf("batch failures %v, want the record", out.BatchItemFailures)
	}
	e.recv.setStatus(http.StatusOK)
	resp, out := e.deliver(t, "create-web-port.json", "")
	if len(out.BatchItemFailures) != 0 || resp.Status != cfn.StatusSuccess || resp.Data["Port"] != "20000" {
		t.Fatalf("redelivery answered %+v (failures %v), want SUCCESS port 20000", resp, out.BatchItemFailures)
	}
	if got := allocated(t, e.client, "default"); strings.Join(got, " ") != "20000" {
		t.Errorf("pool default holds %v, want only 20000", got)
	}
}

// panicky is an S3 client whose writes panic, to show a panic in the allocator is answered.
type panicky struct{ ports.S3API }

func (panicky) PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	panic("nil map in S3 client")
}

func TestPanicInAllocatorIsAnsweredFailed(t *testing.T) {
	e := newEnv(t, panicky{newS3(t)})
	resp, out := e.deliver(t, "create-web-port.json", "")
	if len(out.BatchItemFailures) != 0 {
		t.Fatalf("batch failures %v, want answered", out.BatchItemFailures)
	}
	if resp.Status != cfn.StatusFailed || resp.PhysicalResourceID != "failed-create-c4d5e6f7-0001-4a1b-9c2d-3e4f5a6b7c8d" ||
		!strings.Contains(resp.Reason, "panic: nil map in S3 client") {
		t.Fatalf("answer %s %q %q, want FAILED with the marker id and the panic as reason", resp.Status, resp.PhysicalResourceID, resp.Reason)
	}
}

func TestParsePools(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "default=20000-29999,web=8000-8099", want: "default=20000-29999,web=8000-8099"},
		{in: " web = 8000 - 8099 , ", want: "web=8000-8099"},
		{in: "", err: "no port pools"},
		{in: "default", err: "want NAME=FIRST-LAST"},
		{in: "a:b=1-2", err: "want NAME=FIRST-LAST"},
		{in: "x=9-1", err: "FIRST <= LAST"},
		{in: "x=1-70000", err: "<= 65535"},
		{in: "x=1-2,x=3-4", err: "defined twice"},
		{in: "a=8000-8100,b=8100-8200", err: "port pools a (8000-8100) and b (8100-8200) overlap"},
	}
	for _, tt := range tests {
		got, err := ports.ParsePools(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParsePools(%q) error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got.String() != tt.want {
			t.Errorf("ParsePools(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}
