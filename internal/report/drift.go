package report

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/internal/plan"
)

// driftRowsShown bounds the rows of a plan's "changed outside cairn" section: the whole
// list stays in the plan document (`cairn plans NAME PLAN_ID --format json`).
const driftRowsShown = 60

// driftValueShown bounds each value a row shows, in characters.
const driftValueShown = 120

// changedOutside is a plan's section "Changed outside cairn": per stack, resource and
// property that drifted, what the last deployment set, what is there now, what the
// template wants and what this plan does with it. Values CloudFormation masks are masked
// all three (plan.PropertyDrift.Masked); every value is escaped as code. "" when the plan
// knows of no drift.
func changedOutside(p *plan.Document, order []plan.Stack) string {
	var rows []string
	var from []string                   // the reports keep stacks' drift comes from, in order
	fromStacks := map[string][]string{} // and the stacks of each
	row := func(s plan.Stack, id string, d plan.PropertyDrift) {
		d = d.Masked()
		cut := sharedHead(d.Previous, d.Actual, d.Template)
		template := shownValue(d.Template, cut)
		if d.Outcome() == plan.Overwrite {
			template = "(its new value)"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |", Cell(s.Name), Cell(id), Cell(d.Property),
			shownValue(d.Previous, cut), shownValue(d.Actual, cut), template, outcomeCell[d.Outcome()]))
	}
	for _, s := range order {
		for _, c := range s.Changes {
			if c.DriftStatus == "" {
				continue
			}
			if c.DriftStatus == "DELETED" {
				rows = append(rows, fmt.Sprintf("| %s | %s | (the resource) | exists | deleted | exists | %s |", Cell(s.Name), Cell(c.LogicalID), deletedCell(c.Action)))
				continue
			}
			for _, d := range c.Drift {
				row(s, c.LogicalID, d)
			}
		}
		for _, r := range s.Outside {
			if r.Status == "DELETED" {
				rows = append(rows, fmt.Sprintf("| %s | %s | (the resource) | exists | deleted | exists | %s |", Cell(s.Name), Cell(r.LogicalID), outcomeCell[plan.Leave]))
				continue
			}
			for _, d := range r.Properties {
				row(s, r.LogicalID, d)
			}
		}
		if len(s.Outside) > 0 && s.DriftFrom != "" {
			if fromStacks[s.DriftFrom] == nil {
				from = append(from, s.DriftFrom)
			}
			fromStacks[s.DriftFrom] = append(fromStacks[s.DriftFrom], s.Name)
		}
	}
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Changed outside cairn\n\n%d change(s) made outside cairn since the last deployment, and what this plan does with each.\n\n", len(rows))
	for _, f := range from {
		names := fromStacks[f]
		list := strings.Join(names, ", ")
		if len(names) > 5 {
			list = fmt.Sprintf("%s and %d more", strings.Join(names[:5], ", "), len(names)-5)
		}
		fmt.Fprintf(&b, "Stacks whose change set is not drift-aware (`on_drift: keep`, or not updated: %s) are shown as the %s found them.\n\n", Text(list), Text(f))
	}
	b.WriteString("| Stack | Resource | Property | Last deployed | Now | Template | This plan |\n|---|---|---|---|---|---|---|\n")
	for i, r := range rows {
		if i == driftRowsShown {
			fmt.Fprintf(&b, "\n…and %d more: %s lists them all.\n", len(rows)-i, Code("cairn plans "+p.Deployment+" "+p.ID+" --format json"))
			break
		}
		b.WriteString(r + "\n")
	}
	b.WriteString("\n")
	return b.String()
}

// outcomeCell is what a row says the plan does with a property changed outside cairn.
var outcomeCell = map[plan.Outcome]string{
	plan.Revert:    "**reverts it** to the template's value",
	plan.Keep:      "keeps it (the template now sets it: SyncWithActual)",
	plan.Leave:     "leaves it (CloudFormation does not touch it: still drifted)",
	plan.Overwrite: "**overwrites it** with the template's new value",
}

// deletedCell is what a drift-aware change set does with a resource deleted out of band:
// re-creates it (Add), or what its action says.
func deletedCell(action string) string {
	if action == "Add" {
		return "**re-creates it** from the template"
	}
	return Cell(strings.ToLower(action))
}

// sharedHead is how many leading characters the values a row shows may leave out (as
// "…"): all but the last 20 of the start they share, when that is longer than 40, so a
// long list shows where it differs (the rule added) rather than where it does not.
func sharedHead(values ...string) int {
	var rs [][]rune
	for _, v := range values {
		if v != "" {
			rs = append(rs, []rune(v))
		}
	}
	if len(rs) < 2 {
		return 0
	}
	n := 0
shared:
	for ; n < len(rs[0]); n++ {
		for _, r := range rs[1:] {
			if n >= len(r) || r[n] != rs[0][n] {
				break shared
			}
		}
	}
	if n <= 40 {
		return 0
	}
	return n - 20
}

// shownValue is a drifted value in a table cell: as code, its first cut characters left
// out and the rest cut to driftValueShown characters, "(not set)" when absent.
func shownValue(v string, cut int) string {
	if v == "" {
		return "(not set)"
	}
	if cut > 0 {
		v = "…" + string([]rune(v)[cut:])
	}
	if utf8.RuneCountInString(v) > driftValueShown {
		v = string([]rune(v)[:driftValueShown-1]) + "…"
	}
	return CodeCell(v)
}

// driftLines are a terminal's lines of a plan's drift: per property changed outside
// cairn, what the plan does with it; values are left to the Markdown plan.
func driftLines(order []plan.Stack) []string {
	var out []string
	for _, s := range order {
		for _, c := range s.Changes {
			if c.DriftStatus == "DELETED" {
				does := "deleted"
				if c.Action == "Add" {
					does += ": this plan re-creates it"
				}
				out = append(out, fmt.Sprintf("changed outside cairn: %s %s: %s", Line(s.Name), Line(c.LogicalID), does))
			}
			for _, d := range c.Drift {
				out = append(out, fmt.Sprintf("changed outside cairn: %s %s.%s: this plan %s", Line(s.Name), Line(c.LogicalID), Line(d.Property), outcomeLine[d.Outcome()]))
			}
		}
		for _, r := range s.Outside {
			if r.Status == "DELETED" {
				out = append(out, fmt.Sprintf("changed outside cairn: %s %s: deleted: this plan %s", Line(s.Name), Line(r.LogicalID), outcomeLine[plan.Leave]))
			}
			for _, d := range r.Properties {
				out = append(out, fmt.Sprintf("changed outside cairn: %s %s.%s: this plan %s", Line(s.Name), Line(r.LogicalID), Line(d.Property), outcomeLine[d.Outcome()]))
			}
		}
	}
	return out
}

// outcomeLine is what a terminal line says the plan does with a drifted property.
var outcomeLine = map[plan.Outcome]string{
	plan.Revert:    "reverts it",
	plan.Keep:      "keeps it (SyncWithActual)",
	plan.Leave:     "leaves it (still drifted)",
	plan.Overwrite: "overwrites it (the template changes it)",
}
