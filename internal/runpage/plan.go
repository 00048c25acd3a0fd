package runpage

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
	"github.com/cairn-dev/cairn/internal/verdict"
)

// Plan is what a plan's page shows: the plan document, and links to its other views.
type Plan struct {
	Plan  *plan.Document
	Links []Link
}

// danger is what applying the plan cannot undo: a deleted stack, a replaced or removed
// resource.
type danger struct{ Kind, What, Stack, Href string }

// changeView is one resource change of a change set.
type changeView struct {
	Action, LogicalID, Type, Replacement, Physical string
	Danger                                         bool
	Details                                        []string
}

// planStackView is one stack of a plan as its page shows it.
type planStackView struct {
	ID, Name, Where, Action, Class, ChangeSet, Reason string
	Summary                                           string // its changes, in a few words
	Replacements                                      int
	Marks                                             []string
	Changes                                           []changeView
	Params                                            []plan.ParameterChange
	Resources                                         []plan.Resource
	Open                                              bool
}

type planView struct {
	PageTitle                                                     string
	Refresh                                                       int
	StatusClass                                                   string
	Title, ID, Deployment, Status, Bundle, Graph, Created, Reason string
	Approve                                                       string
	Links                                                         []Link
	Warnings, Notes, Errors, Refusals                             []string
	Dangers                                                       []danger
	SVG                                                           svgGraph
	Stacks                                                        []planStackView
	Unchanged                                                     []string
	Drift                                                         driftView
	Policy                                                        *verdict.Verdict
}

// RenderPlan renders the page of a plan.
func RenderPlan(in Plan) ([]byte, error) {
	if in.Plan == nil {
		return nil, fmt.Errorf("render a plan page: no plan in the input; pass the plan document")
	}
	return writePlan(planViewOf(in)), nil
}

// dangerRank puts deletions first, then re-creations and stacks with a replacement, then
// the rest (each group in deploy order).
func dangerRank(s plan.Stack) int {
	switch {
	case s.Action == plan.Delete:
		return 0
	case s.Action == plan.Recreate || s.Replacements() > 0:
		return 1
	}
	for _, c := range s.Changes {
		if c.Action == "Remove" {
			return 1
		}
	}
	return 2
}

func planViewOf(in Plan) planView {
	p := in.Plan
	v := planView{Title: "plan", ID: clean(p.ID), Deployment: clean(p.Deployment), Status: clean(string(p.Status)),
		Bundle: clean(p.Bundle.String()), Graph: clean(fmt.Sprintf("%s/%s at generation %d", p.Namespace, p.GraphKey, p.Generation)),
		Created: stamp(p.CreatedAt), Reason: clean(p.Reason), Warnings: cleanAll(p.Warnings), Errors: cleanAll(p.Errors),
		Refusals: cleanAll(p.Refusals), Policy: p.Policy}
	if p.Destroy {
		v.Title = "destroy plan"
	}
	v.PageTitle = fmt.Sprintf("cairn %s %s of %s: %s", v.Title, v.ID, v.Deployment, v.Status)
	v.StatusClass = statusClass(string(p.Status))
	if p.Status == plan.Planned && p.Approvable() {
		v.Approve = clean("cairn approve " + p.Deployment + " " + p.ID)
	}
	for _, l := range in.Links {
		v.Links = append(v.Links, Link{Text: clean(l.Text), Href: l.Href})
	}
	order := report.Order(p)
	ids := map[string]string{}
	for i, s := range order {
		ids[s.Name] = fmt.Sprintf("stack-%d", i)
	}
	var nodes []node
	for _, s := range order {
		var deps []string
		if p.Run != nil && p.Run.Stacks[s.Name] != nil && s.Action != plan.Delete {
			deps = cleanAll(p.Run.Stacks[s.Name].Requires)
		}
		caption := string(s.Action)
		if s.Action == plan.None {
			caption = "unchanged"
		}
		if n := s.Replacements(); n > 0 {
			caption += fmt.Sprintf(", %d replaced", n)
		}
		nodes = append(nodes, node{Name: clean(s.Name), Deps: deps, Class: actionClass(s), Caption: caption, Href: "#" + ids[s.Name]})
	}
	v.SVG = layout(nodes)
	v.SVG.Desc = fmt.Sprintf("Dependency graph of the plan's %d stacks, coloured by what the plan does to each; an arrow points from a stack to the stacks that depend on it.", len(nodes))
	shown := slices.Clone(order)
	slices.SortStableFunc(shown, func(a, b plan.Stack) int { return dangerRank(a) - dangerRank(b) })
	for _, s := range shown {
		if s.Action == plan.None && !s.InputsMayChange {
			v.Unchanged = append(v.Unchanged, clean(s.Name))
			continue
		}
		v.Stacks = append(v.Stacks, planStackViewOf(p, s, ids[s.Name]))
	}
	v.Dangers = dangersOf(p, shown, ids)
	v.Drift = planDriftOf(p, order)
	return v
}

func planStackViewOf(p *plan.Document, s plan.Stack, id string) planStackView {
	where := s.StackName
	if p.Run != nil && p.Run.Stacks[s.Name] != nil {
		where = target.Describe(p.Run.Stacks[s.Name].At, s.StackName)
	}
	sv := planStackView{ID: id, Name: clean(s.Name), Where: clean(where), Action: string(s.Action), Class: actionClass(s),
		ChangeSet: clean(s.ChangeSetName), Reason: clean(s.Reason), Replacements: s.Replacements(), Marks: cleanAll(s.Marks())}
	if s.Action == plan.None {
		sv.Action = "known after apply"
	}
	sv.Open = dangerRank(s) < 2
	switch {
	case s.Action == plan.Delete:
		sv.Summary = fmt.Sprintf("%d resource(s) deleted", len(s.Resources))
	case s.CreatedAtApply:
		sv.Summary = fmt.Sprintf("created at apply: %d resource(s) in its template", len(s.Resources))
	case s.Action == plan.None:
		sv.Summary = "known after apply"
	default:
		sv.Summary = fmt.Sprintf("%d change(s)", len(s.Changes))
	}
	for _, c := range s.Changes {
		cv := changeView{Action: clean(c.Action), LogicalID: clean(c.LogicalID), Type: clean(c.Type), Replacement: clean(c.Replacement),
			Physical: clean(c.PhysicalID), Details: cleanAll(c.Details)}
		cv.Danger = c.Action == "Remove" || c.Replacement == "True" || c.Replacement == "Conditional"
		sv.Changes = append(sv.Changes, cv)
	}
	// sort.SliceStable rather than slices.SortStableFunc: each instantiation of the latter for a struct
	// type adds 5-9 KB of code to the deployer, held under 15 MB (docs/policy.md).
	sort.SliceStable(sv.Changes, func(i, j int) bool {
		return boolRank(sv.Changes[i].Danger) < boolRank(sv.Changes[j].Danger)
	})
	for _, c := range s.ParameterChanges {
		sv.Params = append(sv.Params, plan.ParameterChange{Name: clean(c.Name), Old: maskChange(c.Old, c.Secret), New: maskChange(c.New, c.Secret), Secret: c.Secret})
	}
	for _, r := range s.Resources {
		sv.Resources = append(sv.Resources, plan.Resource{LogicalID: clean(r.LogicalID), Type: clean(r.Type), Reason: clean(r.Reason)})
	}
	return sv
}

// maskChange is an old or new parameter value: "" stays "" (none), a secret is ****.
func maskChange(v string, secret bool) string {
	if v == "" {
		return ""
	}
	return Masked(v, secret)
}

func boolRank(danger bool) int {
	if danger {
		return 0
	}
	return 1
}

// dangersOf lists what cannot be undone by applying the old bundle again: deleted and
// re-created stacks, then removed and replaced resources.
func dangersOf(p *plan.Document, shown []plan.Stack, ids map[string]string) []danger {
	var out []danger
	for _, s := range shown {
		href, name := "#"+ids[s.Name], clean(s.Name)
		switch s.Action {
		case plan.Delete:
			out = append(out, danger{"delete stack", clean(s.StackName), name, href})
		case plan.Recreate:
			out = append(out, danger{"re-create stack", clean(s.StackName), name, href})
		}
		for _, c := range s.Changes {
			what := clean(c.LogicalID + " (" + c.Type + ")")
			switch {
			case c.Action == "Remove":
				out = append(out, danger{"remove", what, name, href})
			case c.Replacement == "True":
				out = append(out, danger{"replace", what, name, href})
			case c.Replacement == "Conditional":
				out = append(out, danger{"may replace", what, name, href})
			}
		}
	}
	return out
}

// Index is the list of what a local cairn keeps, by deployment: its runs and plans,
// newest first, each linked to its page.
type Index struct {
	Title       string
	Deployments []Deployment
}

// Deployment is one deployment of the index.
type Deployment struct {
	Name  string
	Runs  []Entry
	Plans []Entry
	Drift []Entry
}

// Entry is one run, plan or drift report of the index.
type Entry struct {
	ID, Status, Href string
	When             time.Time
}

type entryView struct{ ID, Status, Class, Href, When string }

type deploymentView struct {
	Name               string
	Runs, Plans, Drift []entryView
}

// RenderIndex renders the index page.
func RenderIndex(in Index) ([]byte, error) {
	v := struct {
		PageTitle, Title string
		Refresh          int
		Deployments      []deploymentView
	}{PageTitle: clean(in.Title), Title: clean(in.Title)}
	entries := func(es []Entry) []entryView {
		var out []entryView
		for _, e := range es {
			out = append(out, entryView{ID: clean(e.ID), Status: clean(e.Status), Class: statusClass(e.Status), Href: e.Href, When: stamp(e.When)})
		}
		return out
	}
	for _, d := range in.Deployments {
		v.Deployments = append(v.Deployments, deploymentView{Name: clean(d.Name), Runs: entries(d.Runs), Plans: entries(d.Plans), Drift: entries(d.Drift)})
	}
	return writeIndex(v.Title, v.Deployments), nil
}

// statusClass is the colour class of a run's or a plan's status.
func statusClass(status string) string {
	switch status {
	case string(run.Succeeded), string(plan.Applied):
		return "ok"
	case string(run.RunFailed), string(plan.ApplyFailed):
		return "bad"
	case string(run.Running), string(plan.Planned), string(plan.Applying):
		return "busy"
	}
	return "none"
}
