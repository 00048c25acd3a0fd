package runpage

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// The pages are written by hand, not with html/template: html/template (through
// text/template's reflection) keeps every exported method of every type linked, which
// doubles the deployer's Lambda binary (14.7 MB to 31.5 MB, over its 15 MB goal). The
// rule that keeps them safe is the one html/template enforces, made small enough to
// follow by eye: markup is only ever a constant format string, and every value goes in
// through page.h, which escapes it (< > & ' " become entities, as html/template's), as
// text or as a double-quoted attribute value; an address goes through safeHref first. No
// value is ever placed in a script, a style element, an unquoted attribute or a tag name.

// escaper escapes a value for text and for double-quoted attribute values, as
// html.EscapeString and html/template do (without linking html's entity tables).
var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")

// page is a page being written.
type page struct{ b bytes.Buffer }

// raw writes constant markup (never a value).
func (p *page) raw(markup string) { p.b.WriteString(markup) }

// h writes format (constant markup with %s verbs, each in text or inside a double-quoted
// attribute value) with args escaped.
func (p *page) h(format string, args ...string) {
	esc := make([]any, len(args))
	for i, a := range args {
		esc[i] = escaper.Replace(a)
	}
	fmt.Fprintf(&p.b, format, esc...)
}

// joined writes the items escaped, separated by sep (constant markup).
func (p *page) joined(items []string, sep string) {
	for i, s := range items {
		if i > 0 {
			p.raw(sep)
		}
		p.h("%s", s)
	}
}

// safeHref is href when it is relative (no scheme) or http(s), else "#": a javascript:
// or data: address is never linked.
func safeHref(href string) string {
	scheme, _, ok := strings.Cut(href, ":")
	if !ok || strings.ContainsAny(scheme, "/?#") {
		return href
	}
	switch strings.ToLower(scheme) {
	case "http", "https":
		return href
	}
	return "#"
}

func itoa(n int) string { return strconv.Itoa(n) }

// pct is a percentage for a style attribute: a number, nothing else.
func pct(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

// head opens the page: its title, its Content-Security-Policy (no script, nothing
// fetched), a refresh while a run runs, the style.
func (p *page) head(title string, refresh int) {
	p.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"referrer\" content=\"no-referrer\">\n")
	p.raw("<meta http-equiv=\"Content-Security-Policy\" content=\"" + ContentSecurityPolicy + "\">\n<link rel=\"icon\" href=\"data:,\">\n")
	if refresh > 0 {
		p.h("<meta http-equiv=\"refresh\" content=\"%s\">\n", itoa(refresh))
	}
	p.h("<title>%s</title>\n", title)
	p.raw("<style>" + pageCSS + "</style>\n</head>\n<body>\n")
}

// ContentSecurityPolicy is what a page allows itself: its own inline style and the empty
// data: icon, nothing else (no script, no fetch, no form, no frame).
const ContentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

func (p *page) end() []byte {
	p.raw("</main>\n</body>\n</html>\n")
	return p.b.Bytes()
}

func (p *page) links(links []Link) {
	if len(links) == 0 {
		return
	}
	p.raw("<nav aria-label=\"Other views\"><ul class=\"legend\">")
	for _, l := range links {
		p.h("<li><a href=\"%s\">%s</a></li>", safeHref(l.Href), l.Text)
	}
	p.raw("</ul></nav>\n")
}

// notes writes the warnings, notes, errors and refusals of a run or plan.
func (p *page) notes(warnings, notes, errors, refusals []string, nothing string) {
	for _, w := range warnings {
		p.h("<p class=\"note warn\"><strong>Warning:</strong> %s</p>\n", w)
	}
	for _, n := range notes {
		p.h("<p class=\"note\"><strong>Note:</strong> %s</p>\n", n)
	}
	if len(errors) > 0 {
		p.h("<section aria-labelledby=\"errors\"><h2 id=\"errors\">Errors (%s)</h2><ul>", nothing)
		for _, e := range errors {
			p.h("<li><code>%s</code></li>", e)
		}
		p.raw("</ul></section>\n")
	}
	if len(refusals) > 0 {
		p.h("<section aria-labelledby=\"refusals\"><h2 id=\"refusals\">Refused (%s)</h2><ul>", nothing)
		for _, r := range refusals {
			p.h("<li>%s</li>", r)
		}
		p.raw("</ul></section>\n")
	}
}

// graph writes the dependency graph as inline SVG, with its text alternative.
func (p *page) graph(g svgGraph) {
	class := "graph"
	if g.Dense {
		class += " dense"
	}
	p.h("<div class=\"%s\">\n", class)
	p.h("<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-labelledby=\"graph-title graph-desc\" width=\"%s\" height=\"%s\" viewBox=\"0 0 %s %s\">\n", itoa(g.W), itoa(g.H), itoa(g.W), itoa(g.H))
	p.h("<title id=\"graph-title\">Dependency graph</title>\n<desc id=\"graph-desc\">%s</desc>\n", g.Desc)
	p.raw("<defs><marker id=\"arrow\" viewBox=\"0 0 8 8\" refX=\"7\" refY=\"4\" markerWidth=\"8\" markerHeight=\"8\" markerUnits=\"userSpaceOnUse\" orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\" fill=\"#6e7781\"/></marker></defs>\n")
	for _, e := range g.Edges {
		crit := ""
		if e.Crit {
			crit = " class=\"crit\""
		}
		p.h("<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" marker-end=\"url(#arrow)\"", itoa(e.X1), itoa(e.Y1), itoa(e.X2), itoa(e.Y2))
		p.raw(crit + "/>\n")
	}
	for _, n := range g.Nodes {
		class := "node"
		if n.Crit {
			class += " crit"
		}
		p.h("<a href=\"%s\" class=\"%s\"><title>%s: %s</title>", safeHref(n.Href), class, n.Name, n.Caption)
		p.h("<rect class=\"%s\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" rx=\"6\"/>", n.Class, itoa(n.X), itoa(n.Y), itoa(nodeW), itoa(nodeH))
		p.h("<text x=\"%s\" y=\"%s\">%s</text><text class=\"cap\" x=\"%s\" y=\"%s\">%s</text></a>\n", itoa(n.TextX), itoa(n.TextY), n.Label, itoa(n.TextX), itoa(n.CapY), n.Caption)
	}
	p.raw("</svg>\n</div>\n")
}

// facts writes a definition list's rows, leaving out those without a value.
func (p *page) facts(rows ...[2]string) {
	p.raw("<dl class=\"facts\">\n")
	for _, r := range rows {
		if r[1] != "" {
			p.h("<dt>%s</dt><dd>%s</dd>\n", r[0], r[1])
		}
	}
	p.raw("</dl>\n")
}

// table writes a table with a caption, header cells and rows of text.
func (p *page) table(caption string, head []string, rows [][]string, danger func(i int) bool) {
	if len(rows) == 0 {
		return
	}
	p.h("<table><caption>%s</caption><thead><tr>", caption)
	for _, c := range head {
		p.h("<th scope=\"col\">%s</th>", c)
	}
	p.raw("</tr></thead><tbody>")
	for i, r := range rows {
		if danger != nil && danger(i) {
			p.raw("<tr class=\"danger\">")
		} else {
			p.raw("<tr>")
		}
		for _, c := range r {
			p.h("<td>%s</td>", c)
		}
		p.raw("</tr>")
	}
	p.raw("</tbody></table>\n")
}
