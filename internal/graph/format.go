package graph

import (
	"encoding/json"
	"strings"
)

// DOT renders g in Graphviz's DOT language as `digraph cairn { ... }`, one statement per
// line: every node, then every edge, both sorted by name, so the output can be diffed and
// kept as a golden file. An edge a -> b means a depends on b. Pass TransitiveReduction()
// for a readable picture.
func (g *Graph) DOT() string { return g.DOTLabeled(nil) }

// DOTLabeled is DOT with each node labelled label(name) where that differs from its name
// (nil: none are).
func (g *Graph) DOTLabeled(label func(name string) string) string {
	byName, _ := g.sorted()
	var b strings.Builder
	b.WriteString("digraph cairn {\n")
	b.WriteString("\t// a -> b: a depends on b, so b is deployed first\n")
	for _, i := range byName {
		b.WriteString("\t")
		b.WriteString(dotID(g.names[i]))
		if label != nil {
			if l := label(g.names[i]); l != g.names[i] {
				b.WriteString(" [label=" + dotID(l) + "]")
			}
		}
		b.WriteString(";\n")
	}
	for _, i := range byName {
		for _, dep := range g.sortedNames(g.deps[i]) {
			b.WriteString("\t")
			b.WriteString(dotID(g.names[i]))
			b.WriteString(" -> ")
			b.WriteString(dotID(dep))
			b.WriteString(";\n")
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// dotID quotes a name as a DOT ID. Stack names are plain, but a graph may be drawn before
// the names are validated, so quotes and backslashes are escaped.
func dotID(name string) string {
	return `"` + dotEscaper.Replace(name) + `"`
}

var dotEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

type jsonGraph struct {
	Nodes []jsonNode `json:"nodes"`
	Order []string   `json:"order"`
}

type jsonNode struct {
	Name     string   `json:"name"`
	Requires []string `json:"requires"`
}

// MarshalJSON renders g as
//
//	{"nodes":[{"name":"app","requires":["db"]},...],"order":["db","app"]}
//
// with nodes sorted by name, requires sorted (an empty list, never null) and order the
// deploy order. A graph with a cycle has no order, so it returns the *CycleError rather
// than a document a reader might take as deployable.
func (g *Graph) MarshalJSON() ([]byte, error) {
	order, err := g.Order()
	if err != nil {
		return nil, err
	}
	doc := jsonGraph{Nodes: make([]jsonNode, 0, len(g.names)), Order: order}
	if doc.Order == nil {
		doc.Order = []string{}
	}
	for _, name := range g.Nodes() {
		doc.Nodes = append(doc.Nodes, jsonNode{Name: name, Requires: g.Dependencies(name)})
	}
	return json.Marshal(doc)
}
