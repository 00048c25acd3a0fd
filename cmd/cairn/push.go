package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/installation"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/upload"
)

func init() { commands = append(commands, newPushCmd) }

func newPushCmd() *cobra.Command {
	var deployment, varFile string
	var cf cairnFlags
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "push PATH --deployment NAME",
		Short: "Upload a bundle to deployments/NAME.zip, which starts a deploy run",
		Long: `Push validates the bundle at PATH (a directory with cairn.yaml, a .zip, or a single YAML
file), zips it and uploads it to s3://BUCKET/deployments/NAME.zip, with the git ref and
remote as object metadata when PATH is inside a git work tree. The upload starts a run.

With --wait it follows the run, printing each stack's steps and each resource's status as
they happen with the time since the run started (on a terminal, live, the resources in
flight slowest first), then a summary and, when it failed, the next command; it exits with
the run's result: 0 succeeded, 1 failed, 3 superseded by a newer upload, 4 timed out. Ctrl-C
stops following, not the run (exit 130): ` + "`cairn follow NAME`" + ` re-attaches. --json prints the run as
JSON events, one a line.

The bucket comes from --bucket, ` + installation.BucketEnv + `, or the CloudFormation export ` + installation.BucketExport + `.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkDeployment(cmd, deployment, layout.DeploymentKey("NAME")); err != nil {
				return err
			}
			ctx, stdout := cmd.Context(), cmd.OutOrStdout()
			b, err := prepare(cmd.ErrOrStderr(), args[0], deployment, upload.Options{VarFile: varFile, Bucket: cf.known()})
			if err != nil {
				return err
			}
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			var before []string
			if wf.wait {
				if before, err = c.history.RunIDs(ctx, deployment); err != nil {
					return err
				}
			}
			since := time.Now().Add(-time.Minute)
			key := layout.DeploymentKey(deployment)
			version, err := upload.Put(ctx, c.S3, c.bucket, key, b.Zip, b.Metadata)
			if err != nil {
				return fmt.Errorf("push: %w", err)
			}
			printer.Fprintf(stdout, "pushed %s to %s\n", args[0], uploaded(c.bucket, key, version, b.Source))
			if !wf.wait {
				printer.Fprintf(stdout, "the upload starts a run: see it with `cairn status %s`\n", deployment)
				return nil
			}
			doc, err := wf.follow(cmd, c, follow.Target{Deployment: deployment, Version: version, Since: since, Before: before}, stdout)
			if err != nil {
				return err
			}
			return outcomeOf(stdout, doc, args[0])
		},
	}
	deploymentFlag(cmd, &deployment, layout.DeploymentKey("NAME"))
	varFileFlag(cmd, &varFile)
	cf.add(cmd)
	wf.add(cmd, "run")
	return cmd
}
