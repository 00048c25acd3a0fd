package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/report"
	runstate "github.com/cairn-dev/cairn/internal/run"
)

func init() { commands = append(commands, newStatusCmd) }

func newStatusCmd() *cobra.Command {
	var bucket string
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show the latest run of a deployment and each of its stacks",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			deployment := args[0]
			awsCfg, err := awsclient.Load(ctx)
			if err != nil {
				return err
			}
			s3c := awsclient.S3(awsCfg)
			bucket, err := resolveBucket(ctx, bucket, cloudformation.NewFromConfig(awsCfg))
			if err != nil {
				return err
			}
			keys, err := runDocs(ctx, s3c, bucket, deployment)
			if err != nil {
				return err
			}
			if len(keys) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "deployment %s has no runs in s3://%s: push a bundle with `cairn push PATH --deployment %s`\n", deployment, bucket, deployment)
				return exitError{1}
			}
			doc, err := readRun(ctx, s3c, bucket, keys[0])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			r := doc.Run
			fmt.Fprintf(w, "deployment %s, run %s: %s\n", deployment, r.ID, r.Status)
			fmt.Fprintf(w, "bundle:   %s\n", doc.Bundle)
			fmt.Fprintf(w, "started:  %s\n", r.StartedAt.UTC().Format(time.RFC3339))
			if !r.FinishedAt.IsZero() {
				fmt.Fprintf(w, "finished: %s (%s)\n", r.FinishedAt.UTC().Format(time.RFC3339), r.FinishedAt.Sub(r.StartedAt).Round(time.Second))
			}
			if r.Reason != "" {
				fmt.Fprintf(w, "reason:   %s\n", r.Reason)
			}
			if len(r.Stacks) > 0 {
				tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "STACK\tCLOUDFORMATION\tACTION\tSTATUS\tCHANGES\tREASON")
				for _, name := range r.Names() {
					s := r.Stacks[name]
					changes := "-"
					if s.ChangeSetName != "" && s.Phase != runstate.Unchanged {
						changes = fmt.Sprint(s.Changes)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, s.StackName, report.Action(s, doc.Decisions...), s.Phase, changes, s.Reason)
				}
				tw.Flush()
			}
			for _, e := range doc.Errors {
				fmt.Fprintf(w, "error: %s\n", e)
			}
			for _, e := range doc.Refusals {
				fmt.Fprintf(w, "refused: %s\n", e)
			}
			for _, e := range doc.Warnings {
				fmt.Fprintf(w, "warning: %s\n", e)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&bucket, "bucket", "", "cairn's bucket (default: $CAIRN_BUCKET, or the export "+bucketExport+")")
	return cmd
}
