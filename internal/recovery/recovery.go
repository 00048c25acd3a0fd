// Package recovery brings a stack stuck in a failed state back to a stable one, the way a
// person does in the console, but under the deployment's lock so no run deploys it
// meanwhile: ContinueUpdateRollback of an UPDATE_ROLLBACK_FAILED stack (skipping the
// resources named), or RollbackStack of a stack whose create or update failed. It waits
// for CloudFormation to settle and records the stack's new status and outputs in the
// persistent graph, so the next plan starts from what is live.
package recovery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
	"github.com/cairn-dev/cairn/internal/target"
)

// ErrTimeout says the stack had not settled when the recovery stopped waiting; the
// recovery goes on in CloudFormation.
var ErrTimeout = errors.New("gave up waiting")

// CFNAPI is the part of CloudFormation a recovery calls.
type CFNAPI interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
	ContinueUpdateRollback(ctx context.Context, in *cloudformation.ContinueUpdateRollbackInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ContinueUpdateRollbackOutput, error)
	RollbackStack(ctx context.Context, in *cloudformation.RollbackStackInput, optFns ...func(*cloudformation.Options)) (*cloudformation.RollbackStackOutput, error)
}

// Action is the CloudFormation call that recovers a stack.
type Action string

const (
	ContinueUpdateRollback Action = "ContinueUpdateRollback"
	RollbackStack          Action = "RollbackStack"
)

// Choose decides how to recover a stack in status, and says what works instead when
// nothing here does: ContinueUpdateRollback for UPDATE_ROLLBACK_FAILED; with rollback,
// RollbackStack, which takes CREATE_FAILED and UPDATE_FAILED (a failure kept by
// disable_rollback). CloudFormation can only delete a stack left ROLLBACK_FAILED or
// DELETE_FAILED: that is done by an approved plan, which keeps what fails to delete.
func Choose(status string, rollback bool) (Action, error) {
	switch {
	case status == string(cfntypes.StackStatusRollbackFailed) || status == string(cfntypes.StackStatusDeleteFailed):
		return "", fmt.Errorf("stack is %s: CloudFormation can only delete it, which neither ContinueUpdateRollback nor RollbackStack does: plan it (`cairn plan PATH --deployment NAME`) and approve that plan: it deletes the stack keeping the resources that fail to delete (listed in the plan), and creates it again if the config keeps it", status)
	case rollback && (status == string(cfntypes.StackStatusCreateFailed) || status == string(cfntypes.StackStatusUpdateFailed)):
		return RollbackStack, nil
	case rollback:
		return "", fmt.Errorf("stack is %s; --rollback (RollbackStack) takes a stack that is CREATE_FAILED or UPDATE_FAILED", status)
	case status == string(cfntypes.StackStatusUpdateRollbackFailed):
		return ContinueUpdateRollback, nil
	case status == string(cfntypes.StackStatusCreateFailed) || status == string(cfntypes.StackStatusUpdateFailed):
		return "", fmt.Errorf("stack is %s; roll it back with --rollback (RollbackStack)", status)
	}
	return "", fmt.Errorf("stack is %s; ContinueUpdateRollback needs UPDATE_ROLLBACK_FAILED, and --rollback needs CREATE_FAILED or UPDATE_FAILED: there is nothing to recover", status)
}

// Settled reports whether status is stable, and whether it is a failure.
func Settled(status string) (settled, failed bool) {
	if strings.HasSuffix(status, "_IN_PROGRESS") {
		return false, false
	}
	return true, strings.HasSuffix(status, "_FAILED")
}

// Request names the stack to recover.
type Request struct {
	// Namespace and Key name the deployment's graph, whose lock the recovery holds.
	Namespace, Key string
	// Stack is the stack's config name or CloudFormation name.
	Stack    string
	Skip     []string
	Rollback bool
}

// Started is what a recovery started: the stack, its status before, and the call made.
type Started struct {
	StackName string
	Was       string
	Action    Action
	Skip      []string
}

// Result is how a recovery ended.
type Result struct {
	Started
	// Status is the stack's status once settled; Reason CloudFormation's reason for it.
	Status string
	Reason string
	// Failed says the stack settled in a failed state.
	Failed bool
	// Recorded says what the graph now holds, or why nothing was recorded.
	Recorded string
}

// Recoverer recovers stacks.
type Recoverer struct {
	// CFN is CloudFormation of cairn's account and region; At, when set, that of a stack's
	// target (its region, its role assumed), for stacks the graph records elsewhere.
	CFN   CFNAPI
	At    func(ctx context.Context, t target.Spec) (CFNAPI, error)
	State *statestore.Store
	Clock clock.Clock
	Poll  time.Duration
	// Timeout bounds the wait for the stack to settle.
	Timeout time.Duration
	// RunID names the recovery in the lock (default recover-TIME).
	RunID string
}

// Recover takes the graph's lock, starts the recovery of the stack, calls started once it
// is under way, waits for it to settle and records the outcome in the graph. A timeout
// returns the result so far and ErrTimeout.
func (r *Recoverer) Recover(ctx context.Context, req Request, started func(Started)) (*Result, error) {
	clk := r.Clock
	if clk == nil {
		clk = clock.Real
	}
	stackName := req.Stack
	api := r.CFN
	if g, err := r.State.Show(ctx, req.Namespace, req.Key, ""); err == nil && g.Stacks[req.Stack] != nil {
		gs := g.Stacks[req.Stack]
		stackName = gs.StackName
		if !gs.Target.IsHome() {
			if r.At == nil {
				return nil, fmt.Errorf("recover %s: it lives in region %q through role %q, which this cairn cannot reach", stackName, gs.Target.Region, gs.Target.RoleARN)
			}
			if api, err = r.At(ctx, gs.Target); err != nil {
				return nil, fmt.Errorf("recover %s: %w", stackName, err)
			}
		}
	}
	runID := r.RunID
	if runID == "" {
		runID = "recover-" + clk.Now().UTC().Format("20060102-150405")
	}
	lock, err := r.State.Acquire(ctx, req.Namespace, req.Key, runID, statestore.Owner{Function: "cairn recover"})
	if err != nil {
		return nil, fmt.Errorf("recover %s: %w: wait for the run to end (or `cairn unlock %s %s` if it is dead)", stackName, err, req.Namespace, req.Key)
	}
	defer r.State.Release(context.WithoutCancel(ctx), lock)
	before, err := describe(ctx, api, stackName)
	if err != nil {
		return nil, fmt.Errorf("recover %s: %w", stackName, err)
	}
	action, err := Choose(string(before.StackStatus), req.Rollback)
	if err != nil {
		return nil, fmt.Errorf("recover %s: %w", stackName, err)
	}
	token := aws.String(lock.Token)
	switch action {
	case RollbackStack:
		_, err = api.RollbackStack(ctx, &cloudformation.RollbackStackInput{StackName: aws.String(stackName), ClientRequestToken: token})
	default:
		_, err = api.ContinueUpdateRollback(ctx, &cloudformation.ContinueUpdateRollbackInput{StackName: aws.String(stackName), ResourcesToSkip: req.Skip, ClientRequestToken: token})
	}
	if err != nil {
		return nil, fmt.Errorf("recover %s (%s): %s: %w", stackName, before.StackStatus, action, err)
	}
	res := &Result{Started: Started{StackName: stackName, Was: string(before.StackStatus), Action: action, Skip: req.Skip}}
	if started != nil {
		started(res.Started)
	}
	deadline := clk.Now().Add(r.Timeout)
	for {
		st, err := describe(ctx, api, stackName)
		if err != nil {
			return res, fmt.Errorf("recover %s: %w", stackName, err)
		}
		res.Status, res.Reason = string(st.StackStatus), aws.ToString(st.StackStatusReason)
		if settled, failed := Settled(res.Status); settled {
			res.Failed = failed
			if !failed {
				res.Recorded, err = r.record(ctx, lock, st, clk.Now())
			}
			return res, err
		}
		if !clk.Now().Before(deadline) {
			return res, ErrTimeout
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-clk.After(r.Poll):
		}
	}
}

// record writes the recovered stack's status and outputs into the graph under the lock.
func (r *Recoverer) record(ctx context.Context, lock *statestore.Lock, st cfntypes.Stack, now time.Time) (string, error) {
	name := aws.ToString(st.StackName)
	g, err := r.State.Read(ctx, lock)
	if errors.Is(err, statestore.ErrNotFound) {
		return fmt.Sprintf("graph %s/%s does not exist: nothing recorded", lock.Namespace, lock.Key), nil
	}
	if err != nil {
		return "", fmt.Errorf("recover %s: the stack recovered, but the graph %s/%s cannot be read to record it: %w; the next run records it", name, lock.Namespace, lock.Key, err)
	}
	outputs := map[string]string{}
	for _, o := range st.Outputs {
		outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	entry, was, ok := Record(g, name, string(st.StackStatus), aws.ToString(st.StackId), outputs, now)
	if !ok {
		return fmt.Sprintf("stack %s is not in the graph %s/%s: nothing recorded", name, lock.Namespace, lock.Key), nil
	}
	if err := r.State.Write(ctx, lock, g); err != nil {
		return "", fmt.Errorf("recover %s: the stack recovered, but recording it in the graph %s/%s failed: %w; the next run records it", name, lock.Namespace, lock.Key, err)
	}
	if was == "" {
		was = "no status"
	}
	return fmt.Sprintf("graph %s/%s generation %d: stack %s recorded as %s (was %s), with %d output(s)",
		lock.Namespace, lock.Key, g.Generation, entry.Name, entry.Status, was, len(entry.Outputs)), nil
}

// Record updates, in g, the entry of the stack whose CloudFormation name is stackName
// with what is live now. It returns the entry and its status before, or ok false when the
// graph does not hold the stack.
func Record(g *state.Graph, stackName, status, stackID string, outputs map[string]string, now time.Time) (entry *state.Stack, was string, ok bool) {
	for _, n := range g.Names() {
		if s := g.Stacks[n]; s != nil && s.StackName == stackName {
			entry = s
			break
		}
	}
	if entry == nil {
		return nil, "", false
	}
	was = entry.Status
	entry.Status, entry.StackID, entry.UpdatedAt = status, stackID, now.UTC()
	entry.Outputs = nil
	if len(outputs) > 0 {
		entry.Outputs = outputs
	}
	return entry, was, true
}

func describe(ctx context.Context, cfn CFNAPI, name string) (cfntypes.Stack, error) {
	out, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil {
		if awserr.StackMissing(err) {
			return cfntypes.Stack{}, fmt.Errorf("stack %s does not exist", name)
		}
		return cfntypes.Stack{}, fmt.Errorf("describe stack %s: %w", name, err)
	}
	if len(out.Stacks) == 0 {
		return cfntypes.Stack{}, fmt.Errorf("stack %s does not exist", name)
	}
	return out.Stacks[0], nil
}
