package runpage

import (
	"slices"
	"sort"
	"time"
	"unicode/utf8"
)

// The graph is drawn left to right by dependency depth: a stack stands in the column one
// right of the deepest stack it waits for, so every arrow points right. Computed here, in
// Go, so the page needs no layout library.
const (
	nodeW, nodeH = 180, 44
	colGap       = 56
	rowGap       = 14
	pad          = 8
	labelRunes   = 22
)

// node is a stack as the graph needs it: its name, the names it waits for (among the
// drawn ones), and how to show it.
type node struct {
	Name    string
	Deps    []string
	Class   string // a status or action class: the node's colours
	Caption string // the second line: the status in words
	Href    string // its section of the page
	Crit    bool   // on the critical path
	// CritFrom is, for a stack on the critical path, the stack before it there (the one
	// it waited for that ended last): the arrow between them is marked.
	CritFrom string
}

// svgNode is a node placed.
type svgNode struct {
	node
	X, Y         int
	Label        string // the name, cut to fit
	TextX, TextY int
	CapY         int
}

// svgEdge is an arrow from a stack to one that waits for it.
type svgEdge struct {
	X1, Y1, X2, Y2 int
	Crit           bool
}

// svgGraph is the whole drawing.
type svgGraph struct {
	Desc  string // its text alternative
	Dense bool   // so many arrows that the ordinary ones are drawn faint
	W, H  int
	Nodes []svgNode
	Edges []svgEdge
}

// depths is each node's column: 0 for a node that waits for none, else one more than
// the deepest it waits for. A cycle (never in a validated run) is cut where it closes.
func depths(nodes []node) map[string]int {
	byName := make(map[string]*node, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	depth := make(map[string]int, len(nodes))
	const visiting = -1
	var walk func(name string) int
	walk = func(name string) int {
		if d, ok := depth[name]; ok {
			return max(d, 0)
		}
		depth[name] = visiting
		d := 0
		for _, dep := range byName[name].Deps {
			if _, ok := byName[dep]; ok {
				d = max(d, walk(dep)+1)
			}
		}
		depth[name] = d
		return d
	}
	for _, n := range nodes {
		walk(n.Name)
	}
	return depth
}

// layout places nodes in columns by depth, by name within a column, and draws an edge
// from each stack to each stack that waits for it.
func layout(nodes []node) svgGraph {
	depth := depths(nodes)
	sorted := slices.Clone(nodes)
	// sort.Slice rather than slices.SortFunc: each instantiation of the latter for a struct
	// type adds 5-9 KB of code to the deployer, held under 15 MB (docs/policy.md).
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if depth[a.Name] != depth[b.Name] {
			return depth[a.Name] < depth[b.Name]
		}
		return a.Name < b.Name
	})
	var g svgGraph
	at := make(map[string]svgNode, len(nodes))
	rows := map[int]int{}
	for _, n := range sorted {
		col := depth[n.Name]
		x := pad + col*(nodeW+colGap)
		y := pad + rows[col]*(nodeH+rowGap)
		rows[col]++
		s := svgNode{node: n, X: x, Y: y, Label: cut(n.Name, labelRunes), TextX: x + 8, TextY: y + 18, CapY: y + 35}
		at[n.Name] = s
		g.Nodes = append(g.Nodes, s)
		g.W = max(g.W, x+nodeW+pad)
		g.H = max(g.H, y+nodeH+pad)
	}
	for _, n := range sorted {
		to := at[n.Name]
		for _, d := range n.Deps {
			from, ok := at[d]
			if !ok {
				continue
			}
			g.Edges = append(g.Edges, svgEdge{X1: from.X + nodeW, Y1: from.Y + nodeH/2, X2: to.X - 4, Y2: to.Y + nodeH/2, Crit: to.CritFrom != "" && to.CritFrom == d})
		}
	}
	// The critical arrows last, over the others; faint others where they are many.
	slices.SortStableFunc(g.Edges, func(a, b svgEdge) int { return boolRank(b.Crit) - boolRank(a.Crit) })
	g.Dense = len(g.Edges) > denseEdges
	return g
}

// denseEdges is the number of arrows beyond which the ordinary ones are drawn faint.
const denseEdges = 60

// cut shortens s to n runes, ending in an ellipsis when it was longer.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// span is a stack's time in the run, as the timeline shows it.
type span struct {
	Name     string
	Start    time.Time
	Executed time.Time // zero: no execution (or a deletion)
	End      time.Time
	Deps     []string
}

// timelineOrder sorts spans as the run started them: by start, then by name.
func timelineOrder(spans []span) {
	// sort.SliceStable rather than slices.SortStableFunc: each instantiation of the latter for a struct
	// type adds 5-9 KB of code to the deployer, held under 15 MB (docs/policy.md).
	sort.SliceStable(spans, func(i, j int) bool {
		if c := spans[i].Start.Compare(spans[j].Start); c != 0 {
			return c < 0
		}
		return spans[i].Name < spans[j].Name
	})
}

// criticalPath is the chain of stacks that held the run up: from the stack that ended
// last back through, at each step, the stack it waited for that ended last (ties by
// name), to a stack that waited for none. It returns the names, first to last.
func criticalPath(spans []span) []string {
	if len(spans) == 0 {
		return nil
	}
	byName := make(map[string]span, len(spans))
	for _, s := range spans {
		byName[s.Name] = s
	}
	later := func(a, b span) bool { // a ended after b (ties: the smaller name)
		if c := a.End.Compare(b.End); c != 0 {
			return c > 0
		}
		return a.Name < b.Name
	}
	last := spans[0]
	for _, s := range spans[1:] {
		if later(s, last) {
			last = s
		}
	}
	path := []string{last.Name}
	seen := map[string]bool{last.Name: true}
	for cur := last; ; {
		var prev span
		found := false
		for _, d := range cur.Deps {
			s, ok := byName[d]
			if !ok || seen[d] {
				continue
			}
			if !found || later(s, prev) {
				prev, found = s, true
			}
		}
		if !found {
			break
		}
		seen[prev.Name] = true
		path = append(path, prev.Name)
		cur = prev
	}
	slices.Reverse(path)
	return path
}

// bar is a span placed on the timeline, in percent of the run's duration.
type bar struct {
	Left, Width float64 // the whole span
	Exec        float64 // where the execution starts, within the bar, in percent of it; 0: none
}

// place positions span s within [from, to].
func place(s span, from, to time.Time) bar {
	total := to.Sub(from)
	if total <= 0 {
		return bar{Width: 100}
	}
	pct := func(d time.Duration) float64 { return float64(d) * 100 / float64(total) }
	b := bar{Left: pct(s.Start.Sub(from)), Width: pct(s.End.Sub(s.Start))}
	b.Left = min(max(b.Left, 0), 100)
	b.Width = min(max(b.Width, 0.4), 100-b.Left)
	if !s.Executed.IsZero() && s.Executed.After(s.Start) && s.End.After(s.Start) {
		b.Exec = float64(s.Executed.Sub(s.Start)) * 100 / float64(s.End.Sub(s.Start))
	}
	b.Left, b.Width, b.Exec = round2(b.Left), round2(b.Width), round2(b.Exec)
	return b
}

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }
