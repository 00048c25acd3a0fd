package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/graph"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
)

// Order returns a plan's stacks in the order its apply runs them: the deployed stacks in
// dependency order (a stack after every stack it requires), then the deleted ones,
// dependents first. Ties go by name, so the order is the same on every render.
func Order(p *plan.Document) []plan.Stack {
	byName := map[string]plan.Stack{}
	for _, s := range p.Stacks {
		byName[s.Name] = s
	}
	var out []plan.Stack
	for _, deletes := range []bool{false, true} {
		g := graph.New()
		for _, s := range p.Stacks {
			if (s.Action == plan.Delete) == deletes {
				g.AddNode(s.Name)
			}
		}
		for _, s := range p.Stacks {
			// A deployed stack requires its dependencies; a deleted one's Requires are its
			// dependents, deleted before it. Either way it comes after them.
			for _, r := range requires(p, s.Name) {
				if g.Has(s.Name) && g.Has(r) {
					_ = g.AddEdge(s.Name, r)
				}
			}
		}
		names, err := g.Order()
		if err != nil {
			// A plan's run is made from a validated graph; should one ever hold a cycle,
			// name order still shows every stack.
			names = g.Nodes()
			slices.Sort(names)
		}
		for _, n := range names {
			out = append(out, byName[n])
		}
	}
	return out
}

// requires is what the plan's run says stack name waits for: its dependencies when it is
// deployed, its dependents when it is deleted.
func requires(p *plan.Document, name string) []string {
	if p.Run == nil {
		return nil
	}
	if s := p.Run.Stacks[name]; s != nil {
		return s.Requires
	}
	return nil
}

// maxDiagramStacks is the most stacks a diagram draws: beyond it GitHub's renderer gives
// up (it limits a diagram's text and edges), and a reviewer could not read it anyway.
const maxDiagramStacks = 150

// diagramClasses style the nodes of a plan's diagram by what the plan does to the stack.
var diagramClasses = []struct{ class, style string }{
	{"create", "fill:#dafbe1,stroke:#1a7f37,color:#000"},
	{"update", "fill:#ddf4ff,stroke:#0969da,color:#000"},
	{"replace", "fill:#fff1e5,stroke:#bc4c00,stroke-width:3px,color:#000"},
	{"delete", "fill:#ffebe9,stroke:#cf222e,stroke-width:3px,color:#000"},
	{"unchanged", "fill:#f6f8fa,stroke:#8c959f,color:#57606a"},
}

// diagramClass is the class of a stack's node: replace for a stack re-created or with a
// resource replaced, whatever else it does.
func diagramClass(s plan.Stack) string {
	switch {
	case s.Action == plan.Delete:
		return "delete"
	case s.Action == plan.Recreate || s.Replacements() > 0:
		return "replace"
	case s.Action == plan.Create:
		return "create"
	case s.Action == plan.None:
		return "unchanged"
	}
	return "update"
}

// PlanDiagram is a section of the plan with a Mermaid flowchart (a fenced mermaid block,
// which GitHub renders) of the stacks the plan touches and the stacks they depend on,
// each marked by what the plan does to it; an arrow goes from a stack to each stack that
// depends on it. It is "" for a plan that touches nothing.
func PlanDiagram(p *plan.Document) string {
	order := Order(p)
	shown := map[string]bool{}
	for _, s := range order {
		if s.Action != plan.None || s.InputsMayChange {
			shown[s.Name] = true
			if s.Action != plan.Delete {
				for _, r := range requires(p, s.Name) {
					shown[r] = true
				}
			}
		}
	}
	if len(shown) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Stacks touched and their dependencies\n\n")
	if len(shown) > maxDiagramStacks {
		fmt.Fprintf(&b, "%d stacks: too many to draw (see `cairn graph PATH --format dot`).\n\n", len(shown))
		return b.String()
	}
	b.WriteString("```mermaid\nflowchart LR\n")
	ids := map[string]string{}
	for _, s := range order {
		if !shown[s.Name] {
			continue
		}
		id := fmt.Sprintf("s%d", len(ids))
		ids[s.Name] = id
		label := string(s.Action)
		if s.Action == plan.None {
			label = "unchanged"
		}
		if n := s.Replacements(); n > 0 {
			label += fmt.Sprintf(", %d %s", n, map[bool]string{true: "replacement", false: "replacements"}[n == 1])
		}
		if m := s.Marks(); len(m) > 0 {
			label += "<br/>" + strings.Join(m, ", ")
		}
		fmt.Fprintf(&b, "  %s[\"<b>%s</b><br/>%s\"]:::%s\n", id, mermaidText(target.Describe(at(p, s.Name), s.Name)), mermaidText(label), diagramClass(s))
	}
	for _, s := range order {
		from := ids[s.Name]
		if from == "" {
			continue
		}
		for _, r := range requires(p, s.Name) {
			to := ids[r]
			switch {
			case to == "":
			case s.Action == plan.Delete:
				// r depends on s, and is deleted first.
				fmt.Fprintf(&b, "  %s --> %s\n", from, to)
			default:
				fmt.Fprintf(&b, "  %s --> %s\n", to, from)
			}
		}
	}
	for _, c := range diagramClasses {
		fmt.Fprintf(&b, "  classDef %s %s\n", c.class, c.style)
	}
	b.WriteString("```\n\n")
	b.WriteString("Green: created; blue: updated; orange, thick: replaced or re-created; red, thick: deleted; grey: unchanged. An arrow points from a stack to the stacks that depend on it.\n\n")
	return b.String()
}

// mermaidText escapes text for a quoted Mermaid label: quotes and the characters Mermaid
// or Markdown would read as markup become entity codes.
func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<br/>", "<br/>", "<", "#lt;", ">", "#gt;", "`", "#96;").Replace(Line(s))
}

// RunTimeline is a section of a run report with a Mermaid gantt chart of the run: per
// stack, the making of its change set, its execution (or deletion) and its end, so a
// reviewer sees where the time went. It is "" for a run in which no stack did anything.
func RunTimeline(r *run.Run) string {
	const layout = "2006-01-02 15:04:05"
	var rows []string
	i := -1
	for _, n := range runOrder(r) {
		s := r.Stacks[n]
		if s.StartedAt.IsZero() {
			continue
		}
		i++
		end := s.FinishedAt
		if end.IsZero() {
			end = r.UpdatedAt
		}
		if end.Before(s.StartedAt) {
			end = s.StartedAt
		}
		task := func(name, tags string, from, to string) {
			rows = append(rows, fmt.Sprintf("    %s :%s%s, %s", name, tags, from, to))
		}
		state := "done, "
		if s.Phase == run.Failed || s.Phase == run.Blocked {
			state = "crit, "
		} else if !s.Phase.Terminal() {
			state = "active, "
		}
		rows = append(rows, "    section "+mermaidTask(target.Describe(s.At, n)))
		id := fmt.Sprintf("t%d", i)
		switch {
		case s.Intent == run.IntentDelete:
			task("delete", state, id+"d, "+s.StartedAt.UTC().Format(layout), end.UTC().Format(layout))
		case !s.ExecutedAt.IsZero():
			if s.ExecutedAt.After(s.StartedAt) {
				task("change set", "done, ", id+"c, "+s.StartedAt.UTC().Format(layout), s.ExecutedAt.UTC().Format(layout))
			}
			task("execute", state, id+"x, "+s.ExecutedAt.UTC().Format(layout), end.UTC().Format(layout))
		case s.ChangeSetName != "":
			task("change set", state, id+"c, "+s.StartedAt.UTC().Format(layout), end.UTC().Format(layout))
		default:
			task(string(s.Phase), state, id+"c, "+s.StartedAt.UTC().Format(layout), end.UTC().Format(layout))
		}
		if s.Phase.Terminal() {
			task(string(s.Phase), "milestone, ", id+"e, "+end.UTC().Format(layout), "0s")
		}
	}
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Timeline\n\n```mermaid\ngantt\n")
	fmt.Fprintf(&b, "    title run %s of deployment %s (UTC)\n", r.ID, mermaidTask(r.Deployment))
	b.WriteString("    dateFormat YYYY-MM-DD HH:mm:ss\n    axisFormat %H:%M:%S\n")
	b.WriteString(strings.Join(rows, "\n"))
	b.WriteString("\n```\n\n")
	return b.String()
}

// runOrder is the run's stacks in the order they started, then by name.
func runOrder(r *run.Run) []string {
	names := r.Names()
	slices.SortStableFunc(names, func(a, b string) int {
		return r.Stacks[a].StartedAt.Compare(r.Stacks[b].StartedAt)
	})
	return names
}

// mermaidTask keeps a gantt task or section name from ending in the separators of the
// gantt syntax.
func mermaidTask(s string) string {
	return strings.NewReplacer(":", " ", "#", " ", ";", " ", "`", "'").Replace(Line(s))
}
