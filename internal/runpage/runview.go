package runpage

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/verdict"
)

// stackView is one stack as a run's page shows it.
type stackView struct {
	ID        string // the anchor of its section
	Name      string
	Where     string // the CloudFormation stack, with its account and region when not home
	Action    string
	Phase     string
	Class     string
	CFN       string // its CloudFormation status as last seen
	Started   string
	Executed  string
	Finished  string
	Duration  string
	ChangeSet string
	Changes   string
	Reason    string
	Failure   string // the class of its failure
	Waits     []string
	Params    []pair
	Outputs   []pair
	Crit      bool
	Open      bool // its section starts expanded (a failed stack)
	// Resources are its resources as their events tell (run.Resources: the failed first),
	// Events those events in time order, Dropped how many the run left out.
	Resources []resourceView
	Events    []eventView
	Dropped   int
}

// resourceView is a resource of a stack: its latest status, and why it failed.
type resourceView struct {
	LogicalID, Type, PhysicalID, Status, Reason string
	Failed                                      bool
}

// eventView is one event of a stack's resources.
type eventView struct {
	Time, LogicalID, Status, Reason string
	Failed                          bool
}

// row is a stack on the timeline.
type row struct {
	ID, Name, Phase, Class string
	Start, End, Duration   string
	Bar                    bar
	Crit                   bool
}

// runView is everything the run template shows.
type runView struct {
	PageTitle                                 string
	Deployment, ID, Status, StatusClass, Mode string
	Bundle, Started, Finished, Duration       string
	Reason                                    string
	Refresh                                   int
	Links                                     []Link
	Warnings, Notes, Errors, Refusals         []string
	Next                                      *run.Next
	Policy                                    *verdict.Verdict
	Failed                                    []stackView
	Counts                                    []pair
	Graph                                     svgGraph
	Timeline                                  []row
	From, To                                  string
	NotStarted                                int
	Critical                                  []string
	Stacks                                    []stackView
	Drift                                     driftView
}

// runEnd is when the run's timeline ends: when it finished, else when it was last
// stepped (or the last stack's end, whichever is later).
func runEnd(r *run.Run) time.Time {
	end := r.FinishedAt
	if end.IsZero() {
		end = r.UpdatedAt
	}
	for _, s := range r.Stacks {
		if s.FinishedAt.After(end) {
			end = s.FinishedAt
		}
	}
	return end
}

// spansOf are the run's stacks that started, in the order they started.
func spansOf(r *run.Run) []span {
	g := r.Graph()
	end := runEnd(r)
	var spans []span
	for _, n := range r.Names() {
		s := r.Stacks[n]
		if s.StartedAt.IsZero() {
			continue
		}
		e := s.FinishedAt
		if e.IsZero() {
			e = end
		}
		e = later(e, s.StartedAt)
		sp := span{Name: n, Start: s.StartedAt, End: e, Deps: g.Dependencies(n)}
		if s.Intent != run.IntentDelete {
			sp.Executed = s.ExecutedAt
		}
		spans = append(spans, sp)
	}
	timelineOrder(spans)
	return spans
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func runViewOf(in Run) runView {
	r := in.Report.Run
	status := string(r.Status)
	if in.Report.Status != "" {
		status = in.Report.Status
	}
	v := runView{
		Deployment: clean(r.Deployment), ID: clean(r.ID), Status: clean(status), Mode: string(r.Mode),
		Bundle: clean(in.Report.Bundle), Started: stamp(r.StartedAt), Finished: stamp(r.FinishedAt),
		Reason: clean(r.Reason), Warnings: cleanAll(in.Report.Warnings), Notes: cleanAll(in.Report.Notes),
		Errors: cleanAll(in.Report.Errors), Refusals: cleanAll(in.Report.Refusals), Policy: in.Report.Policy,
	}
	v.PageTitle = fmt.Sprintf("cairn run %s of %s: %s", v.ID, v.Deployment, v.Status)
	v.StatusClass = statusClass(status)
	if !r.FinishedAt.IsZero() {
		v.Duration = r.FinishedAt.Sub(r.StartedAt).Round(time.Second).String()
	}
	if r.Status == run.Running {
		v.Refresh = in.Refresh
	}
	for _, l := range in.Links {
		v.Links = append(v.Links, Link{Text: clean(l.Text), Href: l.Href})
	}
	if next, ok := run.NextStep(run.Ending{Run: r, Statuses: in.Statuses, Refusals: in.Report.Refusals, Errors: in.Report.Errors, Path: in.Path}); ok {
		next.Why, next.Command, next.Then = clean(next.Why), clean(next.Command), clean(next.Then)
		v.Next = &next
	}
	spans := spansOf(r)
	v.Critical = criticalPath(spans)
	crit, critFrom := map[string]bool{}, map[string]string{}
	for i, n := range v.Critical {
		crit[n] = true
		if i > 0 {
			critFrom[n] = clean(v.Critical[i-1])
		}
	}
	ids := map[string]string{}
	for i, n := range r.Names() {
		ids[n] = fmt.Sprintf("stack-%d", i)
	}
	counts := map[string]int{}
	var nodes []node
	g := r.Graph()
	for _, n := range r.Names() {
		s := r.Stacks[n]
		sv := stackViewOf(in, s, ids[n], crit[n], g.Dependencies(n))
		counts[sv.Phase]++
		v.Stacks = append(v.Stacks, sv)
		if s.Phase == run.Failed {
			v.Failed = append(v.Failed, sv)
		}
		caption := sv.Phase
		if crit[n] {
			caption += ", critical"
		}
		nodes = append(nodes, node{Name: sv.Name, Deps: cleanAll(g.Dependencies(n)), Class: sv.Class, Caption: caption, Href: "#" + sv.ID, Crit: crit[n], CritFrom: critFrom[n]})
	}
	for _, k := range sortedKeysInt(counts) {
		v.Counts = append(v.Counts, pair{k, fmt.Sprint(counts[k])})
	}
	v.Graph = layout(nodes)
	v.Graph.Desc = graphDesc(len(nodes), counts, v.Critical)
	v.Critical = cleanAll(v.Critical)
	v.Timeline, v.From, v.To = timeline(r, spans, ids, crit)
	v.NotStarted = len(r.Stacks) - len(spans)
	v.Drift = runDriftOf(r)
	return v
}

func sortedKeysInt(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// graphDesc is the text alternative of the graph: how many stacks in which phases, and
// the critical path.
func graphDesc(n int, counts map[string]int, critical []string) string {
	var parts []string
	for _, k := range sortedKeysInt(counts) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	d := fmt.Sprintf("Dependency graph of %d stacks (%s); an arrow points from a stack to the stacks that wait for it.", n, strings.Join(parts, ", "))
	if len(critical) > 0 {
		d += " Critical path: " + clean(strings.Join(critical, " → ")) + "."
	}
	return d
}

func stackViewOf(in Run, s *run.Stack, id string, crit bool, waits []string) stackView {
	sv := stackView{
		ID: id, Name: clean(s.Name), Where: clean(s.Describe()), Action: string(report.Action(s, in.Report.Decisions...)),
		Phase: string(s.Phase), Class: phaseClass(s.Phase), CFN: clean(in.Statuses[s.Name]),
		Started: stamp(s.StartedAt), Executed: stamp(s.ExecutedAt), Finished: stamp(s.FinishedAt),
		ChangeSet: clean(s.ChangeSetName), Reason: clean(s.Reason), Failure: string(s.Class),
		Waits: cleanAll(waits), Params: pairs(s.Parameters, s.NoEcho), Outputs: pairs(s.Outputs, s.SecretOutputs),
		Crit: crit, Open: s.Phase == run.Failed,
	}
	if !s.StartedAt.IsZero() && !s.FinishedAt.IsZero() {
		sv.Duration = s.FinishedAt.Sub(s.StartedAt).Round(time.Second).String()
	}
	if s.ChangeSetName != "" && s.Phase != run.Unchanged {
		sv.Changes = fmt.Sprint(s.Changes)
	}
	for _, r := range run.Resources(s.Events) {
		status := r.Status
		if r.Failure != "" && r.Failure != r.Status {
			status = r.Failure + ", then " + r.Status
		}
		sv.Resources = append(sv.Resources, resourceView{LogicalID: clean(r.LogicalID), Type: clean(r.Type), PhysicalID: clean(r.PhysicalID),
			Status: clean(status), Reason: clean(r.Reason), Failed: r.Failure != ""})
	}
	day := s.StartedAt.UTC().Format(time.DateOnly)
	for _, e := range s.Events {
		when := e.Time.UTC().Format(time.TimeOnly)
		if d := e.Time.UTC().Format(time.DateOnly); d != day {
			when = d + " " + when
		}
		sv.Events = append(sv.Events, eventView{Time: when, LogicalID: clean(e.LogicalID), Status: clean(e.Status), Reason: clean(e.Reason), Failed: e.Failed()})
	}
	sv.Dropped = s.EventsDropped
	return sv
}

// timeline places the spans between the run's start and end.
func timeline(r *run.Run, spans []span, ids map[string]string, crit map[string]bool) ([]row, string, string) {
	if len(spans) == 0 {
		return nil, "", ""
	}
	from, to := r.StartedAt, runEnd(r)
	for _, s := range spans {
		if from.IsZero() || s.Start.Before(from) {
			from = s.Start
		}
		to = later(to, s.End)
	}
	var rows []row
	for _, s := range spans {
		st := r.Stacks[s.Name]
		rw := row{ID: ids[s.Name], Name: clean(s.Name), Phase: string(st.Phase), Class: phaseClass(st.Phase),
			Start: stamp(s.Start), End: stamp(s.End), Duration: s.End.Sub(s.Start).Round(time.Second).String(),
			Bar: place(s, from, to), Crit: crit[s.Name]}
		rows = append(rows, rw)
	}
	return rows, stamp(from), stamp(to)
}
