package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/review"
	runstate "github.com/cairn-dev/cairn/internal/run"
)

// appliedAlready answers `cairn apply` of content whose reviewed plan was applied before,
// as a CI job retried after the apply succeeded runs it: done, exit 0, when the apply run
// succeeded; followed (with --wait) when it still runs; refused with the next command when
// it failed. It reports false when the plan was not applied (apply goes on as usual).
func appliedAlready(cmd *cobra.Command, c *cairn, e review.Entry, wf waitFlags) (bool, error) {
	p := e.Plan
	if e.Status != review.Applied || p.AppliedBy == "" {
		return false, nil
	}
	doc, err := c.history.Run(cmd.Context(), p.Deployment, p.AppliedBy)
	if err != nil {
		return false, nil // the run cannot be read: apply refuses as for any applied plan
	}
	w := cmd.OutOrStdout()
	what := fmt.Sprintf("plan %s of deployment %s, the reviewed plan for this content, ", p.ID, p.Deployment)
	switch doc.Run.Status {
	case runstate.Succeeded:
		fmt.Fprintf(w, "%swas already applied by run %s (%s): nothing to do\n", what, doc.Run.ID, doc.Run.FinishedAt.UTC().Format(time.RFC3339))
		return true, nil
	case runstate.Running:
		fmt.Fprintf(w, "%sis being applied by run %s\n", what, doc.Run.ID)
		if !wf.wait {
			fmt.Fprintf(w, "follow it with `cairn follow %s %s`\n", p.Deployment, doc.Run.ID)
			return true, nil
		}
		got, err := wf.follow(cmd, c, follow.Target{Deployment: p.Deployment, Run: doc.Run.ID}, w)
		if err != nil {
			return true, err
		}
		return true, outcome(w, got)
	}
	why := fmt.Sprintf("%swas applied by run %s, which %s", what, doc.Run.ID, doc.Run.Status)
	if doc.Run.Reason != "" {
		why += " (" + doc.Run.Reason + ")"
	}
	why += ": a plan applies at most once"
	if n, ok := nextOf(doc, ""); ok {
		why += "; next: " + n.String()
	}
	return true, refuse("%s", why)
}
