package run

import (
	"fmt"
	"time"
)

// Fail ends a run that fails before (or without) starting its stacks: every stack not
// finished is blocked, with why when it has no reason of its own.
func Fail(r *Run, reason string, now time.Time) *Run {
	next := r.Clone()
	next.Status, next.Reason, next.FinishedAt, next.UpdatedAt = RunFailed, reason, now, now
	for _, s := range next.Stacks {
		if !s.Phase.Terminal() {
			s.Phase, s.FinishedAt = Blocked, now
			if s.Reason == "" {
				s.Reason = "not started: the run was refused"
			}
		}
	}
	return next
}

// Supersede ends a run that deploys nothing because a newer upload exists.
func Supersede(r *Run, reason string, now time.Time) *Run {
	next := r.Clone()
	next.Status, next.Reason, next.FinishedAt = Superseded, reason, now
	return next
}

// Abandon ends a run that lost its lock: it changes nothing more. Each stack it had not
// finished is blocked with what CloudFormation may still be doing to it, and the actions
// returned delete the change sets the run made and may not have executed (deleting one
// that did execute fails harmlessly): nothing else may be done without the lock.
func Abandon(r *Run, cause string, now time.Time) (*Run, []Action) {
	next := r.Clone()
	next.Status, next.FinishedAt, next.UpdatedAt = Abandoned, now, now
	next.Reason = "abandoned: " + cause
	var actions []Action
	for _, name := range next.Names() {
		s := next.Stacks[name]
		if s.Phase.Terminal() {
			continue
		}
		var doing string
		switch s.Phase {
		case Pending:
			doing = "not started"
		case CreatingChangeSet, Ready, DetectingDrift:
			doing = "its change set " + s.ChangeSetName + " was never executed and is deleted"
		case Executing:
			doing = "CloudFormation may still be executing its change set " + s.ChangeSetName + "; the next run re-plans the stack from its live tags"
		default:
			doing = "CloudFormation may still be working on it (" + string(s.Phase) + "); the next run re-plans the stack from its live tags"
		}
		if s.ChangeSetName != "" || s.ChangeSetID != "" {
			actions = append(actions, Action{Kind: DeleteChangeSet, Stack: s.Name, StackName: s.StackName, StackID: s.StackID,
				ChangeSetName: s.ChangeSetName, ChangeSetID: s.ChangeSetID, Target: s.Target})
		}
		s.Reason = "the run lost its lock: " + doing
		setPhase(s, Blocked, now)
	}
	return next, actions
}

func finish(r *Run, now time.Time) {
	failed := 0
	for _, s := range r.Stacks {
		switch {
		case s.Phase == Failed || s.Phase == Blocked:
			failed++
		case r.Mode == ModePlan && s.Phase == Ready:
		case !s.Phase.Terminal():
			return
		}
	}
	r.FinishedAt = now
	if failed > 0 {
		r.Status = RunFailed
		r.Reason = fmt.Sprintf("%d stack(s) failed or blocked", failed)
		return
	}
	r.Status = Succeeded
}
