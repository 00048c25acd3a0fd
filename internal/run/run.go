// Package run is the deploy run state machine: plain data plus one pure transition.
//
// A run never waits for CloudFormation. Each trigger (an upload, a stack status event, a
// heartbeat) loads the Run, gathers Observations of the stacks in flight, and calls Advance,
// which returns the next Run and the Actions the driver must perform. The driver performs
// them, records their results as Observations for the next step, and persists the Run. All
// decisions live here, so the engine is tested with a virtual clock and a simulated
// CloudFormation in milliseconds, and a Lambda timeout can never lose progress.
package run

import (
	"slices"
	"sort"
	"time"

	"github.com/cairn-dev/cairn/internal/graph"
	"github.com/cairn-dev/cairn/internal/target"
)

// Intent is what the plan decided for a stack in this run.
type Intent string

const (
	// IntentDeploy creates or updates the stack through a change set. Whether a change set is
	// needed at all is decided when the stack's inputs are known (see Stack.Unchanged).
	IntentDeploy Intent = "deploy"
	// IntentRecreate deletes a stack left in ROLLBACK_COMPLETE (or REVIEW_IN_PROGRESS after a
	// failed create) and creates it again.
	IntentRecreate Intent = "recreate"
	// IntentDelete deletes a stack that left the config.
	IntentDelete Intent = "delete"
	// IntentRead only reads the outputs of a locked stack, which is never changed.
	IntentRead Intent = "read"
)

// Phase is where a stack is in its life cycle within the run.
type Phase string

const (
	Pending           Phase = "pending"
	DeletingOld       Phase = "deleting-failed-stack" // recreate: waiting for the old stack to go
	CreatingChangeSet Phase = "creating-change-set"
	Ready             Phase = "ready" // change set AVAILABLE, waiting to execute (plan runs stop here)
	// DetectingDrift: a plan run's stack whose change set is ready, while CloudFormation
	// detects its drift (Stack.DetectDrift); Ready once the detection ends.
	DetectingDrift Phase = "detecting-drift"
	Executing      Phase = "executing" // change set executing
	RollingBack    Phase = "continuing-rollback"
	Deleting       Phase = "deleting"
	Done           Phase = "done"
	Unchanged      Phase = "unchanged" // inputs or template unchanged: no change set, or an empty one
	Failed         Phase = "failed"
	Blocked        Phase = "blocked" // a dependency failed or the run failed before this stack started
)

// Terminal reports whether p ends a stack's part in the run.
func (p Phase) Terminal() bool {
	switch p {
	case Done, Unchanged, Failed, Blocked:
		return true
	}
	return false
}

// InFlight reports whether the stack occupies a concurrency slot.
func (p Phase) InFlight() bool {
	switch p {
	case DeletingOld, CreatingChangeSet, Ready, DetectingDrift, Executing, RollingBack, Deleting:
		return true
	}
	return false
}

// Waits reports whether a stack in phase p waits for CloudFormation, so the driver looks
// at it (Run.Due): a change set being created, a stack operation, a deletion.
func (p Phase) Waits() bool {
	switch p {
	case CreatingChangeSet, DetectingDrift, Executing, RollingBack, Deleting, DeletingOld:
		return true
	}
	return false
}

// Mode distinguishes a deploy run (execute change sets) from a plan run (stop at Ready).
type Mode string

const (
	ModeDeploy Mode = "deploy"
	ModePlan   Mode = "plan"
)

// Status of the whole run.
type Status string

const (
	Running   Status = "running"
	Succeeded Status = "succeeded"
	RunFailed Status = "failed"
	// Superseded is a run whose upload was no longer the newest version of its key when
	// it arrived: nothing was deployed, and the newer upload's own run deploys it.
	Superseded Status = "superseded"
	// Abandoned is a run that lost its lock (removed by `cairn unlock --force`, or taken
	// over once its lease ended) and stopped: it changes nothing more, the change sets it
	// made and did not execute are deleted, and whatever CloudFormation still does to its
	// stacks is re-planned by the next run from their live tags.
	Abandoned Status = "abandoned"
)

// Stack is one stack's part in a run.
type Stack struct {
	Name      string   `json:"name"`       // config name
	StackName string   `json:"stack_name"` // real CloudFormation name
	Intent    Intent   `json:"intent"`
	Requires  []string `json:"requires,omitempty"` // config names this stack depends on (deploys) or that depend on it (deletes: dependents)
	// After names, for a stack the run deploys, the stacks the run deletes that must be
	// gone before it changes: removed stacks importing its exports (CloudFormation
	// refuses to drop or change an export in use). Such deletions start at once, not
	// after the deploys (see start).
	After []string `json:"after,omitempty"`
	// Imports are the export names the stack's templates (nested ones included) import
	// with Fn::ImportValue, and ImportsKnown says they are all of them (false when an
	// import computes its name, or the template is not the bundle's): recorded in the
	// graph, so a later run that deletes the stack knows whose exports it holds.
	Imports      []string `json:"imports,omitempty"`
	ImportsKnown bool     `json:"imports_known,omitempty"`
	// Exists says whether a stack is live, so the change set is an UPDATE rather than a CREATE.
	Exists bool `json:"exists"`
	// Inputs and the previous applied inputs; equal hashes mean nothing to do.
	TemplateHash       string `json:"template_hash,omitempty"`
	PrevTemplateHash   string `json:"prev_template_hash,omitempty"`
	PrevParametersHash string `json:"prev_parameters_hash,omitempty"`
	Force              bool   `json:"force,omitempty"` // tags, termination protection or status require an update
	// Code is the sha256 of each local artifact the stack's templates name, by bundle path
	// (a folder's ends in /), and CodeChanges how they differ from what was last applied:
	// part of TemplateHash, named here so a plan says which code changed.
	Code        map[string]string `json:"code,omitempty"`
	CodeChanges []CodeChange      `json:"code_changes,omitempty"`
	// RawParameters are the parameters as written, lookups unresolved, and Parameters
	// those the stack started with, resolved; both as stored (Options.Seal): the values of
	// the NoEcho parameters (named in NoEcho) are sealed references, never the values.
	RawParameters map[string]string `json:"raw_parameters,omitempty"`
	NoEcho        []string          `json:"no_echo,omitempty"`
	// SecretOutputs are the outputs whose values are secret (computed from a NoEcho
	// parameter, a SecureString or another secret output): the run stores them sealed
	// (Options.SealOutputs), never their values.
	SecretOutputs  []string          `json:"secret_outputs,omitempty"`
	Parameters     map[string]string `json:"parameters,omitempty"` // resolved when the stack starts
	ParametersHash string            `json:"parameters_hash,omitempty"`
	// KeptParametersHash is the hash the graph (and the stack's tags) record of the same
	// parameters sealed without a key, by a cairn before keyed seals: a stack found
	// unchanged is recorded with it, so graph and tags keep agreeing until it changes.
	KeptParametersHash string `json:"kept_parameters_hash,omitempty"`

	Phase         Phase  `json:"phase"`
	StackID       string `json:"stack_id,omitempty"`
	ChangeSetName string `json:"change_set_name,omitempty"`
	ChangeSetID   string `json:"change_set_id,omitempty"`
	ChangeSetType string `json:"change_set_type,omitempty"` // CREATE or UPDATE
	Changes       int    `json:"changes,omitempty"`
	Attempts      int    `json:"attempts,omitempty"` // retries of the current phase
	Rollbacks     int    `json:"rollbacks,omitempty"`
	Reason        string `json:"reason,omitempty"`
	// Class is, for a failed stack, the kind of its failure: what a person does next
	// (NextStep).
	Class   Class             `json:"class,omitempty"`
	Outputs map[string]string `json:"outputs,omitempty"`
	// AtApply marks a plan's stack whose change set cannot be made yet, because a stack it
	// depends on is created by the same plan: the apply run creates it ("created at apply").
	AtApply bool `json:"at_apply,omitempty"`
	// InputsMayChange marks a plan's stack whose parameters come from outputs of a stack the
	// plan changes: its change set was made against the current outputs.
	InputsMayChange bool `json:"inputs_may_change,omitempty"`
	// PlannedParametersHash, in an apply run, is the hash of the parameters the reviewed
	// change set was made with: a stack whose parameters now resolve differently is stale
	// and is never executed.
	PlannedParametersHash string `json:"planned_parameters_hash,omitempty"`
	// Ripple, in an apply run, marks a reviewed stack whose inputs come from a stack the
	// same run changes first (known after apply). Should its parameters then resolve
	// otherwise than planned, its reviewed change set no longer applies: a new one is made
	// with the new values (Rippled names the parameters that changed), and executed only
	// if every change in it is explained by them (Options.Explain); anything else stops
	// the stack, its change set kept for a new review.
	Ripple  bool     `json:"ripple,omitempty"`
	Rippled []string `json:"rippled,omitempty"`
	// Stopped marks a ripple stopped that way: failed, its change set not executed.
	Stopped bool `json:"stopped,omitempty"`
	// Retain lists the resources (logical ids) a deletion of the stack keeps because
	// CloudFormation fails to delete them: a stack left ROLLBACK_FAILED or DELETE_FAILED,
	// deleted only through an approved plan that lists them. Retaining says the stack is
	// DELETE_FAILED, so the next DeleteStack keeps them (CloudFormation keeps resources of
	// a DELETE_FAILED stack only); a ROLLBACK_FAILED stack is deleted once without.
	Retain    []string `json:"retain,omitempty"`
	Retaining bool     `json:"retaining,omitempty"`
	// Early says a deploy run may make the stack's change set while the stacks it depends
	// on are still being updated, from the outputs they had: its templates read nothing
	// else that their updates can change (template.Tree.Outside). MadeEarly marks a change
	// set so made: it waits (Ready, holding no concurrency slot) until they finished, and
	// is executed only if the parameters then resolve as they did when it was made; else
	// it is deleted and made again. The change set's creation leaves the critical path.
	Early     bool `json:"early,omitempty"`
	MadeEarly bool `json:"made_early,omitempty"`
	// OutputParameters maps each output of the stack's template that is one of its
	// parameters as given to that parameter (template.OutputParameters): while the stack
	// executes, such an output's coming value is the parameter's, so a dependent's change
	// set made early reads it (resolveAhead) rather than the value it had, and is not
	// stale when the update changes it.
	OutputParameters map[string]string `json:"output_parameters,omitempty"`
	// Held says the change set made early is looked at only when it is likely made until
	// its dependencies finished: nothing needs it before (schedule).
	Held bool `json:"held,omitempty"`
	// Stale names the change sets made early that went stale while CloudFormation was
	// still making them (the stack made its change set again at once): deleted then, and
	// again once the stack settles, since CloudFormation deletes no change set still being
	// made.
	Stale []string `json:"stale_change_sets,omitempty"`
	// PlanOnly says the config has the stack protected (protected: true): it changes, and
	// is deleted, only by the apply run of an approved plan (Run.Plan), never by a push.
	PlanOnly bool `json:"plan_only,omitempty"`
	// RefuseDrift says the config has the stack's on_drift refuse: a change set that would
	// bring back properties changed outside cairn stops the stack, not executed.
	RefuseDrift bool `json:"refuse_drift,omitempty"`
	// Drift is what the stack's drift-aware change set showed of properties changed
	// outside cairn, and whether it brings each back (no values: they may be secrets): the
	// run report and page say what the run did with each.
	Drift []DriftedProperty `json:"drift,omitempty"`
	// Outside is what changed outside cairn in a push's stack whose change set is not
	// drift-aware (on_drift keep, not protected), as the deployment's drift report
	// DriftFrom (recent enough) says: each property with what the ordinary change set does
	// with it (DriftedProperty.Does: left, or overwritten when the change set changes it),
	// settled when the change set is made. No values: the report has them, masked.
	Outside   []DriftedProperty `json:"outside,omitempty"`
	DriftFrom string            `json:"drift_from,omitempty"`
	// DetectDrift asks a plan run to detect the stack's drift once its change set is ready
	// (DetectStackDrift), because no drift report recent enough tells it (the driver sets
	// it for a stack whose change set is not drift-aware); StackDrift is what the detection
	// DriftDetection found: DRIFTED, IN_SYNC, or UNKNOWN with why in DriftNote. The drifted
	// properties are read when the plan document is written (DescribeStackResourceDrifts):
	// the run keeps no value.
	DetectDrift    bool   `json:"detect_drift,omitempty"`
	DriftDetection string `json:"drift_detection,omitempty"`
	StackDrift     string `json:"stack_drift,omitempty"`
	DriftNote      string `json:"drift_note,omitempty"`
	// Protect is the termination protection the config wants; Protected what the stack
	// has, as last seen. A deploy that finishes with them different sets it.
	Protect bool `json:"termination_protection,omitempty"`
	// CreateTimeout bounds the execution of a CREATE change set (the config's
	// timeout_in_minutes: change sets take none of their own); 0: PhaseTimeout.
	CreateTimeout time.Duration `json:"create_timeout,omitempty"`
	Protected     bool          `json:"live_termination_protection,omitempty"`
	StartedAt     time.Time     `json:"started_at,omitzero"`
	PhaseSince    time.Time     `json:"phase_since,omitzero"`
	// ExecutedAt is when its change set was first executed: the run report's timeline
	// tells the making of the change set from its execution by it.
	ExecutedAt time.Time `json:"executed_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// CheckAt is when the driver next looks at a stack that waits for CloudFormation (zero:
	// at the next step), and Looks how often it looked in this phase without seeing its
	// end; when they come is look.go's schedule.
	CheckAt time.Time `json:"check_at,omitzero"`
	Looks   int       `json:"looks,omitempty"`
	// History is how long the stack's last change set and operation took (the graph's
	// record of its last run): when its looks are likely to find a wait over (see look.go).
	// Took is how long they take in this run, recorded in the graph for the next.
	History Timing `json:"history,omitzero"`
	Took    Timing `json:"took,omitzero"`
	// Target is where the stack lives and how the deployer reaches it (cairn.yaml's
	// region, role_arn, external_id, service_role); At its account and region relative to
	// the deployer's, "" where they are the deployer's own. The zero values are home.
	Target target.Spec   `json:"target,omitzero"`
	At     target.Target `json:"at,omitzero"`
	// Events are what CloudFormation said of the stack's resources in the operations the
	// run made (read when each settled), in time order, bounded (MaxStackEvents,
	// MaxRunEvents); EventsDropped counts those left out.
	Events        []ResourceEvent `json:"events,omitempty"`
	EventsDropped int             `json:"events_dropped,omitempty"`
}

// CodeChange is a local artifact of a stack whose content differs from what was last
// applied: From is "" for one added, To "" for one removed.
type CodeChange struct {
	Path string `json:"path"`
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

func (c CodeChange) String() string {
	short := func(s string) string {
		if len(s) > 12 {
			return s[:12] + "…"
		}
		return s
	}
	switch {
	case c.From == "":
		return "code added (" + c.Path + ", sha256 " + short(c.To) + ")"
	case c.To == "":
		return "code removed (" + c.Path + ")"
	}
	return "code changed (" + c.Path + ", sha256 " + short(c.From) + " → " + short(c.To) + ")"
}

// CodeChanges compares the code of a stack (Stack.Code) applied with what it deploys now,
// by path.
func CodeChanges(applied, now map[string]string) []CodeChange {
	var out []CodeChange
	for p, sha := range now {
		if applied[p] != sha {
			out = append(out, CodeChange{Path: p, From: applied[p], To: sha})
		}
	}
	for p, sha := range applied {
		if _, ok := now[p]; !ok {
			out = append(out, CodeChange{Path: p, From: sha})
		}
	}
	// sort.Slice rather than slices.SortFunc: each instantiation of the latter for a struct
	// type adds 5-9 KB of code to the deployer, held under 15 MB (docs/policy.md).
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Key identifies the stack among the run's by account, region and stack name.
func (s *Stack) Key() string { return target.Key(s.At, s.StackName) }

// Describe names the stack for people, with its account and region when not home.
func (s *Stack) Describe() string { return target.Describe(s.At, s.StackName) }

// Run is the whole state machine, persisted after every step.
type Run struct {
	ID             string            `json:"id"`
	Deployment     string            `json:"deployment"`
	Mode           Mode              `json:"mode"`
	Status         Status            `json:"status"`
	MaxConcurrency int               `json:"max_concurrency"`
	Stacks         map[string]*Stack `json:"stacks"`
	Seq            int               `json:"seq"` // numbers change sets: cairn-RUN-SEQ
	StartedAt      time.Time         `json:"started_at"`
	UpdatedAt      time.Time         `json:"updated_at"`
	FinishedAt     time.Time         `json:"finished_at,omitzero"`
	Reason         string            `json:"reason,omitempty"`
	// Plan is, in the apply run of an approved plan, the plan's id: the only kind of run
	// that may change a PlanOnly stack.
	Plan string `json:"plan,omitempty"`
	// External holds outputs of stacks outside the run (xref lookups and locked stacks),
	// keyed "STACK::Output" by the name used in the lookup.
	External map[string]string `json:"external,omitempty"`
	// CheckQueued is when the delayed check the driver queued last fires (see Wake).
	CheckQueued time.Time `json:"check_queued,omitzero"`
	// Learned is what the run saw of change sets, by account and region (see look.go).
	Learned map[string]Place `json:"learned,omitempty"`
	// Guards are the graph-wide guard settings of the config the run applies, recorded in
	// the graph when the run writes it; nil in a run made before they were (the graph's
	// then stay as they are).
	Guards *Guards `json:"guards,omitempty"`
	// GuardChanges are the guard settings the run changes from what the graph applied
	// (plan.GuardChanges): a plan shows them, and an apply runs the relaxed ones only
	// when a reviewed plan showed them.
	GuardChanges []GuardChange `json:"guard_changes,omitempty"`
	// Policy is where a push stands with the policies (PolicyGate): judged before any of
	// its stacks starts, when there are policies to judge it with.
	Policy PolicyGate `json:"policy,omitempty"`
}

// Names returns the stacks' config names, sorted.
func (r *Run) Names() []string {
	names := make([]string, 0, len(r.Stacks))
	for n := range r.Stacks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Graph is the order among the run's stacks: an edge s -> d (s waits for d) for each d
// of s.Requires and s.After that is a stack of the run. A deletion's Requires are its
// dependents, so a deletion waits for theirs. Advance walks it (package graph) to block
// and to start stacks; it costs O(V + E) to build.
func (r *Run) Graph() *graph.Graph { return r.graph(r.Names()) }

// graph is Graph given the run's names, sorted.
func (r *Run) graph(names []string) *graph.Graph {
	return graph.Build(names, func(name string, depend func(on string)) {
		s := r.Stacks[name]
		for _, d := range s.Requires {
			depend(d)
		}
		for _, d := range s.After {
			depend(d)
		}
	})
}

// Clone returns a deep copy, so Advance never mutates its input.
func (r *Run) Clone() *Run {
	c := *r
	c.Stacks = make(map[string]*Stack, len(r.Stacks))
	for n, s := range r.Stacks {
		cs := *s
		cs.Requires = append([]string(nil), s.Requires...)
		cs.After = append([]string(nil), s.After...)
		cs.Imports = append([]string(nil), s.Imports...)
		cs.Retain = append([]string(nil), s.Retain...)
		cs.NoEcho = append([]string(nil), s.NoEcho...)
		cs.SecretOutputs = append([]string(nil), s.SecretOutputs...)
		cs.Rippled = append([]string(nil), s.Rippled...)
		cs.Stale = append([]string(nil), s.Stale...)
		cs.Events = slices.Clone(s.Events)
		cs.Drift = append([]DriftedProperty(nil), s.Drift...)
		cs.Outside = slices.Clone(s.Outside)
		cs.RawParameters = cloneMap(s.RawParameters)
		cs.Parameters = cloneMap(s.Parameters)
		cs.Outputs = cloneMap(s.Outputs)
		cs.OutputParameters = cloneMap(s.OutputParameters)
		c.Stacks[n] = &cs
	}
	c.External = cloneMap(r.External)
	if r.Guards != nil {
		g := *r.Guards
		c.Guards = &g
	}
	c.GuardChanges = slices.Clone(r.GuardChanges)
	if r.Learned != nil {
		c.Learned = make(map[string]Place, len(r.Learned))
		for k, v := range r.Learned {
			c.Learned[k] = v
		}
	}
	return &c
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
