package drift

import (
	"cmp"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/report"
)

// Report is the document at drift/NAME/ID.json: one graph's result in one sweep.
type Report struct {
	Sweep     string    `json:"sweep"`
	Trigger   string    `json:"trigger"`
	StartedAt time.Time `json:"started_at"`
	WrittenAt time.Time `json:"written_at"`
	Graph     *Graph    `json:"graph"`
	// Changes lists what differs from the previous report (see Graph.Changes).
	Changes []string `json:"changes,omitempty"`
	// Previous is the key of the report compared with.
	Previous string `json:"previous,omitempty"`
}

// Subject is the notification's subject (SNS allows 100 characters).
func Subject(r *Report) string {
	g := r.Graph
	var s string
	switch {
	case g.Count(Drifted) > 0:
		s = fmt.Sprintf("cairn drift: %s: %d of %d stacks drifted", g.Name, g.Count(Drifted), len(g.Stacks))
	case g.Drifted():
		s = fmt.Sprintf("cairn drift: %s: stacks missing or untracked", g.Name)
	default:
		s = fmt.Sprintf("cairn drift: %s: drift changed, now in sync", g.Name)
	}
	s = report.Line(s)
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}

// Summary is the notification's text: every drifted property, and where the report is.
func Summary(r *Report, uri string) string {
	g := r.Graph
	var b strings.Builder
	fmt.Fprintf(&b, "Drift of %s (graph %s/%s), sweep %s: %d drifted, %d in sync, %d unknown, %d not checked.\n",
		report.Line(g.Name), report.Line(g.Namespace), report.Line(g.Key), report.Line(r.Sweep), g.Count(Drifted), g.Count(InSync), g.Count(Unknown), g.Count(NotChecked))
	for _, s := range g.Stacks {
		if s.Status != Drifted {
			continue
		}
		for _, res := range s.Resources {
			if res.Ignored != "" {
				continue
			}
			if len(res.Differences) == 0 {
				fmt.Fprintf(&b, "- %s %s (%s): %s\n", report.Line(s.Describe()), report.Line(res.LogicalID), report.Line(res.Type), report.Line(res.Status))
			}
			for _, df := range res.Differences {
				fmt.Fprintf(&b, "- %s %s (%s) %s: expected %s, actual %s (%s)\n", report.Line(s.Describe()), report.Line(res.LogicalID), report.Line(res.Type),
					report.Line(df.Path), report.Line(cmp.Or(df.Expected, "(none)")), report.Line(cmp.Or(df.Actual, "(none)")), report.Line(df.kind()))
			}
		}
	}
	for _, s := range g.Stacks {
		if rc := s.Reconcile(g.Name); rc != "" {
			fmt.Fprintf(&b, "- reconcile %s: %s\n", report.Line(s.Describe()), report.Line(rc))
		}
	}
	for _, m := range g.Missing {
		fmt.Fprintf(&b, "- %s: in the graph but missing from AWS\n", report.Line(m))
	}
	for _, u := range g.Untracked {
		fmt.Fprintf(&b, "- %s: tagged for this graph but not in it\n", report.Line(u))
	}
	for _, c := range r.Changes {
		fmt.Fprintf(&b, "- changed: %s\n", report.Line(c))
	}
	fmt.Fprintf(&b, "Report: %s\n", uri)
	return b.String()
}

// kind is the difference's type as reports show it, saying when its values are a secret's.
func (d Difference) kind() string {
	if d.Masked {
		return d.Type + ", a secret: values not shown"
	}
	return d.Type
}

// Markdown writes r for people.
func Markdown(w io.Writer, r *Report) {
	g := r.Graph
	fmt.Fprintf(w, "# Drift of %s\n\n", report.Text(g.Name))
	fmt.Fprintf(w, "Graph %s", report.Code(g.Namespace+"/"+g.Key))
	if g.Bundle != "" {
		fmt.Fprintf(w, ", bundle %s", report.Text(g.Bundle))
	}
	fmt.Fprintf(w, ". Sweep %s (%s), started %s.\n\n", report.Code(r.Sweep), report.Text(r.Trigger), clock.Stamp(r.StartedAt))
	if g.Skipped != "" {
		fmt.Fprintf(w, "**Not checked:** %s\n\n", report.Text(g.Skipped))
	}
	for _, n := range g.Notes {
		fmt.Fprintf(w, "> %s\n\n", report.Text(n))
	}
	fmt.Fprintf(w, "| Stack | CloudFormation | Status | Detail |\n|---|---|---|---|\n")
	for _, s := range g.Stacks {
		detail := s.Reason
		if s.Status == Drifted || s.Status == InSync {
			n := 0
			for _, res := range s.Resources {
				if res.Ignored == "" {
					n++
				}
			}
			if n > 0 {
				detail = strings.TrimSpace(fmt.Sprintf("%d resource(s) drifted %s", n, detail))
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", report.Cell(s.Name), report.Cell(s.Describe()), s.Status, report.Cell(detail))
	}
	fmt.Fprintln(w)
	for _, s := range g.Stacks {
		if len(s.Resources) == 0 {
			continue
		}
		fmt.Fprintf(w, "## %s\n\n", report.Text(s.Describe()))
		if rc := s.Reconcile(g.Name); rc != "" {
			fmt.Fprintf(w, "Reconcile: %s.\n\n", reconcileMarkdown(rc))
		}
		for _, res := range s.Resources {
			fmt.Fprintf(w, "### %s (%s): %s", report.Text(res.LogicalID), report.Text(res.Type), report.Text(res.Status))
			if res.Ignored != "" {
				fmt.Fprintf(w, " (ignored by %s)", report.Code(res.Ignored))
			}
			fmt.Fprintf(w, "\n\n")
			if len(res.Differences) == 0 {
				continue
			}
			fmt.Fprintf(w, "| Property | Expected | Actual | Difference |\n|---|---|---|---|\n")
			for _, df := range res.Differences {
				fmt.Fprintf(w, "| %s | %s | %s | %s |\n", report.CodeCell(df.Path), report.Cell(cmp.Or(df.Expected, "(none)")), report.Cell(cmp.Or(df.Actual, "(none)")), report.Cell(df.kind()))
			}
			fmt.Fprintln(w)
		}
	}
	if len(g.Missing) > 0 {
		fmt.Fprintf(w, "## In the graph, missing from AWS\n\n")
		for _, m := range g.Missing {
			fmt.Fprintf(w, "- %s\n", report.Text(m))
		}
		fmt.Fprintln(w)
	}
	if len(g.Untracked) > 0 {
		fmt.Fprintf(w, "## Tagged for this graph, not in it\n\n")
		for _, u := range g.Untracked {
			fmt.Fprintf(w, "- %s\n", report.Text(u))
		}
		fmt.Fprintln(w)
	}
	if len(r.Changes) > 0 {
		fmt.Fprintf(w, "## Changed since %s\n\n", report.Text(r.Previous))
		changes := append([]string(nil), r.Changes...)
		sort.Strings(changes)
		for _, c := range changes {
			fmt.Fprintf(w, "- %s\n", report.Text(c))
		}
		fmt.Fprintln(w)
	}
}

// reconcileMarkdown is a Reconcile text in Markdown: its prose escaped, its commands (in
// backquotes) as code.
func reconcileMarkdown(rc string) string {
	parts := strings.Split(rc, "`")
	for i, p := range parts {
		if i%2 == 1 {
			parts[i] = report.Code(p)
		} else {
			parts[i] = report.Text(p)
		}
	}
	return strings.Join(parts, "")
}
