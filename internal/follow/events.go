package follow

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/target"
)

// Resource is one resource of a run's stack reaching a status, as the stack's events say.
type Resource struct {
	// Stack is the run's stack (config name) the resource belongs to, StackName its
	// CloudFormation name and Place where it lives (as Step's).
	Stack     string
	StackName string
	Place     target.Target
	// Nested is the path of nested stack resources (their logical ids) from the run's
	// stack down to the stack that holds the resource; empty for the stack's own.
	Nested []string
	// LogicalID and Type name the resource; for the stack itself (a rollback beginning)
	// LogicalID is the stack's name and Type AWS::CloudFormation::Stack.
	LogicalID, Type string
	Status          string
	Reason          string
	// At is the event's time; Elapsed the time since the run started.
	At      time.Time
	Elapsed time.Duration
	// EventID is CloudFormation's id of the event.
	EventID string
	// Self marks an event of the stack itself (a rollback beginning), not of a resource.
	Self bool
}

// Path is the resource's logical id with the nested stacks that hold it: "Cache", or
// "Storage/Bucket" for a resource of nested stack Storage.
func (r Resource) Path() string {
	return strings.Join(append(slices.Clone(r.Nested), r.LogicalID), "/")
}

// Key identifies the resource among a run's: stack, place and path.
func (r Resource) Key() string { return target.Key(r.Place, r.StackName) + "/" + r.Path() }

// InProgress, Failed and Settled sort a resource status.
func (r Resource) InProgress() bool { return strings.HasSuffix(r.Status, "_IN_PROGRESS") }

// Failed reports a *_FAILED status: the resource's reason says why.
func (r Resource) Failed() bool { return strings.HasSuffix(r.Status, "_FAILED") }

// EventsAPI reads a stack's events; the CloudFormation client provides it.
type EventsAPI interface {
	DescribeStackEvents(ctx context.Context, in *cloudformation.DescribeStackEventsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackEventsOutput, error)
}

// Events reads the events of a run's stacks while they change: only the stacks in
// flight, newest first and only back to the last event it saw (or to the start of the
// operation), once a poll per stack, paced by Budget, and backing off a stack whose reads
// are throttled. Nested stacks are read too, from when their parent's event names them.
type Events struct {
	// At gives the CloudFormation client of a stack's place; a stack it cannot reach
	// (an error) is not read, and the error is noted once.
	At func(ctx context.Context, t target.Spec) (EventsAPI, error)
	// Budget paces the calls (EventBudget when its Limiter is nil).
	Budget awsclient.Budget
	Clock  clock.Clock
	// PerRead bounds one Read (DefaultPerRead when 0): the stacks it did not reach are read
	// first by the next, so the follower polls the run on time however many stacks are in
	// flight.
	PerRead time.Duration

	watches map[string]*watch // by stack id
	order   []string          // stack ids in the order first watched
	cursor  int               // where in order the next Read begins
	noted   map[string]bool
	notes   []string
}

// watch is one stack whose events are read.
type watch struct {
	stack     string
	stackName string
	place     target.Target
	spec      target.Spec
	nested    []string
	stackID   string
	// root is the run stack's id, for a nested stack.
	root string
	// secret says the run stack holds secrets (plan.HoldsSecrets): CloudFormation's
	// reasons may quote them, and the follower does not know their values to mask them.
	secret bool
	// last is the id of the newest event read; since bounds the reads (an event before it
	// belongs to an earlier operation; for a run's stack, the start of its operation once
	// read), until a replay's (after it: a later one).
	last         string
	since, until time.Time
	// retryAt and backoff hold off a stack whose reads were throttled.
	retryAt time.Time
	backoff time.Duration
	// active is false once the stack's part of the run ended and it was read a last time.
	active bool
	broken bool
}

// skew is how much earlier than the run recorded it an operation's first event may be:
// the deployer's clock and CloudFormation's differ a little. Reading back stops at the
// operation's first event anyway; the bound keeps a read that misses it short.
const skew = 5 * time.Second

// maxEventPages bounds one read of a stack's events: 10 pages of 100 events.
const maxEventPages = 10

// maxBackoff is the longest a throttled stack is left unread.
const maxBackoff = time.Minute

// Read returns the resource events of doc's stacks since the last read, oldest first,
// and notes about stacks whose events cannot be read. prev is the document read before
// (nil the first time): a stack in flight in prev and finished in doc is read once more,
// for its last events; a run that had finished before it was first read is replayed,
// each stack that executed read once, bounded by its operation, and all of them: a replay
// has no later poll to report late (the note of a bounded Read's last stacks sends people
// to one).
func (e *Events) Read(ctx context.Context, prev, doc *rundoc.Document) ([]Resource, []string) {
	if e.watches == nil {
		e.watches, e.noted = map[string]*watch{}, map[string]bool{}
	}
	e.notes = nil
	clk := e.clock()
	for _, name := range doc.Run.Names() {
		s := doc.Run.Stacks[name]
		if s.StackID == "" || !executes(s) {
			continue
		}
		w := e.watches[s.StackID]
		if w == nil {
			if s.Phase.Terminal() && prev != nil && !wasInFlight(prev, name) {
				continue // finished before this follower watched it: nothing new to show
			}
			w = &watch{stack: name, stackName: s.StackName, place: s.At, spec: s.Target, stackID: s.StackID, active: true,
				since: operationStart(s).Add(-skew)}
			if s.Phase.Terminal() && !s.FinishedAt.IsZero() {
				w.until = s.FinishedAt.Add(skew)
			}
			e.watches[s.StackID] = w
			e.order = append(e.order, s.StackID)
		}
		w.active = w.active || s.Phase.Waits()
		w.secret = plan.HoldsSecrets(s)
	}
	var out []Resource
	replay := prev == nil && doc.Run.Status != run.Running
	begun, total, from := clk.Now(), len(e.order), e.cursor
	left := 0 // stacks to read that this Read did not reach
	for k := 0; k < len(e.order); k++ {
		// From the cursor round the stacks watched before, then the nested stacks found
		// while reading (appended).
		i := k
		if k < total {
			i = (from + k) % total
		}
		w := e.watches[e.order[i]]
		if !w.active || w.broken || clk.Now().Before(w.retryAt) {
			continue
		}
		if !replay && clk.Now().Sub(begun) >= e.perRead() {
			if left == 0 && k < total {
				e.cursor = i
			}
			left++
			continue
		}
		root := w
		if w.root != "" {
			root = e.watches[w.root]
		}
		finished := !e.running(doc, root)
		res, err := e.read(ctx, w, doc.Run.StartedAt)
		switch {
		case err != nil && awserr.Throttled(err):
			w.backoff = min(max(2*w.backoff, 2*time.Second), maxBackoff)
			w.retryAt = clk.Now().Add(w.backoff)
			continue
		case err != nil:
			w.broken = true
			e.note(w, err)
			continue
		}
		w.backoff = 0
		out = append(out, res...)
		if finished {
			w.active = false
		}
	}
	if left > 0 && doc.Run.Status != run.Running {
		// The run ended: the follower reports it now rather than after every last read.
		e.notes = append(e.notes, fmt.Sprintf("the last resource events of %d stack(s) are not shown, so that the run's end is not reported late: `cairn follow %s %s` shows them all", left, doc.Run.Deployment, doc.Run.ID))
	}
	slices.SortStableFunc(out, func(a, b Resource) int { return a.At.Compare(b.At) })
	return out, e.notes
}

// DefaultPerRead bounds one Read of the events: the CLI's poll. At EventBudget's pace it
// reads 10 to 20 stacks; a run with more in flight has its stacks read in turns.
const DefaultPerRead = 2 * time.Second

func (e *Events) perRead() time.Duration {
	if e.PerRead <= 0 {
		return DefaultPerRead
	}
	return e.PerRead
}

// running reports whether the watched run stack w is still in flight in doc.
func (e *Events) running(doc *rundoc.Document, w *watch) bool {
	s := doc.Run.Stacks[w.stack]
	return s != nil && s.StackID == w.stackID && !s.Phase.Terminal() && doc.Run.Status == run.Running
}

// executes reports whether a stack is, or was, changed by CloudFormation in the run: its
// events then show its resources moving. A change set being made changes nothing.
func executes(s *run.Stack) bool {
	switch s.Phase {
	case run.Executing, run.RollingBack, run.Deleting, run.DeletingOld:
		return true
	case run.Done, run.Failed:
		return !s.ExecutedAt.IsZero() || s.Intent == run.IntentDelete || s.Rollbacks > 0
	}
	return false
}

// operationStart is when the run began changing s.
func operationStart(s *run.Stack) time.Time {
	if !s.ExecutedAt.IsZero() {
		return s.ExecutedAt
	}
	if !s.StartedAt.IsZero() {
		return s.StartedAt
	}
	return s.PhaseSince
}

func wasInFlight(prev *rundoc.Document, name string) bool {
	s := prev.Run.Stacks[name]
	return s != nil && !s.Phase.Terminal()
}

func (e *Events) clock() clock.Clock {
	if e.Clock == nil {
		return clock.Real
	}
	return e.Clock
}

// EventBudget is the pace of a follower's reads when Events.Budget sets none: 5 a
// second in bursts of 10, a small share of DescribeStackEvents' account quota, so a
// person watching never slows the deployer.
func EventBudget() *rate.Limiter { return rate.NewLimiter(5, 10) }

func (e *Events) budget() awsclient.Budget {
	if e.Budget.Limiter == nil {
		e.Budget.Limiter = EventBudget()
	}
	if e.Budget.Clock == nil {
		e.Budget.Clock = e.clock()
	}
	return e.Budget
}

func (e *Events) note(w *watch, err error) {
	key := target.Key(w.place, w.stackName)
	if e.noted[key] {
		return
	}
	e.noted[key] = true
	e.notes = append(e.notes, fmt.Sprintf("the resources of stack %s are not shown: its events cannot be read: %s", target.Describe(w.place, w.stackName), awserr.Message(err)))
}

// read reads w's events newer than the last it saw, oldest first, and starts watching the
// nested stacks they name.
func (e *Events) read(ctx context.Context, w *watch, runStart time.Time) ([]Resource, error) {
	api, err := e.At(ctx, w.spec)
	if err != nil {
		return nil, err
	}
	in := &cloudformation.DescribeStackEventsInput{StackName: aws.String(w.stackID)}
	var fresh []cfntypes.StackEvent
	newest := ""
pages:
	for page := 0; page < maxEventPages; page++ {
		if err := e.budget().Wait(ctx); err != nil {
			return nil, err
		}
		out, err := api.DescribeStackEvents(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, ev := range out.StackEvents {
			id := aws.ToString(ev.EventId)
			if id == w.last || aws.ToTime(ev.Timestamp).Before(w.since) {
				break pages
			}
			if newest == "" {
				newest = id
			}
			if !w.until.IsZero() && aws.ToTime(ev.Timestamp).After(w.until) {
				continue // a later operation's, in a replay
			}
			fresh = append(fresh, ev)
			if w.root == "" && starts(ev) {
				// The operation's first event: what came before is another's. (A nested
				// stack may go through several operations in one of its parent's: a create,
				// then a delete when the parent rolls back; it is bounded by since.)
				w.since = aws.ToTime(ev.Timestamp)
				break pages
			}
		}
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	if newest != "" {
		w.last = newest
	}
	var res []Resource
	for _, ev := range slices.Backward(fresh) {
		r, ok := e.resource(w, ev, runStart)
		if ok {
			res = append(res, r)
		}
	}
	return res, nil
}

// operationStarts are the statuses of a stack's own event that begin an operation; a
// rollback is part of the operation that failed.
var operationStarts = map[string]bool{
	"CREATE_IN_PROGRESS": true, "UPDATE_IN_PROGRESS": true, "DELETE_IN_PROGRESS": true,
	"IMPORT_IN_PROGRESS": true, "REVIEW_IN_PROGRESS": true,
}

// starts reports whether ev is the stack's own event beginning an operation.
func starts(ev cfntypes.StackEvent) bool {
	return ownEvent(ev) && operationStarts[string(ev.ResourceStatus)]
}

// ownEvent reports whether ev is of the stack itself rather than of a resource.
func ownEvent(ev cfntypes.StackEvent) bool {
	return aws.ToString(ev.PhysicalResourceId) == aws.ToString(ev.StackId) ||
		aws.ToString(ev.ResourceType) == "AWS::CloudFormation::Stack" && aws.ToString(ev.LogicalResourceId) == aws.ToString(ev.StackName)
}

// resource turns an event of w into a Resource; the stack's own events show only a
// rollback beginning (the run's steps say the rest). An event of a nested stack resource
// naming its stack starts watching the nested stack, from its parent's operation on (its
// first event may well come before the one naming it: CloudFormation names the nested
// stack once it exists).
func (e *Events) resource(w *watch, ev cfntypes.StackEvent, runStart time.Time) (Resource, bool) {
	status, logical, typ := string(ev.ResourceStatus), aws.ToString(ev.LogicalResourceId), aws.ToString(ev.ResourceType)
	physical := aws.ToString(ev.PhysicalResourceId)
	own := ownEvent(ev)
	if own && !strings.Contains(status, "ROLLBACK") {
		return Resource{}, false
	}
	if !own && typ == "AWS::CloudFormation::Stack" && strings.HasPrefix(physical, "arn:") && e.watches[physical] == nil {
		root, since := w.root, w.since
		if root == "" {
			root = w.stackID
		}
		if r := e.watches[root]; r != nil {
			since = r.since
		}
		e.watches[physical] = &watch{stack: w.stack, stackName: w.stackName, place: w.place, spec: w.spec, stackID: physical, root: root,
			nested: append(slices.Clone(w.nested), logical), active: true, since: since, until: w.until, secret: w.secret}
		e.order = append(e.order, physical)
	}
	at := aws.ToTime(ev.Timestamp)
	reason := aws.ToString(ev.ResourceStatusReason)
	if w.secret && reason != "" {
		reason = Withheld
	}
	return Resource{Stack: w.stack, StackName: w.stackName, Place: w.place, Nested: slices.Clone(w.nested), LogicalID: logical, Type: typ,
		Status: status, Reason: reason, At: at, Elapsed: max(0, at.Sub(runStart)), EventID: aws.ToString(ev.EventId), Self: own}, true
}

// Withheld is what a resource event's reason reads as when its stack holds secrets: the
// run's own reason for the stack, which the deployer scrubbed of them, says why it failed.
const Withheld = "(reason withheld: the stack holds secrets CloudFormation may quote; the run's reason for the stack has it, masked)"

// InFlight keeps the resources whose last status is in progress, to say which are
// slowest.
type InFlight struct {
	open map[string]Resource
}

// Add records r's status: in progress, or no longer.
func (f *InFlight) Add(r Resource) {
	if f.open == nil {
		f.open = map[string]Resource{}
	}
	if r.InProgress() && !r.Self {
		f.open[r.Key()] = r
		return
	}
	delete(f.open, r.Key())
}

// Drop forgets the resources of stack (a config name) whose part of the run ended.
func (f *InFlight) Drop(stack string) {
	for k, r := range f.open {
		if r.Stack == stack {
			delete(f.open, k)
		}
	}
}

// Slowest lists the resources in progress, the longest in progress first (then by
// stack and path).
func (f *InFlight) Slowest() []Resource {
	out := make([]Resource, 0, len(f.open))
	for _, r := range f.open {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Resource) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(a.Key(), b.Key())
	})
	return out
}
