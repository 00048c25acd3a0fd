package plan

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/run"
)

// Content is what an apply brings: a bundle as plan.Make decided it against the stacks now
// (in plan mode, so nothing is refused only for needing review), with the content of each
// stack (Inputs) and the outputs each would consume now (Consumed).
type Content struct {
	// SHA256 is the bundle's: a plan made of exactly this bundle is preferred.
	SHA256    string
	Run       *run.Run
	Decisions []Decision
	Inputs    map[string]Inputs
	Consumed  map[string]map[string]string
}

// Changing returns the stacks the content changes (own: created, updated, adopted,
// re-created or deleted) and those it may change through them (ripple: a stack they depend
// on changes, so their inputs are known only once it is applied).
func (c Content) Changing() (own, ripple map[string]bool) {
	own, ripple = map[string]bool{}, map[string]bool{}
	for _, d := range c.Decisions {
		switch d.Action {
		case Create, Update, Adopt, Recreate, Delete:
			own[d.Stack] = true
		}
	}
	if c.Run == nil {
		return own, ripple
	}
	// A change ripples to the deploys that depend on it, directly or through others, as a
	// failure blocks them: the graph's walker finds them in one walk (Graph.BlockedBy).
	var changed []string
	for name := range own {
		if s := c.Run.Stacks[name]; s != nil && s.Intent != run.IntentDelete {
			changed = append(changed, name)
		}
	}
	deploys := func(name string) bool { return !own[name] && c.Run.Stacks[name].Intent == run.IntentDeploy }
	for _, name := range c.Run.Graph().BlockedBy(changed, deploys) {
		ripple[name] = true
	}
	return own, ripple
}

// Relevant keeps the plans of plans with an entry that may cover a stack the content
// changes (one made for the same content of it, or deleting a stack it deletes): only
// those are checked and described.
func (c Content) Relevant(plans []*Document) []*Document {
	own, ripple := c.Changing()
	relaxed := c.relaxed()
	var out []*Document
	for _, p := range plans {
		if slices.ContainsFunc(relaxed, p.showsGuard) {
			out = append(out, p)
			continue
		}
		for _, e := range p.Stacks {
			if !own[e.Name] && !ripple[e.Name] {
				continue
			}
			if e.Action == Delete && c.action(e.Name) == Delete || !e.Inputs.IsZero() && e.Inputs == c.Inputs[e.Name] {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// ComposeInput is what Compose decides from.
type ComposeInput struct {
	Deployment string
	Content    Content
	// Plans are the deployment's open plans (status planned), each a candidate.
	Plans []*Document
	// Only restricts the entries to one plan's (an approval of exactly that plan).
	Only string
	// Live are the stacks now (secret outputs sealed); ChangeSets the candidates' change
	// sets as described now, by id.
	Live       map[string]Live
	ChangeSets map[string]ChangeSet
	// Unsound says, by plan id, why a plan's document cannot be trusted (its seal, the
	// checks of what it names): such a plan covers nothing.
	Unsound map[string][]string
	// Changed says, by stack (config name), what last changed it and when, as the graph
	// records it: a stale entry's reason names it when that was after the plan.
	Changed map[string]LastChange
	// Applied are, by stack (config name), the parameters last applied as the graph stored
	// them (secrets sealed): what a ripple's new values are compared with.
	Applied map[string]map[string]string
	Now     time.Time
	TTL     time.Duration
}

// LastChange is the last change cairn made to a stack: By what ("pull request #21 (run R)")
// and At when.
type LastChange struct {
	By string
	At time.Time
}

// Pick is the entry chosen for a stack: the stack's entry of Plan.
type Pick struct {
	Plan  *Document
	Entry Stack
	// Ripple: a stack it depends on changes in the same apply, so its parameters are
	// checked once that one is applied (see run.Stack.Ripple).
	Ripple bool
	// Rebased marks the pick of a stack whose own content is what is applied (only its
	// inputs may change, through a stack the apply changes) from a plan that showed it as
	// known after apply for older content of it: the stack as applied is its base, and its
	// reviewed change set is not used. Should its inputs come out of the apply changed, a
	// change set of the new values runs only if they explain all of it (run.Stack.Ripple);
	// Was are the parameters as applied (nil: not known, then it stops for review).
	Rebased bool
	Was     map[string]string
}

// Uncovered is a stack an apply would change that no reviewed entry covers, and why.
type Uncovered struct {
	Stack, StackName string
	Reason           string
}

func (u Uncovered) String() string {
	if u.Stack == "" {
		return u.Reason // a graph-wide guard
	}
	return fmt.Sprintf("stack %s (%s): %s", u.Stack, u.StackName, u.Reason)
}

// Composition is what an apply runs: for every stack that changes, the entry that covers
// it, or the stacks no entry covers (then nothing runs).
type Composition struct {
	Picks     map[string]Pick
	Uncovered []Uncovered
	// Plans are the ids of the plans whose entries run, and Whole those of them all of
	// whose changes run: they are marked applied.
	Plans, Whole []string
	// Applied are the parameters last applied, by stack (ComposeInput.Applied): a stack
	// only re-checked is compared with them.
	Applied map[string]map[string]string
}

// Covered reports whether every stack that changes is covered: the apply may run.
func (c Composition) Covered() bool { return len(c.Uncovered) == 0 }

// Compose decides an apply of in.Content: every stack it changes (own or ripple) must be
// covered by an entry of an open plan (of in.Only when set) made for exactly that stack's
// content (Inputs), from a base that is still current: the live stack as planned, its
// change set still there and available, and the outputs it consumes unchanged (those of
// stacks the same apply changes are checked once they are applied, in the run). A plan of
// exactly this bundle is preferred, then the newest. Stacks that do not change need no
// entry. It is pure: the driver observes, this decides.
func Compose(in ComposeInput) Composition {
	c := Composition{Picks: map[string]Pick{}, Applied: in.Applied}
	own, ripple := in.Content.Changing()
	plans := slices.Clone(in.Plans)
	slices.SortStableFunc(plans, func(a, b *Document) int {
		ea, eb := a.Bundle.SHA256 == in.Content.SHA256 && a.Bundle.SHA256 != "", b.Bundle.SHA256 == in.Content.SHA256 && b.Bundle.SHA256 != ""
		if ea != eb {
			if ea {
				return -1
			}
			return 1
		}
		return strings.Compare(b.ID, a.ID) // newest first
	})
	used := map[string]bool{}
	var rippling []string
	for _, name := range in.Content.names() {
		if !own[name] && !ripple[name] {
			continue
		}
		pick, why := in.cover(name, own, ripple, plans)
		if why != "" && !own[name] {
			// Its own content is what is applied: only its inputs may change, and they
			// are judged once what it reads is applied (rebase).
			rippling = append(rippling, name)
			continue
		}
		if why != "" {
			c.Uncovered = append(c.Uncovered, Uncovered{Stack: name, StackName: in.Content.stackName(name), Reason: why})
			continue
		}
		c.Picks[name] = pick
		used[pick.Plan.ID] = true
	}
	for _, name := range rippling {
		if pick, ok := in.rebase(name, plans, used); ok {
			c.Picks[name] = pick
		}
	}
	// A guard the content loosens is loosened only as a reviewed plan showed it.
	for _, gc := range in.Content.relaxed() {
		p, why := in.coverGuard(gc, plans)
		if p == nil {
			stack := ""
			if gc.Stack != "" {
				stack = in.Content.stackName(gc.Stack)
			}
			c.Uncovered = append(c.Uncovered, Uncovered{Stack: gc.Stack, StackName: stack, Reason: why})
			continue
		}
		used[p.ID] = true
	}
	for _, p := range plans {
		if !used[p.ID] {
			continue
		}
		c.Plans = append(c.Plans, p.ID)
		whole := true
		for _, e := range p.Changing() {
			if pk, ok := c.Picks[e.Name]; !ok || pk.Plan.ID != p.ID {
				whole = false
			}
		}
		if whole {
			c.Whole = append(c.Whole, p.ID)
		}
	}
	slices.Sort(c.Plans)
	slices.Sort(c.Whole)
	return c
}

// relaxed lists the guards the content loosens (Run.GuardChanges).
func (c Content) relaxed() []run.GuardChange {
	if c.Run == nil {
		return nil
	}
	return Relaxed(c.Run.GuardChanges)
}

// showsGuard reports whether plan p showed guard change gc.
func (p *Document) showsGuard(gc run.GuardChange) bool {
	if p.Run == nil {
		return false
	}
	return slices.ContainsFunc(p.Run.GuardChanges, gc.Same)
}

// coverGuard finds the open plan (in.Only's when set) that showed the relaxed guard change
// gc, trusted and not lapsed, or says why there is none.
func (in ComposeInput) coverGuard(gc run.GuardChange, plans []*Document) (*Document, string) {
	var stale string
	for _, p := range plans {
		if in.Only != "" && p.ID != in.Only || !p.showsGuard(gc) {
			continue
		}
		why := slices.Clone(in.Unsound[p.ID])
		if reasons, _ := p.Lapsed(in.Now, cmp.Or(in.TTL, DefaultTTL)); len(reasons) > 0 {
			why = append(why, reasons...)
		}
		if len(why) == 0 {
			return p, ""
		}
		stale = cmp.Or(stale, fmt.Sprintf("the plan %s that shows it cannot be trusted now: %s", p.ID, strings.Join(why, "; ")))
	}
	if stale != "" {
		return nil, fmt.Sprintf("%s: %s: %s", gc, stale, in.forward())
	}
	return nil, fmt.Sprintf("%s: no reviewed plan shows this relaxation, and a guard is loosened only through one: %s", gc, in.forward())
}

// names lists the stacks of the content: those of its run and of its decisions.
func (c Content) names() []string {
	var names []string
	if c.Run != nil {
		names = c.Run.Names()
	}
	for _, d := range c.Decisions {
		if !slices.Contains(names, d.Stack) {
			names = append(names, d.Stack)
		}
	}
	slices.Sort(names)
	return names
}

func (c Content) stackName(name string) string {
	if c.Run != nil && c.Run.Stacks[name] != nil {
		return c.Run.Stacks[name].Describe()
	}
	for _, d := range c.Decisions {
		if d.Stack == name {
			return d.StackName
		}
	}
	return name
}

func (c Content) action(name string) Action {
	for _, d := range c.Decisions {
		if d.Stack == name {
			return d.Action
		}
	}
	return ""
}

// cover finds the entry covering stack name, or says why there is none.
func (in ComposeInput) cover(name string, own, ripple map[string]bool, plans []*Document) (Pick, string) {
	want, action := in.Content.Inputs[name], in.Content.action(name)
	deferred := map[string]bool{}
	for n := range own {
		deferred[n] = true
	}
	for n := range ripple {
		deferred[n] = true
	}
	var stale, other string
	for _, p := range plans {
		if in.Only != "" && p.ID != in.Only {
			continue
		}
		e := p.Stack(name)
		if e == nil {
			continue
		}
		made := "the plan of " + cmp.Or(p.Change(), "a checkout without git") + " (" + p.ID + ")"
		switch {
		case action == Delete && e.Action != Delete, action != Delete && e.Action == Delete:
			other = cmp.Or(other, fmt.Sprintf("%s %s it", made, map[bool]string{true: "deletes", false: "keeps"}[e.Action == Delete]))
			continue
		case action != Delete && e.Inputs.IsZero():
			other = cmp.Or(other, made+" was made by a cairn that did not record what each stack is made of")
			continue
		case action != Delete && e.Inputs != want:
			other = cmp.Or(other, fmt.Sprintf("%s was made for other content of it (%s differ)", made, strings.Join(e.Inputs.Differ(want), ", ")))
			continue
		case !own[name] && !e.InputsMayChange:
			// A ripple runs only as a plan showed it, known after apply (rebase).
			other = cmp.Or(other, made+" did not show it known after apply")
			continue
		}
		why := in.entryStale(p, *e, name, own[name], deferred)
		if len(in.Unsound[p.ID]) > 0 {
			why = slices.Concat(in.Unsound[p.ID], why)
		}
		if len(why) == 0 {
			return Pick{Plan: p, Entry: *e, Ripple: in.dependsOnChange(name, deferred)}, ""
		}
		stale = cmp.Or(stale, fmt.Sprintf("%s for stack %s went stale: %s", made, name, strings.Join(why, "; ")))
	}
	switch {
	case stale != "":
		return Pick{}, stale + ": " + in.forward()
	case other != "":
		return Pick{}, fmt.Sprintf("no plan was made for this content of stack %s (%s): %s", name, other, in.forward())
	case in.Only != "":
		return Pick{}, fmt.Sprintf("plan %s does not cover stack %s, which this content changes: %s", in.Only, name, in.forward())
	}
	return Pick{}, fmt.Sprintf("no plan was made for this content of stack %s: %s", name, in.forward())
}

// rebase finds, for stack name, whose own content is what is applied and which no entry
// made for that content covers (its plans were made for older content of it, or went
// stale), the entry of a plan this apply uses that showed it as known after apply: the
// reviewer of that plan saw that its inputs change through the stacks the plan changes.
// The stack as applied is its base (Pick.Rebased). With none, nothing covers it and
// nothing needs to: the apply re-checks it once what it reads is applied, and stops it
// for review should its inputs then have changed.
func (in ComposeInput) rebase(name string, plans []*Document, used map[string]bool) (Pick, bool) {
	for _, p := range plans {
		if !used[p.ID] || in.Only != "" && p.ID != in.Only || len(in.Unsound[p.ID]) > 0 {
			continue
		}
		e := p.Stack(name)
		if e == nil || !e.InputsMayChange || e.Action == Delete {
			continue
		}
		if reasons, _ := p.Lapsed(in.Now, cmp.Or(in.TTL, DefaultTTL)); len(reasons) > 0 {
			continue
		}
		return Pick{Plan: p, Entry: *e, Ripple: true, Rebased: true, Was: in.Applied[name]}, true
	}
	return Pick{}, false
}

// dependsOnChange reports whether a stack name depends on depends on one that changes.
func (in ComposeInput) dependsOnChange(name string, changing map[string]bool) bool {
	s := in.Content.Run.Stacks[name]
	if s == nil || s.Intent != run.IntentDeploy {
		return false
	}
	for _, dep := range s.Requires {
		if d := in.Content.Run.Stacks[dep]; d != nil && d.Intent != run.IntentDelete && changing[dep] {
			return true
		}
	}
	return false
}

// entryStale lists why entry e of plan p no longer stands on its base: its stack changed
// (or was created or deleted) since, its change set is gone or no longer available, or an
// output it consumes changed (not counting those of deferred stacks, which the same apply
// changes first), or the plan lapsed. Nothing when it is fresh.
func (in ComposeInput) entryStale(p *Document, e Stack, name string, changes bool, deferred map[string]bool) []string {
	if reasons, _ := p.Lapsed(in.Now, cmp.Or(in.TTL, DefaultTTL)); len(reasons) > 0 {
		return reasons
	}
	var why []string
	l, exists := in.Live[p.Key(e)]
	when := " at " + stamp(l.LastUpdated)
	if c := in.Changed[name]; c.By != "" && !c.At.Before(p.CreatedAt) {
		when = fmt.Sprintf(" by %s at %s", c.By, stamp(c.At))
	}
	planAt := p.CreatedAt.UTC().Format("15:04:05")
	switch {
	case e.Status == "" && exists:
		why = append(why, fmt.Sprintf("the stack was created%s, after the plan (%s)", when, planAt))
	case e.Status != "" && !exists:
		why = append(why, fmt.Sprintf("the stack was deleted after the plan (%s)", planAt))
	case exists && (l.StackID != e.StackID && e.StackID != "" || l.Status != e.Status || !l.LastUpdated.Equal(e.LastUpdated)):
		why = append(why, fmt.Sprintf("the stack was changed%s, after the plan (%s; now %s, was %s)", when, planAt, l.Status, e.Status))
	}
	if e.ChangeSetID != "" && len(why) == 0 {
		switch cs := in.ChangeSets[e.ChangeSetID]; {
		case !cs.Found:
			why = append(why, fmt.Sprintf("its change set %s no longer exists", e.ChangeSetName))
		case cs.Status != "CREATE_COMPLETE" || cs.ExecutionStatus != "AVAILABLE":
			why = append(why, fmt.Sprintf("its change set %s is %s/%s, not CREATE_COMPLETE/AVAILABLE", e.ChangeSetName, cs.Status, cs.ExecutionStatus))
		}
	}
	if changes || e.Action != Delete {
		if d := ConsumedChanges(e.Consumed, in.Content.Consumed[name], in.Content.Run, deferred); d != "" {
			why = append(why, "the outputs it consumes changed since the plan: "+d)
		}
	}
	return why
}

// forward is the reviewed way forward from a refusal.
func (in ComposeInput) forward() string {
	if in.Only != "" {
		return fmt.Sprintf("re-plan (`cairn plan PATH --deployment %s`), review that plan, then approve it (`cairn approve %s PLAN_ID`)", in.Deployment, in.Deployment)
	}
	return fmt.Sprintf("plan this content (`cairn plan PATH --deployment %s`; after a merge, the workflow's apply job does and posts it on the merged pull request), review that plan, then approve exactly it (`cairn approve %s PLAN_ID`: the workflow's gate)", in.Deployment, in.Deployment)
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05") }

// Run is the apply run runID of the content as c composes it: each covered stack waits to
// run its reviewed entry (its change set executed as it is, once its parameters resolve as
// planned; a stack created at apply gets its change set then; a ripple is checked once
// what it reads is applied), and every other stack is only re-checked, failing rather than
// changing should its parameters resolve otherwise. live is the stacks now.
func (c Composition) Run(content Content, runID string, live map[string]Live, now time.Time) *run.Run {
	r := content.Run.Clone()
	r.ID, r.Mode, r.Status, r.Reason = runID, run.ModeDeploy, run.Running, ""
	r.Plan = cmp.Or(strings.Join(c.Plans, "+"), "-")
	r.StartedAt, r.UpdatedAt, r.FinishedAt, r.Seq = now, now, time.Time{}, 0
	for name, s := range r.Stacks {
		s.StartedAt, s.FinishedAt, s.ExecutedAt, s.PhaseSince, s.Attempts = time.Time{}, time.Time{}, time.Time{}, now, 0
		l, exists := live[s.Key()]
		s.Protected = exists && l.TerminationProtection
		if s.Phase == run.Failed || s.Phase == run.Blocked || s.Intent == run.IntentRead {
			continue
		}
		pk, covered := c.Picks[name]
		if !covered {
			if s.Intent == run.IntentDeploy {
				// Unchanged: re-checked, never changed (run.Advance fails it as stale should
				// its parameters resolve otherwise than applied).
				s.PlannedParametersHash, s.Reason = s.PrevParametersHash, ""
				if was := c.Applied[name]; was != nil {
					s.Parameters = maps.Clone(was)
				}
				if s.PlannedParametersHash == "" {
					s.Phase, s.Reason = run.Unchanged, "unchanged"
				}
			}
			continue
		}
		s.Reason, s.Ripple = "", pk.Ripple
		if pk.Rebased {
			// Its base is the stack as applied: no reviewed change set of it runs; new
			// values of its inputs get a change set they must explain.
			s.PlannedParametersHash, s.Parameters = s.PrevParametersHash, maps.Clone(pk.Was)
			if s.PlannedParametersHash == "" {
				s.Phase, s.Reason = run.Unchanged, "unchanged"
			}
			continue
		}
		ps := pk.Plan.Run.Stacks[name]
		if s.Intent != run.IntentDeploy || ps == nil {
			continue // a deletion or re-creation the entry covers: done as decided now
		}
		switch {
		case pk.Entry.CreatedAtApply || ps.AtApply:
			s.AtApply = true
			s.Exists = exists && l.Status != "REVIEW_IN_PROGRESS"
			if exists {
				s.StackID = l.StackID
			}
		default:
			s.ChangeSetName, s.ChangeSetID, s.ChangeSetType, s.Changes = ps.ChangeSetName, ps.ChangeSetID, ps.ChangeSetType, ps.Changes
			if ps.Phase == run.Unchanged || pk.Entry.Action == None {
				s.ChangeSetName, s.ChangeSetID, s.ChangeSetType, s.Changes = "", "", "", 0
			}
			s.Parameters, s.ParametersHash, s.PlannedParametersHash = ps.Parameters, ps.ParametersHash, pk.Entry.ParametersHash
			s.Exists = exists && l.Status != "REVIEW_IN_PROGRESS"
			s.StackID = ps.StackID
			if exists {
				s.StackID = l.StackID
			}
		}
	}
	return r
}
