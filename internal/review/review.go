// Package review answers what a person reviewing plans asks before approving one: which
// plans a deployment has, what became of each (planned, applied, stale, superseded,
// expired, failed) and how old it is, and whether a given plan can still be approved.
//
// The deployer is the authority: an approval it finds stale executes nothing. Checking
// here first lets `cairn approve` refuse at once, before it writes anything, with the
// reason and what to do instead.
package review

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// Status is what became of a plan, as a reviewer needs to know it.
type Status string

const (
	Planned Status = "planned" // waiting for approval, and still approvable
	Applied Status = "applied" // an approval applied it (or is applying it)
	// ApplyFailed: its apply ran and failed; it does not apply again.
	ApplyFailed Status = "apply-failed"
	// Late: made of a pull request's checkout after it merged: nothing was planned.
	Late       Status = "late"
	Stale      Status = "stale"      // what it was made against changed: it can never apply
	Superseded Status = "superseded" // a newer bundle was planned or pushed
	Expired    Status = "expired"    // older than the plan TTL
	Failed     Status = "failed"     // the plan run failed: nothing to apply
)

// Observed is what, beside its document, decides a plan's status.
type Observed struct {
	Now time.Time
	// TTL is how long a plan stays approvable.
	TTL time.Duration
	// Graph is the persistent graph now (nil: none, or not known): the stacks it records
	// say what changed since a plan, and by what.
	Graph *state.Graph
	// Refusals are those of an approval of the plan that the deployer refused.
	Refusals []string
}

// Classify says what became of plan p, and why in words. It is pure: the deployer's
// freshness rules, as far as they can be told from the persistent graph without
// CloudFormation, as one status a reviewer reads. Plans of other pull requests coexist:
// a plan is stale only when a stack it changes, or one whose outputs such a stack
// consumes, changed since it was made (the graph records what changed each stack, and
// when), or an approval of it was refused.
func Classify(p *plan.Document, o Observed) (Status, string) {
	switch p.Status {
	case plan.Applying:
		return Applied, fmt.Sprintf("being applied by run %s since %s", p.AppliedBy, stamp(p.AppliedAt))
	case plan.Applied:
		return Applied, fmt.Sprintf("applied at %s by run %s", stamp(p.AppliedAt), p.AppliedBy)
	case plan.ApplyFailed:
		return ApplyFailed, fmt.Sprintf("applied at %s by run %s, which failed: %s", stamp(p.AppliedAt), p.AppliedBy, p.Reason)
	case plan.PlanFailed:
		return Failed, p.Reason
	case plan.Late:
		return Late, p.Reason
	case plan.Superseded:
		return Superseded, p.Reason
	case plan.Expired:
		return Expired, p.Reason
	}
	if age := o.Now.Sub(p.CreatedAt); o.TTL > 0 && age > o.TTL {
		return Expired, fmt.Sprintf("made %s ago; plans stay approvable for %s", Age(age), Age(o.TTL))
	}
	if why := Changed(p, o.Graph, false); why != "" {
		return Stale, why
	}
	if len(o.Refusals) > 0 {
		return Stale, "an approval was refused: " + strings.Join(o.Refusals, "; ")
	}
	return Planned, ""
}

// Changed says how the graph g shows p's entries gone stale: a stack an entry changes
// (every stack of the plan, with all), or a stack whose outputs it consumes, was changed
// since the plan was made, and the outputs it reads are not what the graph now records;
// "" when none was (or g is nil). It names the first such stack and what changed it. It
// agrees with what the deployer refuses (plan.Compose), which compares those outputs.
func Changed(p *plan.Document, g *state.Graph, all bool) string {
	if g == nil {
		return ""
	}
	since := func(name string) *state.Stack {
		if st := g.Stacks[name]; st != nil && st.ChangedAt.After(p.CreatedAt) {
			return st
		}
		return nil
	}
	who := p.Change()
	if who == "" {
		who = "plan " + p.ID
	} else {
		who = "the plan of " + who + " (" + p.ID + ")"
	}
	for _, e := range p.Stacks {
		if e.Action == plan.None && !all {
			continue
		}
		if st := since(e.Name); st != nil {
			what := "went stale"
			if e.Action == plan.None {
				what = "leaves it as it was, and its content would undo the change: it went stale"
			}
			return fmt.Sprintf("%s for stack %s %s when %s changed it at %s", who, e.Name, what, st.ChangedBy, st.ChangedAt.UTC().Format("15:04"))
		}
		if e.Action == plan.None {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(e.Consumed)) {
			from, output, _ := strings.Cut(k, "::")
			if st := since(from); st != nil {
				if v, ok := st.Outputs[output]; ok && v == e.Consumed[k] {
					// Changed, but not what this entry reads: the deployer applies it.
					continue
				}
				return fmt.Sprintf("%s for stack %s went stale when %s changed stack %s, whose outputs it consumes, at %s", who, e.Name, st.ChangedBy, from, st.ChangedAt.UTC().Format("15:04"))
			}
		}
	}
	return ""
}

// Entry is one plan with its status.
type Entry struct {
	Plan   *plan.Document
	Status Status
	Why    string
	Age    time.Duration
	// Graph is the persistent graph it was classified against (nil: none, or not read).
	Graph *state.Graph
}

// Reader reads plans and what decides their status from cairn's bucket.
type Reader struct {
	History *history.Store
	State   *statestore.Store
	// TTL defaults to the deployer's, plan.DefaultTTL.
	TTL   time.Duration
	Clock clock.Clock

	// refused caches, per deployment, the refused approvals of its newest runs: a Reader
	// answers one command, which may ask about several plans.
	refused map[string]map[string][]string
}

// runWindow is how many of a deployment's newest runs are read for refused approvals.
const runWindow = 20

// refusedOf returns the refusals of deployment's recently refused approvals, by plan id.
func (r *Reader) refusedOf(ctx context.Context, deployment string) (map[string][]string, error) {
	if m, ok := r.refused[deployment]; ok {
		return m, nil
	}
	runs, err := r.History.Runs(ctx, deployment, runWindow)
	if err != nil {
		return nil, err
	}
	if r.refused == nil {
		r.refused = map[string]map[string][]string{}
	}
	r.refused[deployment] = refusedApprovals(runs)
	return r.refused[deployment], nil
}

// List returns the newest at most limit plans of deployment (all when limit <= 0), newest
// first, each with its status.
func (r *Reader) List(ctx context.Context, deployment string, limit int) ([]Entry, error) {
	return r.find(ctx, deployment, limit, func(*plan.Document) bool { return true })
}

// Get returns one plan with its status; an *UnknownPlanError when deployment has no plan
// of that id.
func (r *Reader) Get(ctx context.Context, deployment, id string) (Entry, error) {
	p, err := r.History.Plan(ctx, deployment, id)
	if errors.Is(err, history.ErrNotFound) {
		recent, lerr := r.List(ctx, deployment, 5)
		if lerr != nil {
			return Entry{}, lerr
		}
		return Entry{}, &UnknownPlanError{Deployment: deployment, ID: id, Recent: recent}
	}
	if err != nil {
		return Entry{}, err
	}
	refused, err := r.refusedOf(ctx, deployment)
	if err != nil {
		return Entry{}, err
	}
	return r.observer().entry(ctx, p, refused[id])
}

// observer caches what several plans of a deployment share: the persistent graphs.
type observer struct {
	r      *Reader
	now    time.Time
	graphs map[string]*state.Graph
}

func (r *Reader) observer() *observer {
	clk := r.Clock
	if clk == nil {
		clk = clock.Real
	}
	return &observer{r: r, now: clk.Now(), graphs: map[string]*state.Graph{}}
}

func (o *observer) entry(ctx context.Context, p *plan.Document, refusals []string) (Entry, error) {
	obs := Observed{Now: o.now, TTL: o.r.TTL, Refusals: refusals}
	if obs.TTL <= 0 {
		obs.TTL = plan.DefaultTTL
	}
	if p.Status == plan.Planned {
		// Only an open plan's status depends on what changed since.
		var err error
		if obs.Graph, err = o.graph(ctx, p.Namespace, p.GraphKey); err != nil {
			return Entry{}, err
		}
	}
	status, why := Classify(p, obs)
	return Entry{Plan: p, Status: status, Why: why, Age: max(0, o.now.Sub(p.CreatedAt)), Graph: obs.Graph}, nil
}

func (o *observer) graph(ctx context.Context, namespace, key string) (*state.Graph, error) {
	if namespace == "" {
		return nil, nil
	}
	k := namespace + "/" + key
	if g, ok := o.graphs[k]; ok {
		return g, nil
	}
	g, err := o.r.State.Show(ctx, namespace, key, "")
	switch {
	case errors.Is(err, statestore.ErrNotFound):
		g, err = nil, nil
	case err != nil:
		return nil, err
	}
	o.graphs[k] = g
	return g, nil
}

// refusedApprovals maps plan ids to the refusals of their apply runs that the deployer
// refused before they changed anything.
func refusedApprovals(runs []*rundoc.Document) map[string][]string {
	out := map[string][]string{}
	for _, d := range runs {
		if history.KindOf(d) == history.Apply && !history.Acted(d) && len(d.Refusals) > 0 {
			out[d.Plan] = d.Refusals
		}
	}
	return out
}

// UnknownPlanError says a plan id names no plan of the deployment, with its recent plans.
type UnknownPlanError struct {
	Deployment, ID string
	Recent         []Entry
}

func (e *UnknownPlanError) Error() string {
	if len(e.Recent) == 0 {
		return fmt.Sprintf("deployment %s has no plan %s, and no plans at all: make one with `cairn plan PATH --deployment %s`", e.Deployment, e.ID, e.Deployment)
	}
	var recent []string
	for _, r := range e.Recent {
		recent = append(recent, fmt.Sprintf("%s (%s, %s ago)", r.Plan.ID, r.Status, Age(r.Age)))
	}
	return fmt.Sprintf("deployment %s has no plan %s; its recent plans: %s (see `cairn plans %s`)", e.Deployment, e.ID, strings.Join(recent, ", "), e.Deployment)
}

// Approvable returns nil when e can be approved, or why not and what to do instead.
// newest is the deployment's plans, newest first, to point at one that can be.
func (e Entry) Approvable(newest []Entry) error {
	p := e.Plan
	replan := fmt.Sprintf("make a new one with `cairn plan PATH --deployment %s`", p.Deployment)
	for _, n := range newest {
		if n.Status == Planned && n.Plan.ID != p.ID {
			replan = fmt.Sprintf("approve the newest plan instead: `cairn approve %s %s`", p.Deployment, n.Plan.ID)
			break
		}
	}
	switch e.Status {
	case Planned:
		// An approval applies the plan's whole content: a stack it leaves alone that
		// changed since would be undone.
		if why := Changed(p, e.Graph, true); why != "" {
			return fmt.Errorf("%s: approving the plan would apply content older than what is applied; apply the merged content instead (`cairn apply PATH --deployment %s`), or %s", why, p.Deployment, replan)
		}
		return nil
	case Applied, ApplyFailed:
		return fmt.Errorf("plan %s was already %s: a plan applies at most once; %s", p.ID, e.Why, replan)
	case Failed:
		return fmt.Errorf("plan %s failed (%s): there is nothing to apply; fix the bundle and %s", p.ID, e.Why, replan)
	}
	return fmt.Errorf("plan %s is %s (%s): %s", p.ID, e.Status, e.Why, replan)
}

// Age is a duration as a person reads an age: 42s, 5m, 3h, 2d.
func Age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
