package runpage

import (
	"fmt"

	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
)

// driftRowsShown bounds the rows of a page's "changed outside cairn" section; the plan
// and run documents hold them all.
const driftRowsShown = 200

// driftView is a page's "changed outside cairn" section: its rows (cleaned values) and
// what the page says above and below them.
type driftView struct {
	Head  []string
	Rows  [][]string
	Notes []string
	More  string
}

// planDriftOf is a plan's drift as its page shows it: the comment's rows
// (report.DriftRows: masked, cut to where values differ), each value cleaned.
func planDriftOf(p *plan.Document, order []plan.Stack) driftView {
	var v driftView
	v.Head = []string{"Stack", "Resource", "Property", "Last deployed", "Now", "Template", "This plan"}
	for _, r := range report.DriftRows(order) {
		prev, actual, tmpl, prop := r.Previous, r.Actual, r.Template, r.Property
		if r.Deleted {
			prop, prev, actual, tmpl = "(the resource)", "exists", "deleted", "exists"
		} else if r.Outcome == plan.Overwrite {
			tmpl = "(its new value)"
		}
		v.Rows = append(v.Rows, []string{clean(r.Stack), clean(r.Resource), clean(prop), Masked(orNotSet(prev), false), Masked(orNotSet(actual), false), Masked(orNotSet(tmpl), false), clean(r.Does())})
	}
	from, stacks := report.DriftSources(order)
	for _, f := range from {
		v.Notes = append(v.Notes, clean(fmt.Sprintf("Stacks not drift-aware (%d: on_drift keep, or not updated) are shown as the %s found them.", len(stacks[f]), f)))
	}
	v.bound(fmt.Sprintf("cairn plans %s %s --format json", p.Deployment, p.ID))
	return v
}

// runDriftOf is a run's drift as its page shows it: per property its stacks'
// drift-aware change sets or drift reports showed, what the run did with it
// (report.RunDriftRows); no values.
func runDriftOf(r *run.Run) driftView {
	var v driftView
	v.Head = []string{"Stack", "Resource", "Property", "What this run did"}
	rows, from, stacks := report.RunDriftRows(r)
	for _, row := range rows {
		v.Rows = append(v.Rows, []string{clean(row.Stack), clean(row.Resource), clean(row.Property), clean(row.Did)})
	}
	for _, f := range from {
		v.Notes = append(v.Notes, clean(fmt.Sprintf("Stacks not drift-aware (%d: on_drift keep) are shown as the %s found them.", len(stacks[f]), f)))
	}
	v.bound("the run document's stacks' drift and outside")
	return v
}

// bound keeps the first driftRowsShown rows, saying where the others are.
func (v *driftView) bound(where string) {
	if len(v.Rows) > driftRowsShown {
		v.More = clean(fmt.Sprintf("…and %d more: %s lists them all.", len(v.Rows)-driftRowsShown, where))
		v.Rows = v.Rows[:driftRowsShown]
	}
}

func orNotSet(v string) string {
	if v == "" {
		return "(not set)"
	}
	return v
}

// drift writes a page's "changed outside cairn" section, if it has rows.
func (p *page) drift(v driftView) {
	if len(v.Rows) == 0 {
		return
	}
	p.raw("<section aria-labelledby=\"drift-h\" id=\"drift\">\n<h2 id=\"drift-h\">Changed outside cairn</h2>\n")
	for _, n := range v.Notes {
		p.h("<p class=\"muted\">%s</p>\n", n)
	}
	p.table(fmt.Sprintf("%d change(s) made outside cairn", len(v.Rows)), v.Head, v.Rows, nil)
	if v.More != "" {
		p.h("<p>%s</p>\n", v.More)
	}
	p.raw("</section>\n")
}
