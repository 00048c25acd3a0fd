package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/diff"
	"github.com/cairn-dev/cairn/internal/printer"
)

func init() { commands = append(commands, newDiffCmd) }

func newDiffCmd() *cobra.Command {
	var deployment, varFile string
	var cf cairnFlags
	cmd := &cobra.Command{
		Use:   "diff PATH --deployment NAME",
		Short: "Template and parameter differences between PATH and what is applied, offline",
		Long: `Diff compares the bundle at PATH with what the persistent graph says deployment NAME
applied, as Stacker's diff does, without creating change sets or calling CloudFormation:
per stack, a unified diff of the template's text (read from the applied bundle, whose
version the graph records) and the parameters that differ. Values reading another stack's
output (${output stack::Output}) are shown as written, with what the graph's outputs give
them now, and values reading variables or files (${var}, ${file}) with what those read
(--var-file as push and plan take it); NoEcho values are never shown. Stacks new in PATH, and applied stacks PATH no
longer has (the next run deletes them), are listed.

Exit codes: 0 no differences, 1 differences (as diff(1)), 2 an error.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if deployment == "" {
				return usageError{cmd: cmd, msg: "--deployment NAME is required (the deployment whose applied stacks PATH is compared with)"}
			}
			if err := layout.CheckDeployment(deployment); err != nil {
				return fmt.Errorf("%s: %w", cmd.Name(), err)
			}
			b, err := bundle.Open(args[0])
			if err != nil {
				printer.Fprintln(cmd.ErrOrStderr(), err)
				return exitError{2}
			}
			opts := config.LoadOptions{Deployment: deployment}
			if varFile != "" {
				// As push and plan read it, so the comparison is with what they would upload.
				if opts.Vars, err = os.ReadFile(varFile); err != nil {
					printer.Fprintln(cmd.ErrOrStderr(), fmt.Errorf("--var-file: %w", err))
					return exitError{2}
				}
				opts.VarsFile = varFile
			}
			local, err := opts.Load(b)
			var errs config.Errors
			switch {
			case errors.As(err, &errs):
				for _, e := range errs {
					printer.Fprintln(cmd.ErrOrStderr(), e)
				}
				return exitError{2}
			case err != nil:
				printer.Fprintln(cmd.ErrOrStderr(), err)
				return exitError{2}
			}
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			rd := &diff.Reader{S3: c.S3, Bucket: c.bucket, State: c.state, Home: c.Home(cmd.Context())}
			r, err := rd.Diff(cmd.Context(), deployment, args[0], local)
			if err != nil {
				return err
			}
			if err := r.Write(cmd.OutOrStdout()); err != nil {
				return err
			}
			if r.Changed() {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&deployment, "deployment", "", "deployment name: PATH is compared with what it applied")
	varFileFlag(cmd, &varFile)
	cf.add(cmd)
	return cmd
}
