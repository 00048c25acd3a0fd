package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/runpage"
)

func init() { commands = append(commands, newOpenCmd) }

func newOpenCmd() *cobra.Command {
	var cf cairnFlags
	var browser bool
	var expires time.Duration
	cmd := &cobra.Command{
		Use:   "open NAME [RUN]",
		Short: "Print the link to the page of a run or a plan (the newest run, or the one named); --browser opens it",
		Long: `Open prints the link to the HTML page of run RUN of deployment NAME, or of the newest run:
of the plan when RUN is a plan's id (a plan's id is its plan run's too), else of the run. The page shows the dependency graph coloured by status, a timeline
of the stacks with the critical path marked, each stack's details, the failures with their
reasons and the next command, and a plan's change sets, deletions and replacements first.

Against AWS the link is a presigned GET of the page beside the run's Markdown report
(runs/NAME/RUN.html, plans/NAME/PLAN.html), valid for --expires; a run writes its page as
it starts and finishes stacks (at most every 30 seconds), and that page reloads itself
until the run ends, when it is written a last time. Against a local cairn (` + "`cairn local up`" + `, AWS_ENDPOINT_URL set) it is the
page served by the emulator, rendered from the run document as it is asked for: a running
run's page reloads itself until the run ends.

With --browser the link is opened in the default browser (xdg-open, open or the Windows
URL handler) as well as printed.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if expires < time.Second || expires > 7*24*time.Hour {
				return usageError{cmd: cmd, msg: fmt.Sprintf("--expires %s: a presigned link lasts from 1s to 168h", expires)}
			}
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			page, err := c.history.Page(ctx, args[0], strings.Join(args[1:], ""))
			if errors.Is(err, history.ErrNotFound) || errors.Is(err, history.ErrNothingDeployed) {
				return refuse("%v", err)
			}
			if err != nil {
				return err
			}
			link, err := pageLink(ctx, c.S3, c.bucket, page, expires, awsclient.Endpoint())
			if err != nil {
				return err
			}
			printer.Fprintln(cmd.OutOrStdout(), link)
			if browser {
				if err := openBrowser(ctx, link); err != nil {
					return fmt.Errorf("open the page in a browser: %w; open the link above yourself", err)
				}
			}
			return nil
		},
	}
	cf.add(cmd)
	cmd.Flags().BoolVar(&browser, "browser", false, "open the link in the default browser too")
	cmd.Flags().DurationVar(&expires, "expires", time.Hour, "how long a presigned link (AWS) stays valid, at most 168h")
	return cmd
}

// pageLink is the address of the page: the local cairn's when cairn runs locally
// (endpoint, AWS_ENDPOINT_URL, is set), else a presigned GET of the page's object in
// bucket, which must exist.
func pageLink(ctx context.Context, c *s3.Client, bucket string, page history.Page, expires time.Duration, endpoint string) (string, error) {
	if endpoint != "" {
		return strings.TrimRight(endpoint, "/") + runpage.LocalPath + page.Key, nil
	}
	if page.Unwritten != "" {
		return "", refuse("%s", page.Unwritten)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(page.Key)}); err != nil {
		return "", refuse("no page s3://%s/%s (%v): runs and plans made before cairn wrote pages have none; `cairn status %s` and `cairn plans %s` show them as text", bucket, page.Key, err, page.Deployment, page.Deployment)
	}
	signed, err := s3.NewPresignClient(c).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(page.Key)}, s3.WithPresignExpires(expires))
	if err != nil {
		return "", fmt.Errorf("presign a link to s3://%s/%s: %w", bucket, page.Key, err)
	}
	return signed.URL, nil
}

// openBrowser opens link in the system's default browser.
func openBrowser(ctx context.Context, link string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.CommandContext(ctx, "open", link)
	case "windows":
		cmd = exec.CommandContext(ctx, "rundll32", "url.dll,FileProtocolHandler", link)
	default:
		cmd = exec.CommandContext(ctx, "xdg-open", link)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w %s", strings.Join(cmd.Args[:1], ""), err, strings.TrimSpace(string(out)))
	}
	return nil
}
