package main

import (
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/replan"
	"github.com/cairn-dev/cairn/internal/report"
)

func init() { commands = append(commands, newRollbackCmd, newDestroyCmd) }

func (c *cairn) replanner() *replan.Planner {
	return &replan.Planner{S3: c.S3, Bucket: c.bucket, History: c.history, State: c.state}
}

func newRollbackCmd() *cobra.Command {
	var to, format string
	var approveToo bool
	var cf cairnFlags
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "rollback NAME [--to VERSION|GIT_REF]",
		Short: "Plan the earlier applied bundle against today's stacks (roll back by rolling forward)",
		Long: `Rollback finds in the persistent graph's history the bundle applied before the current one
(or the one --to names, by bundle version id, as whole or as shortened as cairn prints it,
or by git ref) and plans it again, against the stacks as they are today: the plan shows
exactly what returns. Apply it with --approve, or review it and run
` + "`cairn approve NAME PLAN_ID`" + `.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			deployment, stdout := args[0], cmd.OutOrStdout()
			render, err := planRenderer(format, true)
			if err != nil {
				return usageError{cmd: cmd, msg: err.Error()}
			}
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			before, err := c.history.RunIDs(cmd.Context(), deployment)
			if err != nil {
				return err
			}
			up, err := c.replanner().Rollback(cmd.Context(), deployment, to)
			if err != nil {
				return asRefusal(err)
			}
			printer.Fprintf(stdout, "planning bundle version %s (git %s) of deployment %s as %s\n",
				report.ShortVersion(up.Bundle.VersionID), dash(up.Bundle.GitRef), deployment, uploaded(c.bucket, up.PlanKey, up.Version, provenance.Source{}))
			target := follow.Target{Deployment: deployment, Version: up.Version, Before: before}
			if !wf.wait && !approveToo {
				return announcePlan(cmd, c, target, stdout)
			}
			planID, err := waitPlan(cmd, c, wf, target, render, stdout, stdout)
			if err != nil || !approveToo {
				return err
			}
			wf.wait = true
			return approve(cmd, c, deployment, planID, wf, stdout)
		},
	}
	cf.add(cmd)
	cmd.Flags().StringVar(&to, "to", "", "bundle version id or git ref to return to (default: the one applied before the current)")
	cmd.Flags().StringVar(&format, "format", "text", "how to print the plan: text, md or json")
	cmd.Flags().BoolVar(&approveToo, "approve", false, "approve the plan as soon as it is made, and follow the apply run")
	wf.add(cmd, "plan run")
	return cmd
}

func newDestroyCmd() *cobra.Command {
	var format string
	var cf cairnFlags
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "destroy NAME",
		Short: "Plan the deletion of every stack of the deployment's graph; it applies only through approval",
		Long: `Destroy plans the deletion of every stack in the deployment's persistent graph, dependents
first. Stacks that block it (termination protection, exports still imported) are named and
the plan fails. Nothing is deleted until the plan is approved with ` + "`cairn approve NAME PLAN_ID`" + `;
when the graph is empty its state object is removed.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			deployment, stdout := args[0], cmd.OutOrStdout()
			render, err := planRenderer(format, true)
			if err != nil {
				return usageError{cmd: cmd, msg: err.Error()}
			}
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			before, err := c.history.RunIDs(cmd.Context(), deployment)
			if err != nil {
				return err
			}
			up, err := c.replanner().Destroy(cmd.Context(), deployment)
			if err != nil {
				return asRefusal(err)
			}
			printer.Fprintf(stdout, "planning the deletion of the %d %s of graph %s/%s (%s)\n", up.Stacks, plural(up.Stacks, "stack"), up.Namespace, up.Key, uploaded(c.bucket, up.PlanKey, up.Version, provenance.Source{}))
			target := follow.Target{Deployment: deployment, Version: up.Version, Before: before}
			if !wf.wait {
				return announcePlan(cmd, c, target, stdout)
			}
			_, err = waitPlan(cmd, c, wf, target, render, stdout, stdout)
			return err
		},
	}
	cf.add(cmd)
	cmd.Flags().StringVar(&format, "format", "text", "with --wait, how to print the plan: text, md or json")
	wf.add(cmd, "plan run")
	return cmd
}
