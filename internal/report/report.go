// Package report renders a deploy run for people: the Markdown report stored next to the
// run document (runs/NAME/RUN_ID.md) and the short summary published to the notifications
// topic. A reader learns from it what happened to every stack and why, without opening the
// CloudFormation console.
package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
	"github.com/cairn-dev/cairn/internal/verdict"
)

// Input is everything a report shows.
type Input struct {
	Run *run.Run
	// Status overrides Run.Status for runs that never started (e.g. "superseded").
	Status string
	// Bundle describes the deployed upload: s3 key and version, sha256, git ref and remote.
	Bundle    string
	Decisions []plan.Decision
	// Refusals failed the run before it changed anything.
	Refusals []string
	// Errors are config errors (file:line:col: key: message) or other reasons the run
	// could not start.
	Errors []string
	// Warnings, such as bucket versioning being off.
	Warnings []string
	// Notes say what else the run did, such as removing an emptied graph.
	Notes []string
	// Policy is the policies' verdict on the run (a push's, or the applied plans' with
	// the overrides that lifted their denials); nil when nothing was judged.
	Policy *verdict.Verdict
}

func (in Input) status() string {
	if in.Status != "" {
		return in.Status
	}
	if in.Run != nil {
		return string(in.Run.Status)
	}
	return "unknown"
}

// Markdown writes the full report.
func Markdown(w io.Writer, in Input) error {
	var b strings.Builder
	r := in.Run
	fmt.Fprintf(&b, "# cairn run %s of deployment %s: %s\n\n", Text(r.ID), Text(r.Deployment), Text(in.status()))
	if in.Bundle != "" {
		fmt.Fprintf(&b, "- Bundle: %s\n", Text(in.Bundle))
	}
	fmt.Fprintf(&b, "- Started: %s\n", stamp(r.StartedAt))
	if !r.FinishedAt.IsZero() {
		fmt.Fprintf(&b, "- Finished: %s (%s)\n", stamp(r.FinishedAt), r.FinishedAt.Sub(r.StartedAt).Round(time.Second))
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, "- Reason: %s\n", Text(r.Reason))
	}
	b.WriteString("\n")
	for _, wn := range in.Warnings {
		fmt.Fprintf(&b, "> **Warning:** %s\n\n", Text(wn))
	}
	for _, n := range in.Notes {
		fmt.Fprintf(&b, "> **Note:** %s\n\n", Text(n))
	}
	if len(in.Errors) > 0 {
		b.WriteString("## Errors (nothing was changed)\n\n")
		for _, e := range in.Errors {
			fmt.Fprintf(&b, "- %s\n", Code(e))
		}
		b.WriteString("\n")
	}
	if len(in.Refusals) > 0 {
		b.WriteString("## Refused (the run stopped before changing anything)\n\n")
		for _, e := range in.Refusals {
			fmt.Fprintf(&b, "- %s\n", Text(e))
		}
		b.WriteString("\n")
	}
	b.WriteString(PolicyMarkdown(in.Policy, r.Deployment, ""))
	if names := r.Names(); len(names) > 0 {
		b.WriteString("## Stacks\n\n| Stack | CloudFormation stack | Action | Status | Duration | Changes | Reason |\n|---|---|---|---|---|---|---|\n")
		for _, n := range names {
			s := r.Stacks[n]
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", Cell(n), Cell(s.Describe()), Action(s, in.Decisions...), s.Phase, duration(s), changes(s), Cell(s.Reason))
		}
		b.WriteString("\n")
	}
	b.WriteString(failedResources(r))
	b.WriteString(runChangedOutside(r))
	b.WriteString(RunTimeline(r))
	if len(in.Decisions) > 0 {
		b.WriteString("## Plan\n\n")
		for _, d := range in.Decisions {
			// A stack of the run is named as the table names it: one action per stack.
			action, name := d.Action, d.StackName
			if s := r.Stacks[d.Stack]; s != nil {
				action, name = Action(s, in.Decisions...), target.Describe(s.At, d.StackName)
			}
			fmt.Fprintf(&b, "- %s (%s): %s", Text(d.Stack), Text(name), Text(string(action)))
			if d.Reason != "" {
				fmt.Fprintf(&b, " — %s", Text(d.Reason))
			}
			if c := d.CapabilitiesText(); c != "" {
				fmt.Fprintf(&b, "; capabilities: %s", Text(c))
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// failedResources lists the resources that failed in the run, stack by stack, each with
// its first failure's status and reason (the run keeps its stacks' resource events);
// "" when none did.
func failedResources(r *run.Run) string {
	var b strings.Builder
	for _, n := range r.Names() {
		for _, res := range run.Resources(r.Stacks[n].Events) {
			if res.Failure == "" {
				break // the failed come first
			}
			if b.Len() == 0 {
				b.WriteString("## Failed resources\n\n| Stack | Resource | Type | Status | Reason |\n|---|---|---|---|---|\n")
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", Cell(n), Cell(res.LogicalID), Cell(res.Type), Cell(res.Failure), Cell(res.Reason))
		}
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

// Action names what the run did (or tries to do) to a stack. decisions are the plan's
// (the run document carries them): a stack the plan adopted into the graph shows as
// adopt, not as the update that adopted it, and a re-created one as recreate even once
// its failed stack is gone and the new one is being created. Without decisions that
// cannot be told.
func Action(s *run.Stack, decisions ...plan.Decision) plan.Action {
	switch {
	case s.Intent == run.IntentDelete:
		return plan.Delete
	case s.Intent == run.IntentRead:
		return plan.Read
	case s.Intent == run.IntentRecreate || decided(s.Name, decisions) == plan.Recreate:
		return plan.Recreate
	case s.Phase == run.Unchanged:
		return plan.None
	case decided(s.Name, decisions) == plan.Adopt:
		return plan.Adopt
	case s.ChangeSetType == "CREATE" || (!s.Exists && s.ChangeSetType == ""):
		return plan.Create
	default:
		return plan.Update
	}
}

// decided is the plan's decision for stack name, "" without one.
func decided(name string, decisions []plan.Decision) plan.Action {
	for _, d := range decisions {
		if d.Stack == name {
			return d.Action
		}
	}
	return ""
}

func duration(s *run.Stack) string {
	if s.StartedAt.IsZero() || s.FinishedAt.IsZero() {
		return ""
	}
	return s.FinishedAt.Sub(s.StartedAt).Round(time.Second).String()
}

func changes(s *run.Stack) string {
	if s.ChangeSetName == "" || s.Phase == run.Unchanged {
		return ""
	}
	return fmt.Sprint(s.Changes)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// Subject is the notification's subject line (at most 100 characters, as SNS requires).
func Subject(in Input) string {
	s := Line(fmt.Sprintf("cairn %s: run %s %s", in.Run.Deployment, in.Run.ID, in.status()))
	if len(s) > 100 {
		s = s[:100]
	}
	return s
}

// Summary is the notification's body: the outcome, one line per stack that did something
// or failed, and the refusals and errors.
func Summary(in Input, reportURI string) string {
	var b strings.Builder
	r := in.Run
	fmt.Fprintf(&b, "Deployment %s, run %s: %s", Line(r.Deployment), Line(r.ID), Line(in.status()))
	if r.Reason != "" {
		fmt.Fprintf(&b, " (%s)", Line(r.Reason))
	}
	b.WriteString("\n")
	counts := map[run.Phase]int{}
	for _, n := range r.Names() {
		s := r.Stacks[n]
		counts[s.Phase]++
		if s.Phase == run.Unchanged {
			continue
		}
		fmt.Fprintf(&b, "- %s: %s %s", Line(target.Describe(s.At, n)), Action(s, in.Decisions...), s.Phase)
		if s.Reason != "" {
			fmt.Fprintf(&b, ": %s", Line(s.Reason))
		}
		b.WriteString("\n")
	}
	if counts[run.Unchanged] > 0 {
		fmt.Fprintf(&b, "- %d stack(s) unchanged\n", counts[run.Unchanged])
	}
	for _, e := range in.Errors {
		fmt.Fprintf(&b, "error: %s\n", Line(e))
	}
	for _, e := range in.Refusals {
		fmt.Fprintf(&b, "refused: %s\n", Line(e))
	}
	for _, w := range in.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", Line(w))
	}
	for _, n := range in.Notes {
		fmt.Fprintf(&b, "note: %s\n", Line(n))
	}
	if reportURI != "" {
		fmt.Fprintf(&b, "Report: %s\n", reportURI)
	}
	return b.String()
}
