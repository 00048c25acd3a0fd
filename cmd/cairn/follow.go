package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/access"
	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/printer"
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
	var rc *access.Reacher
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
			rc = access.New(c.AWS, nil)
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
