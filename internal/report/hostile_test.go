package report_test

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"

	"github.com/cairn-dev/cairn/internal/drift"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
)

// hostile is a value a template or a config controls (a property or resource name, a
// reason, a branch name) made to break Markdown: a newline starting a heading, an HTML
// comment that would hide the rest, HTML tags, backticks opening code, pipes splitting a
// table, a code fence, a link and a right-to-left override; the token after all that
// must still be seen. benign is the same value without the attack.
func hostile(i int) string {
	return fmt.Sprintf("x%d\n<!-- `tick | pipe |\n# Approved\n--> </details><b>bold</b> ```\n```\n[approve](https://evil.example) \u202eTOK%dEND", i, i)
}

func benign(i int) string { return fmt.Sprintf("x%d TOK%dEND", i, i) }

// rendered is what a reader sees of Markdown, as GitHub parses it (CommonMark with
// GitHub's tables): the structure (block kinds, and the inline kinds that could hide or
// mislead: HTML, code, links), the raw HTML kept, and the text shown.
type rendered struct {
	structure []string
	html      []string
	text      string
}

func render(t *testing.T, md string) rendered {
	t.Helper()
	src := []byte(md)
	doc := goldmark.New(goldmark.WithExtensions(extension.Table)).Parser().Parse(text.NewReader(src))
	var r rendered
	var shown strings.Builder
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.HTMLBlock:
			var b strings.Builder
			for i := 0; i < n.Lines().Len(); i++ {
				seg := n.Lines().At(i)
				b.Write(seg.Value(src))
			}
			r.html = append(r.html, strings.TrimSpace(b.String()))
			r.structure = append(r.structure, "HTMLBlock")
			return ast.WalkSkipChildren, nil
		case *ast.RawHTML:
			var b strings.Builder
			for i := 0; i < n.Segments.Len(); i++ {
				seg := n.Segments.At(i)
				b.Write(seg.Value(src))
			}
			r.html = append(r.html, b.String())
			r.structure = append(r.structure, "RawHTML")
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			shown.Write(n.Segment.Value(src))
			shown.WriteByte(' ')
		case *ast.String:
			shown.Write(n.Value)
			shown.WriteByte(' ')
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			r.structure = append(r.structure, n.Kind().String())
			for i := 0; i < n.Lines().Len(); i++ {
				seg := n.Lines().At(i)
				shown.Write(seg.Value(src))
			}
			return ast.WalkSkipChildren, nil
		case *ast.CodeSpan, *ast.Link, *ast.AutoLink, *ast.Image:
			r.structure = append(r.structure, n.Kind().String())
		case *extast.TableRow, *extast.TableHeader:
			r.structure = append(r.structure, fmt.Sprintf("%s(%d)", n.Kind(), n.ChildCount()))
		default:
			if n.Type() == ast.TypeBlock {
				r.structure = append(r.structure, n.Kind().String())
			}
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r.text = shown.String()
	return r
}

var tokenRE = regexp.MustCompile(`TOK\d+END`)

// checkHostile renders the same document with benign and with hostile values and
// requires that a reader sees the same: the same structure (no heading, list item, table
// row, code or HTML added or lost), no other HTML than allowed, every table row as wide
// as its header in the source, and every value's token (nothing hidden after it).
func checkHostile(t *testing.T, name string, allowedHTML *regexp.Regexp, markdown func(value func(int) string) string) {
	t.Helper()
	good, bad := markdown(benign), markdown(hostile)
	g, b := render(t, good), render(t, bad)
	if !slices.Equal(g.structure, b.structure) {
		t.Errorf("%s: hostile values change the structure\nbenign:  %v\nhostile: %v\n%s", name, g.structure, b.structure, bad)
	}
	checkHTML(t, name, allowedHTML, b)
	want := tokenRE.FindAllString(g.text, -1)
	if len(want) < 5 {
		t.Fatalf("%s: only %d values rendered: the test renders too little\n%s", name, len(want), good)
	}
	for _, tok := range want {
		if !strings.Contains(b.text, tok) {
			t.Errorf("%s: %s is not shown with hostile values: something hid it\n%s", name, tok, bad)
		}
	}
	if strings.Contains(b.text, "\u202e") {
		t.Errorf("%s: a right-to-left override reaches the reader", name)
	}
	checkTables(t, name, bad)
}

// checkHTML requires the only HTML of a rendering to be what the renderer writes itself.
func checkHTML(t *testing.T, name string, allowed *regexp.Regexp, r rendered) {
	t.Helper()
	for _, h := range r.html {
		if allowed == nil || !allowed.MatchString(h) {
			t.Errorf("%s: hostile values reach the Markdown as HTML: %q", name, h)
		}
	}
}

// checkTables requires every row of every table to hold as many unescaped pipes as its
// header: a pipe a value brings would split a cell, and GitHub drops the cells past the
// header's.
func checkTables(t *testing.T, name, md string) {
	t.Helper()
	pipes := func(line string) int {
		n := 0
		for i := 0; i < len(line); i++ {
			switch line[i] {
			case '\\':
				i++
			case '|':
				n++
			}
		}
		return n
	}
	header := 0
	for _, line := range strings.Split(md, "\n") {
		switch {
		case !strings.HasPrefix(line, "|"):
			header = 0
		case header == 0:
			header = pipes(line)
		case pipes(line) != header:
			t.Errorf("%s: table row %q has %d cells' pipes, its header %d", name, line, pipes(line), header)
		}
	}
}

// checkLines requires plain text (a notification) to keep its lines: hostile values add
// none, and every token is still there.
func checkLines(t *testing.T, name string, plain func(value func(int) string) string) {
	t.Helper()
	good, bad := plain(benign), plain(hostile)
	if g, b := strings.Count(good, "\n"), strings.Count(bad, "\n"); g != b {
		t.Errorf("%s: hostile values turn %d lines into %d:\n%s", name, g, b, bad)
	}
	for _, tok := range tokenRE.FindAllString(good, -1) {
		if !strings.Contains(bad, tok) {
			t.Errorf("%s: %s is lost", name, tok)
		}
	}
	if strings.ContainsRune(bad, '\u202e') {
		t.Errorf("%s: a right-to-left override reaches the reader", name)
	}
}

// hostilePlan is a plan whose every value a bundle, a template, AWS or an uploader
// controls is v(i).
func hostilePlan(v func(int) string) *plan.Document {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	changes := []plan.Change{
		{LogicalID: v(1), Type: v(2), Action: "Modify", Replacement: "True", Details: []string{v(3) + " (recreation: Always, Static)"}},
		{LogicalID: v(4), Type: "Custom::Thing", Action: "Remove"},
	}
	p := &plan.Document{ID: "20261130-120000000-1a2b3c4d", Deployment: "shop", Namespace: "shop", GraphKey: "shop", Status: plan.Planned, CreatedAt: at,
		Bundle: plan.BundleVersion{Bucket: "cairn-state", Key: "plans/shop.zip", VersionID: "v1", SHA256: "abc", GitRef: v(5),
			Source: provenance.Source{Ref: v(6), PullRequest: 7, HeadRef: v(7), RunURL: "https://github.com/o/r/actions/runs/1" + v(8)}},
		Warnings: []string{v(9)}, Refusals: []string{v(10)}, Errors: []string{v(11)},
		Stacks: []plan.Stack{
			{Name: "app", StackName: "shop-app", Action: plan.Update, ChangeSetName: "cairn-x-1", ChangeSetID: "arn:cs", Status: "UPDATE_COMPLETE", LastUpdated: at, Changes: changes,
				ParameterChanges: []plan.ParameterChange{{Name: v(15), Old: v(16), New: v(17)}, {Name: v(18), Old: "****", New: "****", Secret: true}}},
			{Name: "new", StackName: "shop-new", Action: plan.Create, CreatedAtApply: true, Resources: []plan.Resource{{LogicalID: v(12), Type: v(13)}}},
			{Name: "old", StackName: "shop-old", Action: plan.Delete, Resources: []plan.Resource{{LogicalID: v(22), Type: v(23)}}},
			{Name: "ripple", StackName: "shop-ripple", Action: plan.Update, ChangeSetName: "cairn-x-2", InputsMayChange: true,
				KnownAfterApply: []string{v(19)}, Feeds: map[string][]string{v(19): {v(20)}}},
			{Name: "same", StackName: "shop-same", Action: plan.None, InputsMayChange: true},
		},
		Decisions: []plan.Decision{{Stack: "app", StackName: "shop-app", Action: plan.Update, Reason: v(14), Capabilities: []string{"CAPABILITY_IAM"}, FromTemplate: true},
			{Stack: "ripple", StackName: "shop-ripple", Action: plan.Update, Reason: v(21)}},
		Run: &run.Run{ID: "20261130-120000000-1a2b3c4d", Deployment: "shop", Mode: run.ModePlan, Stacks: map[string]*run.Stack{
			"app":    {Name: "app", StackName: "shop-app", Requires: []string{"same"}},
			"new":    {Name: "new", StackName: "shop-new", Requires: []string{"app"}},
			"old":    {Name: "old", StackName: "shop-old", Intent: run.IntentDelete},
			"ripple": {Name: "ripple", StackName: "shop-ripple", Requires: []string{"app"}},
			"same":   {Name: "same", StackName: "shop-same"},
		}},
	}
	return p
}

// hostileRun is a run report's input with every value a bundle or AWS controls v(i).
func hostileRun(v func(int) string) report.Input {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	r := &run.Run{ID: "20261130-120000000-1a2b3c4d", Deployment: "shop", Mode: run.ModeDeploy, Status: run.RunFailed, Reason: v(1), StartedAt: at, UpdatedAt: at.Add(time.Minute), FinishedAt: at.Add(time.Minute),
		Stacks: map[string]*run.Stack{
			"app": {Name: "app", StackName: "shop-app", Phase: run.Failed, Reason: v(2), StartedAt: at, FinishedAt: at.Add(time.Minute), ChangeSetName: "cairn-x-1", ChangeSetType: "UPDATE", Exists: true},
			"web": {Name: "web", StackName: "shop-web", Phase: run.Blocked, Reason: v(3), At: target.Target{Account: "111111111111"}},
		}}
	return report.Input{Run: r, Bundle: v(4), Decisions: []plan.Decision{{Stack: "app", StackName: "shop-app", Action: plan.Update, Reason: v(5)}},
		Refusals: []string{v(6)}, Errors: []string{v(7)}, Warnings: []string{v(8)}, Notes: []string{v(9)}}
}

// hostileDrift is a drift report with every value a template, a config or AWS controls
// v(i): anyone who can change a resource chooses its actual values.
func hostileDrift(v func(int) string) *drift.Report {
	return &drift.Report{Sweep: "s1", Trigger: "schedule", StartedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Previous: "drift/shop/s0.json", Changes: []string{v(1)},
		Graph: &drift.Graph{Name: "shop", Namespace: "shop", Key: "shop", Bundle: v(2), Notes: []string{v(3)}, Missing: []string{v(4)}, Untracked: []string{v(5)},
			Stacks: []*drift.Stack{{Name: "app", StackName: "shop-app", Status: drift.Drifted, Reason: v(6), Resources: []drift.Resource{
				{LogicalID: v(7), Type: v(8), Status: "MODIFIED", Differences: []drift.Difference{{Path: v(9), Expected: v(10), Actual: v(11), Type: "NOT_EQUAL"}}},
				{LogicalID: "Other", Type: "AWS::SQS::Queue", Status: "MODIFIED", Ignored: v(12), Differences: []drift.Difference{{Path: "/A", Expected: "1", Actual: "2", Type: "NOT_EQUAL"}}},
			}}}}}
}

// TestHostileNamesCannotHideAnything feeds values with newlines, HTML comments and tags,
// backticks, pipes, code fences, links and a right-to-left override through every
// renderer of Markdown (the plan, its pull-request comment, cut to fit or whole, the run
// report, the drift report) and of notifications (run and drift summaries): a reader sees
// the same document as with plain values, and every value in full.
func TestHostileNamesCannotHideAnything(t *testing.T) {
	// The HTML the plan's renderer writes itself: the marker, and the folds of details.
	planHTML := regexp.MustCompile(`^(` + regexp.QuoteMeta(report.CommentMarker("shop")) + `|<details><summary>Details of \d+ change\(s\)</summary>|</details>)$`)
	planMarkdown := func(v func(int) string) string {
		var b bytes.Buffer
		if err := report.PlanMarkdown(&b, hostilePlan(v)); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	checkHostile(t, "plan", planHTML, planMarkdown)
	// The comment of a plan gone stale says why, in words a bundle or AWS may control.
	stale := func(v func(int) string) string {
		p := hostilePlan(v)
		p.Status, p.Reason = "stale", v(24)
		var b bytes.Buffer
		if err := report.PlanComment(&b, p, 0); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	checkHostile(t, "stale plan", planHTML, stale)
	for _, i := range []int{12, 13, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24} {
		if tok := fmt.Sprintf("TOK%dEND", i); !strings.Contains(stale(benign), tok) {
			t.Errorf("the comment does not show value %d (%s): the hostile test does not reach it", i, tok)
		}
	}
	checkHostile(t, "pull-request comment", planHTML, func(v func(int) string) string {
		var b bytes.Buffer
		if err := report.PlanComment(&b, hostilePlan(v), 0); err != nil {
			t.Fatal(err)
		}
		if b.String() != planMarkdown(v) {
			t.Fatal("the comment is not the whole plan")
		}
		return b.String()
	})
	// Cut to fit, the comment is cut where hostile values make it long: whatever is cut,
	// the note saying where the whole plan is ends it, in sight.
	for _, limit := range []int{1500, 2500, 3500, 4500} {
		var b bytes.Buffer
		if err := report.PlanComment(&b, hostilePlan(hostile), limit); err != nil {
			t.Fatal(err)
		}
		r := render(t, b.String())
		checkHTML(t, fmt.Sprintf("pull-request comment cut at %d", limit), planHTML, r)
		checkTables(t, fmt.Sprintf("pull-request comment cut at %d", limit), b.String())
		blocks := slices.DeleteFunc(slices.Clone(r.structure), func(k string) bool { return k == "CodeSpan" || k == "Link" })
		if !strings.Contains(r.text, "This plan is too long for a comment") || !slices.Equal(blocks[len(blocks)-2:], []string{"ThematicBreak", "Paragraph"}) {
			t.Errorf("cut at %d: the closing note is not in sight: %v\n%s", limit, r.structure, b.String())
		}
	}
	checkHostile(t, "run report", nil, func(v func(int) string) string {
		var b bytes.Buffer
		if err := report.Markdown(&b, hostileRun(v)); err != nil {
			t.Fatal(err)
		}
		return b.String()
	})
	checkHostile(t, "drift report", nil, func(v func(int) string) string {
		var b bytes.Buffer
		drift.Markdown(&b, hostileDrift(v))
		return b.String()
	})
	checkLines(t, "run notification", func(v func(int) string) string {
		in := hostileRun(v)
		return report.Subject(in) + "\n" + report.Summary(in, "s3://cairn-state/runs/shop/r.md")
	})
	checkLines(t, "drift notification", func(v func(int) string) string {
		r := hostileDrift(v)
		return drift.Subject(r) + "\n" + drift.Summary(r, "s3://cairn-state/drift/shop/s1.md")
	})
	checkLines(t, "plan for a terminal", func(v func(int) string) string {
		var b bytes.Buffer
		if err := report.PlanText(&b, hostilePlan(v)); err != nil {
			t.Fatal(err)
		}
		return b.String()
	})
}

func TestEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"plain-name_1":        "plain-name_1",
		"a\nb\r\nc":           "a b  c",
		"<!-- x -->":          "&lt;!-- x --&gt;",
		"a|b`c\\d[e](f)&":     "a\\|b\\`c\\\\d\\[e\\](f)&amp;",
		"r\u202etl\u2066x":    "r\ufffdtl\ufffdx",
		"tab\there\x00nul":    "tab here\ufffdnul",
		"line\u2028sep\u0085": "line sep ",
	} {
		if got := report.Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"x":       "`x`",
		"a`b":     "``a`b``",
		"``a":     "``` ``a ```",
		"a\nb|c":  "`a b|c`",
		"":        "` `",
		"tail ``": "``` tail `` ```",
	} {
		if got := report.Code(in); got != want {
			t.Errorf("Code(%q) = %q, want %q", in, got, want)
		}
	}
	if got := report.CodeCell("a|b"); got != "`a\\|b`" {
		t.Errorf("CodeCell = %q", got)
	}
}
