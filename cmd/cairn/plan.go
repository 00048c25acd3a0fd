package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/awsclient"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	runstate "github.com/cairn-dev/cairn/internal/run"
)

func init() { commands = append(commands, newPlanCmd, newApproveCmd) }

// waitFlags are the flags of commands that follow a run.
type waitFlags struct {
	wait          bool
	timeout, poll time.Duration
}

func (f *waitFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVar(&f.wait, "wait", false, "follow the "+what+" and exit with its result")
	cmd.Flags().DurationVar(&f.timeout, "timeout", time.Hour, "with --wait, how long to follow it")
	cmd.Flags().DurationVar(&f.poll, "poll", 2*time.Second, "with --wait, how often to read the bucket")
}

func newPlanCmd() *cobra.Command {
	var deployment, bucket, format string
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "plan PATH --deployment NAME",
		Short: "Upload a bundle to plans/NAME.zip: change sets are created for review, nothing is executed",
		Long: `Plan validates the bundle at PATH and uploads it to s3://BUCKET/plans/NAME.zip. The upload
starts a plan run: under the deployment's lock it creates the change set of every stack
that changes, executes nothing, and records the plan at plans/NAME/PLAN_ID.json.

With --wait it prints the plan (--format text, md for a pull-request comment, or json)
and its id; approve exactly that plan with ` + "`cairn approve NAME PLAN_ID`" + `. Exit codes: 0
planned, 1 the plan failed, 3 superseded by a newer upload, 4 timed out.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if deployment == "" {
				return errors.New("plan: --deployment NAME is required (the upload goes to plans/NAME.zip)")
			}
			if err := layout.CheckDeployment(deployment); err != nil {
				return fmt.Errorf("plan: %w", err)
			}
			render, err := planRenderer(format)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			data, err := bundleZip(args[0], deployment, stderr)
			if err != nil {
				return err
			}
			s3c, bucket, err := bucketClient(ctx, bucket)
			if err != nil {
				return err
			}
			key := layout.PlanUploadKey(deployment)
			meta := gitMetadata(args[0])
			out, err := s3c.PutObject(ctx, &s3.PutObjectInput{
				Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data),
				ContentType: aws.String("application/zip"), Metadata: meta,
			})
			if err != nil {
				return fmt.Errorf("plan: upload s3://%s/%s: %w", bucket, key, err)
			}
			version := aws.ToString(out.VersionId)
			info := stderr
			if format == "text" {
				info = stdout
			}
			fmt.Fprintf(info, "uploaded %s to s3://%s/%s (version %s)\n", args[0], bucket, key, version)
			if !wf.wait {
				return nil
			}
			return waitPlan(ctx, s3c, bucket, deployment, version, wf, render, stdout, info)
		},
	}
	cmd.Flags().StringVar(&deployment, "deployment", "", "deployment name: the upload goes to plans/NAME.zip")
	cmd.Flags().StringVar(&bucket, "bucket", "", "cairn's bucket (default: $CAIRN_BUCKET, or the export "+bucketExport+")")
	cmd.Flags().StringVar(&format, "format", "text", "with --wait, how to print the plan: text, md or json")
	wf.add(cmd, "plan run")
	return cmd
}

func planRenderer(format string) (func(io.Writer, *plan.Document) error, error) {
	switch format {
	case "text", "":
		return report.PlanText, nil
	case "md", "markdown":
		return report.PlanMarkdown, nil
	case "json":
		return report.PlanJSON, nil
	}
	return nil, fmt.Errorf("--format %q: want text, md or json", format)
}

func bucketClient(ctx context.Context, flag string) (*s3.Client, string, error) {
	awsCfg, err := awsclient.Load(ctx)
	if err != nil {
		return nil, "", err
	}
	bucket, err := resolveBucket(ctx, flag, cloudformation.NewFromConfig(awsCfg))
	if err != nil {
		return nil, "", err
	}
	return awsclient.S3(awsCfg), bucket, nil
}

// waitPlan follows the plan run of an upload, then prints its plan.
func waitPlan(ctx context.Context, s3c *s3.Client, bucket, deployment, version string, wf waitFlags, render func(io.Writer, *plan.Document) error, stdout, info io.Writer) error {
	deadline := time.Now().Add(wf.timeout)
	for {
		doc, err := findRunOf(ctx, s3c, bucket, deployment, version, time.Now().Add(-time.Minute))
		if err != nil {
			return err
		}
		if doc != nil && doc.Run.Status != runstate.Running {
			if doc.Run.Status == runstate.Superseded {
				fmt.Fprintf(info, "plan run %s superseded: %s\n", doc.Run.ID, doc.Run.Reason)
				return exitError{3}
			}
			p, err := readPlan(ctx, s3c, bucket, deployment, doc.Run.ID)
			if err != nil {
				return err
			}
			if err := render(stdout, p); err != nil {
				return err
			}
			fmt.Fprintf(info, "plan id: %s\n", p.ID)
			if p.Status != plan.Planned {
				return exitError{1}
			}
			return nil
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(info, "gave up waiting after %s: the plan run goes on; see `cairn status %s`\n", wf.timeout, deployment)
			return exitError{4}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wf.poll):
		}
	}
}

func readPlan(ctx context.Context, s3c *s3.Client, bucket, deployment, id string) (*plan.Document, error) {
	key := layout.PlanKey(deployment, id)
	out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("read plan s3://%s/%s: %w (is %s a plan id of deployment %s?)", bucket, key, err, id, deployment)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("read plan s3://%s/%s: %w", bucket, key, err)
	}
	return plan.Decode(body)
}

func newApproveCmd() *cobra.Command {
	var bucket string
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "approve NAME PLAN_ID",
		Short: "Approve a plan: its apply run executes exactly the reviewed change sets, or nothing",
		Long: `Approve creates s3://BUCKET/approvals/NAME/PLAN_ID, which starts the apply run of the plan.
The run checks the plan is still fresh (graph generation, each stack's status and last
update, each change set, the bundle version, consumed outputs) and then executes exactly
the recorded change sets; a stale plan executes nothing and the report says why.

With --wait it follows the apply run: exit 0 applied, 1 refused or failed, 4 timed out.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			deployment, id := args[0], args[1]
			s3c, bucket, err := bucketClient(ctx, bucket)
			if err != nil {
				return err
			}
			return approve(ctx, s3c, bucket, deployment, id, wf, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&bucket, "bucket", "", "cairn's bucket (default: $CAIRN_BUCKET, or the export "+bucketExport+")")
	wf.add(cmd, "apply run")
	return cmd
}

// approve creates the approval object of a plan and, with wf.wait, follows the apply run.
func approve(ctx context.Context, s3c *s3.Client, bucket, deployment, id string, wf waitFlags, w io.Writer) error {
	if _, err := readPlan(ctx, s3c, bucket, deployment, id); err != nil {
		return err
	}
	existing, err := runDocs(ctx, s3c, bucket, deployment)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, k := range existing {
		seen[k] = true
	}
	key := layout.ApprovalKey(deployment, id)
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: strings.NewReader("approved " + time.Now().UTC().Format(time.RFC3339) + "\n")}); err != nil {
		return fmt.Errorf("approve: write s3://%s/%s: %w", bucket, key, err)
	}
	fmt.Fprintf(w, "approved plan %s of deployment %s (s3://%s/%s)\n", id, deployment, bucket, key)
	if !wf.wait {
		return nil
	}
	deadline := time.Now().Add(wf.timeout)
	for {
		keys, err := runDocs(ctx, s3c, bucket, deployment)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if seen[k] {
				continue
			}
			doc, err := readRun(ctx, s3c, bucket, k)
			if err != nil || doc.Plan != id || doc.Run.Status == runstate.Running {
				continue
			}
			fmt.Fprintf(w, "apply run %s of plan %s\n", doc.Run.ID, id)
			for _, name := range doc.Run.Names() {
				s := doc.Run.Stacks[name]
				fmt.Fprintf(w, "  %-20s %-8s %s", name, report.Action(s, doc.Decisions...), s.Phase)
				if s.Reason != "" {
					fmt.Fprintf(w, ": %s", s.Reason)
				}
				fmt.Fprintln(w)
			}
			printOutcome(w, doc)
			if doc.Run.Status != runstate.Succeeded {
				return exitError{1}
			}
			return nil
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(w, "gave up waiting after %s: see `cairn status %s`\n", wf.timeout, deployment)
			return exitError{4}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wf.poll):
		}
	}
}
