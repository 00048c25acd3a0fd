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
	for _, s := range order {
		for _, c := range s.Changes {
			if c.DriftStatus == "" {
				continue
			}
			if c.DriftStatus == "DELETED" {
				rows = append(rows, fmt.Sprintf("| %s | %s | (the resource) | exists | deleted | exists | %s |", Cell(s.Name), Cell(c.LogicalID), Cell(strings.ToLower(c.Action))))
				continue
			}
			for _, d := range c.Drift {
				d = d.Masked()
				does := "keeps it (the template now sets it: SyncWithActual)"
				if d.Revert {
					does = "**reverts it** to the template's value"
				}
				cut := sharedHead(d.Previous, d.Actual, d.Template)
				rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |", Cell(s.Name), Cell(c.LogicalID), Cell(d.Property),
					shownValue(d.Previous, cut), shownValue(d.Actual, cut), shownValue(d.Template, cut), does))
			}
		}
	}
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Changed outside cairn\n\n%d change(s) made outside cairn since the last deployment, and what this plan does with each.\n\n", len(rows))
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
				out = append(out, fmt.Sprintf("changed outside cairn: %s %s: deleted", Line(s.Name), Line(c.LogicalID)))
			}
			for _, d := range c.Drift {
				does := "keeps it (SyncWithActual)"
				if d.Revert {
					does = "reverts it"
				}
				out = append(out, fmt.Sprintf("changed outside cairn: %s %s.%s: this plan %s", Line(s.Name), Line(c.LogicalID), Line(d.Property), does))
			}
		}
	}
	return out
}
