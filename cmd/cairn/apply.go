package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/overrides"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/review"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
	"github.com/cairn-dev/cairn/internal/upload"
)

func init() { commands = append(commands, newApplyCmd) }

func newApplyCmd() *cobra.Command {
	var deployment string
	var pr int
	var cf cairnFlags
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "apply PATH --deployment NAME",
		Short: "Apply PATH's content from reviewed plans: each stack it changes runs the change set reviewed for exactly that content, or nothing runs",
		Long: `Apply is the merge side of plan-on-the-pull-request. It zips the bundle at PATH as plan
does (deterministically: the same content from another checkout, with other file times,
gives the same sha256) and uploads it to s3://BUCKET/approvals/NAME.zip. Under the
deployment's lock, the deployer compares it with what is applied, stack by stack: every
stack it changes must be covered by a reviewed change set made for exactly that stack's
content, from a base that is still current (the stack and the outputs it consumes as
planned), in any open plan: several pull requests planned and merged one after the other
each bring their own. Then exactly those change sets run, in dependency order, and each
plan all of whose changes ran is marked applied. Where any stack is not covered, nothing
runs and the refusal names each such stack, why, and the reviewed way forward.

Content that is already applied (the persistent graph's bundle has its sha256) is not
uploaded: apply says so and exits 0, so a job retried after it succeeded succeeds. Unless
the content last pushed or merged is not applied (refused or failed) and this one, a
revert, is: then it is applied again, changing nothing, so the deployment records that
what was merged last is applied (status no longer says behind). With
--wait it follows the apply run: exit 0 applied, 1 refused or failed, 3 superseded by a
newer apply, 4 timed out.

--pr N names the pull request whose merge this content is (the workflow's apply job finds
it from the pushed commit): a plan of that pull request's own checkout uploaded after
this apply is late, and makes nothing (a job that ran after the merge, for a push made
just before it, cannot replace the plan of the merged content that waits for the gate).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if deployment == "" {
				return usageError{cmd: cmd, msg: "--deployment NAME is required (the deployment whose plans cover this content)"}
			}
			if err := layout.CheckDeployment(deployment); err != nil {
				return fmt.Errorf("%s: %w", cmd.Name(), err)
			}
			ctx, stdout := cmd.Context(), cmd.OutOrStdout()
			b, err := prepare(cmd.ErrOrStderr(), args[0], deployment, upload.Options{Source: provenance.Options{PullRequest: pr}, Bucket: cf.known()})
			if err != nil {
				return err
			}
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			g, err := appliedGraph(cmd, c, deployment)
			if err != nil {
				return err
			}
			if g != nil {
				if older, _ := provenance.Older(args[0], b.Source.Commit, g.Bundle.GitRef); older {
					// A job re-run on its original commit after a newer merge applied: its
					// content would undo that merge, and is never uploaded or planned.
					printer.Fprintf(stdout, "deployment %s: commit %s is older than the commit applied (%s, by run %s, graph generation %d): nothing to apply; GitHub re-runs a job on its original commit, so re-running an older apply job would undo what merged since: to go back, revert through a pull request (or `cairn rollback %s`)\n",
						deployment, report.ShortSum(b.Source.Commit), report.ShortSum(g.Bundle.GitRef), g.RunID, g.Generation, deployment)
					return nil
				}
			}
			if review.AlreadyApplied(g, b.SHA256) {
				runs, err := c.history.Runs(ctx, deployment, statusRuns)
				if err != nil {
					return err
				}
				last := history.Behind(runs, g)
				if last == nil {
					printer.Fprintf(stdout, "deployment %s: this content (bundle sha256 %s) is already applied (graph %s/%s at generation %d, by run %s): nothing to apply\n",
						deployment, report.ShortSum(b.SHA256), g.Namespace, g.Key, g.Generation, g.RunID)
					return nil
				}
				// A revert: the content merged last (refused or failed) is not applied, and
				// this content, merged now, is. Its apply run changes nothing and records
				// that what was merged is what is applied.
				what := "pushed"
				if last.Content {
					what = "merged"
				}
				printer.Fprintf(stdout, "deployment %s: this content (bundle sha256 %s) is applied, but the content last %s (bundle sha256 %s, run %s: %s) is not: applying this content again records that it is what was merged\n",
					deployment, report.ShortSum(b.SHA256), what, report.ShortSum(last.Bundle.SHA256), last.Run.ID, runStatus(last))
			}
			if refusal, err := deniedContent(cmd, c, deployment, b.SHA256); err != nil || refusal != "" {
				if err != nil {
					return err
				}
				return refuse("%s", refusal)
			}
			before, err := c.history.RunIDs(ctx, deployment)
			if err != nil {
				return err
			}
			key := layout.ApplyKey(deployment)
			version, err := upload.Put(ctx, c.S3, c.bucket, key, b.Zip, b.Metadata)
			if err != nil {
				return fmt.Errorf("apply: %w", err)
			}
			printer.Fprintf(stdout, "uploaded %s to %s: its content is applied from the reviewed plans made for it\n", args[0], uploaded(c.bucket, key, version, b.Source))
			if !wf.wait {
				printer.Fprintf(stdout, "see the apply run with `cairn status %s`\n", deployment)
				return nil
			}
			doc, err := wf.follow(cmd, c, follow.Target{Deployment: deployment, Version: version, Before: before}, stdout)
			if err != nil {
				return err
			}
			composed(cmd, c, stdout, doc)
			return outcome(stdout, doc)
		},
	}
	cmd.Flags().StringVar(&deployment, "deployment", "", "deployment name: its reviewed plans cover this content")
	cmd.Flags().IntVar(&pr, "pr", 0, "the pull request whose merge this content is: a plan of that pull request's own checkout made after it is late (nothing planned)")
	cf.add(cmd)
	wf.add(cmd, "apply run")
	return cmd
}

// appliedGraph is the persistent graph of deployment, as its newest run names it; nil when
// nothing was deployed yet.
func appliedGraph(cmd *cobra.Command, c *cairn, deployment string) (*state.Graph, error) {
	namespace, key, err := c.history.Graph(cmd.Context(), deployment)
	if errors.Is(err, history.ErrNothingDeployed) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	g, err := c.state.Show(cmd.Context(), namespace, key, "")
	if errors.Is(err, statestore.ErrNotFound) {
		return nil, nil
	}
	return g, err
}

// composed says which plans an apply run applied the entries of: "plan P of pull request
// #21 (made 5m ago): stacks api".
func composed(cmd *cobra.Command, c *cairn, w io.Writer, doc *rundoc.Document) {
	for _, id := range doc.Plans {
		p, err := c.history.Plan(cmd.Context(), doc.Run.Deployment, id)
		if err != nil {
			continue
		}
		var stacks []string
		for name, origin := range doc.Origins {
			if strings.HasSuffix(origin, "plan "+p.ID) {
				stacks = append(stacks, name)
			}
		}
		slices.Sort(stacks)
		whose := p.Change()
		if whose == "" {
			whose = "a checkout without git"
		}
		printer.Fprintf(w, "plan %s of %s (made %s): its reviewed entries for %s\n", p.ID, whose, ago(time.Now(), p.CreatedAt), strings.Join(stacks, ", "))
	}
}

// deniedContent is the policy refusal of applying content sha256 of deployment: "" unless
// its open plans made for exactly that content all have a denial no override lifts (the
// deployer checks every plan an apply executes again, whatever the CLI says).
func deniedContent(cmd *cobra.Command, c *cairn, deployment, sha256 string) (string, error) {
	recent, err := c.review().List(cmd.Context(), deployment, 10)
	if err != nil {
		return "", err
	}
	var refusal string
	for _, e := range recent {
		if e.Status != review.Planned || e.Plan.Bundle.SHA256 != sha256 {
			continue
		}
		_, r, err := overrides.Check(cmd.Context(), c.S3, c.bucket, deployment, e.Plan.ID, e.Plan.Policy)
		if err != nil {
			return "", err
		}
		if r == "" {
			return "", nil // a plan of this content may apply
		}
		refusal = r
	}
	return refusal, nil
}
