package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/run"
)

// Retirable reports whether p still has something to retire: it waits for approval, or it
// failed after making change sets (which may have created REVIEW_IN_PROGRESS stacks).
func (p *Document) Retirable() bool {
	return p.Status == Planned || (p.Status == PlanFailed && len(p.Leftovers()) > 0)
}

// Retirement decides how plan hygiene retires p at now, plans staying approvable for ttl,
// when by is the newest plan made (nil: none is being made): an open plan of the same
// change as by (Supersedes) and older than it is Superseded; any other open plan stays
// open until it outlived ttl, then Expired. Plans of other pull requests coexist with by:
// an entry of theirs goes stale only when its own stack or an output it consumes changes.
// A plan with nothing left to retire, and by itself, are left alone (false).
func (p *Document) Retirement(by *Document, now time.Time, ttl time.Duration) (Status, bool) {
	switch {
	case !p.Retirable() || by != nil && p.ID == by.ID:
		return "", false
	case by != nil && by.Supersedes(p):
		return Superseded, true
	case now.Sub(p.CreatedAt) > ttl:
		return Expired, true
	}
	return "", false
}

// Supersedes reports whether p, a plan made after older, replaces it: both were made for
// the same change, the same pull request (by number) from the same head branch when both
// record one, or the same branch when neither names a pull request (a plan made from no
// git checkout at all counts as one branch, so such plans replace each other as a team's
// one working copy would). A plan naming pull request N from another branch (another
// job's --pr N) does not retire the plan reviewed on N: both stay open.
func (p *Document) Supersedes(older *Document) bool {
	if older == nil || older.ID >= p.ID || older.Deployment != p.Deployment {
		return false
	}
	if older.AfterMerge() && !p.AfterMerge() {
		// The plan of the merged content waits for the gate: nothing made from the pull
		// request's own checkout replaces it (such a plan is late: LateFor).
		return false
	}
	a, b := p.Bundle.Source, older.Bundle.Source
	if a.PullRequest > 0 && a.HeadRef != "" && b.HeadRef != "" && a.HeadRef != b.HeadRef {
		return false
	}
	return p.Change() == older.Change()
}

// AfterMerge reports whether p is a plan of a pull request's merged content, made after
// the merge (the workflow's apply job, where no reviewed plan covered what was merged):
// no one saw it on the pull request, so only an approval of exactly it (the gate) applies
// it; `cairn apply` never composes its entries.
func (p *Document) AfterMerge() bool {
	return p.Bundle.Source.Merged
}

// Merge is a pull request's merge as cairn saw it: the apply run of its merged content
// (cairn apply --pr N in the workflow's apply job, which only the main branch may start).
type Merge struct {
	PullRequest int
	Run         string
	At          time.Time
}

// Composable reports whether cairn apply may compose p's entries: it is open and not of
// merged content (AfterMerge: only an approval of exactly it applies that).
func (p *Document) Composable() bool { return p.Status == Planned && !p.AfterMerge() }

// LateFor says why a plan of src, uploaded at now, is late: it is of a pull request's own
// checkout (not merged content), and that pull request merged before (merges); "" when
// it is not. A late plan is never made: no one would review it before it applied (a job
// that ran after the merge, for a push made just before it), and it must not replace the
// plan of the merged content that waits for the gate.
func LateFor(src provenance.Source, merges []Merge, now time.Time) string {
	if src.PullRequest <= 0 || src.Merged {
		return ""
	}
	for _, m := range merges {
		if m.PullRequest == src.PullRequest && !m.At.After(now) {
			return fmt.Sprintf("pull request #%d was merged before this plan was made (its merged content went to apply run %s at %s): a plan of it made now would never be reviewed, so nothing was planned; the apply job applies what was merged from the reviewed plans, or plans it for the gate",
				src.PullRequest, m.Run, m.At.UTC().Format("15:04:05"))
		}
	}
	return ""
}

// Change names the change a plan was made for, as Supersedes compares them: "pull request
// #N", "branch REF", or "" (no git checkout).
func (p *Document) Change() string {
	src := p.Bundle.Source
	switch {
	case src.PullRequest > 0:
		return fmt.Sprintf("pull request #%d", src.PullRequest)
	case src.HeadRef != "":
		return "branch " + src.HeadRef
	case src.Ref != "":
		return "branch " + strings.TrimPrefix(src.Ref, "refs/heads/")
	}
	return ""
}

// Leftover is a change set a plan made, on the stack it was made for.
type Leftover struct {
	Stack       Stack
	ChangeSetID string
}

// Leftovers lists the change sets p made: the reviewed ones and, in a plan that failed,
// those of stacks that did not get as far as review (a CREATE change set that failed still
// made its REVIEW_IN_PROGRESS stack). "No changes" change sets are deleted by the plan run
// itself.
func (p *Document) Leftovers() []Leftover {
	var out []Leftover
	for _, s := range p.Stacks {
		id := s.ChangeSetID
		if rs := p.Run.Stacks[s.Name]; id == "" && rs != nil && rs.Phase != run.Unchanged {
			id = rs.ChangeSetID
		}
		if id != "" {
			out = append(out, Leftover{Stack: s, ChangeSetID: id})
		}
	}
	return out
}

// MadeOnlyFor reports whether the stack of leftover lo, as live shows it now (found: it
// exists), exists only for p and may be deleted with it: it is still the
// REVIEW_IN_PROGRESS stack p's CREATE change set made (the same stack id), its cairn:*
// tags name p's graph and stack, and keep (stack ids a newer plan or a run uses) does not
// hold it. Anything else is someone else's: only the change set goes. A stack that passes
// must still hold no change set but lo's before it is deleted.
func (p *Document) MadeOnlyFor(lo Leftover, live Live, found bool, keep map[string]bool) bool {
	s := lo.Stack
	return found && s.Action == Create && live.Status == "REVIEW_IN_PROGRESS" && live.StackID == s.StackID &&
		!keep[live.StackID] && live.OwnedBy(p.Namespace, p.GraphKey, s.Name)
}
