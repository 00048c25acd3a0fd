package changeset

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
)

// maxEventPages bounds the walk back through a stack's events to the start of its
// current operation.
const maxEventPages = 10

// Live describes every stack of t's account and region (see ListStacks), keyed by name.
func (c *Client) Live(ctx context.Context, t target.Spec) (map[string]plan.Live, error) {
	api, budget, err := c.At(ctx, t)
	if err != nil {
		return nil, err
	}
	return listStacks(ctx, api, budget)
}

// Stacks describes the stacks named (CloudFormation names) in t's account and region,
// keyed by name: those that do not exist are absent. It pages through DescribeStacks while
// that finds them, and once the pages read outnumber the stacks still unseen it describes
// those by name instead: a run's reads are at most about twice the fewer of the account's
// pages and the stacks it names, so they do not grow with the other stacks of the account
// beyond that.
func (c *Client) Stacks(ctx context.Context, t target.Spec, names []string) (map[string]plan.Live, error) {
	want := map[string]bool{}
	for _, n := range names {
		if n != "" {
			want[n] = true
		}
	}
	live := map[string]plan.Live{}
	if len(want) == 0 {
		return live, nil
	}
	api, budget, err := c.At(ctx, t)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	in := &cloudformation.DescribeStacksInput{}
	for pages := 0; len(seen) < len(want) && pages < len(want)-len(seen); pages++ {
		if err := budget.Wait(ctx); err != nil {
			return nil, err
		}
		out, err := api.DescribeStacks(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describe stacks: %w", err)
		}
		for _, st := range out.Stacks {
			name := aws.ToString(st.StackName)
			if !want[name] || seen[name] || st.StackStatus == cfntypes.StackStatusDeleteComplete {
				continue
			}
			seen[name] = true
			live[name] = toLive(st)
		}
		if aws.ToString(out.NextToken) == "" {
			return live, nil // the whole account: the stacks not seen do not exist
		}
		in.NextToken = out.NextToken
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if seen[name] {
			continue
		}
		if err := budget.Wait(ctx); err != nil {
			return nil, err
		}
		out, err := api.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
		if awserr.StackMissing(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("describe stack %s: %w", name, err)
		}
		for _, st := range out.Stacks {
			if aws.ToString(st.StackName) == name && st.StackStatus != cfntypes.StackStatusDeleteComplete {
				live[name] = toLive(st)
			}
		}
	}
	return live, nil
}

// StackLister lists stacks.
type StackLister interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// ListStacks describes every stack of the account and region with one paginated
// DescribeStacks, keyed by stack name: the drift sweep's view of AWS, never one call per
// stack. Each page waits for budget (nil: no limit), on the wall clock.
func ListStacks(ctx context.Context, api StackLister, budget *rate.Limiter) (map[string]plan.Live, error) {
	return listStacks(ctx, api, awsclient.Budget{Limiter: budget})
}

func listStacks(ctx context.Context, api StackLister, budget Budget) (map[string]plan.Live, error) {
	live := map[string]plan.Live{}
	in := &cloudformation.DescribeStacksInput{}
	for {
		if err := budget.Wait(ctx); err != nil {
			return nil, err
		}
		out, err := api.DescribeStacks(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describe stacks: %w", err)
		}
		for _, s := range out.Stacks {
			if s.StackStatus == cfntypes.StackStatusDeleteComplete || aws.ToString(s.ParentId) != "" {
				continue // nested stacks are their parents' (and carry their tags)
			}
			live[aws.ToString(s.StackName)] = toLive(s)
		}
		if aws.ToString(out.NextToken) == "" {
			return live, nil
		}
		in.NextToken = out.NextToken
	}
}

func toLive(s cfntypes.Stack) plan.Live {
	l := plan.Live{
		StackName: aws.ToString(s.StackName), StackID: aws.ToString(s.StackId), Status: string(s.StackStatus),
		Tags: map[string]string{}, TerminationProtection: aws.ToBool(s.EnableTerminationProtection),
		LastUpdated: aws.ToTime(s.CreationTime),
	}
	if s.LastUpdatedTime != nil {
		l.LastUpdated = *s.LastUpdatedTime
	}
	for _, t := range s.Tags {
		l.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	for _, p := range s.Parameters {
		if l.Parameters == nil {
			l.Parameters = map[string]string{}
		}
		l.Parameters[aws.ToString(p.ParameterKey)] = aws.ToString(p.ParameterValue)
	}
	for _, o := range s.Outputs {
		if l.Outputs == nil {
			l.Outputs = map[string]string{}
		}
		l.Outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
		if e := aws.ToString(o.ExportName); e != "" {
			if l.Exports == nil {
				l.Exports = map[string]string{}
			}
			l.Exports[aws.ToString(o.OutputKey)] = e
		}
	}
	return l
}

// Parallel is how many CloudFormation calls a step makes at once, each still waiting for
// the run's budget: a step that looks at fifty stacks takes a few calls' time, not fifty.
const Parallel = 10

// Observe describes what r.Due(now, named...) lists, Parallel at a time: change sets
// being created (DescribeChangeSet, all pages, counting changes) and stacks in flight
// (DescribeStacks by id, and on failure the first failing resource's reason from
// DescribeStackEvents). pending holds the results of the previous step's actions, by
// config name: a failed action is reported as is, without a call; a successful one lends
// its ids, and is reported as is when its stack is not due, so the run keeps them.
func (c *Client) Observe(ctx context.Context, r *run.Run, pending map[string]run.Observation, now time.Time, named ...string) []run.Observation {
	var seen []run.Observation
	done := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(pending)) {
		if p := pending[name]; p.Err != "" && r.Stacks[name] != nil {
			seen = append(seen, p)
			done[name] = true
		}
	}
	changeSets, stacks := r.Due(now, named...)
	var looks []func() run.Observation
	for _, name := range changeSets {
		if done[name] {
			continue
		}
		done[name] = true
		s, p := r.Stacks[name], pending[name]
		looks = append(looks, func() run.Observation {
			api, budget, err := c.At(ctx, s.Target)
			if err != nil {
				return run.Failure(s.Name, err)
			}
			o := c.describeChangeSet(ctx, api, budget, s, cmp.Or(p.ChangeSetID, s.ChangeSetID))
			o.StackID = cmp.Or(o.StackID, p.StackID)
			return o
		})
	}
	for _, name := range stacks {
		if done[name] {
			continue
		}
		done[name] = true
		s, p := r.Stacks[name], pending[name]
		looks = append(looks, func() run.Observation {
			api, budget, err := c.At(ctx, s.Target)
			if err != nil {
				return run.Failure(s.Name, err)
			}
			if s.Phase == run.DetectingDrift {
				return c.describeDetection(ctx, api, budget, s, cmp.Or(p.DriftDetectionID, s.DriftDetection))
			}
			o := c.describeStack(ctx, api, budget, s, cmp.Or(p.StackID, s.StackID))
			if o.Err != "" {
				// A failed observation tells nothing: the stack is looked at again
				// later, rather than counting as a failed action.
				c.log().Warn("changeset: could not observe stack", "stack", s.Name, "err", o.Err)
				o = run.Observation{Stack: s.Name, LookErr: o.Err}
			}
			return o
		})
	}
	looked := make([]run.Observation, len(looks))
	Concurrently(len(looks), func(i int) { looked[i] = looks[i]() })
	seen = append(seen, looked...)
	for _, name := range slices.Sorted(maps.Keys(pending)) {
		if p := pending[name]; !done[name] && r.Stacks[name] != nil && (p.ChangeSetID != "" || p.StackID != "" || p.DriftDetectionID != "") {
			seen = append(seen, run.Observation{Stack: name, ChangeSetID: p.ChangeSetID, StackID: p.StackID, DriftDetectionID: p.DriftDetectionID})
		}
	}
	return seen
}

// Concurrently runs do(0) to do(n-1), Parallel at a time, and returns once all have. A
// panic in one is raised again in the caller once the others are done, as if they had run
// one after the other (a panic kills a Lambda the same way from any goroutine, but only
// the caller's is the handler's to recover).
func Concurrently(n int, do func(i int)) {
	var (
		g        errgroup.Group
		mu       sync.Mutex
		panicked any
	)
	g.SetLimit(Parallel)
	for i := range n {
		g.Go(func() error {
			defer func() {
				if p := recover(); p != nil {
					mu.Lock()
					if panicked == nil {
						panicked = p
					}
					mu.Unlock()
				}
			}()
			do(i)
			return nil
		})
	}
	g.Wait()
	if panicked != nil {
		panic(panicked)
	}
}

func (c *Client) describeChangeSet(ctx context.Context, api API, budget Budget, s *run.Stack, id string) run.Observation {
	o := run.Observation{Stack: s.Name, ChangeSetID: id}
	in := &cloudformation.DescribeChangeSetInput{ChangeSetName: aws.String(s.ChangeSetName), StackName: aws.String(s.StackName)}
	if id != "" {
		in.ChangeSetName, in.StackName = aws.String(id), nil
	}
	for page := 0; ; page++ {
		if err := budget.Wait(ctx); err != nil {
			return run.Observation{Stack: s.Name, Err: err.Error()}
		}
		out, err := api.DescribeChangeSet(ctx, in)
		if err != nil {
			// A change set not found was never created (its creation failed) or is gone:
			// creating it again under the same ClientToken is safe.
			return run.Observation{Stack: s.Name, Err: fmt.Sprintf("describe change set %s of %s: %s", s.ChangeSetName, s.StackName, awserr.Reason(err)), Permanent: awserr.Permanent(err) && awserr.ErrorCode(err) != "ChangeSetNotFound"}
		}
		if page == 0 {
			o.ChangeSetID = cmp.Or(aws.ToString(out.ChangeSetId), id)
			o.StackID = aws.ToString(out.StackId)
			o.ChangeSetStatus = string(out.Status)
			o.ChangeSetReason = aws.ToString(out.StatusReason)
		}
		o.Changes += len(out.Changes)
		for _, ch := range out.Changes {
			if rc := ch.ResourceChange; rc != nil {
				o.Drift = append(o.Drift, Drift(rc)...)
			}
		}
		if len(s.Outside) > 0 {
			for _, ch := range out.Changes {
				if rc := ch.ResourceChange; rc != nil {
					o.Touched = append(o.Touched, touched(rc)...)
				}
			}
		}
		if len(s.Rippled) > 0 {
			for _, ch := range out.Changes {
				if rc := ch.ResourceChange; rc != nil {
					o.ResourceChanges = append(o.ResourceChanges, ResourceChange(rc))
				}
			}
		}
		if aws.ToString(out.NextToken) == "" {
			return o
		}
		in.NextToken = out.NextToken
	}
}

// describeDetection observes the drift detection id of a plan run's stack
// (DescribeStackDriftDetectionStatus). A look that fails tells nothing: the stack is
// looked at again later.
func (c *Client) describeDetection(ctx context.Context, api API, budget Budget, s *run.Stack, id string) run.Observation {
	o := run.Observation{Stack: s.Name, DriftDetectionID: id}
	if id == "" {
		return o // the detection's id is not recorded yet: the next step has it
	}
	if err := budget.Wait(ctx); err != nil {
		o.LookErr = err.Error()
		return o
	}
	out, err := api.DescribeStackDriftDetectionStatus(ctx, &cloudformation.DescribeStackDriftDetectionStatusInput{StackDriftDetectionId: aws.String(id)})
	if err != nil {
		c.log().Warn("changeset: could not observe a drift detection", "stack", s.Name, "detection", id, "err", err)
		o.LookErr = fmt.Sprintf("describe drift detection %s of %s: %s", id, s.StackName, awserr.Reason(err))
		return o
	}
	o.DriftDetectionStatus, o.StackDriftStatus = string(out.DetectionStatus), string(out.StackDriftStatus)
	o.DriftDetectionReason = aws.ToString(out.DetectionStatusReason)
	return o
}

// describeStack observes one stack by id (so a deleted stack still answers DELETE_COMPLETE),
// with its termination protection.
func (c *Client) describeStack(ctx context.Context, api API, budget Budget, s *run.Stack, id string) run.Observation {
	o := run.Observation{Stack: s.Name}
	ref := cmp.Or(id, s.StackName)
	if err := budget.Wait(ctx); err != nil {
		o.Err = err.Error()
		return o
	}
	out, err := api.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(ref)})
	if err != nil {
		if awserr.StackMissing(err) {
			o.StackGone = true
			return o
		}
		o.Err = fmt.Sprintf("describe stack %s: %s", s.StackName, awserr.Reason(err))
		o.Permanent = awserr.Permanent(err)
		return o
	}
	if len(out.Stacks) == 0 {
		o.StackGone = true
		return o
	}
	st := out.Stacks[0]
	o.StackID = aws.ToString(st.StackId)
	o.StackStatus = string(st.StackStatus)
	if st.StackStatus == cfntypes.StackStatusDeleteComplete {
		o.StackGone = true
	}
	for _, out := range st.Outputs {
		if o.Outputs == nil {
			o.Outputs = map[string]string{}
		}
		o.Outputs[aws.ToString(out.OutputKey)] = aws.ToString(out.OutputValue)
	}
	if settled(o.StackStatus) {
		// The operation is over: its events say what became of each resource (the run
		// keeps them for its page) and, when it failed, why.
		evs := c.operation(ctx, api, budget, o.StackID)
		if failed(o.StackStatus) {
			o.Reason = cmp.Or(firstFailureOf(evs), aws.ToString(st.StackStatusReason))
		}
		token := ""
		if s.Phase == run.Executing {
			token = s.ChangeSetName // ExecuteChangeSet's ClientRequestToken (run.Action.Token)
		}
		o.Events = resourceEvents(evs, token)
	}
	o.TerminationProtection = aws.Bool(aws.ToBool(st.EnableTerminationProtection))
	return o
}

// failed reports the statuses whose reason the report needs.
func failed(status string) bool {
	return strings.HasSuffix(status, "_FAILED") || status == "ROLLBACK_COMPLETE" || status == "UPDATE_ROLLBACK_COMPLETE"
}

// operationStarts are the stack's own statuses that begin an operation a user or cairn
// started; a rollback is part of the operation that failed.
var operationStarts = map[string]bool{
	"CREATE_IN_PROGRESS": true, "UPDATE_IN_PROGRESS": true, "DELETE_IN_PROGRESS": true,
	"IMPORT_IN_PROGRESS": true, "REVIEW_IN_PROGRESS": true,
}

// Undeletable lists the resources of the stack at t with id stackID that CloudFormation
// failed to delete (status DELETE_FAILED), which a stack left ROLLBACK_FAILED or
// DELETE_FAILED can only be deleted without: its way out is a deletion that keeps them.
func (c *Client) Undeletable(ctx context.Context, t target.Spec, stackID string) ([]plan.Resource, error) {
	all, err := c.stackResources(ctx, t, stackID)
	if err != nil {
		return nil, err
	}
	var res []plan.Resource
	for _, r := range all {
		if r.ResourceStatus == cfntypes.ResourceStatusDeleteFailed {
			res = append(res, plan.Resource{LogicalID: aws.ToString(r.LogicalResourceId), Type: aws.ToString(r.ResourceType), Reason: aws.ToString(r.ResourceStatusReason)})
		}
	}
	return res, nil
}

// FirstFailure returns the reason of the earliest *_FAILED resource event of the current
// operation of the stack at t with id stackID, as "LogicalId (Type): reason"; else the
// stack's own failure reason, or why its rollback began (a rollback trigger's alarm fails no
// resource); "" when there is none.
func (c *Client) FirstFailure(ctx context.Context, t target.Spec, stackID string) string {
	api, budget, err := c.At(ctx, t)
	if err != nil {
		return ""
	}
	return c.firstFailure(ctx, api, budget, stackID)
}

// operation reads the events of the latest operation of the stack with id stackID
// (DescribeStackEvents), newest first, back to the stack's own event that began it (at
// most maxEventPages pages: the oldest of a longer operation are not read).
func (c *Client) operation(ctx context.Context, api API, budget Budget, stackID string) []cfntypes.StackEvent {
	in := &cloudformation.DescribeStackEventsInput{StackName: aws.String(stackID)}
	var evs []cfntypes.StackEvent
	for page := 0; page < maxEventPages; page++ {
		if err := budget.Wait(ctx); err != nil {
			break
		}
		out, err := api.DescribeStackEvents(ctx, in)
		if err != nil {
			c.log().Warn("changeset: could not read the stack's events", "stack_id", stackID, "err", err)
			break
		}
		for _, e := range out.StackEvents {
			evs = append(evs, e)
			if own(e) && operationStarts[string(e.ResourceStatus)] {
				return evs
			}
		}
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	return evs
}

// own reports whether e is an event of the stack itself rather than of one of its
// resources.
func own(e cfntypes.StackEvent) bool {
	return aws.ToString(e.PhysicalResourceId) == aws.ToString(e.StackId) || aws.ToString(e.ResourceType) == "AWS::CloudFormation::Stack" && aws.ToString(e.LogicalResourceId) == aws.ToString(e.StackName)
}

// settled reports the stack statuses that end an operation, as the run takes them.
func settled(status string) bool {
	return status != "" && (!strings.HasSuffix(status, "_IN_PROGRESS") || status == "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS")
}

// resourceEvents are the events of an operation (evs, newest first, as operation reads
// them) of the stack's resources, in time order. token is the ClientRequestToken the
// operation was started with ("" when none or unknown): when the event that began the
// operation read carries another, that operation is someone else's (the stack was changed
// again before it was looked at), and none is returned.
func resourceEvents(evs []cfntypes.StackEvent, token string) []run.ResourceEvent {
	if n := len(evs); token != "" && n > 0 && own(evs[n-1]) && operationStarts[string(evs[n-1].ResourceStatus)] {
		if t := aws.ToString(evs[n-1].ClientRequestToken); t != "" && t != token {
			return nil
		}
	}
	var out []run.ResourceEvent
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if own(e) {
			continue
		}
		out = append(out, run.ResourceEvent{
			LogicalID: aws.ToString(e.LogicalResourceId), Type: aws.ToString(e.ResourceType), PhysicalID: aws.ToString(e.PhysicalResourceId),
			Status: string(e.ResourceStatus), Reason: aws.ToString(e.ResourceStatusReason), Time: aws.ToTime(e.Timestamp).UTC(),
		})
	}
	return out
}

// firstFailure: see FirstFailure.
func (c *Client) firstFailure(ctx context.Context, api API, budget Budget, stackID string) string {
	return firstFailureOf(c.operation(ctx, api, budget, stackID))
}

// firstFailureOf is FirstFailure's reason, from the events of the operation (newest
// first).
func firstFailureOf(evs []cfntypes.StackEvent) string {
	var first, fallback, rolledBack string
	for _, e := range evs {
		status := string(e.ResourceStatus)
		own := own(e)
		reason := aws.ToString(e.ResourceStatusReason)
		if own && strings.HasSuffix(status, "ROLLBACK_IN_PROGRESS") && reason != "" {
			rolledBack = reason
		}
		if !strings.HasSuffix(status, "_FAILED") {
			continue
		}
		if own {
			if reason != "" {
				fallback = reason
			}
			continue
		}
		if strings.Contains(reason, "Resource creation cancelled") || strings.Contains(reason, "Resource update cancelled") {
			continue // a sibling of the real failure
		}
		first = fmt.Sprintf("%s (%s): %s", aws.ToString(e.LogicalResourceId), aws.ToString(e.ResourceType), reason)
	}
	return cmp.Or(first, fallback, rolledBack)
}
