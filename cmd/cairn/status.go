package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/review"
	runstate "github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
)

func init() { commands = append(commands, newStatusCmd) }

// statusRuns is how many of the newest runs status reads and lists.
const statusRuns = 20

func newStatusCmd() *cobra.Command {
	var cf cairnFlags
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show what is deployed (the last push or apply) and each stack, and the recent runs",
		Long: `Status shows the deployment's state: the last push or apply run that acted on its stacks,
with each stack's action and status. Plan runs, uploads superseded by newer ones and
approvals refused before they changed anything are not the deployment's state: they are
listed among the recent runs, each with its kind (push, plan run, apply of plan P). An
open plan waiting for approval is named with the command that applies it.

With --wait, a run in progress is followed first, as ` + "`cairn follow NAME`" + ` does, and the
status is shown once it ends; the exit code is the run's (0 succeeded, 1 failed, 3
superseded, 4 timed out, 130 interrupted).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, deployment := cmd.Context(), args[0]
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			result, err := waitNewest(cmd, c, deployment, wf)
			if err != nil {
				return err
			}
			runs, err := c.history.Runs(ctx, deployment, statusRuns)
			if err != nil {
				return err
			}
			if len(runs) == 0 {
				return refuse("deployment %s has no runs in s3://%s: push a bundle with `cairn push PATH --deployment %s`", deployment, c.bucket, deployment)
			}
			w := cmd.OutOrStdout()
			now := time.Now()
			if doc := history.Deployed(runs); doc != nil {
				printDeployed(w, doc)
			} else {
				printer.Fprintf(w, "deployment %s: nothing deployed yet\n", deployment)
			}
			g, err := appliedGraph(cmd, c, deployment)
			if err != nil {
				return err
			}
			if doc := history.Deployed(runs); doc != nil && g != nil {
				printOutputs(w, true, graphOutputs(g, doc.Run))
			}
			if d := history.Behind(runs, g); d != nil {
				printBehind(w, d, g)
			}
			printer.Fprintf(w, "\nrecent runs:\n")
			tw := newTable(w, 0)
			printer.Fprintf(tw, "  RUN\tKIND\tSTATUS\tSTARTED\tSUMMARY\n")
			for i, doc := range runs {
				if i == 5 {
					break
				}
				printer.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", doc.Run.ID, kindOf(doc), runStatus(doc), ago(now, doc.Run.StartedAt), runSummary(doc))
			}
			tw.Flush()
			plans, err := c.review().List(ctx, deployment, 10)
			if err != nil {
				return err
			}
			for _, e := range plans {
				if e.Status == review.Planned {
					printer.Fprintf(w, "\nplan %s waits for approval (made %s): apply it with `cairn approve %s %s`\n", e.Plan.ID, ago(now, e.Plan.CreatedAt), deployment, e.Plan.ID)
					break
				}
			}
			return result
		},
	}
	cf.add(cmd)
	wf.add(cmd, "run in progress, if any, before showing the status,")
	return cmd
}

// printDeployed prints the run that stands for what is deployed, and its stacks.
func printDeployed(w io.Writer, doc *rundoc.Document) {
	r := doc.Run
	printer.Fprintf(w, "deployment %s: %s by run %s (%s)\n", r.Deployment, r.Status, r.ID, kindOf(doc))
	b := doc.Bundle
	bundle := fmt.Sprintf("s3://%s/%s", b.Bucket, b.Key)
	if b.VersionID != "" {
		bundle += " version " + report.ShortVersion(b.VersionID)
	}
	if b.SHA256 != "" {
		bundle += ", sha256 " + report.ShortSum(b.SHA256)
	}
	if b.GitRef != "" {
		bundle += ", git " + b.GitRef
	}
	if doc.Namespace != "" {
		printer.Fprintf(w, "graph:    %s/%s (`cairn state show %s %s`)\n", doc.Namespace, doc.GraphKey, doc.Namespace, doc.GraphKey)
	}
	printer.Fprintf(w, "bundle:   %s\n", bundle)
	printer.Fprintf(w, "started:  %s\n", r.StartedAt.UTC().Format(time.RFC3339))
	if !r.FinishedAt.IsZero() {
		printer.Fprintf(w, "finished: %s (%s)\n", r.FinishedAt.UTC().Format(time.RFC3339), r.FinishedAt.Sub(r.StartedAt).Round(time.Second))
	}
	if r.Reason != "" && r.Status != runstate.Succeeded {
		printer.Fprintf(w, "reason:   %s\n", r.Reason)
	}
	if len(r.Stacks) > 0 {
		tw := newTable(w, 2)
		printer.Fprintf(tw, "STACK\tCLOUDFORMATION\tACTION\tSTATUS\tCHANGES\tREASON\n")
		for _, name := range r.Names() {
			s := r.Stacks[name]
			changes := "-"
			if s.ChangeSetName != "" && s.Phase != runstate.Unchanged {
				changes = fmt.Sprint(s.Changes)
			}
			printer.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, s.Describe(), report.Action(s, doc.Decisions...), s.Phase, changes, s.Reason)
		}
		tw.Flush()
	}
	notes(w, "", doc)
	printNext(w, doc, "")
}

// printBehind says that the content last pushed or merged (run d's) is not what the graph
// records as applied, why, and what to do.
func printBehind(w io.Writer, d *rundoc.Document, g *state.Graph) {
	what := "pushed"
	if d.Content {
		what = "merged (cairn apply)"
	}
	applied := "nothing"
	if g != nil && g.Bundle.SHA256 != "" {
		applied = "bundle sha256 " + report.ShortSum(g.Bundle.SHA256)
		if g.Bundle.GitRef != "" {
			applied += ", git " + g.Bundle.GitRef
		}
	}
	src := "bundle sha256 " + report.ShortSum(d.Bundle.SHA256)
	if d.Bundle.GitRef != "" {
		src += ", git " + d.Bundle.GitRef
	}
	printer.Fprintf(w, "\nbehind: the content last %s (%s, run %s: %s) is not applied; the graph's applied content is %s\n", what, src, d.Run.ID, runStatus(d), applied)
	for _, r := range d.Refusals {
		printer.Fprintf(w, "  refused: %s\n", r)
	}
	switch {
	case d.Run.Status == runstate.Running:
		printer.Fprintf(w, "  its run is under way: follow it with `cairn status %s`\n", d.Run.Deployment)
	case d.Content:
		printer.Fprintf(w, "  plan this content (`cairn plan PATH --deployment %s`), review that plan, then approve exactly it (`cairn approve %s PLAN_ID`)\n", d.Run.Deployment, d.Run.Deployment)
	default:
		printer.Fprintf(w, "  see why in its report: s3://%s/%s\n", d.Bundle.Bucket, layout.RunReportKey(d.Run.Deployment, d.Run.ID))
	}
}

// runStatus is a run's status, "refused" for a run refused before it changed anything.
func runStatus(doc *rundoc.Document) string {
	if doc.Run.Status == runstate.RunFailed && len(doc.Refusals) > 0 && !history.Acted(doc) {
		return "refused"
	}
	return string(doc.Run.Status)
}

// runSummary is one line about a run: its counts, or why it changed nothing.
func runSummary(doc *rundoc.Document) string {
	switch {
	case doc.Run.Status == runstate.Running:
		return "running"
	case len(doc.Refusals) > 0:
		return doc.Refusals[0]
	case len(doc.Errors) > 0:
		return doc.Errors[0]
	case doc.Run.Status == runstate.Superseded:
		return doc.Run.Reason
	case history.KindOf(doc) == history.PlanRun:
		return "plan " + doc.Run.ID
	}
	return follow.Summarize(doc).String()
}
