package main

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/awsclient"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/deploy"
	"github.com/cairn-dev/cairn/internal/report"
	runstate "github.com/cairn-dev/cairn/internal/run"
)

func init() { commands = append(commands, newPushCmd) }

// bucketExport is the CloudFormation export naming cairn's bucket, set by cairn's own stack.
const bucketExport = "cairn-bucket-name"

func newPushCmd() *cobra.Command {
	var deployment, bucket string
	var wait bool
	var timeout, poll time.Duration
	cmd := &cobra.Command{
		Use:   "push PATH --deployment NAME",
		Short: "Upload a bundle to deployments/NAME.zip, which starts a deploy run",
		Long: `Push validates the bundle at PATH (a directory with cairn.yaml, a .zip, or a single YAML
file), zips it and uploads it to s3://BUCKET/deployments/NAME.zip, with the git ref and
remote as object metadata when PATH is inside a git work tree. The upload starts a run.

With --wait it follows the run, printing one line per stack step, and exits with the
run's result: 0 succeeded, 1 failed, 3 superseded by a newer upload, 4 timed out.

The bucket comes from --bucket, CAIRN_BUCKET, or the CloudFormation export ` + bucketExport + `.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if deployment == "" {
				return errors.New("push: --deployment NAME is required (the upload goes to deployments/NAME.zip)")
			}
			if err := layout.CheckDeployment(deployment); err != nil {
				return fmt.Errorf("push: %w", err)
			}
			ctx := cmd.Context()
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			data, err := bundleZip(args[0], deployment, stderr)
			if err != nil {
				return err
			}
			awsCfg, err := awsclient.Load(ctx)
			if err != nil {
				return err
			}
			s3c := awsclient.S3(awsCfg)
			bucket, err := resolveBucket(ctx, bucket, cloudformation.NewFromConfig(awsCfg))
			if err != nil {
				return err
			}
			key := layout.DeploymentKey(deployment)
			meta := gitMetadata(args[0])
			out, err := s3c.PutObject(ctx, &s3.PutObjectInput{
				Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data),
				ContentType: aws.String("application/zip"), Metadata: meta,
			})
			if err != nil {
				return fmt.Errorf("push: upload s3://%s/%s: %w", bucket, key, err)
			}
			version := aws.ToString(out.VersionId)
			fmt.Fprintf(stdout, "pushed %s to s3://%s/%s", args[0], bucket, key)
			if version != "" {
				fmt.Fprintf(stdout, " (version %s)", version)
			}
			if ref := meta["git-ref"]; ref != "" {
				fmt.Fprintf(stdout, " at git %s", ref)
			}
			fmt.Fprintln(stdout)
			if !wait {
				return nil
			}
			return follow(ctx, s3c, bucket, deployment, version, time.Now().Add(-time.Minute), poll, timeout, stdout)
		},
	}
	cmd.Flags().StringVar(&deployment, "deployment", "", "deployment name: the upload goes to deployments/NAME.zip")
	cmd.Flags().StringVar(&bucket, "bucket", "", "cairn's bucket (default: $CAIRN_BUCKET, or the export "+bucketExport+")")
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the run and exit with its result")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Hour, "with --wait, how long to follow the run")
	cmd.Flags().DurationVar(&poll, "poll", 2*time.Second, "with --wait, how often to read the run document")
	return cmd
}

// bundleZip validates the bundle at path and returns the zip to upload.
func bundleZip(path, deployment string, stderr io.Writer) ([]byte, error) {
	b, err := bundle.Open(path)
	if err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	if _, err := (config.LoadOptions{Deployment: deployment}).Load(b); err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return nil, exitError{1}
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	switch {
	case info.IsDir():
		return bundle.Zip(path)
	case strings.EqualFold(filepath.Ext(path), ".zip"):
		return os.ReadFile(path)
	default:
		// A single YAML file travels as the cairn.yaml of a zip.
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: bundle.ConfigName, Method: zip.Deflate, Modified: time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)})
		if err == nil {
			_, err = w.Write(b.Config)
		}
		if err == nil {
			err = zw.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("push: zip %s: %w", path, err)
		}
		return buf.Bytes(), nil
	}
}

// gitMetadata returns the git ref and remote of the work tree holding path, or nothing.
func gitMetadata(path string) map[string]string {
	dir := path
	if info, err := os.Stat(path); err == nil && !info.IsDir() {
		dir = filepath.Dir(path)
	}
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	if git("rev-parse", "--is-inside-work-tree") != "true" {
		return nil
	}
	meta := map[string]string{}
	if ref := git("rev-parse", "HEAD"); ref != "" {
		meta["git-ref"] = ref
	}
	if remote := git("remote", "get-url", "origin"); remote != "" {
		meta["git-remote"] = remote
	}
	return meta
}

// exportLister is the part of the CloudFormation client that finds cairn's bucket.
type exportLister interface {
	ListExports(ctx context.Context, in *cloudformation.ListExportsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ListExportsOutput, error)
}

// resolveBucket returns the bucket from the flag, CAIRN_BUCKET or the export.
func resolveBucket(ctx context.Context, flag string, cfn exportLister) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if b := os.Getenv("CAIRN_BUCKET"); b != "" {
		return b, nil
	}
	in := &cloudformation.ListExportsInput{}
	for {
		out, err := cfn.ListExports(ctx, in)
		if err != nil {
			return "", fmt.Errorf("find cairn's bucket: list CloudFormation exports: %w (or pass --bucket, or set CAIRN_BUCKET)", err)
		}
		for _, e := range out.Exports {
			if aws.ToString(e.Name) == bucketExport {
				return aws.ToString(e.Value), nil
			}
		}
		if aws.ToString(out.NextToken) == "" {
			return "", fmt.Errorf("find cairn's bucket: no CloudFormation export %s: deploy cairn first (make deploy), or pass --bucket, or set CAIRN_BUCKET", bucketExport)
		}
		in.NextToken = out.NextToken
	}
}

// runDocs lists the run documents of deployment, newest first.
func runDocs(ctx context.Context, s3c *s3.Client, bucket, deployment string) ([]string, error) {
	all, err := layout.List(ctx, s3c, bucket, layout.RunsOf(deployment))
	if err != nil {
		return nil, fmt.Errorf("runs of %s: %w", deployment, err)
	}
	var keys []string
	for _, k := range all {
		if _, ok := layout.RunIDOf(deployment, k); ok {
			keys = append(keys, k)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(keys)))
	return keys, nil
}

func readRun(ctx context.Context, s3c *s3.Client, bucket, key string) (*deploy.Document, error) {
	out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("read s3://%s/%s: %w", bucket, key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("read s3://%s/%s: %w", bucket, key, err)
	}
	return deploy.DecodeDocument(body)
}

// findRunOf returns the run of the upload: the newest run of that version id, or for an
// unversioned bucket the newest run started after since.
func findRunOf(ctx context.Context, s3c *s3.Client, bucket, deployment, version string, since time.Time) (*deploy.Document, error) {
	keys, err := runDocs(ctx, s3c, bucket, deployment)
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		if i >= 20 {
			break
		}
		doc, err := readRun(ctx, s3c, bucket, k)
		if err != nil {
			continue
		}
		if version != "" && doc.Bundle.VersionID == version {
			return doc, nil
		}
		if version == "" && doc.Run.StartedAt.After(since) {
			return doc, nil
		}
	}
	return nil, nil
}

// follow polls the run of the upload until it ends, printing each stack step once.
func follow(ctx context.Context, s3c *s3.Client, bucket, deployment, version string, since time.Time, poll, timeout time.Duration, w io.Writer) error {
	deadline := time.Now().Add(timeout)
	seen := map[string]string{}
	announced := false
	for {
		doc, err := findRunOf(ctx, s3c, bucket, deployment, version, since)
		if err != nil {
			return err
		}
		if doc != nil {
			if !announced {
				fmt.Fprintf(w, "run %s of deployment %s\n", doc.Run.ID, deployment)
				announced = true
			}
			for _, name := range doc.Run.Names() {
				s := doc.Run.Stacks[name]
				line := fmt.Sprintf("%s %s", report.Action(s, doc.Decisions...), s.Phase)
				if seen[name] == line {
					continue
				}
				seen[name] = line
				fmt.Fprintf(w, "  %-20s %-8s %s", name, report.Action(s, doc.Decisions...), s.Phase)
				if s.Phase.Terminal() && s.Reason != "" {
					fmt.Fprintf(w, ": %s", s.Reason)
				}
				fmt.Fprintln(w)
			}
			if doc.Run.Status != runstate.Running {
				printOutcome(w, doc)
				switch doc.Run.Status {
				case runstate.Succeeded:
					return nil
				case runstate.Superseded:
					return exitError{3}
				default:
					return exitError{1}
				}
			}
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(w, "gave up waiting after %s: the run goes on; see `cairn status %s`\n", timeout, deployment)
			return exitError{4}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

func printOutcome(w io.Writer, doc *deploy.Document) {
	fmt.Fprintf(w, "run %s %s", doc.Run.ID, doc.Run.Status)
	if doc.Run.Reason != "" {
		fmt.Fprintf(w, ": %s", doc.Run.Reason)
	}
	fmt.Fprintln(w)
	for _, e := range doc.Errors {
		fmt.Fprintf(w, "  error: %s\n", e)
	}
	for _, e := range doc.Refusals {
		fmt.Fprintf(w, "  refused: %s\n", e)
	}
	for _, e := range doc.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", e)
	}
	for _, e := range doc.Notes {
		fmt.Fprintf(w, "  note: %s\n", e)
	}
	fmt.Fprintf(w, "report: s3://%s/%s\n", doc.Bundle.Bucket, layout.RunReportKey(doc.Run.Deployment, doc.Run.ID))
}
