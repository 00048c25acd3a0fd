package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/report"
	runstate "github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/upload"
)

func init() { commands = append(commands, newPlanCmd) }

// planStart is how long `cairn plan` without --wait looks for the plan run to start, so
// it can print the plan's id.
const planStart = 5 * time.Second

func newPlanCmd() *cobra.Command {
	var deployment, format, varFile string
	var pr int
	var merged bool
	var cf cairnFlags
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "plan PATH --deployment NAME",
		Short: "Upload a bundle to plans/NAME.zip: change sets are created for review, nothing is executed",
		Long: `Plan validates the bundle at PATH and uploads it to s3://BUCKET/plans/NAME.zip. The upload
starts a plan run: under the deployment's lock it creates the change set of every stack
that changes, executes nothing, and records the plan at plans/NAME/PLAN_ID.json.

Without --wait it prints the plan's id once its run has started, and the commands that
show it and approve it. With --wait it prints the plan (--format text, md for a
pull-request comment, or json) and its id; approve exactly that plan with
` + "`cairn approve NAME PLAN_ID`" + `. Exit codes: 0 planned, 1 the plan failed, 3 superseded by a
newer upload, or late (nothing planned, nothing printed on stdout: --pr N merged before
this plan was made, and the plan of its merged content waits for the gate), 4 timed out.

--merged marks the bundle as merged content (of --pr N), planned after the merge (the
workflow's apply job does, where no reviewed plan covers what was merged): only an
approval of exactly that plan applies it (cairn apply never uses it), and a plan of the
pull request's own checkout made after it is late.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkDeployment(cmd, deployment, layout.PlanUploadKey("NAME")); err != nil {
				return err
			}
			render, err := planRenderer(format, true)
			if err != nil {
				return usageError{cmd: cmd, msg: err.Error()}
			}
			ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			b, err := prepare(stderr, args[0], deployment, upload.Options{VarFile: varFile, Source: provenance.Options{PullRequest: pr, Merged: merged}, Bucket: cf.known()})
			if err != nil {
				return err
			}
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			before, err := c.history.RunIDs(ctx, deployment)
			if err != nil {
				return err
			}
			since := time.Now().Add(-time.Minute)
			key := layout.PlanUploadKey(deployment)
			version, err := upload.Put(ctx, c.S3, c.bucket, key, b.Zip, b.Metadata)
			if err != nil {
				return fmt.Errorf("plan: %w", err)
			}
			// With a machine-readable plan on stdout, what is said about it goes to stderr.
			info := stderr
			if format == "text" {
				info = stdout
			}
			printer.Fprintf(info, "uploaded %s to %s\n", args[0], uploaded(c.bucket, key, version, b.Source))
			target := follow.Target{Deployment: deployment, Version: version, Since: since, Before: before}
			if !wf.wait {
				return announcePlan(cmd, c, target, info)
			}
			_, err = waitPlan(cmd, c, wf, target, render, stdout, info)
			return err
		},
	}
	deploymentFlag(cmd, &deployment, layout.PlanUploadKey("NAME"))
	varFileFlag(cmd, &varFile)
	cf.add(cmd)
	cmd.Flags().StringVar(&format, "format", "text", "with --wait, how to print the plan: text, md or json")
	cmd.Flags().IntVar(&pr, "pr", 0, "the pull request the plan is for (default: from GitHub Actions' environment)")
	cmd.Flags().BoolVar(&merged, "merged", false, "the bundle is merged content (of --pr N when given), planned after the merge: only an approval of exactly this plan applies it")
	wf.add(cmd, "plan run")
	return cmd
}

// planRenderer prints a plan in format; as a comment, its Markdown fits in a pull-request
// comment (pointing to the whole plan when it is longer).
func planRenderer(format string, comment bool) (func(io.Writer, *plan.Document) error, error) {
	switch format {
	case "text", "":
		return report.PlanText, nil
	case "md", "markdown":
		if comment {
			return func(w io.Writer, p *plan.Document) error { return report.PlanComment(w, p, 0) }, nil
		}
		return report.PlanMarkdown, nil
	case "json":
		return report.PlanJSON, nil
	}
	return nil, fmt.Errorf("--format %q: want text, md or json", format)
}

// announcePlan prints the id of the plan an upload started, once its run appears (or how
// to find it when it has not appeared yet), and the next commands.
func announcePlan(cmd *cobra.Command, c *cairn, t follow.Target, w io.Writer) error {
	fl := &follow.Follower{Runs: c.history, Poll: 250 * time.Millisecond, Timeout: planStart}
	doc, err := fl.Started(cmd.Context(), t)
	switch {
	case errors.Is(err, follow.ErrTimeout):
		printer.Fprintf(w, "the plan run has not started yet (another run may hold the lock): list the plans with `cairn plans %s`, then apply one with `cairn approve %s PLAN_ID`\n", t.Deployment, t.Deployment)
		return nil
	case err != nil:
		return err
	}
	id := doc.Run.ID
	printer.Fprintf(w, "plan %s is being made: show it with `cairn plans %s %s`, then apply exactly it with `cairn approve %s %s`\n", id, t.Deployment, id, t.Deployment, id)
	return nil
}

// waitPlan follows the plan run of an upload, prints its plan, and returns the plan's id.
func waitPlan(cmd *cobra.Command, c *cairn, wf waitFlags, t follow.Target, render func(io.Writer, *plan.Document) error, stdout, info io.Writer) (string, error) {
	doc, err := wf.follow(cmd, c, t, nil)
	if err != nil {
		return "", err
	}
	if doc.Run.Status == runstate.Superseded {
		printer.Fprintf(info, "plan run %s superseded: %s\n", doc.Run.ID, doc.Run.Reason)
		return "", exitError{3}
	}
	if doc.Late != "" {
		// Nothing to show or post: the merged content's plan, at the gate, is the one.
		printer.Fprintf(info, "plan run %s is late: %s\n", doc.Run.ID, doc.Late)
		return "", exitError{3}
	}
	p, err := c.history.Plan(cmd.Context(), t.Deployment, doc.Run.ID)
	if err != nil {
		return "", err
	}
	if err := render(stdout, p); err != nil {
		return "", err
	}
	printer.Fprintf(info, "plan id: %s\n", p.ID)
	if p.Status != plan.Planned {
		printNext(info, doc, "")
		return p.ID, exitError{1}
	}
	return p.ID, nil
}
