package main

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/overrides"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/review"
	"github.com/cairn-dev/cairn/internal/upload"
)

func init() { commands = append(commands, newApproveCmd) }

func newApproveCmd() *cobra.Command {
	var cf cairnFlags
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "approve NAME PLAN_ID",
		Short: "Approve a plan: its apply run executes exactly the reviewed change sets, or nothing",
		Long: `Approve reads the plan first and refuses at once (exit 1, nothing written) a plan id the
deployment does not have (listing its recent plans), a plan already applied (when, and by
which run), and one that is expired, superseded, stale or failed. Otherwise it creates
s3://BUCKET/approvals/NAME/PLAN_ID, which starts the apply run of the plan. The run checks
again that the plan is still fresh (graph generation, each stack's status and last update,
each change set, the bundle version, consumed outputs) and then executes exactly the
recorded change sets; a stale plan executes nothing and the report says why.

With --wait it follows the apply run, printing each stack's steps as they happen, then a
summary: exit 0 applied, 1 refused or failed, 4 timed out.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			return approve(cmd, c, args[0], args[1], wf, cmd.OutOrStdout())
		},
	}
	cf.add(cmd)
	wf.add(cmd, "apply run")
	return cmd
}

// approve checks plan id of deployment can be approved, creates its approval object and,
// with wf.wait, follows the apply run.
func approve(cmd *cobra.Command, c *cairn, deployment, id string, wf waitFlags, w io.Writer) error {
	ctx := cmd.Context()
	r := c.review()
	recent, err := r.List(ctx, deployment, 10)
	if err != nil {
		return err
	}
	var e review.Entry
	for _, x := range recent {
		if x.Plan.ID == id {
			e = x
		}
	}
	if e.Plan == nil {
		if e, err = r.Get(ctx, deployment, id); err != nil {
			return asRefusal(err)
		}
	}
	if err := e.Approvable(recent); err != nil {
		return refuse("%v", err)
	}
	if _, refusal, err := overrides.Check(ctx, c.S3, c.bucket, deployment, id, e.Plan.Policy); err != nil || refusal != "" {
		if err != nil {
			return err
		}
		return refuse("%s", refusal)
	}
	return approveEntry(cmd, c, e, wf, w)
}

// approveEntry creates the approval object of a plan that can be approved and, with
// wf.wait, follows its apply run.
func approveEntry(cmd *cobra.Command, c *cairn, e review.Entry, wf waitFlags, w io.Writer) error {
	ctx := cmd.Context()
	deployment, id := e.Plan.Deployment, e.Plan.ID
	before, err := c.history.RunIDs(ctx, deployment)
	if err != nil {
		return err
	}
	key, err := upload.Approve(ctx, c.S3, c.bucket, deployment, id, time.Now())
	if err != nil {
		return err
	}
	printer.Fprintf(w, "approved plan %s of deployment %s (s3://%s/%s): its apply run executes exactly the reviewed change sets\n", id, deployment, c.bucket, key)
	if !wf.wait {
		printer.Fprintf(w, "see the apply run with `cairn status %s`\n", deployment)
		return nil
	}
	doc, err := wf.follow(cmd, c, follow.Target{Deployment: deployment, Plan: id, Before: before}, w)
	if err != nil {
		return err
	}
	return outcome(w, doc)
}
