package run

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Early change sets: a change set takes CloudFormation seconds to tens of seconds to make,
// and a stack that waits for its dependencies to finish before making one puts that time
// on the run's critical path, once per level of the graph. A stack whose templates read
// nothing but their parameters that its dependencies' updates can change (Stack.Early)
// need not wait: its change set is made while they are being updated, from the outputs
// they had, and executed the moment they finish if its parameters then resolve the same
// (nearly always: an update seldom changes an output). If they resolve otherwise, it is
// deleted and made again: the stack is no later than if it had waited. No peer does this:
// they make a stack's change set after its dependencies finished.
//
// Only deploy runs that apply no plan make early change sets: a plan's change sets are
// made at plan time and reviewed, and a protected stack is never changed by a push.

// startEarly makes the change set of s early when it may: a pending stack whose
// dependencies are each finished or executing (their change sets decided, only their
// outputs still to come), whose parameters resolve from what they have now to values
// that need a change set, within the concurrency limit.
func startEarly(r *Run, s *Stack, now time.Time, opts Options, inFlight *int, limit int) []Action {
	if r.Mode != ModeDeploy || r.Plan != "" || !s.Early || s.PlanOnly || s.Intent != IntentDeploy ||
		s.Phase != Pending || *inFlight >= limit || satisfied(r, s) {
		return nil
	}
	for _, dep := range s.Requires {
		if d := r.Stacks[dep]; d != nil && d.Phase != Done && d.Phase != Unchanged && d.Phase != Executing {
			return nil
		}
	}
	params, err := resolveAhead(r, s, opts)
	if err != nil {
		return nil // an output it needs comes only with the update (a stack created): it waits
	}
	stored := opts.Seal(s, params)
	hash := HashParameters(stored)
	if s.Exists && !s.Force && s.TemplateHash == s.PrevTemplateHash && hash == s.PrevParametersHash {
		return nil // nothing to make as things stand: decided when they finished
	}
	if s.StartedAt.IsZero() {
		s.StartedAt = now
	}
	s.Parameters, s.ParametersHash = stored, hash
	s.MadeEarly = true
	return makeChangeSet(r, s, params, now, inFlight)
}

// waitsEarly reports whether s holds a change set made early that waits for its
// dependencies: it occupies no concurrency slot (CloudFormation does nothing for it).
func waitsEarly(s *Stack) bool { return s.MadeEarly && s.Phase == Ready }

// settleEarly decides for s, whose change set was made early, once it is made (Ready):
// while its dependencies work it waits; when one failed, or a deletion it waits for
// (After) failed or was blocked, its change set is deleted and it is blocked; once they finished, it is executed if its parameters resolve as they did
// when it was made (or, when it had no changes, the stack is unchanged). Otherwise its
// change set is deleted and again is true: s is pending, to start as any stack does.
func settleEarly(r *Run, s *Stack, now time.Time, opts Options, inFlight *int, limit int) (actions []Action, again bool) {
	if s.Phase == CreatingChangeSet {
		return remakeStale(r, s, now, opts, inFlight)
	}
	if s.Phase != Ready {
		return nil, false
	}
	for _, dep := range s.Requires {
		if d := r.Stacks[dep]; d != nil && (d.Phase == Failed || d.Phase == Blocked) {
			actions = dropEarly(s)
			s.Reason = fmt.Sprintf("dependency %s %s: the change set made while it was updated was deleted", dep, d.Phase)
			setPhase(s, Blocked, now)
			return actions, false
		}
	}
	for _, dep := range s.After {
		if d := r.Stacks[dep]; d != nil && (d.Phase == Failed || d.Phase == Blocked) {
			actions = dropEarly(s)
			s.Reason = fmt.Sprintf("not changed: stack %s, removed from the config, imports its exports and was not deleted (%s): the change set made early was deleted", d.StackName, d.Phase)
			setPhase(s, Blocked, now)
			return actions, false
		}
	}
	if !satisfied(r, s) {
		return nil, false
	}
	params, err := resolve(r, s, opts)
	if err == nil && HashParameters(opts.Seal(s, params)) == s.ParametersHash {
		if s.ChangeSetName == "" {
			s.MadeEarly = false
			s.Reason = "no changes"
			setPhase(s, Unchanged, now)
			return nil, false
		}
		if *inFlight >= limit {
			return nil, false
		}
		s.MadeEarly, s.Reason = false, ""
		setPhase(s, Executing, now)
		*inFlight++
		return []Action{execute(s)}, false
	}
	actions = dropEarly(s)
	setPhase(s, Pending, now)
	return actions, true
}

// earlyFailed handles a change set made early that CloudFormation failed: with no changes,
// the stack waits as one that has its change set (settleEarly decides once its
// dependencies finished); for another reason, which the dependencies' updates may remove
// (an output or export they add), it is deleted and the stack starts as any stack does,
// once they finished, never early again in the run.
func earlyFailed(s *Stack, o Observation, now time.Time) []Action {
	actions := dropEarly(s)
	if IsNoChanges(o.ChangeSetReason) {
		s.MadeEarly = true
		s.Reason = "no changes as " + strings.Join(s.Requires, ", ") + " stood: decided again once they finished"
		if o.Outputs != nil {
			s.Outputs = o.Outputs
		}
		setPhase(s, Ready, now)
		return actions
	}
	s.Early = false
	s.Attempts = 0
	setPhase(s, Pending, now)
	return actions
}

// dropEarly deletes the change set s made early, if any, and forgets it.
func dropEarly(s *Stack) []Action {
	var actions []Action
	if s.ChangeSetName != "" || s.ChangeSetID != "" {
		actions = append(actions, Action{Kind: DeleteChangeSet, Stack: s.Name, StackName: s.StackName, StackID: s.StackID,
			ChangeSetName: s.ChangeSetName, ChangeSetID: s.ChangeSetID})
	}
	s.ChangeSetName, s.ChangeSetID, s.Changes, s.MadeEarly, s.Reason = "", "", 0, false, ""
	return actions
}

// remakeStale decides for s, whose change set made early CloudFormation may still be
// making (it was held, not looked at: schedule), once its dependencies finished: if its
// parameters now resolve otherwise, that change set is stale and s makes its change set
// again at once (again is true), rather than after the stale one is made. The stale one is
// not deleted now, which CloudFormation refuses while it is being made: executing the new
// one removes it, and else it is deleted once s settles (dropStale).
func remakeStale(r *Run, s *Stack, now time.Time, opts Options, inFlight *int) (actions []Action, again bool) {
	if !satisfied(r, s) {
		return nil, false
	}
	params, err := resolve(r, s, opts)
	if err == nil && HashParameters(opts.Seal(s, params)) == s.ParametersHash {
		return nil, false // still what it will need: settleEarly decides once it is made
	}
	if s.ChangeSetName != "" {
		s.Stale = append(s.Stale, s.ChangeSetName)
	}
	s.ChangeSetName, s.ChangeSetID, s.Changes, s.MadeEarly, s.Reason = "", "", 0, false, ""
	setPhase(s, Pending, now)
	*inFlight-- // counted as in flight by start; the change set made again counts instead
	return nil, true
}

// dropStale deletes, once s settled, the change sets it made early that went stale while
// being made (Stack.Stale), by then made; unless s's change set was executed, which
// removed every other change set of the stack (ExecuteChangeSet: "CloudFormation deletes
// all other change sets associated with the stack").
func dropStale(s *Stack) []Action {
	if !s.Phase.Terminal() || len(s.Stale) == 0 {
		return nil
	}
	if !s.ExecutedAt.IsZero() {
		s.Stale = nil
		return nil
	}
	var actions []Action
	for _, name := range s.Stale {
		actions = append(actions, Action{Kind: DeleteChangeSet, Stack: s.Name, StackName: s.StackName, StackID: s.StackID, ChangeSetName: name})
	}
	s.Stale = nil
	return actions
}

// resolveAhead resolves the parameters of s, which exists, as they will be once its
// dependencies finished, as far as the run knows now: an output a dependency still
// executing passes through from one of its parameters (Stack.OutputParameters) has the
// value it is deployed with; every other output has the value it had. A stack that does
// not exist yet resolves as it stands (resolve): its change set made early would create
// it, in REVIEW_IN_PROGRESS, before a dependency that may fail was created.
func resolveAhead(r *Run, s *Stack, opts Options) (map[string]string, error) {
	if !s.Exists {
		return resolve(r, s, opts)
	}
	return opts.Resolve(s.Name, s.RawParameters, func(stack, output string) (string, bool) {
		if d := r.Stacks[stack]; d != nil {
			if v, ok := d.coming(output); ok {
				return v, true
			}
			v, ok := d.Outputs[output]
			return v, ok
		}
		v, ok := r.External[stack+"::"+output]
		return v, ok
	})
}

// coming is the value output of d will have once d's operation ends, when d executes and
// the output is one of the parameters it is deployed with (not a secret).
func (d *Stack) coming(output string) (string, bool) {
	p, ok := d.OutputParameters[output]
	if !ok || d.Phase != Executing || slices.Contains(d.NoEcho, p) || slices.Contains(d.SecretOutputs, output) {
		return "", false
	}
	v, ok := d.Parameters[p]
	return v, ok
}
