package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
)

// driftRowsShown bounds the rows of a plan's "changed outside cairn" section: the whole
// list stays in the plan document (`cairn plans NAME PLAN_ID --format json`).
const driftRowsShown = 60

// driftValueShown bounds each value a row shows, in characters.
const driftValueShown = 120

// DriftRow is one row of a plan's "changed outside cairn": a property (or a resource
// deleted out of band: Deleted, Property "") of a stack's resource, what the last
// deployment set, what is there now and what the template wants, masked all three when
// one is a secret (plan.PropertyDrift.Masked), a long value cut to where the three differ
// (valueShown); and what the plan does with it. Values are plain text: each medium
// escapes them with its own printer.
type DriftRow struct {
	Stack, Resource, Property  string
	Previous, Actual, Template string
	Deleted                    bool
	Outcome                    plan.Outcome
	// Recreate says the plan re-creates a resource deleted out of band (a drift-aware
	// change set adds it again); Action is the change's action otherwise.
	Recreate bool
	Action   string
}

// Does is what the plan does with the row, as plain text.
func (r DriftRow) Does() string {
	switch {
	case r.Deleted && r.Recreate:
		return "re-creates it from the template"
	case r.Deleted && r.Action != "":
		return strings.ToLower(r.Action)
	}
	return outcomeLine[r.Outcome]
}

// DriftRows are the rows of plan stacks order's drift: a drift-aware change set's
// (Changes), then what the stack's drift report says (Outside).
func DriftRows(order []plan.Stack) []DriftRow {
	var rows []DriftRow
	row := func(s plan.Stack, id string, d plan.PropertyDrift) {
		d = d.Masked()
		cut := sharedHead(d.Previous, d.Actual, d.Template)
		rows = append(rows, DriftRow{Stack: s.Name, Resource: id, Property: d.Property, Outcome: d.Outcome(),
			Previous: valueShown(d.Previous, cut), Actual: valueShown(d.Actual, cut), Template: valueShown(d.Template, cut)})
	}
	for _, s := range order {
		for _, c := range s.Changes {
			if c.DriftStatus == "DELETED" {
				rows = append(rows, DriftRow{Stack: s.Name, Resource: c.LogicalID, Deleted: true, Outcome: plan.Revert, Recreate: c.Action == "Add", Action: c.Action})
				continue
			}
			if c.DriftStatus == "" {
				continue
			}
			for _, d := range c.Drift {
				row(s, c.LogicalID, d)
			}
		}
		for _, r := range s.Outside {
			if r.Status == "DELETED" {
				rows = append(rows, DriftRow{Stack: s.Name, Resource: r.LogicalID, Deleted: true, Outcome: cmp.Or(r.Does, plan.Leave)})
				continue
			}
			for _, d := range r.Properties {
				row(s, r.LogicalID, d)
			}
		}
	}
	return rows
}

// DriftSources are the drift reports the rows of stacks not drift-aware come from, each
// with its stacks, in order.
func DriftSources(order []plan.Stack) (from []string, stacks map[string][]string) {
	stacks = map[string][]string{}
	for _, s := range order {
		if len(s.Outside) > 0 && s.DriftFrom != "" {
			if stacks[s.DriftFrom] == nil {
				from = append(from, s.DriftFrom)
			}
			stacks[s.DriftFrom] = append(stacks[s.DriftFrom], s.Name)
		}
	}
	return from, stacks
}

// changedOutside is a plan's section "Changed outside cairn": per stack, resource and
// property that drifted, what the last deployment set, what is there now, what the
// template wants and what this plan does with it (DriftRows); every value is escaped as
// code. "" when the plan knows of no drift.
func changedOutside(p *plan.Document, order []plan.Stack) string {
	var rows []string
	for _, r := range DriftRows(order) {
		if r.Deleted {
			does := outcomeCell[r.Outcome]
			if r.Outcome == plan.Revert {
				does = deletedCell(r.Action)
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | (the resource) | exists | deleted | exists | %s |", Cell(r.Stack), Cell(r.Resource), does))
			continue
		}
		template := valueCell(r.Template)
		if r.Outcome == plan.Overwrite {
			template = "(its new value)"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |", Cell(r.Stack), Cell(r.Resource), Cell(r.Property),
			valueCell(r.Previous), valueCell(r.Actual), template, outcomeCell[r.Outcome]))
	}
	from, fromStacks := DriftSources(order)
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
	plan.Refused:   "**stops the plan** (on_drift: refuse): adopt it in the template, or revert it through review",
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

// valueShown is a drifted value as a row shows it: its first cut characters left out
// (as "…") and the rest cut to driftValueShown characters; "" when absent.
func valueShown(v string, cut int) string {
	if v == "" {
		return ""
	}
	if cut > 0 {
		v = "…" + string([]rune(v)[cut:])
	}
	if utf8.RuneCountInString(v) > driftValueShown {
		v = string([]rune(v)[:driftValueShown-1]) + "…"
	}
	return v
}

// valueCell is a shown value in a table cell: as code, "(not set)" when absent.
func valueCell(v string) string {
	if v == "" {
		return "(not set)"
	}
	return CodeCell(v)
}

// driftLines are a terminal's lines of a plan's drift: per property changed outside
// cairn, what the plan does with it; values are left to the Markdown plan.
func driftLines(order []plan.Stack) []string {
	var out []string
	for _, r := range DriftRows(order) {
		if r.Deleted {
			out = append(out, fmt.Sprintf("changed outside cairn: %s %s: deleted: this plan %s", Line(r.Stack), Line(r.Resource), r.Does()))
			continue
		}
		out = append(out, fmt.Sprintf("changed outside cairn: %s %s.%s: this plan %s", Line(r.Stack), Line(r.Resource), Line(r.Property), r.Does()))
	}
	return out
}

// outcomeLine is what a terminal line says the plan does with a drifted property.
var outcomeLine = map[plan.Outcome]string{
	plan.Revert:    "reverts it",
	plan.Keep:      "keeps it (SyncWithActual)",
	plan.Leave:     "leaves it (still drifted)",
	plan.Overwrite: "overwrites it (the template changes it)",
	plan.Refused:   "stops (on_drift: refuse): adopt it in the template, or revert it through review",
}

// RunDriftDoes is what a run did with a property changed outside cairn, as the stack's
// phase says: one its stack's drift-aware change set showed (run.Stack.Drift: reverted,
// re-created or kept), or one its drift report showed that the ordinary change set met
// (run.Stack.Outside, DriftedProperty.Does: left or overwritten).
func RunDriftDoes(s *run.Stack, d run.DriftedProperty) string {
	if d.Does != "" {
		return outsideDoes(s, d)
	}
	what := "reverted to the template's value"
	switch {
	case d.Property == "" && d.Revert:
		what = "re-created from the template"
	case !d.Revert:
		what = "kept: the template now sets it (SyncWithActual, drift reset)"
	}
	switch s.Phase {
	case run.Done:
		return what
	case run.Executing, run.RollingBack:
		return "being " + what
	case run.Ready:
		return "to be " + what + " (its change set is ready)"
	}
	if !d.Revert {
		return "kept: left as it is (its change set was not executed)"
	}
	return "not reverted: its change set was not executed (stack " + string(s.Phase) + ")"
}

// outsideDoes is what a run did with a property changed outside cairn that its stack's
// ordinary change set left or overwrote.
func outsideDoes(s *run.Stack, d run.DriftedProperty) string {
	switch {
	case d.Property == "":
		return "left deleted: an ordinary change set does not re-create it (on_drift revert does)"
	case d.Does != run.DriftOverwritten:
		return "left as it is: CloudFormation does not touch it (still drifted)"
	}
	const what = "overwritten with the template's new value"
	switch s.Phase {
	case run.Done:
		return what
	case run.Executing:
		return "being " + what
	case run.Ready:
		return "to be " + what + " (its change set is ready)"
	}
	return "not overwritten: its change set did not complete (stack " + string(s.Phase) + ")"
}

// RunDriftRow is a row of a run's "changed outside cairn": a stack's resource's property
// ("(the resource, deleted)" for a resource deleted out of band) and what the run did with
// it (RunDriftDoes); plain text, each medium escapes it.
type RunDriftRow struct{ Stack, Resource, Property, Did string }

// RunDriftRows are run r's rows of properties changed outside cairn, stack by stack: its
// drift-aware change sets' (Drift), then those its drift reports showed (Outside); from
// are those reports, each with its stacks, in order.
func RunDriftRows(r *run.Run) (rows []RunDriftRow, from []string, stacks map[string][]string) {
	stacks = map[string][]string{}
	for _, n := range r.Names() {
		s := r.Stacks[n]
		for _, d := range append(slices.Clip(s.Drift), s.Outside...) {
			prop := d.Property
			if prop == "" {
				prop = "(the resource, deleted)"
			}
			rows = append(rows, RunDriftRow{Stack: n, Resource: d.LogicalID, Property: prop, Did: RunDriftDoes(s, d)})
		}
		if len(s.Outside) > 0 && s.DriftFrom != "" {
			if stacks[s.DriftFrom] == nil {
				from = append(from, s.DriftFrom)
			}
			stacks[s.DriftFrom] = append(stacks[s.DriftFrom], n)
		}
	}
	return rows, from, stacks
}

// runChangedOutside is a run report's section "Changed outside cairn": per property its
// stacks' drift-aware change sets showed, or their drift reports did, what the run did
// with each (values are in the plan's comment and the drift report, never in a run
// report). "" when none.
func runChangedOutside(r *run.Run) string {
	rows, from, stacks := RunDriftRows(r)
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Changed outside cairn\n\n")
	for _, f := range from {
		names := stacks[f]
		list := strings.Join(names, ", ")
		if len(names) > 5 {
			list = fmt.Sprintf("%s and %d more", strings.Join(names[:5], ", "), len(names)-5)
		}
		fmt.Fprintf(&b, "Stacks whose change set is not drift-aware (`on_drift: keep`: %s) are shown as the %s found them.\n\n", Text(list), Text(f))
	}
	b.WriteString("| Stack | Resource | Property | What this run did |\n|---|---|---|---|\n")
	for i, row := range rows {
		if i == driftRowsShown {
			fmt.Fprintf(&b, "\n…and %d more: the run document %s lists them all (each stack's `drift` and `outside`).\n", len(rows)-i, Code(bucket.RunKey(r.Deployment, r.ID)))
			break
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", Cell(row.Stack), Cell(row.Resource), Cell(row.Property), Cell(row.Did))
	}
	b.WriteString("\n")
	return b.String()
}
