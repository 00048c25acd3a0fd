package runpage

import (
	"html/template"
	"regexp"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/cairn-dev/cairn/internal/report"
)

// TestSafeHref: relative and http(s) addresses are linked, any other scheme is not.
func TestSafeHref(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"#stack-1", "#stack-1"},
		{"R1.md", "R1.md"},
		{"/_local/pages/runs/shop/R1.html", "/_local/pages/runs/shop/R1.html"},
		{"https://example.com/x", "https://example.com/x"},
		{"HTTP://example.com/x", "HTTP://example.com/x"},
		{"javascript:alert(1)", "#"},
		{"JavaScript:alert(1)", "#"},
		{"data:text/html,<script>", "#"},
		{"vbscript:x", "#"},
		{"./a:b", "./a:b"},
		{"?q=a:b", "?q=a:b"},
	} {
		if got := safeHref(tc.in); got != tc.want {
			t.Errorf("safeHref(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestEscapeAsHTMLTemplate: a value goes into a page escaped as html/template escapes
// text (the same entities for < > & ' ").
func TestEscapeAsHTMLTemplate(t *testing.T) {
	for _, s := range []string{hostile, `a"b'c<d>e&f`, "plain", "`tick` | pipe", "&amp;"} {
		var p page
		p.h("%s", s)
		if got, want := p.b.String(), template.HTMLEscapeString(s); got != want {
			t.Errorf("h(%q) = %q, html/template: %q", s, got, want)
		}
	}
}

var structureRE = regexp.MustCompile(`<(/?[a-zA-Z][a-zA-Z0-9]*)|\s([a-zA-Z-]+)="`)

// structure is a page's markup without its values: its tags' and attributes' names, in
// order.
func structure(page string) []string {
	var out []string
	for _, m := range structureRE.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1]+m[2])
	}
	return out
}

// TestAnyValueKeepsThePageStructure: whatever a stack's name, its reason, a parameter's
// or an output's value, a resource's failure reason or physical id holds, the page has the same tags and attributes as with a plain
// value in their place, and shows the value (cleaned of control and direction
// characters) as text.
func TestAnyValueKeepsThePageStructure(t *testing.T) {
	withValue := func(t interface{ Fatal(...any) }, v string) string {
		r := fixture()
		r.Stacks["api"].Reason = v
		r.Stacks["api"].Events[2].Reason = v // the failed resource's
		r.Stacks["db"].Events[1].PhysicalID = v
		r.Stacks["db"].Parameters = map[string]string{"P": v}
		r.Stacks["db"].Outputs = map[string]string{"O": v}
		b, err := RenderRun(Run{Report: report.Input{Run: r}, Refresh: 5})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	plain := structure(withValue(t, "plain"))
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.OneOf(rapid.StringN(1, -1, -1), rapid.SampledFrom([]string{hostile, `"><svg onload=alert(1)>`, "</details></summary></li>", "<!--", "]]>", "&#x3c;"})).Draw(t, "value")
		page := withValue(t, v)
		if got := structure(page); !slices.Equal(got, plain) {
			t.Fatalf("a value changed the page's structure: %q\ngot  %v\nwant %v", v, got, plain)
		}
		if shown := template.HTMLEscapeString(report.Line(v)); !strings.Contains(page, "<span class=\"reason\">"+shown+"</span>") || !strings.Contains(page, "<mark class=\"reason\">"+shown+"</mark>") {
			t.Fatalf("the reason %q is not shown as %q, the stack's and its resource's", v, shown)
		}
	})
}
