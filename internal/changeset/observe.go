package changeset

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/awsclient"
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
	return ListStacks(ctx, api, budget)
}

// StackLister lists stacks.
type StackLister interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// ListStacks describes every stack of the account and region with one paginated
// DescribeStacks, keyed by stack name: the plan's and the drift sweep's view of AWS, never
// one call per stack. Each page waits for budget (nil: no limit).
func ListStacks(ctx context.Context, api StackLister, budget *rate.Limiter) (map[string]plan.Live, error) {
	live := map[string]plan.Live{}
	in := &cloudformation.DescribeStacksInput{}
	for {
		if budget != nil {
			if err := budget.Wait(ctx); err != nil {
				return nil, err
			}
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

// Observe describes what r.Watch() lists: change sets being created (DescribeChangeSet,
// all pages, counting changes) and stacks in flight (DescribeStacks by id, and on failure
// the first failing resource's reason from DescribeStackEvents). pending holds the results
// of the previous step's actions, by config name: a failed action is reported as is,
// without a call; a successful one lends its ids.
func (c *Client) Observe(ctx context.Context, r *run.Run, pending map[string]run.Observation) []run.Observation {
	var seen []run.Observation
	done := map[string]bool{}
	for name, p := range pending {
		if p.Err != "" && r.Stacks[name] != nil {
			seen = append(seen, p)
			done[name] = true
		}
	}
	changeSets, stacks := r.Watch()
	for _, name := range changeSets {
		if done[name] {
			continue
		}
		s := r.Stacks[name]
		id := cmp.Or(pending[name].ChangeSetID, s.ChangeSetID)
		api, budget, err := c.At(ctx, s.Target)
		if err != nil {
			seen = append(seen, run.Failure(name, err))
			continue
		}
		o := c.describeChangeSet(ctx, api, budget, s, id)
		o.StackID = cmp.Or(o.StackID, pending[name].StackID)
		seen = append(seen, o)
	}
	for _, name := range stacks {
		if done[name] {
			continue
		}
		s := r.Stacks[name]
		api, budget, err := c.At(ctx, s.Target)
		if err != nil {
			seen = append(seen, run.Failure(name, err))
			continue
		}
		o := c.describeStack(ctx, api, budget, s, cmp.Or(pending[name].StackID, s.StackID))
		if o.Err != "" {
			// A failed observation tells nothing: the stack is observed again next step,
			// rather than counting as a failed action.
			c.log().Warn("changeset: could not observe stack", "stack", name, "err", o.Err)
			continue
		}
		seen = append(seen, o)
	}
	return seen
}

func (c *Client) describeChangeSet(ctx context.Context, api API, budget *rate.Limiter, s *run.Stack, id string) run.Observation {
	o := run.Observation{Stack: s.Name, ChangeSetID: id}
	in := &cloudformation.DescribeChangeSetInput{ChangeSetName: aws.String(s.ChangeSetName), StackName: aws.String(s.StackName)}
	if id != "" {
		in.ChangeSetName, in.StackName = aws.String(id), nil
	}
	for page := 0; ; page++ {
		if err := wait(ctx, budget); err != nil {
			return run.Observation{Stack: s.Name, Err: err.Error()}
		}
		out, err := api.DescribeChangeSet(ctx, in)
		if err != nil {
			// A change set not found was never created (its creation failed) or is gone:
			// creating it again under the same ClientToken is safe.
			return run.Observation{Stack: s.Name, Err: fmt.Sprintf("describe change set %s of %s: %v", s.ChangeSetName, s.StackName, err), Permanent: awsclient.Permanent(err) && awsclient.ErrorCode(err) != "ChangeSetNotFound"}
		}
		if page == 0 {
			o.ChangeSetID = cmp.Or(aws.ToString(out.ChangeSetId), id)
			o.StackID = aws.ToString(out.StackId)
			o.ChangeSetStatus = string(out.Status)
			o.ChangeSetReason = aws.ToString(out.StatusReason)
		}
		o.Changes += len(out.Changes)
		if aws.ToString(out.NextToken) == "" {
			return o
		}
		in.NextToken = out.NextToken
	}
}

// describeStack observes one stack by id (so a deleted stack still answers DELETE_COMPLETE),
// with its termination protection.
func (c *Client) describeStack(ctx context.Context, api API, budget *rate.Limiter, s *run.Stack, id string) run.Observation {
	o := run.Observation{Stack: s.Name}
	ref := cmp.Or(id, s.StackName)
	if err := wait(ctx, budget); err != nil {
		o.Err = err.Error()
		return o
	}
	out, err := api.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(ref)})
	if err != nil {
		if awsclient.StackMissing(err) {
			o.StackGone = true
			return o
		}
		o.Err = fmt.Sprintf("describe stack %s: %v", s.StackName, err)
		o.Permanent = awsclient.Permanent(err)
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
	if failed(o.StackStatus) {
		o.Reason = c.firstFailure(ctx, api, budget, o.StackID)
		if o.Reason == "" {
			o.Reason = aws.ToString(st.StackStatusReason)
		}
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

// firstFailure: see FirstFailure. Events come newest first, so it walks back to the event
// that started the operation.
func (c *Client) firstFailure(ctx context.Context, api API, budget *rate.Limiter, stackID string) string {
	in := &cloudformation.DescribeStackEventsInput{StackName: aws.String(stackID)}
	var first string
	var fallback, rolledBack string
	for page := 0; page < maxEventPages; page++ {
		if err := wait(ctx, budget); err != nil {
			break
		}
		out, err := api.DescribeStackEvents(ctx, in)
		if err != nil {
			c.log().Warn("changeset: could not read stack events for the failure reason", "stack_id", stackID, "err", err)
			break
		}
		for _, e := range out.StackEvents {
			status := string(e.ResourceStatus)
			own := aws.ToString(e.PhysicalResourceId) == aws.ToString(e.StackId) || aws.ToString(e.ResourceType) == "AWS::CloudFormation::Stack" && aws.ToString(e.LogicalResourceId) == aws.ToString(e.StackName)
			if own && operationStarts[status] {
				return cmp.Or(first, fallback, rolledBack)
			}
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
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	return cmp.Or(first, fallback, rolledBack)
}
