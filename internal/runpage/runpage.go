// Package runpage renders runs and plans as self-contained HTML pages: the dependency
// graph coloured by status (an inline SVG laid out here), a timeline of the stacks with
// the critical path marked, every stack's details, the failures with their reasons and
// the next command, and a plan's change sets with deletions and replacements first.
//
// A page is a pure function of the documents cairn keeps (no new source of truth): data
// in, bytes out. It fetches nothing (no CDN, no script library: it works offline and in a
// private network), escapes every value (html.go says how, and why not html/template),
// shows no secret (a NoEcho parameter, a secret output or any sealed reference is ****),
// and strips the characters that would forge lines or reorder text (report.Line).
package runpage

import (
	_ "embed"
	"fmt"
	"slices"
	"time"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
)

//go:embed page.css
var pageCSS string

// LocalPath is where a local cairn (`cairn local up`) serves the pages, on the
// emulator's address: LocalPath+KEY for a page's key in the bucket (runs/NAME/RUN.html,
// plans/NAME/PLAN.html), and the index at LocalPath itself.
const LocalPath = "/_local/pages/"

// ContentType is a page's media type.
const ContentType = "text/html; charset=utf-8"

// Link is another view of the same run or plan (its Markdown report, its document), or a
// way back (the index): shown at the top of the page. Only http(s) and relative
// addresses are linked (safeHref).
type Link struct {
	Text string
	Href string
}

// Run is what a run's page shows: the run document's data (the rundoc package fills it).
type Run struct {
	// Report is the run as the Markdown report shows it.
	Report report.Input
	// Statuses are the stacks' CloudFormation statuses as last seen, by config name.
	Statuses map[string]string
	// Path is the bundle's path as the next command names it ("" for PATH).
	Path string
	// Links are shown at the top.
	Links []Link
	// Refresh is how many seconds a page of a run still running waits before it loads
	// itself again (from the run document, as it is then); 0: never.
	Refresh int
}

// RenderRun renders the page of a run.
func RenderRun(in Run) ([]byte, error) {
	r := in.Report.Run
	if r == nil {
		return nil, fmt.Errorf("render a run page: no run in the input; pass the run document's run")
	}
	return writeRun(runViewOf(in)), nil
}

// clean is how every value reaches a page: on one line, without control or direction
// characters (page.h escapes the rest).
func clean(s string) string { return report.Line(s) }

// Masked is a value as a page shows it: **** for a secret (secret is true, or the value
// holds a sealed reference to one), else the value cleaned.
func Masked(v string, secret bool) string {
	if secret || config.HoldsSealed(v) || v == "****" {
		return "****"
	}
	return clean(v)
}

// pair is a name and a value shown.
type pair struct{ Name, Value string }

// pairs lists m by name, masking the names in secret and every sealed value.
func pairs(m map[string]string, secret []string) []pair {
	var out []pair
	for _, k := range sortedKeys(m) {
		out = append(out, pair{clean(k), Masked(m[k], slices.Contains(secret, k))})
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func cleanAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = clean(s)
	}
	return out
}

// stamp is a time as a page shows it: UTC, to the second; "" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// phaseClass is the colour class of a stack in phase p.
func phaseClass(p run.Phase) string {
	switch {
	case p == run.Done:
		return "ok"
	case p == run.Unchanged:
		return "none"
	case p == run.Failed:
		return "bad"
	case p == run.Blocked:
		return "blocked"
	case p.InFlight():
		return "busy"
	}
	return "wait"
}

// actionClass is the colour class of a plan's stack: replace for a stack re-created or
// with a resource replaced, whatever else it does.
func actionClass(s plan.Stack) string {
	switch {
	case s.Action == plan.Delete:
		return "bad"
	case s.Action == plan.Recreate || s.Replacements() > 0:
		return "replace"
	case s.Action == plan.Create:
		return "ok"
	case s.Action == plan.None:
		return "none"
	}
	return "busy"
}
