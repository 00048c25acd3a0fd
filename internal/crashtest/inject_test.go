package crashtest

import (
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/aws/smithy-go/middleware"

	"github.com/cairn-dev/cairn/internal/clock"
)

// when says whether a crash comes before its call reaches AWS, or after AWS acted on it
// and before the deployer sees the answer.
type when string

const (
	before when = "before"
	after  when = "after"
)

// how a crash kills the invocation.
type how string

const (
	panics  how = "panic"  // the call panics: the handler unwinds from there
	cancels how = "cancel" // the invocation's context is cancelled and the call fails
	// restarts kills the invocation as cancel does, and with it `cairn local up`: the
	// emulator is stopped and started again on the same --dir and address.
	restarts how = "restart"
)

// point is a crash point: the Occurrence-th deployer call labelled Label in the whole
// scenario.
type point struct {
	When       when
	Label      string
	Occurrence int
	How        how
}

func (p point) String() string {
	return fmt.Sprintf("%s %s #%d (%s)", p.When, p.Label, p.Occurrence, p.How)
}

// call is one AWS call the deployer made (or would have made, when a crash came first).
type call struct {
	Phase string // the scenario step: "push v1", "push v2"
	Label string
	At    time.Time // on the world's clock
}

// label names a call by service and operation, plus for S3 the folder of the object key or
// prefix and the write's condition, so that creating a run document, saving it, writing
// the graph, taking and renewing the lock are told apart: "s3.PutObject runs/shop
// if-none-match".
func label(ctx context.Context, params any) string {
	l := strings.ToLower(middleware.GetServiceID(ctx)) + "." + middleware.GetOperationName(ctx)
	v := reflect.ValueOf(params)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return l
	}
	str := func(field string) (string, bool) {
		f := v.Elem().FieldByName(field)
		if f.IsValid() && f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.String {
			return f.Elem().String(), true
		}
		return "", false
	}
	if key, ok := str("Key"); ok {
		l += " " + path.Dir(key)
	} else if prefix, ok := str("Prefix"); ok {
		l += " " + strings.TrimSuffix(prefix, "/")
	}
	if _, ok := str("IfNoneMatch"); ok {
		l += " if-none-match"
	} else if _, ok := str("IfMatch"); ok {
		l += " if-match"
	}
	return l
}

// errKilled is what every call of a killed invocation gets.
var errKilled = errors.New("crashtest: this invocation's process was killed")

// crashed is the panic value of a crash point.
type crashed struct{ p point }

// invocation is one run of the deployer's handler, in one process.
type invocation struct {
	mu     sync.Mutex
	killed *point
	cancel context.CancelCauseFunc
}

func (inv *invocation) kill(p point) {
	inv.mu.Lock()
	inv.killed = &p
	inv.mu.Unlock()
	inv.cancel(fmt.Errorf("crashtest: killed %s", p))
}

func (inv *invocation) crash() *point {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.killed
}

type invocationKey struct{}

// injector counts the deployer's calls and fires the armed crash points.
type injector struct {
	mu      sync.Mutex
	phase   string
	counts  map[string]int
	calls   []call
	armed   []point
	fired   []firedPoint
	current *invocation // invocations are sequential: one event source mapping, one poller
	clock   clock.Clock
	// restart, when set, is called (once per fired restart point) to stop and start the
	// emulator again; it must not block.
	restart func(point)
}

type firedPoint struct {
	point
	Phase string
}

func newInjector(points []point) *injector {
	return &injector{counts: map[string]int{}, armed: append([]point(nil), points...), clock: clock.Real}
}

// enter records a call and returns its invocation (nil when it was killed) and the crash
// point it fires, if any.
func (inj *injector) enter(ctx context.Context, label string) (*invocation, *point) {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	if inv == nil {
		inv = inj.current // a context the deployer made afresh still belongs to its process
	}
	if inv == nil {
		return nil, nil
	}
	if inv.crash() != nil {
		return nil, nil
	}
	inj.counts[label]++
	inj.calls = append(inj.calls, call{Phase: inj.phase, Label: label, At: inj.clock.Now()})
	for i, p := range inj.armed {
		if p.Label == label && p.Occurrence == inj.counts[label] {
			inj.armed = append(inj.armed[:i:i], inj.armed[i+1:]...)
			inj.fired = append(inj.fired, firedPoint{point: p, Phase: inj.phase})
			return inv, &p
		}
	}
	return inv, nil
}

// middleware is the SDK option that makes every client built from a configuration crash
// where the injector says.
func (inj *injector) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("CrashInjector",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			inv, p := inj.enter(ctx, label(ctx, in.Parameters))
			if inv == nil {
				return middleware.InitializeOutput{}, middleware.Metadata{}, errKilled
			}
			if p == nil {
				return next.HandleInitialize(ctx, in)
			}
			var md middleware.Metadata
			if p.When == after {
				_, md, _ = next.HandleInitialize(ctx, in) // AWS acted; the answer is lost
			}
			inv.kill(*p)
			if p.How == restarts && inj.restart != nil {
				inj.restart(*p)
			}
			if p.How == panics {
				panic(crashed{*p})
			}
			return middleware.InitializeOutput{}, md, fmt.Errorf("crashtest: killed %s: %w", *p, context.Canceled)
		}), middleware.After)
}

func (inj *injector) setPhase(phase string) {
	inj.mu.Lock()
	inj.phase = phase
	inj.mu.Unlock()
}

func (inj *injector) begin(inv *invocation) {
	inj.mu.Lock()
	inj.current = inv
	inj.mu.Unlock()
}

func (inj *injector) end() {
	inj.mu.Lock()
	inj.current = nil
	inj.mu.Unlock()
}

// log returns the calls made so far, and the points that fired and those that did not.
func (inj *injector) log() (calls []call, fired []firedPoint, unfired []point) {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	return append([]call(nil), inj.calls...), append([]firedPoint(nil), inj.fired...), append([]point(nil), inj.armed...)
}

// activity is how many calls the deployer has made so far.
func (inj *injector) activity() int {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	return len(inj.calls)
}
