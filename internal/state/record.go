package state

import (
	"slices"
	"time"

	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
)

// Recording is what one step of a run gives its persistent graph.
type Recording struct {
	Run *run.Run
	// Finished are the stacks that finished in the step; once the run has ended, every
	// stack of it is recorded.
	Finished []string
	// Drop lists the stacks the plan dropped: gone from AWS and from the config.
	Drop []string
	// Statuses are the stacks' CloudFormation statuses as last seen, by config name.
	Statuses map[string]string
	// Bundle is the deployed bundle, recorded once the run succeeded.
	Bundle BundleRef
	// Origins say, by stack, where the change the run makes to it comes from ("pull
	// request #21"); a stack it changes is recorded as changed by its origin and the run.
	Origins map[string]string
	Region  string
	Now     time.Time
}

// Idle reports whether the step can change no graph at all, so the graph need not be read:
// a plan's, or one in which nothing finished and nothing is dropped.
func (rec Recording) Idle() bool {
	return rec.Run.Mode == run.ModePlan || (len(rec.Finished) == 0 && rec.Run.Status == run.Running && len(rec.Drop) == 0)
}

// Record returns the graph g becomes after a step of a run, and whether it differs: a
// stack deployed (or found unchanged) is recorded with its inputs, outputs and status, a
// deleted or dropped one leaves, a failed one keeps its last applied inputs with its new
// status, a locked one refreshes its outputs, and a run that succeeded records its
// bundle. A plan changes nothing: the graph it was made against stays as it is. g itself
// is not changed.
func Record(g *Graph, rec Recording) (*Graph, bool) {
	if rec.Idle() {
		return g, false
	}
	r := rec.Run
	ended := r.Status != run.Running
	next := g.clone()
	names := rec.Finished
	if ended {
		names = r.Names()
	}
	changed := false
	for _, name := range rec.Drop {
		if _, ok := next.Stacks[name]; ok {
			next.remove(name)
			changed = true
		}
	}
	for _, name := range names {
		s := r.Stacks[name]
		old := next.Stacks[name]
		switch {
		case s.Intent == run.IntentDelete && s.Phase == run.Done:
			if old != nil {
				next.remove(name)
				changed = true
			}
		case s.Intent == run.IntentDelete || s.Phase == run.Blocked:
		case s.Phase == run.Failed && old != nil:
			old.Status = rec.Statuses[name]
			old.UpdatedAt = rec.Now
			changed = true
		case s.Phase == run.Failed:
			// A create that failed still made the stack (ROLLBACK_COMPLETE, or
			// REVIEW_IN_PROGRESS when its change set failed), tagged with the inputs it
			// was tried with: cairn created it, so the graph holds it, as a rebuild from
			// the tags would.
			if s.StackID != "" && rec.Statuses[name] != "DELETE_COMPLETE" {
				st := applied(name, s, rec)
				st.Outputs = nil
				next.Stacks[name] = st
				changed = true
			}
		case s.Intent == run.IntentRead:
			if old != nil {
				old.Outputs = s.Outputs
				old.Requires = s.Requires
				changed = true
			}
		case s.Phase == run.Done || s.Phase == run.Unchanged:
			st := applied(name, s, rec)
			if s.Phase == run.Unchanged && s.KeptParametersHash != "" {
				st.ParametersHash = s.KeptParametersHash
			}
			if old != nil {
				st.Tags = old.Tags
				st.ChangedAt, st.ChangedBy = old.ChangedAt, old.ChangedBy
				if st.StackID == "" {
					st.StackID = old.StackID
					st.locate(s.Target)
				}
				if s.Phase == run.Unchanged && old.Parameters != nil && st.ParametersHash == old.ParametersHash {
					st.Parameters = old.Parameters
				}
			}
			if s.Phase == run.Done {
				st.ChangedAt, st.ChangedBy = rec.Now, changedBy(rec, name)
			}
			next.Stacks[name] = st
			changed = true
		}
	}
	// Dependencies on stacks the graph does not hold (disabled, never deployed) cannot be
	// honoured by a later deletion and would make the graph invalid.
	for _, st := range next.Stacks {
		st.Requires = slices.DeleteFunc(st.Requires, func(r string) bool { _, ok := next.Stacks[r]; return !ok })
	}
	if ended && r.Status == run.Succeeded {
		next.Bundle = rec.Bundle
		changed = true
	}
	if r.Guards != nil && changed && (next.Guards == nil || *next.Guards != *r.Guards) {
		// The guards the run applies: a relaxation got here only through an approved
		// plan (plan.Make refuses it in a push, plan.Compose in an apply).
		guards := *r.Guards
		next.Guards = &guards
		changed = true
	}
	if ended && g.Generation == 0 && touched(r) {
		// A run that made any CloudFormation call writes the graph, even an empty one, so
		// the next run does not find it missing and rebuild it from tags as if it had
		// been lost.
		changed = true
	}
	if !changed {
		return g, false
	}
	// The run's deployment owns what it wrote (plan.Make refused any other's run).
	next.Deployment = r.Deployment
	return next, true
}

// changedBy is what changed stack name in the run recorded: its origin and the run.
func changedBy(rec Recording, name string) string {
	if o := rec.Origins[name]; o != "" {
		return o + " (run " + rec.Run.ID + ")"
	}
	return "run " + rec.Run.ID
}

// applied is the graph's entry of stack name as the run's step left it.
func applied(name string, s *run.Stack, rec Recording) *Stack {
	st := &Stack{Name: name, StackName: s.StackName, StackID: s.StackID, Requires: slices.Clone(s.Requires),
		TemplateHash: s.TemplateHash, ParametersHash: s.ParametersHash, Parameters: s.Parameters, Code: s.Code, Status: rec.Statuses[name], Outputs: s.Outputs,
		UpdatedAt: rec.Now, Region: rec.Region, Target: s.Target, PlanOnly: s.PlanOnly,
		Imports: slices.Clone(s.Imports), ImportsKnown: s.ImportsKnown, TerminationProtection: s.Protect}
	st.locate(s.Target)
	return st
}

// locate sets where the stack lives: from its id, else from its target's region.
func (st *Stack) locate(t target.Spec) {
	if at, ok := target.OfStackID(st.StackID); ok {
		st.Account, st.Region = at.Account, at.Region
	} else if t.Region != "" {
		st.Region = t.Region
	}
}

// touched reports whether the run made a change set. (A graph never written has no
// stacks to delete, so a first run touches CloudFormation only with change sets.)
func touched(r *run.Run) bool {
	for _, s := range r.Stacks {
		if s.ChangeSetName != "" {
			return true
		}
	}
	return false
}

// clone copies g deeply enough for Record: its stacks and their dependency lists.
func (g *Graph) clone() *Graph {
	c := *g
	c.Stacks = make(map[string]*Stack, len(g.Stacks))
	for n, st := range g.Stacks {
		cs := *st
		cs.Requires = slices.Clone(st.Requires)
		cs.Imports = slices.Clone(st.Imports)
		c.Stacks[n] = &cs
	}
	return &c
}

func (g *Graph) remove(name string) {
	delete(g.Stacks, name)
	for _, st := range g.Stacks {
		st.Requires = slices.DeleteFunc(st.Requires, func(r string) bool { return r == name })
	}
}
