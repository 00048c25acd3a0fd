package cfnlocal

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/clock"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type published struct{ Topic, Subject, Message string }

// env is an emulator behind an httptest server with recording fakes for SNS and EventBridge.
type env struct {
	t      testing.TB
	svc    *Service
	srv    *httptest.Server
	clk    *clock.Fake
	cfn    *cloudformation.Client
	mu     sync.Mutex
	pubs   []published
	events []events.CloudWatchEvent
	onPub  func(p published)
	s3     map[string]string
}

func newEnv(t testing.TB, tweak func(*Options)) *env {
	t.Helper()
	e := &env{t: t, clk: clock.NewFake(epoch), s3: map[string]string{}}
	mux := http.NewServeMux()
	e.srv = httptest.NewServer(mux)
	o := Options{
		Clock: e.clk,
		Publish: func(ctx context.Context, topic, subject, msg string) error {
			p := published{topic, subject, msg}
			e.mu.Lock()
			e.pubs = append(e.pubs, p)
			on := e.onPub
			e.mu.Unlock()
			if on != nil {
				on(p)
			}
			return nil
		},
		PutEvent: func(ctx context.Context, evt events.CloudWatchEvent) error {
			e.mu.Lock()
			e.events = append(e.events, evt)
			e.mu.Unlock()
			return nil
		},
		GetObject: func(ctx context.Context, bucket, key string) ([]byte, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			v, ok := e.s3[bucket+"/"+key]
			if !ok {
				return nil, os.ErrNotExist
			}
			return []byte(v), nil
		},
		BaseURL: func() string { return e.srv.URL },
	}
	if _, isTest := t.(*testing.T); isTest {
		o.Dir = t.TempDir() // every test's state persists, and is checked against memory at its end
	}
	if tweak != nil {
		tweak(&o)
	}
	svc, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	mux.Handle("/", svc)
	mux.Handle(ResponsePath, svc.ResponseHandler())
	mux.Handle("/_local/cloudformation/", svc.ControlHandler())
	t.Cleanup(func() {
		e.srv.Close()
		e.checkPersisted()
		if err := svc.Close(); err != nil {
			t.Error(err)
		}
	})
	// One attempt, so faults and refusals surface as they are (SafeBodies keeps the SDK
	// from losing an answer under load, as in the product's clients).
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"),
		config.WithBaseEndpoint(e.srv.URL),
		awsclient.WithSafeBodies(),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 1
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
				o.RateLimiter = ratelimit.None
			})
		}))
	if err != nil {
		t.Fatal(err)
	}
	e.cfn = cloudformation.NewFromConfig(cfg)
	return e
}

func (e *env) published() []published {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]published(nil), e.pubs...)
}

// settle advances the virtual clock far enough for every pending operation without
// custom resources to finish, and returns the stack.
func (e *env) settle(name string) types.Stack {
	e.t.Helper()
	e.clk.Advance(time.Hour)
	return e.stack(name)
}

func (e *env) stack(name string) types.Stack {
	e.t.Helper()
	out, err := e.cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil {
		e.t.Fatalf("describe %s: %v", name, err)
	}
	return out.Stacks[0]
}

func (e *env) create(name, body string, params map[string]string) string {
	e.t.Helper()
	out, err := e.cfn.CreateStack(context.Background(), &cloudformation.CreateStackInput{
		StackName: aws.String(name), TemplateBody: aws.String(body), Parameters: sdkParams(params),
		Capabilities: []types.Capability{types.CapabilityCapabilityNamedIam},
	})
	if err != nil {
		e.t.Fatalf("create %s: %v", name, err)
	}
	return aws.ToString(out.StackId)
}

// allEvents returns the stack's events oldest first, following every page.
func (e *env) allEvents(name string) []types.StackEvent {
	e.t.Helper()
	var evs []types.StackEvent
	p := cloudformation.NewDescribeStackEventsPaginator(e.cfn, &cloudformation.DescribeStackEventsInput{StackName: aws.String(name)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		evs = append(evs, out.StackEvents...)
	}
	for i, j := 0, len(evs)-1; i < j; i, j = i+1, j-1 {
		evs[i], evs[j] = evs[j], evs[i]
	}
	return evs
}

func sdkParams(m map[string]string) []types.Parameter {
	var out []types.Parameter
	for k, v := range m {
		out = append(out, types.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	return out
}

func outputs(s types.Stack) map[string]string {
	m := map[string]string{}
	for _, o := range s.Outputs {
		m[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	return m
}

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// eventLine renders an event compactly for assertions and failure messages.
func eventLine(ev types.StackEvent) string {
	s := aws.ToString(ev.LogicalResourceId) + " " + string(ev.ResourceStatus)
	if r := aws.ToString(ev.ResourceStatusReason); r != "" && r != "User Initiated" {
		s += " (" + r + ")"
	}
	return s
}

func eventLines(evs []types.StackEvent) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, eventLine(ev))
	}
	return out
}

func mustContainInOrder(t testing.TB, got []string, want ...string) {
	t.Helper()
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Fatalf("events lack %q (in order); got:\n%s", want[i], strings.Join(got, "\n"))
	}
}

// stepUntilSettled lets virtual time pass one second at a time, calling wait (for a custom
// resource provider's answers) before each step, until the stack is no longer in progress.
func (e *env) stepUntilSettled(name string, wait func()) types.Stack {
	e.t.Helper()
	for range 5000 {
		wait()
		e.clk.Advance(time.Second)
		st := e.stack(name)
		if !strings.HasSuffix(string(st.StackStatus), "_IN_PROGRESS") {
			return st
		}
	}
	e.t.Fatalf("stack %s never settled", name)
	return types.Stack{}
}

// checkPersisted reads the state back from Dir, as a restarted emulator would, and fails
// the test when it differs from the state in memory: what a save appends to the journal
// must be everything that changed.
func (e *env) checkPersisted() {
	e.t.Helper()
	s := e.svc
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.o.Dir == "" || s.closed {
		return
	}
	if err := s.save(); err != nil {
		e.t.Error(err)
		return
	}
	z, err := newSealer(s.o.Dir)
	if err != nil {
		e.t.Error(err)
		return
	}
	snap, err := readSnapshot(s.snapshotPath(), z)
	if err != nil {
		e.t.Error(err)
		return
	}
	disk := &Service{o: s.o, byID: map[string]*stack{}, st: snap.persisted}
	for _, st := range disk.st.Stacks {
		disk.byID[st.ID] = st
	}
	if err := disk.replay(snap.Gen, z); err != nil {
		e.t.Error(err)
		return
	}
	mem, _ := json.MarshalIndent(s.st, "", " ")
	got, _ := json.MarshalIndent(disk.st, "", " ")
	if !bytes.Equal(mem, got) {
		ml, gl := strings.Split(string(mem), "\n"), strings.Split(string(got), "\n")
		for i := range min(len(ml), len(gl)) {
			if ml[i] != gl[i] {
				e.t.Errorf("the state read back from %s differs from memory at line %d:\nmemory: %s\ndisk:   %s", s.o.Dir, i+1,
					strings.Join(ml[max(i-8, 0):min(i+3, len(ml))], "\n"), strings.Join(gl[max(i-8, 0):min(i+3, len(gl))], "\n"))
				return
			}
		}
		e.t.Errorf("the state read back from %s differs from memory: %d lines against %d", s.o.Dir, len(gl), len(ml))
	}
}
