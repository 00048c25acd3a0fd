package run

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/graph"
	"github.com/cairn-dev/cairn/internal/target"
)

// ActionKind names a CloudFormation call the driver performs.
type ActionKind string

const (
	CreateChangeSet        ActionKind = "CreateChangeSet"
	ExecuteChangeSet       ActionKind = "ExecuteChangeSet"
	DeleteChangeSet        ActionKind = "DeleteChangeSet"
	DeleteStack            ActionKind = "DeleteStack"
	ContinueUpdateRollback ActionKind = "ContinueUpdateRollback"
	// DetectStackDrift starts the drift detection of a plan run's stack (DetectDrift);
	// its observations are DescribeStackDriftDetectionStatus's.
	DetectStackDrift ActionKind = "DetectStackDrift"
	// SetTerminationProtection turns the stack's termination protection to Protect, once
	// a deploy of it finished: the stack is done either way, a failure is a warning.
	SetTerminationProtection ActionKind = "SetTerminationProtection"
	// JudgePolicies asks the driver to judge the whole run with the policies before any
	// stack starts (Run.Policy); it observes the verdict (Observation.Policy). It names
	// no stack.
	JudgePolicies ActionKind = "JudgePolicies"
)

// Action is one call for the driver. Every action is idempotent under its Token (the change
// set name, used as ClientToken / ClientRequestToken), so performing it twice after a lost
// response is harmless.
type Action struct {
	Kind          ActionKind        `json:"kind"`
	Stack         string            `json:"stack"`      // config name
	StackName     string            `json:"stack_name"` // CloudFormation name
	StackID       string            `json:"stack_id,omitempty"`
	ChangeSetName string            `json:"change_set_name,omitempty"`
	ChangeSetID   string            `json:"change_set_id,omitempty"`
	ChangeSetType string            `json:"change_set_type,omitempty"`
	Parameters    map[string]string `json:"parameters,omitempty"`
	Token         string            `json:"token,omitempty"`
	Protect       bool              `json:"protect,omitempty"`
	// Retain are the resources a DeleteStack keeps (RetainResources).
	Retain []string `json:"retain,omitempty"`
	// Target is where the stack lives and how it is reached: the driver picks the client
	// for it.
	Target target.Spec `json:"target,omitzero"`
}

// Observation is what the driver saw of one stack since the last step: the result of the
// action it performed (Err) and the stack's or change set's current state.
type Observation struct {
	Stack string `json:"stack"`
	// Err is the error of the last action for this stack; Permanent says retrying is useless
	// (a validation error rather than throttling or a lost connection).
	Err       string `json:"err,omitempty"`
	Permanent bool   `json:"permanent,omitempty"`

	ChangeSetID     string `json:"change_set_id,omitempty"`
	ChangeSetStatus string `json:"change_set_status,omitempty"` // CREATE_PENDING | CREATE_IN_PROGRESS | CREATE_COMPLETE | FAILED | DELETE_COMPLETE
	ChangeSetReason string `json:"change_set_reason,omitempty"`
	Changes         int    `json:"changes,omitempty"`

	StackID     string            `json:"stack_id,omitempty"`
	StackStatus string            `json:"stack_status,omitempty"`
	StackGone   bool              `json:"stack_gone,omitempty"` // does not exist (or DELETE_COMPLETE)
	Reason      string            `json:"reason,omitempty"`     // first failing resource's reason, from the stack events
	Outputs     map[string]string `json:"outputs,omitempty"`
	// TerminationProtection is the described stack's, when it was described.
	TerminationProtection *bool `json:"termination_protection,omitempty"`
	// ResourceChanges are the change set's resource changes, described for a stack whose
	// change set a ripple made (Stack.Rippled): what Options.Explain checks.
	ResourceChanges []ResourceChange `json:"resource_changes,omitempty"`
	// Drift is what a drift-aware change set shows of the stack's drift.
	Drift []DriftedProperty `json:"drift,omitempty"`
	// Touched are the properties the change set changes, "LogicalID/Property" (top-level
	// property names), described for a stack with drift changed outside cairn (Outside).
	Touched []string `json:"touched,omitempty"`
	// DriftDetectionID is the detection DetectStackDrift started; DriftDetectionStatus
	// (DETECTION_IN_PROGRESS, DETECTION_COMPLETE, DETECTION_FAILED), StackDriftStatus and
	// DriftDetectionReason are what DescribeStackDriftDetectionStatus says of it.
	DriftDetectionID     string `json:"drift_detection_id,omitempty"`
	DriftDetectionStatus string `json:"drift_detection_status,omitempty"`
	StackDriftStatus     string `json:"stack_drift_status,omitempty"`
	DriftDetectionReason string `json:"drift_detection_reason,omitempty"`
	// LookErr says why the stack could not be described: nothing is known of it, and it
	// is looked at again later.
	LookErr string `json:"look_err,omitempty"`
	// Events are the events of the stack's resources in the operation that settled (its
	// own events left out), in time order: read once the stack's status settled.
	Events []ResourceEvent `json:"events,omitempty"`
	// Policy is the verdict of judging the run (JudgePolicies): an observation of the
	// whole run, naming no stack.
	Policy *PolicyVerdict `json:"policy,omitempty"`
}

// ResourceChange is one resource change of a change set, with why CloudFormation says it
// changes: each of Causes is a change detail's source and causing entity,
// "ParameterReference VpcId", "ResourceReference Vpc", "DirectModification".
type ResourceChange struct {
	LogicalID   string   `json:"logical_id"`
	Type        string   `json:"type,omitempty"`
	Action      string   `json:"action"`
	Replacement string   `json:"replacement,omitempty"`
	Causes      []string `json:"causes,omitempty"`
}

// Failure is the observation of an action on stack that failed with err. It is permanent
// (retrying cannot help, so the stack fails at once) when err was marked with Permanent.
func Failure(stack string, err error) Observation {
	var p permanentError
	return Observation{Stack: stack, Err: err.Error(), Permanent: errors.As(err, &p)}
}

// Permanent marks err as one that retrying the same action cannot fix: a validation
// error, a bundle that no longer loads. Its message is err's.
func Permanent(err error) error { return permanentError{err} }

type permanentError struct{ error }

func (p permanentError) Unwrap() error { return p.error }

// Resolver substitutes the output lookups in the raw parameter values of the stack named
// stack (config name). outputs answers a lookup of STACK's OUTPUT, by the names used in the
// config.
type Resolver func(stack string, raw map[string]string, outputs func(stack, output string) (string, bool)) (map[string]string, error)

// Options are the knobs of Advance.
type Options struct {
	Resolve Resolver
	// Seal returns a stack's resolved parameters as the run stores them, its secrets
	// (NoEcho values) by hash only (default: as they are). The hash of what it returns
	// is the stack's input hash; the call is made with the parameters resolved.
	Seal func(s *Stack, params map[string]string) map[string]string
	// SealOutputs returns a stack's outputs, as observed, the way the run stores them:
	// its secret ones (Stack.SecretOutputs) sealed (default: as they are). What consumes
	// them reads the sealed form.
	SealOutputs func(s *Stack, outputs map[string]string) map[string]string
	// MaxAttempts bounds retries of one action after API errors (default 3).
	MaxAttempts int
	// PhaseTimeout fails a stack that stays in one in-flight phase longer (default 3h): a
	// run must end even if CloudFormation never answers.
	PhaseTimeout time.Duration
	// Heartbeat is the period of the driver's heartbeat, which caps the back-off of the
	// checks of a waiting stack (default 15 minutes, the longest SQS delay).
	Heartbeat time.Duration
	// Explain says why a change set made for a ripple (Stack.Rippled) holds a change its
	// changed parameters do not explain ("" when every change is explained); default:
	// nothing is explained, so such a change set is never executed.
	Explain func(s *Stack, changes []ResourceChange) string
}

func (o Options) withDefaults() Options {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.PhaseTimeout <= 0 {
		o.PhaseTimeout = 3 * time.Hour
	}
	if o.Seal == nil {
		o.Seal = func(_ *Stack, params map[string]string) map[string]string { return params }
	}
	if o.SealOutputs == nil {
		o.SealOutputs = func(_ *Stack, outputs map[string]string) map[string]string { return outputs }
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 15 * time.Minute
	}
	if o.Explain == nil {
		o.Explain = func(s *Stack, _ []ResourceChange) string {
			return "nothing explains its changes"
		}
	}
	if o.Resolve == nil {
		o.Resolve = func(_ string, raw map[string]string, _ func(string, string) (string, bool)) (map[string]string, error) {
			return cloneMap(raw), nil
		}
	}
	return o
}

// noChangeReasons are the only two ways CloudFormation says a change set has nothing to do;
// any other FAILED change set is a real failure.
var noChangeReasons = []string{
	"didn't contain changes",
	"No updates are to be performed",
}

// Advance applies observations to r and decides what to do next. It never mutates r.
func Advance(r *Run, obs []Observation, now time.Time, opts Options) (*Run, []Action) {
	opts = opts.withDefaults()
	next := r.Clone()
	next.UpdatedAt = now
	if next.Status != Running {
		return next, nil
	}
	var actions []Action
	looked := map[string]bool{}
	recorded := false
	for _, o := range obs {
		if o.Policy != nil {
			judged(next, *o.Policy, now)
			continue
		}
		s := next.Stacks[o.Stack]
		if s == nil {
			continue
		}
		was := s.Phase
		if o.Outputs != nil {
			o.Outputs = opts.SealOutputs(s, o.Outputs)
		}
		if len(o.Events) > 0 {
			recordEvents(s, o.Events, MaxStackEvents)
			recorded = true
		}
		actions = append(actions, observe(next, s, o, now, opts)...)
		if o.looked() && s.Phase == was && s.Phase.Waits() {
			// Still under way: look again when the schedule says (look.go).
			s.Looks++
			looked[s.Name] = true
		}
	}
	if recorded {
		boundEvents(next, MaxRunEvents)
	}
	if next.Status != Running {
		return next, nil // denied by policy: nothing starts
	}
	if next.Policy == PolicyPending || next.Policy == PolicyJudging {
		// Nothing starts before the policies judged the run; asked again after a step
		// lost the answer.
		next.Policy = PolicyJudging
		return next, []Action{{Kind: JudgePolicies}}
	}
	names := next.Names() // sorted once: every pass below goes in name order
	for _, name := range names {
		s := next.Stacks[name]
		if s.Phase == Executing && s.ChangeSetType == "CREATE" && s.CreateTimeout > 0 && now.Sub(s.PhaseSince) > s.CreateTimeout {
			failAs(s, now, Wait, fmt.Sprintf("stack %s: the create did not finish within timeout_in_minutes (%s): check the stack in the CloudFormation console", s.StackName, s.CreateTimeout))
			continue
		}
		if s.Phase == DetectingDrift && now.Sub(s.PhaseSince) > DriftDetectionTimeout {
			driftUnknown(s, fmt.Sprintf("drift detection %s gave no result within %s", s.DriftDetection, DriftDetectionTimeout), now)
			continue
		}
		if s.Phase.InFlight() && s.Phase != Ready && now.Sub(s.PhaseSince) > opts.PhaseTimeout {
			failAs(s, now, Wait, fmt.Sprintf("no result after %s in phase %s: check the stack in the CloudFormation console", opts.PhaseTimeout, s.Phase))
		}
	}
	g := next.graph(names)
	block(next, g, names, now)
	actions = append(actions, start(next, g, names, now, opts)...)
	actions = append(actions, protect(r, next, names)...)
	finish(next, now)
	schedule(next, looked, now, opts.Heartbeat)
	wake(next, now)
	for i := range actions {
		if s := next.Stacks[actions[i].Stack]; s != nil {
			actions[i].Target = s.Target
		}
	}
	return next, actions
}

// FirstCheck is how soon after a stack starts waiting for CloudFormation the driver first
// looks at it: a change set takes a few seconds, and no event says when it is ready.
const FirstCheck = time.Second

// looked reports whether o is a look at the stack (a described change set or stack),
// rather than only the ids an action returned.
func (o Observation) looked() bool {
	return o.ChangeSetStatus != "" || o.StackStatus != "" || o.StackGone || o.LookErr != "" || o.DriftDetectionStatus != ""
}

// Due lists the stacks a step at now looks at, and how (change sets being created are
// described; executing or deleting stacks are described): the waiting stacks whose check
// is due, and those named (by Stack.Key: the stacks of the status events that triggered
// the step). Every waiting stack is due at least once a heartbeat, so a lost
// event delays a run by a heartbeat at most. A stack is never looked at before its check
// (a look too early would only push its next check further away).
func (r *Run) Due(now time.Time, named ...string) (changeSets, stacks []string) {
	for name, s := range r.Stacks {
		if !s.Phase.Waits() || s.CheckAt.After(now.Add(Piggyback)) && !slices.Contains(named, s.Key()) {
			continue
		}
		if s.Phase == CreatingChangeSet {
			changeSets = append(changeSets, name)
		} else {
			stacks = append(stacks, name)
		}
	}
	slices.Sort(changeSets)
	slices.Sort(stacks)
	return changeSets, stacks
}

// wake decides whether the driver queues a delayed check after this step: unless the
// check already queued fires in the second before the earliest waiting stack's check falls
// due, one is queued for that second (SQS delays whole seconds; the step it makes waits
// the rest, see Lingers). A look due within Linger needs none: the driver waits for it.
// A check queued earlier still fires; its step finds nothing due and queues nothing, so
// checks never multiply.
func wake(r *Run, now time.Time) {
	if r.Status != Running {
		return
	}
	due, ok := nextDue(r)
	if !ok || due.Sub(now) < Linger || !r.CheckQueued.After(due) && r.CheckQueued.After(due.Add(-time.Second)) {
		return // none waits, the driver lingers for it, or the check queued comes in its second
	}
	r.CheckQueued = now.Add(due.Sub(now) / time.Second * time.Second)
}

// Wake reports whether the step that advanced prev to next at now must queue a delayed
// check of the run, and its delay (whole seconds).
func Wake(prev, next *Run, now time.Time) (time.Duration, bool) {
	if next.Status != Running || next.CheckQueued.Equal(prev.CheckQueued) || !next.CheckQueued.After(now) {
		return 0, false
	}
	return next.CheckQueued.Sub(now), true
}

// protect sets the termination protection the config wants on each stack whose deploy
// finished in this step with another one.
func protect(prev, next *Run, names []string) []Action {
	var actions []Action
	for _, name := range names {
		s, p := next.Stacks[name], prev.Stacks[name]
		if p != nil && p.Phase.Terminal() || !s.Phase.Terminal() || s.Intent == IntentDelete || s.Intent == IntentRead ||
			(s.Phase != Done && s.Phase != Unchanged) || s.Protect == s.Protected {
			continue
		}
		s.Protected = s.Protect
		actions = append(actions, Action{Kind: SetTerminationProtection, Stack: s.Name, StackName: s.StackName, StackID: s.StackID, Protect: s.Protect})
	}
	return actions
}

func setPhase(s *Stack, p Phase, now time.Time) {
	if s.Phase != p {
		s.Phase = p
		s.PhaseSince = now
		s.Looks, s.CheckAt, s.Held = 0, time.Time{}, false // a wait's first look: schedule (look.go)
	}
	if p == Executing && s.ExecutedAt.IsZero() {
		s.ExecutedAt = now
	}
	if p.Terminal() {
		s.FinishedAt = now
	}
}

// fail fails s for a reason whose way out is fixing the bundle (Fix); failAs for another
// Class.
func fail(s *Stack, now time.Time, reason string) { failAs(s, now, Fix, reason) }

func failAs(s *Stack, now time.Time, class Class, reason string) {
	s.Reason, s.Class = reason, class
	setPhase(s, Failed, now)
}

// retry puts a stack whose action failed back in the phase (back) where the action is issued again, or
// fails it once its attempts are used up.
func retry(s *Stack, o Observation, back Phase, what string, now time.Time, opts Options) {
	s.Attempts++
	if o.Permanent || s.Attempts >= opts.MaxAttempts {
		class := Wait
		if o.Permanent {
			class = Fix
		}
		failAs(s, now, class, fmt.Sprintf("%s failed after %d attempt(s): %s", what, s.Attempts, o.Err))
		return
	}
	setPhase(s, back, now)
}

func observe(r *Run, s *Stack, o Observation, now time.Time, opts Options) []Action {
	if o.StackID != "" {
		s.StackID = o.StackID
	}
	if o.TerminationProtection != nil {
		s.Protected = *o.TerminationProtection
	}
	switch s.Phase {
	case DetectingDrift:
		detected(s, o, now)
		return nil
	case CreatingChangeSet:
		if o.Err != "" {
			s.MadeEarly = false
			retry(s, o, Pending, "create change set "+s.ChangeSetName, now, opts)
			return nil
		}
		if o.ChangeSetID != "" {
			s.ChangeSetID = o.ChangeSetID
		}
		if o.ChangeSetStatus == "CREATE_COMPLETE" || o.ChangeSetStatus == "FAILED" {
			learn(r, s, now)
		}
		switch o.ChangeSetStatus {
		case "CREATE_COMPLETE":
			s.Changes, s.Drift = o.Changes, o.Drift
			s.Attempts = 0
			settleOutside(s, o.Touched)
			if why, replan := driftStop(r, s, o.Drift); why != "" {
				fail(s, now, why) // not executed; a protected stack is planned again (Stopped)
				s.Stopped = replan
				return nil
			}
			if s.MadeEarly {
				s.Reason = "made early: executed once " + strings.Join(s.Requires, ", ") + " finished"
				setPhase(s, Ready, now) // start (settleEarly) executes it then
				return nil
			}
			if r.Mode == ModePlan {
				if s.DetectDrift && s.StackDrift == "" && s.StackID != "" {
					setPhase(s, DetectingDrift, now)
					return []Action{{Kind: DetectStackDrift, Stack: s.Name, StackName: s.StackName, StackID: s.StackID}}
				}
				setPhase(s, Ready, now)
				s.FinishedAt = now
				return nil
			}
			if len(s.Rippled) > 0 {
				if why := opts.Explain(s, o.ResourceChanges); why != "" {
					// Not executed: its change set stays, for a new review.
					fail(s, now, fmt.Sprintf("stack %s: stopped: its inputs %s came out of the apply with other values than planned, and its change set %s holds more than they explain: %s; it was not executed: review it in a new plan",
						s.StackName, strings.Join(s.Rippled, ", "), s.ChangeSetName, why))
					s.Stopped = true
					return nil
				}
			}
			setPhase(s, Executing, now)
			return []Action{execute(s)}
		case "FAILED":
			if s.MadeEarly {
				return earlyFailed(s, o, now)
			}
			if IsNoChanges(o.ChangeSetReason) {
				s.Reason = "no changes"
				setPhase(s, Unchanged, now)
				if o.Outputs != nil {
					s.Outputs = o.Outputs
				}
				return []Action{{Kind: DeleteChangeSet, Stack: s.Name, StackName: s.StackName, ChangeSetName: s.ChangeSetName, ChangeSetID: s.ChangeSetID}}
			}
			fail(s, now, fmt.Sprintf("change set %s FAILED: %s", s.ChangeSetName, o.ChangeSetReason))
		}
	case Executing:
		if o.Err != "" {
			retry(s, o, Ready, "execute change set "+s.ChangeSetName, now, opts)
			return nil
		}
		return observeStack(r, s, o, now)
	case RollingBack:
		if o.Err != "" {
			failAs(s, now, Recover, "continue update rollback failed: "+o.Err)
			return nil
		}
		return observeStack(r, s, o, now)
	case Deleting, DeletingOld:
		if o.Err != "" {
			retry(s, o, Pending, "delete stack "+s.StackName, now, opts)
			return nil
		}
		if o.StackGone || o.StackStatus == "DELETE_COMPLETE" {
			s.Attempts = 0
			if s.Phase == Deleting {
				s.Outputs = nil
				setPhase(s, Done, now)
				return nil
			}
			// The broken stack is gone: create it again from scratch.
			s.Exists = false
			s.StackID = ""
			setPhase(s, Pending, now)
			s.Intent = IntentDeploy
			s.Force = true
			return nil
		}
		if o.StackStatus == "DELETE_FAILED" {
			switch {
			case len(s.Retain) > 0 && !s.Retaining:
				// A ROLLBACK_FAILED stack is DELETE_FAILED now: deleted again, keeping
				// the resources the plan listed.
				s.Retaining = true
				return []Action{deleteStack(s)}
			case s.Retaining:
				failAs(s, now, Review, fmt.Sprintf("delete failed although it kept %s: %s: another resource fails to delete: re-plan, so the plan lists it", strings.Join(s.Retain, ", "), firstReason(o)))
			default:
				failAs(s, now, Review, "delete failed: "+firstReason(o))
			}
		}
	}
	return nil
}

func observeStack(r *Run, s *Stack, o Observation, now time.Time) []Action {
	switch st := o.StackStatus; {
	case st == "CREATE_COMPLETE" || st == "UPDATE_COMPLETE" || st == "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS" || st == "IMPORT_COMPLETE":
		if s.Phase == Executing {
			learn(r, s, now)
		}
		s.Outputs = o.Outputs
		s.Exists = true
		s.Reason = ""
		setPhase(s, Done, now)
	case st == "UPDATE_ROLLBACK_FAILED":
		if s.Rollbacks == 0 {
			s.Rollbacks++
			s.Reason = firstReason(o)
			setPhase(s, RollingBack, now)
			return []Action{{Kind: ContinueUpdateRollback, Stack: s.Name, StackName: s.StackName, StackID: s.StackID}}
		}
		failAs(s, now, Recover, "update rollback failed again after ContinueUpdateRollback: "+firstReason(o)+": run `cairn recover`")
	case st == "UPDATE_ROLLBACK_COMPLETE" && s.Phase == RollingBack:
		fail(s, now, "update failed and was rolled back after ContinueUpdateRollback: "+cmp.Or(s.Reason, firstReason(o)))
	case st == "ROLLBACK_COMPLETE", st == "ROLLBACK_FAILED", st == "CREATE_FAILED", st == "UPDATE_FAILED",
		st == "UPDATE_ROLLBACK_COMPLETE", st == "DELETE_FAILED", st == "DELETE_COMPLETE", o.StackGone:
		failAs(s, now, StatusClass(st), fmt.Sprintf("stack %s is %s: %s", s.StackName, cmp.Or(st, "gone"), firstReason(o)))
	}
	return nil
}

func firstReason(o Observation) string {
	return cmp.Or(o.Reason, "no reason given")
}

// deleteStack deletes s, keeping the resources it retains once it is DELETE_FAILED.
func deleteStack(s *Stack) Action {
	a := Action{Kind: DeleteStack, Stack: s.Name, StackName: s.StackName, StackID: s.StackID}
	if s.Retaining {
		a.Retain = append([]string(nil), s.Retain...)
	}
	return a
}

func execute(s *Stack) Action {
	return Action{Kind: ExecuteChangeSet, Stack: s.Name, StackName: s.StackName, StackID: s.StackID,
		ChangeSetName: s.ChangeSetName, ChangeSetID: s.ChangeSetID, Token: s.ChangeSetName}
}

// block marks pending stacks that can no longer run: deploys whose dependency failed, and
// every deletion once any deploy failed (deleting while the new configuration is not in
// place could remove something a failed stack still needs). The blocked are the pending
// stacks the graph's walker finds blocked by a failed or blocked one (Graph.BlockedBy):
// linear in the graph however the names sort. Each says why: the first of its
// dependencies (Requires, then After) that failed or is blocked.
func block(r *Run, g *graph.Graph, names []string, now time.Time) {
	deployFailed := ""
	var stopped, deletions []string
	for _, name := range names {
		if s := r.Stacks[name]; s.Phase == Failed || s.Phase == Blocked {
			stopped = append(stopped, name)
			if deployFailed == "" && s.Intent != IntentDelete {
				deployFailed = name
			}
		}
	}
	if deployFailed != "" {
		for _, name := range names {
			if s := r.Stacks[name]; s.Intent == IntentDelete && s.Phase == Pending {
				deletions = append(deletions, name)
			}
		}
	}
	if len(stopped) == 0 {
		return
	}
	blocked := g.BlockedBy(append(stopped, deletions...), func(name string) bool { return r.Stacks[name].Phase == Pending })
	// Every stack blocked now is blocked before any says why: its reason names the first
	// dependency stopped once the step has blocked all it blocks.
	var newly []*Stack
	for _, list := range [][]string{deletions, blocked} {
		for _, name := range list {
			if s := r.Stacks[name]; s.Phase == Pending {
				setPhase(s, Blocked, now)
				newly = append(newly, s)
			}
		}
	}
	isStopped := func(d *Stack) bool { return d != nil && (d.Phase == Failed || d.Phase == Blocked) }
	because := func(s *Stack) string {
		if s.Intent == IntentDelete && deployFailed != "" {
			return fmt.Sprintf("not deleted: stack %s failed, so the run stopped before deletions", deployFailed)
		}
		for _, dep := range s.Requires {
			if d := r.Stacks[dep]; isStopped(d) {
				if s.Intent == IntentDelete {
					return fmt.Sprintf("not deleted: dependent stack %s %s and still exists", dep, d.Phase)
				}
				return fmt.Sprintf("dependency %s %s", dep, d.Phase)
			}
		}
		for _, dep := range s.After {
			if d := r.Stacks[dep]; isStopped(d) {
				return fmt.Sprintf("not changed: stack %s, removed from the config, imports its exports and was not deleted (%s): CloudFormation refuses to drop or change an export in use", d.StackName, d.Phase)
			}
		}
		return ""
	}
	for _, s := range newly {
		s.Reason = because(s)
	}
}

func satisfied(r *Run, s *Stack) bool {
	for _, dep := range s.After {
		if d := r.Stacks[dep]; d != nil && d.Phase != Done && !(r.Mode == ModePlan && d.ChangeSetReady()) {
			return false
		}
	}
	for _, dep := range s.Requires {
		d := r.Stacks[dep]
		if d == nil {
			continue // outside the run: its outputs are in External
		}
		switch d.Phase {
		case Done, Unchanged:
		case Ready, DetectingDrift: // a plan's stack detecting its drift has its change set ready
			if r.Mode != ModePlan {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// settled reports whether a stack needs nothing more in this run.
func settled(r *Run, s *Stack) bool {
	return s.Phase.Terminal() || (r.Mode == ModePlan && s.Phase == Ready)
}

// start begins what became ready, within the concurrency limit: deploys first, and
// deletions only once every deploy has settled (dependents first among the deletions),
// but for those a deploy waits for (Stack.After, and the deletions they wait for): they
// start first.
func start(r *Run, g *graph.Graph, names []string, now time.Time, opts Options) []Action {
	inFlight := 0
	for _, s := range r.Stacks {
		if s.Phase.InFlight() && !settled(r, s) && !waitsEarly(s) {
			inFlight++
		}
	}
	limit := r.MaxConcurrency
	if limit <= 0 {
		limit = 10
	}
	var actions []Action
	first := firstDeletions(r, g, names)
	if first != nil {
		actions = startDeletions(r, names, first, now, &inFlight, limit)
	}
	// A stack that settles as it starts (unchanged, read, refused) may let its dependents
	// start in the same step, rather than leave them to the next trigger. The graph's walk
	// (Graph.Walk) makes the first pass over every deploy in name order; each later pass,
	// in name order too, looks only at the stacks waiting for one that settled in the pass
	// before (nothing else changed for the others), so a step is linear in the graph
	// however the names sort.
	var chains map[string]time.Duration
	byChain := func(stacks []string) []string {
		if len(stacks) < 2 || inFlight+len(stacks) <= limit {
			return stacks // a slot for each: the order changes nothing
		}
		if chains == nil {
			chains = remainingChains(r, g, names)
		}
		return byLongestChain(stacks, chains)
	}
	w := g.Walk()
	for pass := w.Next(); pass != nil; pass = w.Next() {
		failed := false
		for _, name := range byChain(pass) {
			s := r.Stacks[name]
			if s.Intent == IntentDelete {
				continue
			}
			was := settled(r, s)
			actions = append(actions, startDeploy(r, s, now, opts, &inFlight, limit)...)
			if was || !settled(r, s) {
				continue
			}
			failed = failed || s.Phase == Failed || s.Phase == Blocked
			w.Settled(name)
		}
		if failed {
			block(r, g, names, now)
		}
	}
	for _, name := range names {
		actions = append(actions, startEarly(r, r.Stacks[name], now, opts, &inFlight, limit)...)
	}
	for _, s := range r.Stacks {
		if s.Intent != IntentDelete && !settled(r, s) {
			if first != nil { // one that became startable in this step
				actions = append(actions, startDeletions(r, names, first, now, &inFlight, limit)...)
			}
			return actions
		}
	}
	return append(actions, startDeletions(r, names, nil, now, &inFlight, limit)...)
}

// firstDeletions are the deletions a deploy of r waits for (Stack.After), with the
// deletions of their dependents, which go before them (the deletions they wait for, in
// the graph): nil when there are none.
func firstDeletions(r *Run, g *graph.Graph, names []string) map[string]bool {
	var after []string
	for _, name := range names {
		for _, d := range r.Stacks[name].After {
			if ds := r.Stacks[d]; ds != nil && ds.Intent == IntentDelete {
				after = append(after, d)
			}
		}
	}
	if after == nil {
		return nil
	}
	first := map[string]bool{}
	for _, d := range after {
		first[d] = true
	}
	for _, d := range g.Prerequisites(after, func(name string) bool { return r.Stacks[name].Intent == IntentDelete }) {
		first[d] = true
	}
	return first
}

// startDeletions starts the pending deletions that may start: those of only when only is
// not nil, else every one (dependents first).
func startDeletions(r *Run, names []string, only map[string]bool, now time.Time, inFlight *int, limit int) []Action {
	var actions []Action
	for _, name := range names {
		s := r.Stacks[name]
		if s.Intent != IntentDelete || s.Phase != Pending || only != nil && !only[name] {
			continue
		}
		if r.Mode == ModePlan {
			// A plan records the deletion; only the apply run deletes.
			setPhase(s, Ready, now)
			s.FinishedAt = now
			continue
		}
		if *inFlight >= limit || !satisfied(r, s) {
			continue
		}
		if s.StartedAt.IsZero() {
			s.StartedAt = now
		}
		if unreviewed(r, s) {
			failAs(s, now, Review, unreviewedReason(r, s, "its deletion"))
			continue
		}
		setPhase(s, Deleting, now)
		actions = append(actions, deleteStack(s))
		*inFlight++
	}
	return actions
}

// unreviewed reports whether s may not be changed by r: a protected stack (PlanOnly) in
// a run that applies no approved plan. The plan refuses such runs before they start; this
// is the last word, where every change of a stack is decided.
func unreviewed(r *Run, s *Stack) bool { return r.Mode == ModeDeploy && r.Plan == "" && s.PlanOnly }

// unreviewedReason is why what (a change, a deletion) of a protected stack is refused.
func unreviewedReason(r *Run, s *Stack, what string) string {
	return fmt.Sprintf("protected stack %s: %s needs an approved plan, and this run applies none: nothing was changed; run `cairn plan PATH --deployment %s`, review it, then `cairn approve %s PLAN_ID`",
		s.StackName, what, r.Deployment, r.Deployment)
}

func startDeploy(r *Run, s *Stack, now time.Time, opts Options, inFlight *int, limit int) []Action {
	discarded := dropStale(s)
	if s.MadeEarly {
		acts, again := settleEarly(r, s, now, opts, inFlight, limit)
		if !again {
			return acts
		}
		discarded = acts // its change set no longer applies: the stack starts now
	}
	return append(discarded, startNow(r, s, now, opts, inFlight, limit)...)
}

// startNow starts s if it is ready to start, the way a stack whose dependencies finished
// starts.
func startNow(r *Run, s *Stack, now time.Time, opts Options, inFlight *int, limit int) []Action {
	if s.Phase == Ready && r.Mode == ModeDeploy && unreviewed(r, s) {
		failAs(s, now, Review, unreviewedReason(r, s, "its change set"))
		return nil
	}
	if s.Phase == Ready && r.Mode == ModeDeploy {
		// A retried execution, or a stack of an approved plan whose change set exists.
		setPhase(s, Executing, now)
		return []Action{execute(s)}
	}
	if s.Phase != Pending || *inFlight >= limit || !satisfied(r, s) {
		return nil
	}
	if s.Intent == IntentRead {
		setPhase(s, Done, now)
		return nil
	}
	if s.StartedAt.IsZero() {
		s.StartedAt = now
	}
	if r.Mode == ModePlan && planAtApply(r, s) {
		// Its change set needs outputs (or a stack) that only the apply run creates.
		s.AtApply = true
		s.Reason = "created at apply"
		setPhase(s, Ready, now)
		s.FinishedAt = now
		return nil
	}
	if s.Intent == IntentRecreate && unreviewed(r, s) {
		failAs(s, now, Review, unreviewedReason(r, s, "re-creating it"))
		return nil
	}
	if s.Intent == IntentRecreate {
		setPhase(s, DeletingOld, now)
		*inFlight++
		return []Action{deleteStack(s)}
	}
	params, err := resolve(r, s, opts)
	if err != nil {
		fail(s, now, "parameters: "+err.Error())
		return nil
	}
	// The run keeps the parameters as stored (secrets by hash only); the call gets params.
	stored := opts.Seal(s, params)
	if r.Mode == ModeDeploy && s.PlannedParametersHash != "" && len(s.Rippled) == 0 {
		if h := HashParameters(stored); h != s.PlannedParametersHash {
			what := "change set " + s.ChangeSetName
			if s.ChangeSetName == "" {
				what = "the plan (no changes)"
			}
			switch {
			case !s.Ripple && s.ChangeSetName == "" && s.PlannedParametersHash == s.PrevParametersHash:
				// Covered by no plan: it was only to be re-checked.
				failAs(s, now, Review, fmt.Sprintf("stack %s: its inputs came out of the apply changed (%s), and no plan this apply runs shows it as known after apply: it was not changed: plan this content (`cairn plan PATH --deployment %s`), review it, then approve it",
					s.StackName, DescribeParameters(s.Parameters, stored), r.Deployment))
				return nil
			case !s.Ripple || s.Parameters == nil:
				failAs(s, now, Review, fmt.Sprintf("stack %s: %s is stale (the outputs it consumes changed since the plan: %s): re-plan",
					s.StackName, what, DescribeParameters(s.Parameters, stored)))
				return nil
			}
			// Known after apply, and known now: a change set of the new values replaces
			// the reviewed one, and runs only if they explain all of it.
			s.Rippled = ChangedParameters(s.Parameters, stored)
			s.ChangeSetName, s.ChangeSetID, s.Changes = "", "", 0
		}
	}
	if s.ChangeSetID != "" && s.ChangeSetName != "" && r.Mode == ModeDeploy && len(s.Rippled) == 0 {
		// A reviewed change set of an approved plan: executed as it is, never re-made.
		setPhase(s, Executing, now)
		*inFlight++
		return []Action{execute(s)}
	}
	if r.Mode == ModeDeploy && s.PlannedParametersHash != "" && !s.AtApply && len(s.Rippled) == 0 {
		// Planned with no changes, and its inputs still resolve as planned.
		s.Parameters, s.ParametersHash = stored, HashParameters(stored)
		s.Reason = "no changes in the plan"
		setPhase(s, Unchanged, now)
		return nil
	}
	if r.Mode == ModePlan {
		for _, dep := range s.Requires {
			if d := r.Stacks[dep]; d != nil && d.ChangeSetReady() && d.Intent != IntentDelete {
				s.InputsMayChange = true
			}
		}
	}
	s.Parameters = stored
	s.ParametersHash = HashParameters(stored)
	if s.Exists && !s.Force && s.TemplateHash == s.PrevTemplateHash && s.ParametersHash == s.PrevParametersHash && len(s.Rippled) == 0 {
		s.Reason = "inputs unchanged"
		setPhase(s, Unchanged, now)
		return nil
	}
	if unreviewed(r, s) {
		failAs(s, now, Review, unreviewedReason(r, s, "a change of its inputs ("+changedInputs(s)+")"))
		return nil
	}
	return makeChangeSet(r, s, params, now, inFlight)
}

// resolve resolves s's parameters from the outputs the run knows now: those of the
// stacks it ran, or had when it began, and those outside it (External).
func resolve(r *Run, s *Stack, opts Options) (map[string]string, error) {
	return opts.Resolve(s.Name, s.RawParameters, func(stack, output string) (string, bool) {
		if d := r.Stacks[stack]; d != nil {
			v, ok := d.Outputs[output]
			return v, ok
		}
		v, ok := r.External[stack+"::"+output]
		return v, ok
	})
}

// makeChangeSet creates s's change set of params (s.Parameters already holds them as
// stored).
func makeChangeSet(r *Run, s *Stack, params map[string]string, now time.Time, inFlight *int) []Action {
	if s.ChangeSetName == "" || s.Attempts == 0 {
		r.Seq++
		s.ChangeSetName = fmt.Sprintf("cairn-%s-%d", r.ID, r.Seq)
	}
	s.ChangeSetType = "UPDATE"
	if !s.Exists {
		s.ChangeSetType = "CREATE"
	}
	setPhase(s, CreatingChangeSet, now)
	*inFlight++
	return []Action{{Kind: CreateChangeSet, Stack: s.Name, StackName: s.StackName, StackID: s.StackID,
		ChangeSetName: s.ChangeSetName, ChangeSetType: s.ChangeSetType, Parameters: params, Token: s.ChangeSetName}}
}

// changedInputs names what differs between a stack's inputs and those last applied.
func changedInputs(s *Stack) string {
	var what []string
	switch {
	case !s.Exists:
		what = append(what, "it does not exist")
	case s.Force:
		what = append(what, "its tags, options or status")
	}
	if s.Exists && s.TemplateHash != s.PrevTemplateHash {
		what = append(what, "its template")
	}
	if s.Exists && s.ParametersHash != s.PrevParametersHash {
		what = append(what, "its parameter values")
	}
	if len(what) == 0 {
		return "its inputs"
	}
	return strings.Join(what, ", ")
}

// planAtApply reports whether, in a plan, s depends on a stack the plan creates (or
// re-creates, or itself defers): its inputs do not exist yet.
func planAtApply(r *Run, s *Stack) bool {
	if s.Intent == IntentRecreate {
		return true
	}
	for _, dep := range s.Requires {
		d := r.Stacks[dep]
		if d == nil || d.Intent == IntentDelete {
			continue
		}
		if d.AtApply || (d.Phase == Ready && d.ChangeSetType == "CREATE") {
			return true
		}
	}
	return false
}

// Watch lists the stacks in flight that the driver must observe before the next step, and
// how: change sets being created are described; executing or deleting stacks are described.
func (r *Run) Watch() (changeSets, stacks []string) {
	for _, name := range r.Names() {
		switch r.Stacks[name].Phase {
		case CreatingChangeSet:
			changeSets = append(changeSets, name)
		case Executing, RollingBack, Deleting, DeletingOld:
			stacks = append(stacks, name)
		}
	}
	return changeSets, stacks
}
