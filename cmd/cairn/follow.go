package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/reach"
	runstate "github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/target"
	"github.com/cairn-dev/cairn/internal/template"
)

func init() { commands = append(commands, newFollowCmd) }

func newFollowCmd() *cobra.Command {
	var cf cairnFlags
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "follow NAME [RUN]",
		Short: "Follow a run of the deployment (the newest, or RUN) as --wait does, running or finished",
		Long: `Follow re-attaches to a run of deployment NAME: the newest one, or the run RUN (its id, as
` + "`cairn status NAME`" + ` lists them). It shows the run as --wait does: each stack's steps, each resource's
status as it changes (from the stacks' CloudFormation events, nested stacks included), a
failing resource's reason as soon as it fails, and on a terminal the resources in flight,
the slowest first; then a summary and the next command when the run failed. A run that
already ended is shown as it ended.

Ctrl-C stops following, never the run: it goes on in the deployer, and the command to
follow it again is printed. With --json the run is a stream of events, one JSON object a
line (see docs/following.md). Exit codes: 0 succeeded, 1 failed, 3 superseded, 4 timed out,
130 interrupted.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			deployment := args[0]
			t, err := findRun(cmd.Context(), c, deployment, args[1:])
			if err != nil {
				return err
			}
			got, err := wf.follow(cmd, c, t, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			return outcome(cmd.OutOrStdout(), got)
		},
	}
	cf.add(cmd)
	wf.addFollow(cmd)
	return cmd
}

// findRun says which run a follow names: runID[0] when given, else the deployment's
// newest; a deployment with an upload and no run yet, its first run once it starts. An
// unknown deployment or run is refused with the runs it has.
func findRun(ctx context.Context, c *cairn, deployment string, runID []string) (follow.Target, error) {
	t := follow.Target{Deployment: deployment}
	ids, err := c.history.RunIDs(ctx, deployment)
	if err != nil {
		return t, err
	}
	if len(ids) == 0 {
		known, err := objects.Deployments(ctx, c.S3, c.bucket)
		if err != nil {
			return t, err
		}
		if len(runID) == 0 && slices.Contains(known, deployment) {
			return t, nil // pushed, its run not started yet: the first one to start
		}
		return t, refuse("deployment %s has no runs in s3://%s: push a bundle with `cairn push PATH --deployment %s`", deployment, c.bucket, deployment)
	}
	t.Run = ids[0]
	if len(runID) > 0 {
		t.Run = runID[0]
		if !slices.Contains(ids, t.Run) {
			return t, refuse("deployment %s has no run %s%s; its newest runs: %s (see `cairn status %s`)",
				deployment, t.Run, template.Suggest(t.Run, ids), strings.Join(ids[:min(3, len(ids))], ", "), deployment)
		}
	}
	return t, nil
}

// waitFlags are the flags of commands that follow a run.
type waitFlags struct {
	wait, json    bool
	timeout, poll time.Duration
	// stdout is where the JSON stream goes: the command's own output, which then prints
	// its words to stderr.
	stdout io.Writer
}

func (f *waitFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVar(&f.wait, "wait", false, "follow the "+what+" and exit with its result")
	f.flags(cmd, "with --wait, ")
}

// addFollow adds the flags of a command that always follows a run (cairn follow).
func (f *waitFlags) addFollow(cmd *cobra.Command) {
	f.wait = true
	f.flags(cmd, "")
}

func (f *waitFlags) flags(cmd *cobra.Command, with string) {
	cmd.Flags().DurationVar(&f.timeout, "timeout", time.Hour, with+"how long to follow it")
	cmd.Flags().DurationVar(&f.poll, "poll", 2*time.Second, with+"how often to read the bucket and the stacks' events")
	cmd.Flags().BoolVar(&f.json, "json", false, "follow as --wait does, printing the run as JSON events, one a line (what is said about them goes to stderr)")
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if f.json {
			f.wait = true
			f.stdout = cmd.OutOrStdout()
			cmd.SetOut(cmd.ErrOrStderr())
		}
		return nil
	}
}

// follow follows the target's run with the one follower, showing it on w when w is not
// nil: as JSON events with --json (then it returns the run's exit code as an exitError,
// its end being an event too), live on a terminal, else line by line. A timeout says
// where to look and exits 4; Ctrl-C stops following (never the run), says how to follow
// it again and exits 130.
func (f *waitFlags) follow(cmd *cobra.Command, c *cairn, t follow.Target, w io.Writer) (*rundoc.Document, error) {
	var v view
	switch {
	case f.json:
		v = &jsonView{w: f.stdout}
	case w == nil:
	default:
		v = newTextView(w)
	}
	fl := &follow.Follower{Runs: c.history, Poll: f.poll, Timeout: f.timeout, Events: &follow.Events{At: c.stacksAt()}}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	var o follow.Observer
	if v != nil {
		o = v
	}
	doc, err := fl.Follow(ctx, t, o)
	if v != nil {
		v.close()
	}
	say := cmd.ErrOrStderr()
	if w != nil && !f.json {
		say = w
	}
	id := ""
	switch {
	case doc != nil:
		id = doc.Run.ID
	case v != nil:
		id = v.runID()
	}
	again := "cairn follow " + t.Deployment
	if id != "" {
		again += " " + id
	}
	switch {
	case ctx.Err() != nil && cmd.Context().Err() == nil:
		if v != nil {
			v.detached(id, again, "interrupted")
		}
		if id == "" {
			printer.Fprintf(cmd.ErrOrStderr(), "\nstopped following; the run of deployment %s had not started yet and starts on its own\nfollow it with: %s\n", t.Deployment, again)
		} else {
			printer.Fprintf(cmd.ErrOrStderr(), "\nstopped following; run %s of deployment %s goes on\nfollow it again with: %s\n", id, t.Deployment, again)
		}
		return nil, exitError{130}
	case errors.Is(err, follow.ErrTimeout):
		if v != nil {
			v.detached(id, again, "timeout")
		}
		printer.Fprintf(say, "gave up waiting after %s: the run goes on; follow it with `%s` or see `cairn status %s`\n", f.timeout, again, t.Deployment)
		return nil, exitError{4}
	case err != nil:
		return doc, err
	}
	if f.json && v != nil {
		return nil, v.(*jsonView).end(doc)
	}
	return doc, nil
}

// stacksAt reaches the CloudFormation of a stack's place as the deployer does (its role
// assumed with the caller's credentials, in its region), for reading its events.
func (c *cairn) stacksAt() func(ctx context.Context, t target.Spec) (follow.EventsAPI, error) {
	var mu sync.Mutex
	clients := map[target.Spec]follow.EventsAPI{}
	var rc *reach.Reacher
	return func(ctx context.Context, t target.Spec) (follow.EventsAPI, error) {
		mu.Lock()
		defer mu.Unlock()
		if t.Region == "" && t.RoleARN == "" {
			return c.CloudFormation, nil
		}
		t.ServiceRole = ""
		if api, ok := clients[t]; ok {
			return api, nil
		}
		if rc == nil {
			rc = reach.New(c.AWS, nil)
		}
		if t.RoleARN != "" {
			if _, err := rc.Assume(ctx, "follow", t.RoleARN, t.ExternalID); err != nil {
				return nil, err
			}
		}
		api := cloudformation.NewFromConfig(rc.Config("follow", t))
		clients[t] = api
		return api, nil
	}
}

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

// jsonView streams a run as JSON events, one object a line: see event.
type jsonView struct {
	w   io.Writer
	id  string
	dep string
}

// event is one line of the --json stream. Every event has "event" and "time"; the
// others are set by kind:
//
//	run       the run was found: run, deployment, kind (push, plan run, apply), plan, started_at
//	step      a stack reached a phase: stack, stack_name, account, region, action, phase, changes, reason, at, elapsed_seconds
//	resource  a resource reached a status: stack, stack_name, account, region, nested, logical_id, type, status, reason, at, elapsed_seconds, event_id
//	note      something the follower cannot show: message
//	end       the run ended: status, summary, reason, errors, refusals, report, next, exit
//	detached  the follower stopped first (why: interrupted, timeout): run, follow (the command to follow it again), exit
type event struct {
	Event      string    `json:"event"`
	Time       time.Time `json:"time"`
	Run        string    `json:"run,omitempty"`
	Deployment string    `json:"deployment,omitempty"`
	Kind       string    `json:"kind,omitempty"`
	Plan       string    `json:"plan,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero"`

	Stack     string    `json:"stack,omitempty"`
	StackName string    `json:"stack_name,omitempty"`
	Account   string    `json:"account,omitempty"`
	Region    string    `json:"region,omitempty"`
	Action    string    `json:"action,omitempty"`
	Phase     string    `json:"phase,omitempty"`
	Changes   int       `json:"changes,omitempty"`
	Nested    []string  `json:"nested,omitempty"`
	LogicalID string    `json:"logical_id,omitempty"`
	Type      string    `json:"type,omitempty"`
	Status    string    `json:"status,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	At        time.Time `json:"at,omitzero"`
	Elapsed   *float64  `json:"elapsed_seconds,omitempty"`
	EventID   string    `json:"event_id,omitempty"`

	Message  string         `json:"message,omitempty"`
	Summary  *summary       `json:"summary,omitempty"`
	Errors   []string       `json:"errors,omitempty"`
	Refusals []string       `json:"refusals,omitempty"`
	Report   string         `json:"report,omitempty"`
	Next     *runstate.Next `json:"next,omitempty"`
	Why      string         `json:"why,omitempty"`
	Follow   string         `json:"follow,omitempty"`
	Exit     *int           `json:"exit,omitempty"`
}

// summary is follow.Summary as the end event gives it.
type summary struct {
	Created   int     `json:"created"`
	Updated   int     `json:"updated"`
	Deleted   int     `json:"deleted"`
	Unchanged int     `json:"unchanged"`
	Failed    int     `json:"failed"`
	Blocked   int     `json:"blocked"`
	Duration  float64 `json:"duration_seconds"`
}

func seconds(d time.Duration) *float64 {
	s := d.Round(time.Millisecond).Seconds()
	return &s
}

func (j *jsonView) emit(e event) {
	e.Time = time.Now().UTC()
	if e.Run == "" {
		e.Run = j.id
	}
	_ = printer.WriteJSON(j.w, e, "")
}

func (j *jsonView) runID() string { return j.id }

func (j *jsonView) Found(doc *rundoc.Document) {
	j.id, j.dep = doc.Run.ID, doc.Run.Deployment
	j.emit(event{Event: "run", Deployment: doc.Run.Deployment, Kind: kindOf(doc), Plan: doc.Plan, StartedAt: doc.Run.StartedAt})
}

func (j *jsonView) Stepped(s follow.Step) {
	j.emit(event{Event: "step", Stack: s.Stack, StackName: s.StackName, Account: s.Place.Account, Region: s.Place.Region, Action: string(s.Action),
		Phase: string(s.Phase), Changes: s.Changes, Reason: s.Reason, At: s.At, Elapsed: seconds(s.Elapsed)})
}

func (j *jsonView) Changed(r follow.Resource) {
	j.emit(event{Event: "resource", Stack: r.Stack, StackName: r.StackName, Account: r.Place.Account, Region: r.Place.Region, Nested: r.Nested,
		LogicalID: r.LogicalID, Type: r.Type, Status: r.Status, Reason: r.Reason, At: r.At, Elapsed: seconds(r.Elapsed), EventID: r.EventID})
}

func (j *jsonView) Noted(note string) { j.emit(event{Event: "note", Message: note}) }

func (j *jsonView) Polled(*rundoc.Document, time.Time) {}

func (j *jsonView) detached(id, again, why string) {
	code := 130
	if why == "timeout" {
		code = 4
	}
	j.emit(event{Event: "detached", Run: id, Why: why, Follow: again, Exit: &code})
}

func (j *jsonView) close() {}

// end emits the run's end and returns its exit code, as outcome gives it, as an
// exitError: the caller prints nothing more.
func (j *jsonView) end(doc *rundoc.Document) error {
	r := doc.Run
	code := exitOf(doc)
	sum := follow.Summarize(doc)
	e := event{Event: "end", Deployment: r.Deployment, Status: string(r.Status),
		Summary: &summary{sum.Created, sum.Updated, sum.Deleted, sum.Unchanged, sum.Failed, sum.Blocked, *seconds(sum.Duration)}, Reason: r.Reason, Errors: doc.Errors, Refusals: doc.Refusals,
		Report: fmt.Sprintf("s3://%s/%s", doc.Bundle.Bucket, layout.RunReportKey(r.Deployment, r.ID)), Exit: &code}
	if n, ok := nextOf(doc, ""); ok {
		e.Next = &n
	}
	j.emit(e)
	return exitError{code} // exit 0 too: the end event said everything
}

// exitOf is a finished run's exit code: 0 succeeded, 3 superseded, 1 otherwise.
func exitOf(doc *rundoc.Document) int {
	switch doc.Run.Status {
	case runstate.Succeeded:
		return 0
	case runstate.Superseded:
		return 3
	}
	return 1
}

// nextOf is the next command after a run that did not succeed (run.NextStep), for the
// bundle at path when known.
func nextOf(doc *rundoc.Document, path string) (runstate.Next, bool) {
	return runstate.NextStep(runstate.Ending{Run: doc.Run, Statuses: doc.Statuses, Refusals: doc.Refusals, Errors: doc.Errors, Path: path})
}

// printNext ends a failure's report with the command to run next.
func printNext(w io.Writer, doc *rundoc.Document, path string) {
	if n, ok := nextOf(doc, path); ok {
		printer.Fprintf(w, "next: %s\n", n)
	}
}

// waitNewest follows, with wf.wait, deployment's newest run while it runs, and prints how
// it ended. Its result (an exitError for a run that did not succeed) is the command's,
// returned once it has shown the rest; err stops the command at once.
func waitNewest(cmd *cobra.Command, c *cairn, deployment string, wf waitFlags) (result, err error) {
	if !wf.wait {
		return nil, nil
	}
	ids, err := c.history.RunIDs(cmd.Context(), deployment)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	doc, err := c.history.Run(cmd.Context(), deployment, ids[0])
	if err != nil || doc.Run.Status != runstate.Running {
		return nil, nil
	}
	got, ferr := wf.follow(cmd, c, follow.Target{Deployment: deployment, Run: doc.Run.ID}, cmd.OutOrStdout())
	var ee exitError
	switch {
	case errors.As(ferr, &ee) && (ee.code == 130 || ee.code == 4):
		return nil, ferr
	case ferr != nil && got == nil:
		return ferr, nil // --json: the end event said it
	case ferr != nil:
		return nil, ferr
	}
	result = outcome(cmd.OutOrStdout(), got)
	printer.Fprintln(cmd.OutOrStdout())
	return result, nil
}
