package follow_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/target"
)

const (
	childTemplate  = "Resources:\n  Bucket: {Type: AWS::S3::Bucket}\n"
	parentTemplate = `Resources:
  Queue: {Type: AWS::SQS::Queue}
  Storage:
    Type: AWS::CloudFormation::Stack
    Properties: {TemplateURL: https://templates.s3.us-east-1.amazonaws.com/child.yaml}
  Topic:
    Type: AWS::SNS::Topic
    DependsOn: Storage
`
)

// counting is the emulator's CloudFormation, counting DescribeStackEvents calls.
type counting struct {
	mu    sync.Mutex
	api   *cloudformation.Client
	calls int
}

func (c *counting) DescribeStackEvents(ctx context.Context, in *cloudformation.DescribeStackEventsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackEventsOutput, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.api.DescribeStackEvents(ctx, in, optFns...)
}

func (c *counting) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// emulatedStack creates, in the emulator, a stack with a nested stack whose Topic fails
// to create, and returns the CloudFormation client, the stack's id and when its creation
// began.
// The emulator runs on a virtual clock, 50 times faster than the wall clock; each
// resource takes a virtual second.
func emulatedStack(t *testing.T) (*counting, string, *clock.Fake, time.Time) {
	return emulated(t, true)
}

// emulated is emulatedStack, with Topic failing when fail is true.
func emulated(t *testing.T, fail bool) (*counting, string, *clock.Fake, time.Time) {
	t.Helper()
	t.Setenv("AWS_CA_BUNDLE", "")
	clk := clock.NewFake(time.Now().UTC())
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				clk.Advance(50 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-stopped })
	e, err := awslocal.New(awslocal.Options{Clock: clk, Logger: slog.New(slog.DiscardHandler), CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx := context.Background()
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s3c := awsclient.S3(cfg)
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("templates")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("templates"), Key: aws.String("child.yaml"), Body: strings.NewReader(childTemplate)}); err != nil {
		t.Fatal(err)
	}
	if fail {
		if err := e.CloudFormation().InjectFault(cfnlocal.Fault{Stack: "shop-app", LogicalID: "Topic", Operation: "CREATE", Reason: "Topic shop-alerts already exists"}); err != nil {
			t.Fatal(err)
		}
	}
	api := cloudformation.NewFromConfig(cfg)
	began := clk.Now() // as a run records it: before the operation starts
	out, err := api.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-app"), TemplateBody: aws.String(parentTemplate)})
	if err != nil {
		t.Fatal(err)
	}
	return &counting{api: api}, aws.ToString(out.StackId), clk, began
}

// settle waits for the stack's operation to end.
func settle(t *testing.T, c *counting, id string) {
	t.Helper()
	for i := 0; strings.HasSuffix(stackStatus(t, c, id), "_IN_PROGRESS"); i++ {
		if i > 1000 {
			t.Fatal("the stack does not settle")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func stackStatus(t *testing.T, c *counting, id string) string {
	t.Helper()
	out, err := c.api.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(id)})
	if err != nil {
		t.Fatal(err)
	}
	return string(out.Stacks[0].StackStatus)
}

// appRun is a run of deployment shop whose stack app (shop-app, id) is in phase p,
// executed at began.
func appRun(id string, began time.Time, status run.Status, p run.Phase) *rundoc.Document {
	s := &run.Stack{Name: "app", StackName: "shop-app", StackID: id, Intent: run.IntentDeploy, Phase: p, ExecutedAt: began, StartedAt: began, PhaseSince: began}
	return &rundoc.Document{Run: &run.Run{ID: "r1", Deployment: "shop", Mode: run.ModeDeploy, Status: status, StartedAt: began.Add(-time.Second),
		Stacks: map[string]*run.Stack{"app": s}}}
}

func names(res []follow.Resource) []string {
	var out []string
	for _, r := range res {
		out = append(out, r.Path()+" "+r.Status)
	}
	return out
}

// TestEventsFollowAStackAndItsNestedStack reads the events of a stack being created, with
// a nested stack and a resource that fails, through the SDK against the emulator, poll by
// poll as a follower does: every event once, in order, the nested stack's resources under
// its logical id, the failure with its reason, one call per stack and poll once nothing is
// new.
func TestEventsFollowAStackAndItsNestedStack(t *testing.T) {
	c, id, clk, began := emulatedStack(t)
	ev := &follow.Events{At: func(context.Context, target.Spec) (follow.EventsAPI, error) { return c, nil }}
	ctx := context.Background()
	var got []follow.Resource
	var prev *rundoc.Document
	deadline := time.Now().Add(20 * time.Second)
	for {
		status := stackStatus(t, c, id)
		doc := appRun(id, began, run.Running, run.Executing)
		done := !strings.HasSuffix(status, "_IN_PROGRESS")
		if done {
			doc = appRun(id, began, run.RunFailed, run.Failed)
			doc.Run.Stacks["app"].FinishedAt = clk.Now()
		}
		res, notes := ev.Read(ctx, prev, doc)
		if len(notes) > 0 {
			t.Fatalf("notes: %v", notes)
		}
		got = append(got, res...)
		prev = doc
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stack is still %s", status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	seen := map[string]bool{}
	last := map[string]time.Time{} // by stack: a stack's events come in order (stacks are read one after another)
	for _, r := range got {
		if seen[r.EventID] {
			t.Errorf("event %s (%s %s) read twice", r.EventID, r.Path(), r.Status)
		}
		seen[r.EventID] = true
		stack := strings.Join(r.Nested, "/")
		if r.At.Before(last[stack]) {
			t.Errorf("%s %s comes after a later event of its stack", r.Path(), r.Status)
		}
		last[stack] = r.At
		if r.Stack != "app" || r.StackName != "shop-app" {
			t.Errorf("%s belongs to %s (%s), want app (shop-app)", r.Path(), r.Stack, r.StackName)
		}
	}
	list := names(got)
	for _, want := range []string{"Queue CREATE_IN_PROGRESS", "Queue CREATE_COMPLETE", "Storage CREATE_IN_PROGRESS", "Storage/Bucket CREATE_IN_PROGRESS",
		"Storage/Bucket CREATE_COMPLETE", "Storage CREATE_COMPLETE", "Topic CREATE_FAILED", "shop-app ROLLBACK_IN_PROGRESS", "Queue DELETE_COMPLETE", "shop-app ROLLBACK_COMPLETE"} {
		if !slices.Contains(list, want) {
			t.Errorf("the events lack %q:\n%s", want, strings.Join(list, "\n"))
		}
	}
	if slices.Contains(list, "shop-app CREATE_IN_PROGRESS") {
		t.Errorf("the stack's own start is shown: the run's steps say it")
	}
	for _, r := range got {
		if r.Status == "CREATE_FAILED" && r.LogicalID == "Topic" && !strings.Contains(r.Reason, "Topic shop-alerts already exists") {
			t.Errorf("Topic failed with reason %q", r.Reason)
		}
	}
	// The run is over: nothing more is read.
	before := c.count()
	if res, _ := ev.Read(ctx, prev, prev); len(res) != 0 || c.count() != before {
		t.Errorf("a finished stack was read again: %d events, %d calls", len(res), c.count()-before)
	}
}

// TestEventsReadOnlyWhatIsNew: a stack whose events did not change costs one call a poll
// (the newest page, stopped at the last event seen) and gives nothing.
func TestEventsReadOnlyWhatIsNew(t *testing.T) {
	c, id, _, began := emulatedStack(t)
	settle(t, c, id)
	ev := &follow.Events{At: func(context.Context, target.Spec) (follow.EventsAPI, error) { return c, nil }}
	doc := appRun(id, began, run.Running, run.RollingBack) // still in flight for the run
	first, _ := ev.Read(context.Background(), nil, doc)
	if len(first) == 0 {
		t.Fatal("the first read gave no events")
	}
	before := c.count()
	for range 3 {
		if res, _ := ev.Read(context.Background(), doc, doc); len(res) != 0 {
			t.Fatalf("a read with nothing new gave %v", names(res))
		}
	}
	// Two stacks watched (the stack and its nested stack): one call each per read.
	if n := c.count() - before; n != 6 {
		t.Errorf("3 reads with nothing new made %d calls, want 6 (one per stack and read)", n)
	}
}

// TestEventsReplayAFinishedRun: a run that ended before it was followed shows its stacks'
// operations, read once, and nothing of an operation after the run.
func TestEventsReplayAFinishedRun(t *testing.T) {
	c, id, clk, began := emulatedStack(t)
	settle(t, c, id)
	doc := appRun(id, began, run.RunFailed, run.Failed)
	doc.Run.Stacks["app"].FinishedAt = clk.Now()
	time.Sleep(300 * time.Millisecond) // 15 virtual seconds: past the skew allowed after the run's end
	if _, err := c.api.DeleteStack(context.Background(), &cloudformation.DeleteStackInput{StackName: aws.String(id)}); err != nil {
		t.Fatal(err)
	}
	settle(t, c, id)
	ev := &follow.Events{At: func(context.Context, target.Spec) (follow.EventsAPI, error) { return c, nil }}
	res, _ := ev.Read(context.Background(), nil, doc)
	list := names(res)
	if !slices.Contains(list, "Topic CREATE_FAILED") || slices.Contains(list, "shop-app DELETE_IN_PROGRESS") {
		t.Errorf("replay:\n%s\nwant the failed create and not the later deletion", strings.Join(list, "\n"))
	}
}

// TestEventsShowOnlyTheRunsOperation: a stack updated right after its creation shows the
// update's events only, not the creation's just before it.
func TestEventsShowOnlyTheRunsOperation(t *testing.T) {
	c, id, clk, _ := emulated(t, false)
	settle(t, c, id)
	executed := clk.Now()
	body := strings.Replace(parentTemplate, "  Queue: {Type: AWS::SQS::Queue}\n", "  Queue: {Type: AWS::SQS::Queue, Properties: {DelaySeconds: 5}}\n", 1)
	if _, err := c.api.UpdateStack(context.Background(), &cloudformation.UpdateStackInput{StackName: aws.String(id), TemplateBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	settle(t, c, id)
	ev := &follow.Events{At: func(context.Context, target.Spec) (follow.EventsAPI, error) { return c, nil }}
	res, _ := ev.Read(context.Background(), nil, appRun(id, executed, run.Running, run.Executing))
	list := names(res)
	if !slices.Contains(list, "Queue UPDATE_COMPLETE") || slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, "CREATE_") }) {
		t.Errorf("events:\n%s\nwant the update's, none of the creation's", strings.Join(list, "\n"))
	}
}

// throttled answers every call with Throttling.
type throttled struct{ calls int }

func (t *throttled) DescribeStackEvents(context.Context, *cloudformation.DescribeStackEventsInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeStackEventsOutput, error) {
	t.calls++
	return nil, &smithy.GenericAPIError{Code: "Throttling", Message: "Rate exceeded"}
}

// TestEventsBackOffWhenThrottled: a stack whose reads are throttled is left alone for
// longer each time (2s, 4s, ...), and the follow goes on without a note.
func TestEventsBackOffWhenThrottled(t *testing.T) {
	clk := clock.NewFake(t0)
	api := &throttled{}
	ev := &follow.Events{Clock: clk, At: func(context.Context, target.Spec) (follow.EventsAPI, error) { return api, nil }}
	doc := appRun("arn:aws:cloudformation:us-east-1:000000000000:stack/shop-app/1", t0, run.Running, run.Executing)
	var calls []int
	for range 8 { // a poll a second for 8 seconds
		if _, notes := ev.Read(context.Background(), doc, doc); len(notes) != 0 {
			t.Fatalf("notes %v", notes)
		}
		calls = append(calls, api.calls)
		clk.Advance(time.Second)
	}
	// Calls at 0s, 2s (after 2s), 6s (after 4s).
	if want := []int{1, 1, 2, 2, 2, 2, 3, 3}; !slices.Equal(calls, want) {
		t.Errorf("calls after each poll %v, want %v", calls, want)
	}
}

// TestEventsNoteAStackThatCannotBeRead: access denied to a stack's place is said once.
func TestEventsNoteAStackThatCannotBeRead(t *testing.T) {
	ev := &follow.Events{At: func(context.Context, target.Spec) (follow.EventsAPI, error) {
		return nil, &smithy.GenericAPIError{Code: "AccessDenied", Message: "not authorized to perform sts:AssumeRole"}
	}}
	doc := appRun("arn:stack/shop-app", t0, run.Running, run.Executing)
	_, notes := ev.Read(context.Background(), nil, doc)
	_, again := ev.Read(context.Background(), doc, doc)
	want := "the resources of stack shop-app are not shown: its events cannot be read: AccessDenied: not authorized to perform sts:AssumeRole"
	if len(notes) != 1 || notes[0] != want || len(again) != 0 {
		t.Fatalf("notes %q then %q, want %q once", notes, again, want)
	}
}

// TestInFlightSlowest: the resources in progress, longest first; a resource that
// finished leaves.
func TestInFlightSlowest(t *testing.T) {
	var f follow.InFlight
	f.Add(follow.Resource{Stack: "app", StackName: "shop-app", LogicalID: "Queue", Status: "CREATE_IN_PROGRESS", At: t0.Add(2 * time.Second)})
	f.Add(follow.Resource{Stack: "app", StackName: "shop-app", LogicalID: "Cache", Status: "UPDATE_IN_PROGRESS", At: t0})
	f.Add(follow.Resource{Stack: "db", StackName: "shop-db", LogicalID: "Db", Status: "CREATE_IN_PROGRESS", At: t0.Add(time.Second)})
	f.Add(follow.Resource{Stack: "app", StackName: "shop-app", LogicalID: "shop-app", Status: "UPDATE_ROLLBACK_IN_PROGRESS", At: t0, Self: true})
	f.Add(follow.Resource{Stack: "app", StackName: "shop-app", LogicalID: "Queue", Status: "CREATE_COMPLETE", At: t0.Add(3 * time.Second)})
	var got []string
	for _, r := range f.Slowest() {
		got = append(got, r.Path())
	}
	if want := []string{"Cache", "Db"}; !slices.Equal(got, want) {
		t.Errorf("Slowest = %v, want %v", got, want)
	}
	f.Drop("db")
	if s := f.Slowest(); len(s) != 1 || s[0].LogicalID != "Cache" {
		t.Errorf("after db's end: %v", names(s))
	}
}
