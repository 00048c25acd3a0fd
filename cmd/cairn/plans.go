package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/overrides"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/review"
	"github.com/cairn-dev/cairn/internal/verdict"
)

func init() { commands = append(commands, newPlansCmd) }

func newPlansCmd() *cobra.Command {
	var cf cairnFlags
	var format, commit, comments string
	var limit int
	var latest bool
	cmd := &cobra.Command{
		Use:   "plans NAME [PLAN_ID]",
		Short: "List a deployment's plans with their status and age, or show one",
		Long: `Plans lists the newest plans of deployment NAME, newest first, with what became of each:
planned (waiting for approval), applied (when, by which run), stale (what it was made
against changed), superseded (a newer bundle was planned or pushed), expired (older than
7 days) or failed, and how old it is.

With PLAN_ID it prints that plan, as ` + "`cairn plan --wait`" + ` does (--format text, md or json).
With --latest it prints only the id of the newest plan that can still be approved (exit 1
when there is none), for scripts: cairn approve NAME "$(cairn plans NAME --latest)".
With --commit SHA it lists only the plans made from that commit (the commit checked out,
or a pull request's head), abbreviated to 7 hex digits or more.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			render, err := planRenderer(format, false)
			if err != nil {
				return usageError{cmd: cmd, msg: err.Error()}
			}
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			ctx, out, deployment := cmd.Context(), cmd.OutOrStdout(), args[0]
			r := c.review()
			if len(args) == 2 {
				e, err := r.Get(ctx, deployment, args[1])
				if err != nil {
					return asRefusal(err)
				}
				if err := render(out, shown(e)); err != nil {
					return err
				}
				if format == "text" && e.Status != review.Planned {
					printer.Fprintf(out, "status now: %s (%s)\n", e.Status, e.Why)
				}
				return nil
			}
			if comments != "" {
				return writeComments(cmd, r, deployment, limit, comments)
			}
			var entries []review.Entry
			if commit != "" {
				entries, err = r.ForCommit(ctx, deployment, commit, limit)
			} else {
				entries, err = r.List(ctx, deployment, limit)
			}
			if err != nil {
				return err
			}
			if latest {
				return printLatest(cmd, c, deployment, entries)
			}
			if len(entries) == 0 && commit != "" {
				return refuse("deployment %s has no plans made from commit %s (see `cairn plans %s`)", deployment, commit, deployment)
			}
			if len(entries) == 0 {
				return refuse("deployment %s has no plans: make one with `cairn plan PATH --deployment %s`", deployment, deployment)
			}
			tw := newTable(out, 0)
			printer.Fprintf(tw, "PLAN\tSTATUS\tAGE\tCHANGES\tBUNDLE\tDETAIL\n")
			for _, e := range entries {
				p := e.Plan
				changes := fmt.Sprintf("%d %s", len(p.Changing()), plural(len(p.Changing()), "stack"))
				if p.Destroy {
					changes += " (destroy)"
				}
				bundle := report.ShortVersion(p.Bundle.VersionID)
				if p.Bundle.GitRef != "" {
					bundle += " git " + report.ShortSum(p.Bundle.GitRef)
				}
				if n := p.Bundle.Source.PullRequest; n > 0 {
					bundle += fmt.Sprintf(" #%d", n)
				}
				detail := e.Why
				if e.Status == review.Planned {
					detail = fmt.Sprintf("cairn approve %s %s", deployment, p.ID)
					denied, err := deniedRules(cmd, c, deployment, p)
					if err != nil {
						return err
					}
					if len(denied) > 0 {
						detail = fmt.Sprintf("denied by policy (%s): `cairn plans %s %s` says how to proceed", strings.Join(denied, ", "), deployment, p.ID)
					}
				}
				printer.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, e.Status, review.Age(e.Age), changes, dash(bundle), detail)
			}
			return tw.Flush()
		},
	}
	cf.add(cmd)
	cmd.Flags().StringVar(&format, "format", "text", "with PLAN_ID, how to print the plan: text, md or json")
	cmd.Flags().IntVar(&limit, "limit", 20, "list at most this many plans (0: all)")
	cmd.Flags().BoolVar(&latest, "latest", false, "print only the id of the newest plan that can be approved")
	cmd.Flags().StringVar(&commit, "commit", "", "only the plans made from this commit (or a pull request's head commit)")
	cmd.Flags().StringVar(&comments, "comments", "", "write into this directory the comment of each pull request's newest plan, as it stands now (PR.md), and print each pull request and file")
	return cmd
}

// shown is e's plan as its comment shows it now: with the status a reviewer reads (stale,
// with why, when the plan's document still says planned).
func shown(e review.Entry) *plan.Document {
	p := *e.Plan
	if e.Status == review.Stale || e.Status == review.Expired && p.Status == plan.Planned {
		p.Status, p.Reason = plan.Status(e.Status), e.Why
	}
	return &p
}

// writeComments writes the comment of the newest plan of each pull request among the
// limit newest plans of deployment into dir, as PR.md, and prints "PR FILE" for each:
// what CI posts again after an apply, so each pull request's comment says whether its plan
// was applied, went stale (why, and what to do) or was superseded.
func writeComments(cmd *cobra.Command, r *review.Reader, deployment string, limit int, dir string) error {
	entries, err := r.List(cmd.Context(), deployment, limit)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	done := map[int]bool{}
	for _, e := range entries {
		n := e.Plan.Bundle.Source.PullRequest
		if n <= 0 || done[n] || e.Status == review.Late {
			continue // a late plan's comment would hide the merged content's, at the gate
		}
		done[n] = true
		var b bytes.Buffer
		if err := report.PlanComment(&b, shown(e), 0); err != nil {
			return err
		}
		file := filepath.Join(dir, fmt.Sprintf("%d.md", n))
		if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
			return err
		}
		printer.Fprintf(cmd.OutOrStdout(), "%d %s\n", n, file)
	}
	return nil
}

// printLatest prints the id of the newest of entries waiting for approval, when no policy
// denial of it stands once the overrides written for it are counted; a denied one is
// refused, naming its rules and the way out, rather than passed over for an older plan
// (a script approving what --latest prints would approve another change than it made).
func printLatest(cmd *cobra.Command, c *cairn, deployment string, entries []review.Entry) error {
	for _, e := range entries {
		if e.Status != review.Planned {
			continue
		}
		rules, err := deniedRules(cmd, c, deployment, e.Plan)
		if err != nil {
			return err
		}
		if len(rules) > 0 {
			return refuse("deployment %s has no plan that can be approved: its newest, %s, is denied by policy (%s): see `cairn plans %s %s`; fix the change and plan again, or have the policy owner override the rule (`cairn policy override %s %s RULE --reason TEXT`)",
				deployment, e.Plan.ID, strings.Join(rules, ", "), deployment, e.Plan.ID, deployment, e.Plan.ID)
		}
		printer.Fprintln(cmd.OutOrStdout(), e.Plan.ID)
		return nil
	}
	return refuse("deployment %s has no plan waiting for approval: make one with `cairn plan PATH --deployment %s`", deployment, deployment)
}

// deniedRules are the rules whose denial of plan p stands, the overrides written for it
// counted: none when p was not judged or nothing denies it.
func deniedRules(cmd *cobra.Command, c *cairn, deployment string, p *plan.Document) ([]string, error) {
	if p.Policy == nil || !p.Policy.Denied {
		return nil, nil
	}
	v, _, err := overrides.Check(cmd.Context(), c.S3, c.bucket, deployment, p.ID, p.Policy)
	if err != nil {
		return nil, err
	}
	var rules []string
	if v.Error != "" {
		rules = append(rules, verdict.ErrorRule)
	}
	for _, r := range v.Standing() {
		if !slices.Contains(rules, r.Rule) {
			rules = append(rules, r.Rule)
		}
	}
	return rules, nil
}
