package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/printer"
	runstate "github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/target"
)

// view shows a followed run.
type view interface {
	follow.ResourceObserver
	// runID is the id of the run once found ("" before).
	runID() string
	// detached says the follower stopped before the run ended (why: interrupted,
	// timeout), and how to follow it again.
	detached(id, again, why string)
	// close ends what the view shows live, before the outcome is printed.
	close()
}

// textView shows a run to a person: each stack's steps, each resource's status as it
// settles, a failure's reason when it happens; on a terminal (live) with a footer redrawn
// in place of the stacks and resources in flight, the slowest first, else (a CI log)
// line by line, with a line naming the slowest in flight every stillEvery.
type textView struct {
	w      io.Writer
	live   bool
	color  bool
	fd     int
	id     string
	start  time.Time
	width  int
	flight follow.InFlight
	doc    *rundoc.Document
	// rolling holds, by stack, the status of a rollback in progress (its own events).
	rolling map[string]string
	// footer is the number of lines the live footer takes now; still when the last
	// "still in progress" line of a log was printed.
	footer int
	still  time.Time
}

// stillEvery is how often a log (not a terminal) names the resources still in progress.
const stillEvery = 30 * time.Second

// maxFooter bounds the live footer's lines.
const maxFooter = 12

func newTextView(w io.Writer) *textView {
	v := &textView{w: w}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb" {
		v.live, v.fd = true, int(f.Fd())
		_, noColor := os.LookupEnv("NO_COLOR")
		v.color = !noColor
	}
	return v
}

func (v *textView) runID() string { return v.id }

func (v *textView) Found(doc *rundoc.Document) {
	v.id, v.start, v.doc = doc.Run.ID, doc.Run.StartedAt, doc
	v.width = follow.Width(doc)
	v.print(printer.Sprintf("run %s of deployment %s: %s", doc.Run.ID, doc.Run.Deployment, kindOf(doc)), "")
}

func (v *textView) Stepped(s follow.Step) {
	if s.Phase.Terminal() {
		v.flight.Drop(s.Stack)
	}
	line := printer.Sprintf("  %s  %-*s  %-8s  %s", clockTime(s.Elapsed), v.width, s.Name(), s.Action, s.Doing())
	sgr := ""
	switch s.Phase {
	case runstate.Failed:
		sgr = red
	case runstate.Done:
		sgr = green
	}
	v.print(line, sgr)
}

func (v *textView) Changed(r follow.Resource) {
	v.flight.Add(r)
	if r.Self && len(r.Nested) == 0 {
		if v.rolling == nil {
			v.rolling = map[string]string{}
		}
		v.rolling[r.Stack] = ""
		if r.InProgress() {
			v.rolling[r.Stack] = r.Status
		}
	}
	if r.InProgress() && !r.Self {
		return // shown in flight, live; settled, on its own line
	}
	// One line, each value CloudFormation or the bundle gave escaped on its own.
	line := printer.Sprintf("  %s  %-*s  %-8s  ", clockTime(r.Elapsed), v.width, target.Describe(r.Place, r.Stack), "")
	switch {
	case r.Self && len(r.Nested) > 0:
		line += printer.Sprintf("nested stack %s %s", strings.Join(r.Nested, "/"), r.Status)
	case r.Self:
		line += printer.Sprintf("stack %s", r.Status)
	default:
		line += printer.Sprintf("%s  %s  %s", r.Path(), r.Type, r.Status)
	}
	if reason := strings.TrimSpace(r.Reason); reason != "" && (r.Failed() || r.Self) {
		line += printer.Sprintf(": %s", reason)
	}
	sgr := ""
	switch {
	case r.Failed():
		sgr = red
	case strings.HasSuffix(r.Status, "_COMPLETE") && !strings.Contains(r.Status, "ROLLBACK") && !strings.HasPrefix(r.Status, "DELETE"):
		sgr = green
	}
	v.print(line, sgr)
}

func (v *textView) Noted(note string) { v.print(printer.Sprintf("  note: %s", note), "") }

func (v *textView) Polled(doc *rundoc.Document, now time.Time) {
	v.doc = doc
	if v.live {
		v.draw(now)
		return
	}
	slow := v.flight.Slowest()
	if len(slow) == 0 || now.Sub(v.still) < stillEvery {
		return
	}
	if v.still.IsZero() && now.Sub(slow[0].At) < stillEvery {
		return // nothing slow yet
	}
	v.still = now
	var names []string
	for _, r := range slow[:min(3, len(slow))] {
		names = append(names, printer.Sprintf("%s %s (%s, %s)", target.Describe(r.Place, r.Stack), r.Path(), r.Type, age(now, r.At)))
	}
	line := printer.Sprintf("  %s  still in progress, slowest first: ", clockTime(now.Sub(v.start))) + strings.Join(names, ", ")
	if len(slow) > 3 {
		line += fmt.Sprintf(" and %d more", len(slow)-3)
	}
	printLine(v.w, "", line)
}

func (v *textView) detached(string, string, string) { v.close() }

func (v *textView) close() { v.clear() }

// SGR colors of the live view.
const (
	red    = "\x1b[31m"
	green  = "\x1b[32m"
	yellow = "\x1b[1;33m"
	dim    = "\x1b[2m"
	reset  = "\x1b[0m"
)

// print prints a line of the run, above the live footer.
func (v *textView) print(line, sgr string) {
	v.clear()
	if !v.color {
		sgr = ""
	}
	printLine(v.w, sgr, line)
}

// printLine prints a line of the view (made with printer.Sprintf, so that what CloudFormation
// and the bundle said in it is escaped already) in the color sgr ("" for none).
func printLine(w io.Writer, sgr, line string) {
	if sgr == "" {
		printer.Fprintln(w, line)
		return
	}
	printer.Fprintf(w, sgr+"%s"+reset+"\n", line)
}

// clear erases the live footer: up to its first line, then to the end of the screen.
func (v *textView) clear() {
	if v.footer > 0 {
		printer.Fprintf(v.w, "\x1b[%dA\r\x1b[J", v.footer)
		v.footer = 0
	}
}

// draw redraws the live footer: the stacks in flight with what they do, and under each
// its resources in progress, the slowest first, the slowest of all marked.
func (v *textView) draw(now time.Time) {
	v.clear()
	if v.doc == nil {
		return
	}
	cols, rows := 80, 24
	if c, r, err := term.GetSize(v.fd); err == nil && c > 0 {
		cols, rows = c, r
	}
	limit := max(3, min(maxFooter, rows-2))
	type line struct{ text, sgr string }
	var lines []line
	slow := v.flight.Slowest()
	byStack := map[string][]follow.Resource{}
	for _, r := range slow {
		byStack[r.Stack] = append(byStack[r.Stack], r)
	}
	var stacks []*runstate.Stack
	for _, name := range v.doc.Run.Names() {
		if s := v.doc.Run.Stacks[name]; s.Phase.InFlight() && s.Phase != runstate.Ready {
			stacks = append(stacks, s)
		}
	}
	slices.SortStableFunc(stacks, func(a, b *runstate.Stack) int { return a.PhaseSince.Compare(b.PhaseSince) })
	for _, s := range stacks {
		step := follow.Step{Stack: s.Name, Place: s.At, Phase: s.Phase, Changes: s.Changes}
		doing := step.Doing()
		if st := v.rolling[s.Name]; st != "" && s.Phase == runstate.Executing {
			doing = "rolling back (" + st + ")"
		}
		lines = append(lines, line{printer.Sprintf("    %-*s  %s  %s", v.width, step.Name(), doing, age(now, s.PhaseSince)), ""})
		for _, r := range byStack[s.Name] {
			l := line{printer.Sprintf("      %s  %s  %s  %s", r.Path(), r.Type, r.Status, age(now, r.At)), ""}
			if r.Key() == slow[0].Key() {
				l.text += "  <- slowest"
				l.sgr = yellow
			}
			lines = append(lines, l)
		}
	}
	head := fmt.Sprintf("  %s  %d %s in flight; Ctrl-C stops following (the run goes on)", clockTime(now.Sub(v.start)), len(stacks), plural(len(stacks), "stack"))
	if len(lines) > limit-1 {
		more := len(lines) - (limit - 2)
		lines = append(lines[:limit-2], line{fmt.Sprintf("    ... and %d more", more), ""})
	}
	lines = append([]line{{head, dim}}, lines...)
	for _, l := range lines {
		sgr := l.sgr
		if !v.color {
			sgr = ""
		}
		printLine(v.w, sgr, truncate(l.text, cols-1))
	}
	v.footer = len(lines)
}

// truncate cuts s to n runes at most.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(0, n-1)]) + "…"
}

// age is how long since t, as a clock reads: 12s, 3m04s.
func age(now, t time.Time) string {
	d := max(0, now.Sub(t)).Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}
