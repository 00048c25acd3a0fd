package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/review"
	"github.com/cairn-dev/cairn/internal/upload"
)

func init() { commands = append(commands, newApplyCmd) }

func newApplyCmd() *cobra.Command {
	var deployment string
	var cf cairnFlags
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "apply PATH --deployment NAME",
		Short: "Approve the reviewed plan made for PATH's content: exactly its change sets run, or nothing",
		Long: `Apply is the merge side of plan-on-the-pull-request: it zips the bundle at PATH as plan
does (deterministically: the same content from another checkout, with other file times,
gives the same sha256), finds the newest plan of deployment NAME made for that content,
and approves it, as ` + "`cairn approve NAME PLAN_ID`" + ` does. No plan id passes between the two CI
jobs: the content finds the plan.

Where no plan was made for this content, or the newest one is stale, applied, superseded,
expired or failed, apply refuses with exit 1 and the reason, and writes nothing: nothing
is executed and no change set is created. With --wait it follows the apply run: exit 0
applied, 1 refused or failed, 4 timed out.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if deployment == "" {
				return usageError{cmd: cmd, msg: "--deployment NAME is required (the deployment whose plan of this content is applied)"}
			}
			if err := layout.CheckDeployment(deployment); err != nil {
				return fmt.Errorf("%s: %w", cmd.Name(), err)
			}
			stdout := cmd.OutOrStdout()
			b, err := prepare(cmd.ErrOrStderr(), args[0], deployment, upload.Options{})
			if err != nil {
				return err
			}
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			e, err := c.review().ForContent(cmd.Context(), deployment, b.SHA256)
			var none *review.NoPlanError
			if errors.As(err, &none) {
				return refuse("%v", err)
			}
			if err != nil {
				return err
			}
			if done, err := appliedAlready(cmd, c, e, wf); done {
				return err
			}
			if err := e.Applicable(); err != nil {
				return refuse("%v", err)
			}
			p := e.Plan
			made := fmt.Sprintf("plan %s of deployment %s was made %s ago for this content (bundle sha256 %s)", p.ID, deployment, review.Age(e.Age), report.ShortSum(b.SHA256))
			if src := p.Bundle.Source.String(); src != "" {
				made += " from " + src
			}
			fmt.Fprintln(stdout, made)
			return approveEntry(cmd, c, e, wf, stdout)
		},
	}
	cmd.Flags().StringVar(&deployment, "deployment", "", "deployment name: its plan made for this content is approved")
	cf.add(cmd)
	wf.add(cmd, "apply run")
	return cmd
}
