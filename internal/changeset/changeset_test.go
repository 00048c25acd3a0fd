package changeset

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
)

// fakeCFN answers from canned pages and records the requests it got. Unset methods fail
// the test.
type fakeCFN struct {
	API
	t          *testing.T
	created    []*cloudformation.CreateChangeSetInput
	executed   []*cloudformation.ExecuteChangeSetInput
	createErr  error
	executeErr error
	changeSets []*cloudformation.DescribeChangeSetOutput // pages in order
	csCalls    []*cloudformation.DescribeChangeSetInput
	stacks     map[string]*cloudformation.DescribeStacksOutput // by StackName input ("" = list)
	stacksErr  error
	events     []*cloudformation.DescribeStackEventsOutput
	eventCalls int
	imports    map[string][]string
}

func (f *fakeCFN) CreateChangeSet(_ context.Context, in *cloudformation.CreateChangeSetInput, _ ...func(*cloudformation.Options)) (*cloudformation.CreateChangeSetOutput, error) {
	f.created = append(f.created, in)
	if f.createErr != nil {
		return nil, f.createErr
	}
	return &cloudformation.CreateChangeSetOutput{Id: aws.String("arn:cs/" + aws.ToString(in.ChangeSetName)), StackId: aws.String("arn:stack/" + aws.ToString(in.StackName))}, nil
}

func (f *fakeCFN) ExecuteChangeSet(_ context.Context, in *cloudformation.ExecuteChangeSetInput, _ ...func(*cloudformation.Options)) (*cloudformation.ExecuteChangeSetOutput, error) {
	f.executed = append(f.executed, in)
	return &cloudformation.ExecuteChangeSetOutput{}, f.executeErr
}

func (f *fakeCFN) DescribeChangeSet(_ context.Context, in *cloudformation.DescribeChangeSetInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeChangeSetOutput, error) {
	f.csCalls = append(f.csCalls, in)
	i := 0
	if in.NextToken != nil {
		fmt.Sscan(*in.NextToken, &i)
	}
	return f.changeSets[i], nil
}

func (f *fakeCFN) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	if f.stacksErr != nil {
		return nil, f.stacksErr
	}
	key := aws.ToString(in.StackName) + aws.ToString(in.NextToken)
	out, ok := f.stacks[key]
	if !ok {
		f.t.Fatalf("unexpected DescribeStacks %q", key)
	}
	return out, nil
}

func (f *fakeCFN) DescribeStackEvents(_ context.Context, in *cloudformation.DescribeStackEventsInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStackEventsOutput, error) {
	i := f.eventCalls
	f.eventCalls++
	return f.events[i], nil
}

func (f *fakeCFN) ListImports(_ context.Context, in *cloudformation.ListImportsInput, _ ...func(*cloudformation.Options)) (*cloudformation.ListImportsOutput, error) {
	imp, ok := f.imports[aws.ToString(in.ExportName)]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "ValidationError", Message: "Export '" + aws.ToString(in.ExportName) + "' is not imported by any stack."}
	}
	return &cloudformation.ListImportsOutput{Imports: imp}, nil
}

type fakeS3 struct {
	puts map[string]string
}

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	b, _ := io.ReadAll(in.Body)
	f.puts[aws.ToString(in.Bucket)+"/"+aws.ToString(in.Key)] = string(b)
	return &s3.PutObjectOutput{}, nil
}

func TestCreateChangeSet(t *testing.T) {
	small := []byte("Resources: {}\n")
	large := []byte("Resources: {}\n#" + strings.Repeat("x", MaxTemplateBody))
	for _, tc := range []struct {
		name       string
		in         Inputs
		wantURL    bool
		createErr  error
		wantErr    string
		permanent  bool
		wantCSID   string
		wantUpload bool
	}{
		{name: "small template inline", in: Inputs{TemplateBody: small, Capabilities: []string{"CAPABILITY_IAM"}, Tags: map[string]string{"b": "2", "a": "1", "empty": ""}}, wantCSID: "arn:cs/cairn-r1-1"},
		{name: "large template by URL", in: Inputs{TemplateBody: large}, wantURL: true, wantUpload: true, wantCSID: "arn:cs/cairn-r1-1"},
		{name: "template_url as given", in: Inputs{TemplateURL: "https://example.s3.amazonaws.com/t.yaml"}, wantURL: true, wantCSID: "arn:cs/cairn-r1-1"},
		{name: "already exists is ours", in: Inputs{TemplateBody: small}, createErr: &smithy.GenericAPIError{Code: "AlreadyExistsException", Message: "ChangeSet cairn-r1-1 already exists"}},
		{name: "validation error is permanent", in: Inputs{TemplateBody: small}, createErr: &smithy.GenericAPIError{Code: "ValidationError", Message: "Template format error: unresolved resource dependencies [Nope]"}, wantErr: "Template format error", permanent: true},
		{name: "throttling is transient", in: Inputs{TemplateBody: small}, createErr: &smithy.GenericAPIError{Code: "Throttling", Message: "Rate exceeded"}, wantErr: "Rate exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfn := &fakeCFN{t: t, createErr: tc.createErr}
			up := &fakeS3{puts: map[string]string{}}
			c := &Client{CFN: cfn, S3: up, Bucket: "cairn-state", Region: "eu-west-1"}
			a := run.Action{Kind: run.CreateChangeSet, Stack: "app", StackName: "shop-app", ChangeSetName: "cairn-r1-1", ChangeSetType: "CREATE",
				Parameters: map[string]string{"Z": "26", "A": "1"}, Token: "cairn-r1-1"}
			o := c.Perform(context.Background(), a, &tc.in)
			if tc.wantErr != "" {
				if !strings.Contains(o.Err, tc.wantErr) || o.Permanent != tc.permanent {
					t.Fatalf("observation %+v, want error %q permanent %v", o, tc.wantErr, tc.permanent)
				}
				return
			}
			if o.Err != "" || o.ChangeSetID != tc.wantCSID {
				t.Fatalf("observation %+v", o)
			}
			req := cfn.created[0]
			if aws.ToString(req.ClientToken) != "cairn-r1-1" || req.ChangeSetType != cfntypes.ChangeSetTypeCreate || aws.ToString(req.StackName) != "shop-app" {
				t.Errorf("request %+v", req)
			}
			if got := aws.ToString(req.Parameters[0].ParameterKey) + " " + aws.ToString(req.Parameters[1].ParameterKey); got != "A Z" {
				t.Errorf("parameters in order %s", got)
			}
			if (req.TemplateURL != nil) != tc.wantURL || (req.TemplateBody != nil) == tc.wantURL {
				t.Errorf("TemplateURL %v, TemplateBody set %v", aws.ToString(req.TemplateURL), req.TemplateBody != nil)
			}
			if tc.wantUpload {
				if len(up.puts) != 1 {
					t.Fatalf("uploads %v", up.puts)
				}
				for k, v := range up.puts {
					if !strings.HasPrefix(k, "cairn-state/templates/") || !strings.HasSuffix(k, ".json") || v != string(large) {
						t.Errorf("uploaded %s (%d bytes)", k, len(v))
					}
					if want := "https://cairn-state.s3.eu-west-1.amazonaws.com/" + strings.TrimPrefix(k, "cairn-state/"); aws.ToString(req.TemplateURL) != want {
						t.Errorf("TemplateURL %s, want %s", aws.ToString(req.TemplateURL), want)
					}
				}
			} else if len(up.puts) != 0 {
				t.Errorf("uploaded %v", up.puts)
			}
			if len(tc.in.Tags) > 0 {
				var keys []string
				for _, tg := range req.Tags {
					keys = append(keys, aws.ToString(tg.Key))
				}
				if strings.Join(keys, ",") != "a,b" {
					t.Errorf("tags %v: want sorted, empty values left out", keys)
				}
			}
		})
	}
}

func TestExecuteAlreadyExecutedIsSuccess(t *testing.T) {
	cfn := &fakeCFN{t: t, executeErr: &smithy.GenericAPIError{Code: "InvalidChangeSetStatus", Message: "ChangeSet [x] cannot be executed in its current status of [EXECUTE_COMPLETE]"}}
	c := &Client{CFN: cfn}
	o := c.Perform(context.Background(), run.Action{Kind: run.ExecuteChangeSet, Stack: "app", StackName: "shop-app", ChangeSetName: "cairn-r1-1", ChangeSetID: "arn:cs/1", Token: "cairn-r1-1"}, nil)
	if o.Err != "" {
		t.Fatalf("observation %+v", o)
	}
	if req := cfn.executed[0]; aws.ToString(req.ChangeSetName) != "arn:cs/1" || req.StackName != nil || aws.ToString(req.ClientRequestToken) != "cairn-r1-1" {
		t.Errorf("request %+v", req)
	}
}

// TestObserveChangeSetPaginates counts the changes over every page of DescribeChangeSet.
func TestObserveChangeSetPaginates(t *testing.T) {
	change := cfntypes.Change{Type: cfntypes.ChangeTypeResource}
	cfn := &fakeCFN{t: t, changeSets: []*cloudformation.DescribeChangeSetOutput{
		{ChangeSetId: aws.String("arn:cs/1"), StackId: aws.String("arn:stack/1"), Status: cfntypes.ChangeSetStatusCreateComplete, Changes: []cfntypes.Change{change, change}, NextToken: aws.String("1")},
		{Changes: []cfntypes.Change{change, change, change}, NextToken: aws.String("2")},
		{Changes: []cfntypes.Change{change}},
	}}
	r := &run.Run{Stacks: map[string]*run.Stack{"app": {Name: "app", StackName: "shop-app", Phase: run.CreatingChangeSet, ChangeSetName: "cairn-r1-1"}}}
	seen := (&Client{CFN: cfn}).Observe(context.Background(), r, nil, time.Now())
	if len(seen) != 1 {
		t.Fatalf("observations %+v", seen)
	}
	o := seen[0]
	if o.Changes != 6 || o.ChangeSetStatus != "CREATE_COMPLETE" || o.ChangeSetID != "arn:cs/1" || o.StackID != "arn:stack/1" {
		t.Errorf("observation %+v, want 6 changes over 3 pages", o)
	}
	if len(cfn.csCalls) != 3 || aws.ToString(cfn.csCalls[0].ChangeSetName) != "cairn-r1-1" || aws.ToString(cfn.csCalls[0].StackName) != "shop-app" {
		t.Errorf("calls %d, first %+v", len(cfn.csCalls), cfn.csCalls[0])
	}
}

// TestObservePendingError reports the previous step's failed action without any call.
func TestObservePendingError(t *testing.T) {
	cfn := &fakeCFN{t: t}
	r := &run.Run{Stacks: map[string]*run.Stack{"app": {Name: "app", StackName: "shop-app", Phase: run.CreatingChangeSet, ChangeSetName: "cairn-r1-1"}}}
	pending := map[string]run.Observation{"app": {Stack: "app", Err: "CreateChangeSet shop-app: Rate exceeded"}}
	seen := (&Client{CFN: cfn}).Observe(context.Background(), r, pending, time.Now())
	if len(seen) != 1 || seen[0].Err == "" || len(cfn.csCalls) != 0 {
		t.Errorf("observations %+v after %d calls", seen, len(cfn.csCalls))
	}
}

func event(logical, typ, status, reason string) cfntypes.StackEvent {
	phys := "phys-" + logical
	if typ == "AWS::CloudFormation::Stack" {
		phys = "arn:stack/1"
	}
	return cfntypes.StackEvent{StackId: aws.String("arn:stack/1"), StackName: aws.String("shop-app"), LogicalResourceId: aws.String(logical),
		PhysicalResourceId: aws.String(phys), ResourceType: aws.String(typ), ResourceStatus: cfntypes.ResourceStatus(status),
		ResourceStatusReason: aws.String(reason), Timestamp: aws.Time(time.Now())}
}

// TestObserveFailedStackReason takes the earliest failing resource of the current
// operation, across pages, and ignores failures of earlier operations.
func TestObserveFailedStackReason(t *testing.T) {
	const stackType = "AWS::CloudFormation::Stack"
	cfn := &fakeCFN{t: t,
		stacks: map[string]*cloudformation.DescribeStacksOutput{"arn:stack/1": {Stacks: []cfntypes.Stack{{
			StackName: aws.String("shop-app"), StackId: aws.String("arn:stack/1"), StackStatus: cfntypes.StackStatusUpdateRollbackComplete,
			EnableTerminationProtection: aws.Bool(true),
		}}}},
		events: []*cloudformation.DescribeStackEventsOutput{
			{StackEvents: []cfntypes.StackEvent{ // newest first
				event("shop-app", stackType, "UPDATE_ROLLBACK_COMPLETE", ""),
				event("Queue", "AWS::SQS::Queue", "UPDATE_FAILED", "Resource update cancelled"),
				event("shop-app", stackType, "UPDATE_ROLLBACK_IN_PROGRESS", "The following resource(s) failed to update: [Topic]."),
			}, NextToken: aws.String("p2")},
			{StackEvents: []cfntypes.StackEvent{
				event("Topic", "AWS::SNS::Topic", "UPDATE_FAILED", "Topic name already taken"),
				event("Bucket", "AWS::S3::Bucket", "UPDATE_FAILED", "Access Denied"),
				event("Bucket", "AWS::S3::Bucket", "UPDATE_IN_PROGRESS", ""),
				event("shop-app", stackType, "UPDATE_IN_PROGRESS", "User Initiated"),
				event("Old", "AWS::S3::Bucket", "CREATE_FAILED", "an earlier operation's failure"),
			}},
		},
	}
	r := &run.Run{Stacks: map[string]*run.Stack{"app": {Name: "app", StackName: "shop-app", StackID: "arn:stack/1", Phase: run.Executing}}}
	seen := (&Client{CFN: cfn}).Observe(context.Background(), r, nil, time.Now())
	if len(seen) != 1 {
		t.Fatalf("observations %+v", seen)
	}
	o := seen[0]
	if o.StackStatus != "UPDATE_ROLLBACK_COMPLETE" || o.Reason != "Bucket (AWS::S3::Bucket): Access Denied" {
		t.Errorf("observation %+v", o)
	}
	if p := seen[0].TerminationProtection; p == nil || !*p {
		t.Errorf("termination protection not reported")
	}
	// The same walk gives the operation's resource events, oldest first, the stack's own
	// and the earlier operation's left out.
	if got, want := eventList(o.Events), []string{"Bucket UPDATE_IN_PROGRESS", "Bucket UPDATE_FAILED Access Denied", "Topic UPDATE_FAILED Topic name already taken", "Queue UPDATE_FAILED Resource update cancelled"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if cfn.eventCalls != 2 {
		t.Errorf("%d DescribeStackEvents calls, want the 2 pages of the operation", cfn.eventCalls)
	}
}

func eventList(evs []run.ResourceEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, strings.TrimSpace(e.LogicalID+" "+e.Status+" "+e.Reason))
	}
	return out
}

// TestObserveSettledStackEvents: once a stack's operation settles, a look reads its
// resources' events (their type, physical id, status, reason and time) — only when the
// operation is the one the run started (its ClientRequestToken, the change set's name,
// when the events carry one); a stack still in progress costs no DescribeStackEvents.
func TestObserveSettledStackEvents(t *testing.T) {
	const stackType = "AWS::CloudFormation::Stack"
	withToken := func(e cfntypes.StackEvent, token string) cfntypes.StackEvent {
		if token != "" {
			e.ClientRequestToken = aws.String(token)
		}
		return e
	}
	for _, tc := range []struct {
		name   string
		status cfntypes.StackStatus
		phase  run.Phase
		token  string // of the operation's events
		want   []string
		calls  int
	}{
		{"an update the run executed", cfntypes.StackStatusUpdateComplete, run.Executing, "cairn-R1-3", []string{"Queue UPDATE_IN_PROGRESS", "Queue UPDATE_COMPLETE"}, 1},
		{"events without a token", cfntypes.StackStatusUpdateComplete, run.Executing, "", []string{"Queue UPDATE_IN_PROGRESS", "Queue UPDATE_COMPLETE"}, 1},
		{"someone else's update", cfntypes.StackStatusUpdateComplete, run.Executing, "console-1234", nil, 1},
		{"a deletion (no token of the run's)", cfntypes.StackStatusDeleteComplete, run.Deleting, "anything", []string{"Queue UPDATE_IN_PROGRESS", "Queue UPDATE_COMPLETE"}, 1},
		{"still in progress", cfntypes.StackStatusUpdateInProgress, run.Executing, "cairn-R1-3", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfn := &fakeCFN{t: t,
				stacks: map[string]*cloudformation.DescribeStacksOutput{"arn:stack/1": {Stacks: []cfntypes.Stack{{
					StackName: aws.String("shop-app"), StackId: aws.String("arn:stack/1"), StackStatus: tc.status,
				}}}},
				events: []*cloudformation.DescribeStackEventsOutput{{StackEvents: []cfntypes.StackEvent{
					withToken(event("shop-app", stackType, "UPDATE_COMPLETE", ""), tc.token),
					withToken(event("Queue", "AWS::SQS::Queue", "UPDATE_COMPLETE", ""), tc.token),
					withToken(event("Queue", "AWS::SQS::Queue", "UPDATE_IN_PROGRESS", ""), tc.token),
					withToken(event("shop-app", stackType, "UPDATE_IN_PROGRESS", "User Initiated"), tc.token),
					event("Queue", "AWS::SQS::Queue", "CREATE_COMPLETE", ""),
				}}},
			}
			r := &run.Run{Stacks: map[string]*run.Stack{"app": {Name: "app", StackName: "shop-app", StackID: "arn:stack/1", Phase: tc.phase, ChangeSetName: "cairn-R1-3"}}}
			seen := (&Client{CFN: cfn}).Observe(context.Background(), r, nil, time.Now())
			if len(seen) != 1 {
				t.Fatalf("observations %+v", seen)
			}
			if got := eventList(seen[0].Events); !slices.Equal(got, tc.want) {
				t.Errorf("events %q, want %q", got, tc.want)
			}
			if cfn.eventCalls != tc.calls {
				t.Errorf("%d DescribeStackEvents calls, want %d", cfn.eventCalls, tc.calls)
			}
			if len(seen[0].Events) > 0 {
				if e := seen[0].Events[0]; e.Type != "AWS::SQS::Queue" || e.PhysicalID != "phys-Queue" || e.Time.IsZero() {
					t.Errorf("event %+v: want its type, physical id and time", e)
				}
			}
		})
	}
}

// TestObserveRollbackTriggerReason: a stack rolled back by a rollback trigger failed no
// resource (the one in flight was only cancelled); the reason is why its rollback began,
// which names the alarm.
func TestObserveRollbackTriggerReason(t *testing.T) {
	const stackType = "AWS::CloudFormation::Stack"
	why := "The following rollback trigger(s) went into ALARM state: [arn:aws:cloudwatch:us-east-1:000000000000:alarm:app-5xx]. "
	for _, tc := range []struct {
		name   string
		events []cfntypes.StackEvent
		want   string
	}{
		{"update", []cfntypes.StackEvent{
			event("shop-app", stackType, "UPDATE_ROLLBACK_COMPLETE", ""),
			event("Queue", "AWS::SQS::Queue", "UPDATE_COMPLETE", ""),
			event("Queue", "AWS::SQS::Queue", "UPDATE_IN_PROGRESS", ""),
			event("shop-app", stackType, "UPDATE_ROLLBACK_IN_PROGRESS", why),
			event("Queue", "AWS::SQS::Queue", "UPDATE_FAILED", "Resource update cancelled"),
			event("Queue", "AWS::SQS::Queue", "UPDATE_IN_PROGRESS", ""),
			event("shop-app", stackType, "UPDATE_IN_PROGRESS", "User Initiated"),
			event("shop-app", stackType, "UPDATE_ROLLBACK_IN_PROGRESS", "an earlier operation's rollback"),
		}, why},
		{"a resource failure names the resource", []cfntypes.StackEvent{
			event("shop-app", stackType, "UPDATE_ROLLBACK_COMPLETE", ""),
			event("shop-app", stackType, "UPDATE_ROLLBACK_IN_PROGRESS", "The following resource(s) failed to update: [Queue]. "),
			event("Queue", "AWS::SQS::Queue", "UPDATE_FAILED", "Queue limit exceeded"),
			event("shop-app", stackType, "UPDATE_IN_PROGRESS", "User Initiated"),
		}, "Queue (AWS::SQS::Queue): Queue limit exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfn := &fakeCFN{t: t, events: []*cloudformation.DescribeStackEventsOutput{{StackEvents: tc.events}}}
			if got := (&Client{CFN: cfn}).FirstFailure(context.Background(), target.Spec{}, "arn:stack/1"); got != tc.want {
				t.Errorf("FirstFailure = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestObserveGoneStack(t *testing.T) {
	cfn := &fakeCFN{t: t, stacksErr: &smithy.GenericAPIError{Code: "ValidationError", Message: "Stack with id shop-app does not exist"}}
	r := &run.Run{Stacks: map[string]*run.Stack{"app": {Name: "app", StackName: "shop-app", Phase: run.Deleting}}}
	seen := (&Client{CFN: cfn}).Observe(context.Background(), r, nil, time.Now())
	if len(seen) != 1 || !seen[0].StackGone {
		t.Errorf("observations %+v", seen)
	}
}

// TestObserveTransientStackError reports a look that failed, with nothing seen, rather
// than failing the stack.
func TestObserveTransientStackError(t *testing.T) {
	cfn := &fakeCFN{t: t, stacksErr: &smithy.GenericAPIError{Code: "Throttling", Message: "Rate exceeded"}}
	r := &run.Run{Stacks: map[string]*run.Stack{"app": {Name: "app", StackName: "shop-app", Phase: run.Executing}}}
	seen := (&Client{CFN: cfn}).Observe(context.Background(), r, nil, time.Now())
	if len(seen) != 1 || seen[0].LookErr == "" || seen[0].Err != "" || seen[0].StackStatus != "" {
		t.Errorf("observations %+v, want one failed look", seen)
	}
}

// TestObserveLooksAtDueAndNamedStacksOnly describes the stacks whose check is due and those
// an event named, and nothing else; the ids an action returned for a stack that is not
// looked at are handed on as they are.
func TestObserveLooksAtDueAndNamedStacksOnly(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	describe := func(name string) *cloudformation.DescribeStacksOutput {
		return &cloudformation.DescribeStacksOutput{Stacks: []cfntypes.Stack{{StackName: aws.String(name), StackId: aws.String("arn:" + name), StackStatus: cfntypes.StackStatusUpdateInProgress}}}
	}
	cfn := &fakeCFN{t: t, stacks: map[string]*cloudformation.DescribeStacksOutput{"arn:due": describe("due"), "arn:named": describe("named")},
		changeSets: []*cloudformation.DescribeChangeSetOutput{{ChangeSetId: aws.String("arn:cs/soon"), Status: cfntypes.ChangeSetStatusCreateInProgress}}}
	r := &run.Run{Stacks: map[string]*run.Stack{
		"due":   {Name: "due", StackName: "due", StackID: "arn:due", Phase: run.Executing, CheckAt: now.Add(-time.Second)},
		"soon":  {Name: "soon", StackName: "soon", Phase: run.CreatingChangeSet, ChangeSetName: "cairn-r1-2", CheckAt: now},
		"named": {Name: "named", StackName: "named", StackID: "arn:named", Phase: run.Executing, CheckAt: now.Add(time.Minute)},
		"later": {Name: "later", StackName: "later", StackID: "arn:later", Phase: run.Executing, CheckAt: now.Add(time.Minute)},
		"fresh": {Name: "fresh", StackName: "fresh", Phase: run.CreatingChangeSet, ChangeSetName: "cairn-r1-3", CheckAt: now.Add(time.Minute)},
	}}
	pending := map[string]run.Observation{"fresh": {Stack: "fresh", ChangeSetID: "arn:cs/fresh", StackID: "arn:fresh"}}
	seen := (&Client{CFN: cfn}).Observe(context.Background(), r, pending, now, "named")
	got := map[string]run.Observation{}
	for _, o := range seen {
		got[o.Stack] = o
	}
	if len(seen) != 4 || got["due"].StackStatus == "" || got["named"].StackStatus == "" || got["soon"].ChangeSetStatus == "" {
		t.Errorf("observations %+v, want looks at due, named and soon (due now)", seen)
	}
	if o, ok := got["fresh"]; !ok || o.ChangeSetID != "arn:cs/fresh" || o.StackID != "arn:fresh" || o.ChangeSetStatus != "" {
		t.Errorf("fresh: %+v, want the ids of its CreateChangeSet handed on without a call", o)
	}
	if _, ok := got["later"]; ok {
		t.Errorf("later was looked at before its check")
	}
}

func TestLivePaginates(t *testing.T) {
	cfn := &fakeCFN{t: t, stacks: map[string]*cloudformation.DescribeStacksOutput{
		"": {Stacks: []cfntypes.Stack{{StackName: aws.String("a"), StackId: aws.String("arn:a"), StackStatus: cfntypes.StackStatusCreateComplete,
			Tags:    []cfntypes.Tag{{Key: aws.String("cairn:name"), Value: aws.String("a")}},
			Outputs: []cfntypes.Output{{OutputKey: aws.String("Arn"), OutputValue: aws.String("arn:x"), ExportName: aws.String("a-Arn")}}}}, NextToken: aws.String("t2")},
		"t2": {Stacks: []cfntypes.Stack{{StackName: aws.String("b"), StackStatus: cfntypes.StackStatusDeleteComplete}, {StackName: aws.String("c"), StackStatus: cfntypes.StackStatusRollbackComplete}}},
	}}
	live, err := (&Client{CFN: cfn}).Live(context.Background(), target.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 2 || live["a"].Exports["Arn"] != "a-Arn" || live["a"].Outputs["Arn"] != "arn:x" || live["a"].Tags["cairn:name"] != "a" || live["c"].Status != "ROLLBACK_COMPLETE" {
		t.Errorf("live %+v", live)
	}
}

func TestImporters(t *testing.T) {
	cfn := &fakeCFN{t: t, imports: map[string][]string{"a-Arn": {"z", "y"}}}
	got, err := (&Client{CFN: cfn}).Importers(context.Background(), target.Spec{}, []string{"a-Arn", "b-Arn"})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "map[a-Arn:[y z]]" {
		t.Errorf("importers %v", got)
	}
}

// TestConcurrentlyLimitsAndRaisesPanics runs at most Parallel calls at once, every one of
// them, and raises a panic of one in the caller once the others are done.
func TestConcurrentlyLimitsAndRaisesPanics(t *testing.T) {
	var mu sync.Mutex
	running, most, ran := 0, 0, 0
	full, gate, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		Concurrently(3*Parallel, func(int) {
			mu.Lock()
			running++
			most = max(most, running)
			if running == Parallel && ran == 0 {
				close(full)
			}
			mu.Unlock()
			<-gate // the first Parallel calls hold their slots until all of them run
			mu.Lock()
			running--
			ran++
			mu.Unlock()
		})
	}()
	<-full
	close(gate)
	<-finished
	if ran != 3*Parallel || most > Parallel {
		t.Errorf("%d ran, at most %d at once; want %d, at most %d", ran, most, 3*Parallel, Parallel)
	}
	done := 0
	func() {
		defer func() {
			if p := recover(); p != "crash" {
				t.Errorf("recovered %v, want the panic of the call", p)
			}
		}()
		Concurrently(5, func(i int) {
			if i == 2 {
				panic("crash")
			}
			mu.Lock()
			done++
			mu.Unlock()
		})
	}()
	if done != 4 {
		t.Errorf("%d other calls done before the panic was raised, want 4", done)
	}
}

// pagedCFN is an account of n stacks s000, s001, ... answering DescribeStacks 100 a page,
// or one stack by name; it counts the calls.
type pagedCFN struct {
	API
	n, calls int
}

func (f *pagedCFN) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	f.calls++
	stack := func(i int) cfntypes.Stack {
		name := fmt.Sprintf("s%03d", i)
		return cfntypes.Stack{StackName: aws.String(name), StackId: aws.String("arn:" + name), StackStatus: cfntypes.StackStatusCreateComplete}
	}
	if name := aws.ToString(in.StackName); name != "" {
		var i int
		if _, err := fmt.Sscanf(name, "s%d", &i); err != nil || i >= f.n {
			return nil, &smithy.GenericAPIError{Code: "ValidationError", Message: "Stack with id " + name + " does not exist"}
		}
		return &cloudformation.DescribeStacksOutput{Stacks: []cfntypes.Stack{stack(i)}}, nil
	}
	start := 0
	fmt.Sscan(aws.ToString(in.NextToken), &start)
	out := &cloudformation.DescribeStacksOutput{}
	for i := start; i < min(start+100, f.n); i++ {
		out.Stacks = append(out.Stacks, stack(i))
	}
	if start+100 < f.n {
		out.NextToken = aws.String(fmt.Sprint(start + 100))
	}
	return out, nil
}

// TestStacksReadsTheCheaperWay describes the stacks a run names by listing the account
// while that is cheaper, and by name otherwise: never much more than the fewer of the
// account's pages and the stacks named.
func TestStacksReadsTheCheaperWay(t *testing.T) {
	names := func(is ...int) []string {
		var out []string
		for _, i := range is {
			out = append(out, fmt.Sprintf("s%03d", i))
		}
		return out
	}
	span := func(from, to int) []int {
		var out []int
		for i := from; i < to; i++ {
			out = append(out, i)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		account int
		want    []string
		found   int
		calls   int
	}{
		{"none named", 2500, nil, 0, 0},
		{"the whole account, listed", 500, names(span(0, 500)...), 500, 5},
		{"a new stack: the listing ends, so it does not exist", 50, names(3, 700), 1, 1},
		{"500 of a 2,500-stack account, the last ones", 2500, names(span(2000, 2500)...), 500, 25},
		{"500 of a 2,500-stack account, the first ones", 2500, names(span(0, 500)...), 500, 5},
		{"2 of a 2,500-stack account: by name after 2 pages", 2500, names(1200, 2400), 2, 4},
		{"5 new stacks in a big account: by name after 5 pages", 2500, names(3000, 3001, 3002, 3003, 3004), 0, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfn := &pagedCFN{n: tc.account}
			live, err := (&Client{CFN: cfn}).Stacks(context.Background(), target.Spec{}, tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if len(live) != tc.found || cfn.calls != tc.calls {
				t.Errorf("%d stacks found with %d calls, want %d with %d", len(live), cfn.calls, tc.found, tc.calls)
			}
			for name, l := range live {
				if !slices.Contains(tc.want, name) || l.StackID != "arn:"+name {
					t.Errorf("found %s %+v, not asked for", name, l)
				}
			}
		})
	}
}
