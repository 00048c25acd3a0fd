package plan

import (
	"time"

	"github.com/cairn-dev/cairn/internal/run"
)

// Retirable reports whether p still has something to retire: it waits for approval, or it
// failed after making change sets (which may have created REVIEW_IN_PROGRESS stacks).
func (p *Document) Retirable() bool {
	return p.Status == Planned || (p.Status == PlanFailed && len(p.Leftovers()) > 0)
}

// Retirement decides how plan hygiene retires p when plan keepID is the one kept (plan ids
// sort by time, so a newer plan's id sorts after), at now, plans staying approvable for
// ttl: an open plan older than keepID is Superseded; a newer one (or any, when keepID is
// "") stays open until it outlived ttl, then Expired. A plan with nothing left to retire,
// and keepID itself, are left alone (false).
func (p *Document) Retirement(keepID string, now time.Time, ttl time.Duration) (Status, bool) {
	switch {
	case p.ID == keepID || !p.Retirable():
		return "", false
	case p.ID < keepID:
		return Superseded, true
	case now.Sub(p.CreatedAt) > ttl:
		return Expired, true
	}
	return "", false
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
