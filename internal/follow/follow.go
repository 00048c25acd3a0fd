// Package follow follows one run of a deployment to its end, the way `--wait` shows it:
// it finds the run an upload or an approval started, reads its document every poll, and
// reports each stack's steps in the order they happened. Every command that waits for a
// run (push, plan, approve, rollback, destroy) uses the same Follower.
//
// The run itself lives in the bucket and goes on without the follower: giving up (a
// timeout, Ctrl-C) never changes it.
package follow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/target"
)

// ErrTimeout says the follower gave up before the run ended.
var ErrTimeout = errors.New("gave up waiting")

// Runs is what the follower reads; history.Store provides it.
type Runs interface {
	RunIDs(ctx context.Context, deployment string) ([]string, error)
	Run(ctx context.Context, deployment, id string) (*rundoc.Document, error)
}

// Target says which run to follow.
type Target struct {
	Deployment string
	// Version is the S3 version id of the upload whose run is followed.
	Version string
	// Since, for an upload to an unversioned bucket (no Version), picks the first run that
	// started at or after it.
	Since time.Time
	// Plan, for an approval, picks the apply run of that plan id.
	Plan string
	// Run names the run to follow by its id (cairn follow NAME RUN).
	Run string
	// Before lists the runs that existed before the upload or approval: never the target.
	Before []string
}

// Matches reports whether doc is the target's run.
func (t Target) Matches(doc *rundoc.Document) bool {
	switch {
	case t.Run != "":
		return doc.Run.ID == t.Run
	case t.Plan != "":
		return doc.Plan == t.Plan && doc.Run.Mode == run.ModeDeploy
	case t.Version != "":
		return doc.Bundle.VersionID == t.Version
	}
	return !doc.Run.StartedAt.Before(t.Since)
}

// Observer is told what the follower sees.
type Observer interface {
	// Found is called once, when the run is first read.
	Found(doc *rundoc.Document)
	// Stepped is called for each stack step, in the order they happened.
	Stepped(s Step)
}

// ResourceObserver is an Observer told of the resources too, when the Follower reads
// stack events (Follower.Events).
type ResourceObserver interface {
	Observer
	// Changed is called for each status a resource reaches, in the order they happened:
	// after the steps of stacks starting and before those of stacks finishing.
	Changed(r Resource)
	// Noted is called with what the follower cannot show (a stack whose events it
	// cannot read).
	Noted(note string)
	// Polled is called after each poll of a run that goes on, with the time.
	Polled(doc *rundoc.Document, now time.Time)
}

// Follower polls the bucket for one run.
type Follower struct {
	Runs    Runs
	Clock   clock.Clock
	Poll    time.Duration
	Timeout time.Duration
	// Events, when set, reads the resource events of the stacks in flight for an
	// observer that is a ResourceObserver.
	Events *Events
}

// scanLimit bounds how many unread runs one poll reads while looking for the target: a
// new run is among the newest.
const scanLimit = 20

// Follow waits for the target's run to end and returns its document. On timeout it
// returns what it last read (nil if the run never appeared) and ErrTimeout.
func (f *Follower) Follow(ctx context.Context, t Target, o Observer) (*rundoc.Document, error) {
	return f.poll(ctx, t, o, false)
}

// Started waits only for the target's run to start, and returns its first document.
func (f *Follower) Started(ctx context.Context, t Target) (*rundoc.Document, error) {
	return f.poll(ctx, t, nil, true)
}

func (f *Follower) poll(ctx context.Context, t Target, o Observer, untilFound bool) (*rundoc.Document, error) {
	clk := f.Clock
	if clk == nil {
		clk = clock.Real
	}
	deadline := clk.Now().Add(f.Timeout)
	passed := map[string]bool{}
	for _, id := range t.Before {
		passed[id] = true
	}
	id := t.Run
	var last *rundoc.Document
	ro, _ := o.(ResourceObserver)
	for {
		began := clk.Now()
		if id == "" {
			found, err := f.find(ctx, t, passed)
			if err != nil {
				return nil, err
			}
			id = found
		}
		if id != "" {
			doc, err := f.Runs.Run(ctx, t.Deployment, id)
			if err != nil {
				return last, err
			}
			if last == nil && o != nil {
				o.Found(doc)
			}
			if o != nil {
				f.report(ctx, o, ro, last, doc)
			}
			if ro != nil && doc.Run.Status == run.Running {
				ro.Polled(doc, clk.Now())
			}
			last = doc
			if untilFound || doc.Run.Status != run.Running {
				return doc, nil
			}
		}
		if !clk.Now().Before(deadline) {
			return last, ErrTimeout
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-clk.After(untilNextPoll(began, clk.Now(), f.Poll)):
		}
	}
}

// untilNextPoll is how long the follower waits, at now, before the poll after the one that
// began at began: polls begin every Poll, so the reads of a poll (a run's document, the
// events of its stacks in flight: up to DefaultPerRead) are not added to the wait, and one
// that took a whole Poll is followed at once. (Waiting a whole Poll after each poll made a
// poll of a 500-stack run 4 s apart, not 2, and its end seen up to 4 s late.)
func untilNextPoll(began, now time.Time, every time.Duration) time.Duration {
	return max(0, began.Add(every).Sub(now))
}

// report tells o what changed from prev to doc, in the order it happened: the steps and
// the resources' changes by time, a stack's resources always before the step that ends
// its part of the run (CloudFormation's clock and the deployer's may differ a little).
func (f *Follower) report(ctx context.Context, o Observer, ro ResourceObserver, prev, doc *rundoc.Document) {
	steps := Steps(prev, doc)
	if ro == nil || f.Events == nil {
		for _, s := range steps {
			o.Stepped(s)
		}
		return
	}
	res, notes := f.Events.Read(ctx, prev, doc)
	for _, n := range notes {
		ro.Noted(n)
	}
	type item struct {
		at   time.Time
		step *Step
		res  *Resource
	}
	ends := map[string]time.Time{}
	var items []item
	for i, s := range steps {
		if s.Phase.Terminal() {
			ends[s.Stack] = s.At
		}
		items = append(items, item{at: s.At, step: &steps[i]})
	}
	for i, r := range res {
		at := r.At
		if end, ok := ends[r.Stack]; ok && at.After(end) {
			at = end
		}
		items = append(items, item{at: at, res: &res[i]})
	}
	// At one instant: a stack's resources, then the steps ending stacks, then the rest.
	rank := func(it item) int {
		switch {
		case it.res != nil:
			return 0
		case it.step.Phase.Terminal():
			return 1
		}
		return 2
	}
	slices.SortStableFunc(items, func(a, b item) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return rank(a) - rank(b)
	})
	for _, it := range items {
		if it.res != nil {
			ro.Changed(*it.res)
		} else {
			o.Stepped(*it.step)
		}
	}
}

// find returns the id of the target's run, or "" while it does not exist yet. Runs read
// and found not to match are remembered in passed: what identifies a run never changes.
func (f *Follower) find(ctx context.Context, t Target, passed map[string]bool) (string, error) {
	ids, err := f.Runs.RunIDs(ctx, t.Deployment)
	if err != nil {
		return "", err
	}
	read := 0
	for _, id := range ids {
		if passed[id] {
			continue
		}
		if read == scanLimit {
			break
		}
		read++
		doc, err := f.Runs.Run(ctx, t.Deployment, id)
		if err != nil {
			continue // being written, or gone: looked at again next poll
		}
		if t.Matches(doc) {
			return id, nil
		}
		passed[id] = true
	}
	return "", nil
}

// Step is one stack reaching a phase.
type Step struct {
	Stack     string
	StackName string
	// Place is where the stack lives, relative to cairn's account and region (run.Stack.At).
	Place   target.Target
	Action  plan.Action
	Phase   run.Phase
	Reason  string
	Changes int
	// At is when the stack reached the phase; Elapsed the time since the run started.
	At      time.Time
	Elapsed time.Duration
}

// Name names the stack for people: its config name, with where it lives when that is not
// cairn's account and region (target.Describe), "remote (111111111111, eu-west-1)".
func (s Step) Name() string { return target.Describe(s.Place, s.Stack) }

// Width is the widest Name of doc's stacks, for aligning the steps.
func Width(doc *rundoc.Document) int {
	w := 0
	for name, s := range doc.Run.Stacks {
		w = max(w, len(target.Describe(s.At, name)))
	}
	return w
}

// Doing says what the stack is doing, in words.
func (s Step) Doing() string {
	var what string
	switch s.Phase {
	case run.DeletingOld:
		what = "deleting the failed stack"
	case run.CreatingChangeSet:
		what = "creating change set"
	case run.Ready:
		what = "change set ready"
	case run.Executing:
		what = "executing change set"
	case run.RollingBack:
		what = "continuing rollback"
	default:
		what = strings.ReplaceAll(string(s.Phase), "-", " ")
	}
	if s.Changes > 0 && (s.Phase == run.Ready || s.Phase == run.Executing) {
		what += fmt.Sprintf(" (%d %s)", s.Changes, plural(s.Changes, "change"))
	}
	if s.Reason != "" && (s.Phase.Terminal() || s.Phase == run.Ready) {
		what += ": " + s.Reason
	}
	return what
}

// Steps lists the steps cur shows that prev did not, ordered by when they happened (then
// stacks finishing before stacks starting, then by stack name). Stacks still pending have
// taken no step.
func Steps(prev, cur *rundoc.Document) []Step {
	var out []Step
	for _, name := range cur.Run.Names() {
		s := cur.Run.Stacks[name]
		if s.Phase == run.Pending {
			continue
		}
		action := report.Action(s, cur.Decisions...)
		if prev != nil {
			if p := prev.Run.Stacks[name]; p != nil && p.Phase == s.Phase && report.Action(p, prev.Decisions...) == action && p.PhaseSince.Equal(s.PhaseSince) {
				continue
			}
		}
		at := s.PhaseSince
		if at.IsZero() {
			at = cur.Run.UpdatedAt
		}
		out = append(out, Step{Stack: name, StackName: s.StackName, Place: s.At, Action: action, Phase: s.Phase, Reason: s.Reason,
			Changes: s.Changes, At: at, Elapsed: max(0, at.Sub(cur.Run.StartedAt))})
	}
	// At the same instant, a stack finishing comes first: it is what lets the others start.
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].Phase.Terminal() && !out[j].Phase.Terminal()
	})
	return out
}

// Summary counts what a run did to its stacks.
type Summary struct {
	Created, Updated, Deleted, Unchanged, Failed, Blocked int
	// Duration is from the run's start to its end (to its last update while it runs).
	Duration time.Duration
}

// Summarize counts the stacks of a run by outcome.
func Summarize(doc *rundoc.Document) Summary {
	var sum Summary
	for _, s := range doc.Run.Stacks {
		switch s.Phase {
		case run.Failed:
			sum.Failed++
		case run.Blocked:
			sum.Blocked++
		case run.Unchanged:
			sum.Unchanged++
		case run.Done:
			switch report.Action(s, doc.Decisions...) {
			case plan.Create, plan.Recreate:
				sum.Created++
			case plan.Delete:
				sum.Deleted++
			case plan.Read, plan.None:
				sum.Unchanged++
			default:
				sum.Updated++
			}
		}
	}
	end := doc.Run.FinishedAt
	if end.IsZero() {
		end = doc.Run.UpdatedAt
	}
	sum.Duration = max(0, end.Sub(doc.Run.StartedAt))
	return sum
}

// String is "2 created, 1 updated, 0 deleted, 3 unchanged, 0 failed", with the blocked
// stacks when there are any.
func (s Summary) String() string {
	out := fmt.Sprintf("%d created, %d updated, %d deleted, %d unchanged, %d failed", s.Created, s.Updated, s.Deleted, s.Unchanged, s.Failed)
	if s.Blocked > 0 {
		out += fmt.Sprintf(", %d blocked", s.Blocked)
	}
	return out
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
