package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/run"
)

// A model of a team's week on GitHub, over the pure rules (Compose, Supersedes, LateFor):
// pull requests change stacks of a small graph, are planned (and planned again after
// their branch is updated), merged in any order, and each merge's apply job composes the
// merged content from the open plans; where nothing covers it, it plans the merged
// content for the gate, which approves exactly that plan. Plan jobs also run late, after
// their merge. The model executes what the composition runs the way the run does: a
// reviewed change set as it is, a ripple only when its inputs changed and explain it.
//
//	net ─┬─> api ──> worker      (api reads net's Id, worker api's Url)
//	     └─> jobs                (jobs reads net's Id)

var (
	orderStacks = []string{"net", "api", "jobs", "worker"} // dependency order
	orderUp     = map[string]string{"api": "net", "jobs": "net", "worker": "api"}
	orderOutput = map[string]string{"net": "Id", "api": "Url"}
)

type orderModel struct {
	rt  *rapid.T
	now time.Time
	seq int
	// main and applied are the content versions of each stack on main and as applied;
	// outOf says each version's output value; param the input each stack was applied with.
	main, applied map[string]int
	outOf         map[int]string
	param         map[string]string
	updated       map[string]time.Time
	obsolete      map[string]bool // change sets of a stack updated since they were made
	made          map[string]string
	plans         []*Document
	merges        []Merge
	prs           []*orderPR
}

type orderPR struct {
	n       int
	changes map[string]int
	planned bool
	merged  bool
	// base is main as the pull request's newest plan saw it (its merge ref then).
	base map[string]int
}

func newOrderModel(rt *rapid.T) *orderModel {
	m := &orderModel{rt: rt, now: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC), main: map[string]int{}, applied: map[string]int{},
		outOf: map[int]string{0: "o0"}, param: map[string]string{}, updated: map[string]time.Time{}, obsolete: map[string]bool{}, made: map[string]string{}}
	for _, s := range orderStacks {
		m.updated[s] = m.now.Add(-24 * time.Hour)
	}
	for _, s := range orderStacks {
		m.param[s] = m.input(s)
	}
	return m
}

func (m *orderModel) tick() time.Time { m.now = m.now.Add(time.Minute); return m.now }

// input is what stack s reads now: its upstream's output as applied.
func (m *orderModel) input(s string) string {
	up, ok := orderUp[s]
	if !ok {
		return ""
	}
	return m.outOf[m.applied[up]]
}

func orderInputs(v int) Inputs {
	return Inputs{Template: fmt.Sprintf("t%d", v), Parameters: "p", Settings: "s"}
}

// consumed is what s's entry records it reads now.
func (m *orderModel) consumed(s string) map[string]string {
	up, ok := orderUp[s]
	if !ok {
		return nil
	}
	return map[string]string{up + "::" + orderOutput[up]: m.input(s)}
}

// ripples are the stacks downstream of those content changes (own).
func ripples(own map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, s := range orderStacks { // dependency order: an upstream is decided first
		if up, ok := orderUp[s]; ok && !own[s] && (own[up] || out[up]) {
			out[s] = true
		}
	}
	return out
}

// plan makes the plan of content for pull request pr (merged: of its merged content).
func (m *orderModel) plan(pr int, content map[string]int, merged bool) *Document {
	m.seq++
	id := fmt.Sprintf("P%03d", m.seq)
	own := map[string]bool{}
	for _, s := range orderStacks {
		own[s] = content[s] != m.applied[s]
	}
	rip := ripples(own)
	r := &run.Run{ID: id, Deployment: "shop", Mode: run.ModePlan, Status: run.Succeeded, Stacks: map[string]*run.Stack{}}
	var entries []Stack
	for _, s := range orderStacks {
		e := Stack{Name: s, StackName: "shop-" + s, StackID: "id-" + s, Action: None, Status: "UPDATE_COMPLETE", LastUpdated: m.updated[s],
			Inputs: orderInputs(content[s]), Consumed: m.consumed(s), ParametersHash: "h-" + m.param[s]}
		rs := &run.Stack{Name: s, StackName: e.StackName, StackID: e.StackID, Intent: run.IntentDeploy, Phase: run.Unchanged, Exists: true,
			Parameters: map[string]string{"In": m.param[s]}, ParametersHash: e.ParametersHash}
		if own[s] {
			e.Action, e.ChangeSetName, e.ChangeSetID = Update, "cairn-"+id, "cs-"+id+"-"+s
			rs.Phase, rs.ChangeSetName, rs.ChangeSetID, rs.ChangeSetType = run.Ready, e.ChangeSetName, e.ChangeSetID, "UPDATE"
			m.made[e.ChangeSetID] = s
		}
		if up, ok := orderUp[s]; ok && (own[up] || rip[up]) {
			e.InputsMayChange, e.KnownAfterApply = true, []string{"In"}
		}
		entries = append(entries, e)
		r.Stacks[s] = rs
	}
	src := provenance.Source{PullRequest: pr, Ref: fmt.Sprintf("refs/pull/%d/merge", pr), HeadRef: fmt.Sprintf("b%d", pr)}
	if merged {
		src = provenance.Source{PullRequest: pr, Ref: "refs/heads/main", Merged: true}
	}
	p := &Document{ID: id, Deployment: "shop", Namespace: "shop", GraphKey: "shop", Status: Planned, CreatedAt: m.tick(), Run: r, Stacks: entries,
		Bundle: BundleVersion{SHA256: fmt.Sprint(content), Source: src}}
	for _, older := range m.plans {
		if older.Status == Planned && p.Supersedes(older) {
			older.Status = Superseded
		}
	}
	m.plans = append(m.plans, p)
	return p
}

// compose is the composition of main's content now, from the open plans (only's alone).
func (m *orderModel) compose(only *Document) Composition {
	c := Content{SHA256: fmt.Sprint(m.main), Inputs: map[string]Inputs{}, Consumed: map[string]map[string]string{},
		Run: &run.Run{ID: "R", Deployment: "shop", Mode: run.ModePlan, Stacks: map[string]*run.Stack{}}}
	for _, s := range orderStacks {
		rs := &run.Stack{Name: s, StackName: "shop-" + s, Intent: run.IntentDeploy, Phase: run.Pending, Exists: true}
		if up, ok := orderUp[s]; ok {
			rs.Requires = []string{up}
		}
		c.Run.Stacks[s] = rs
		a := Check
		if m.main[s] != m.applied[s] {
			a = Update
		}
		c.Decisions = append(c.Decisions, Decision{Stack: s, StackName: "shop-" + s, Action: a})
		c.Inputs[s], c.Consumed[s] = orderInputs(m.main[s]), m.consumed(s)
	}
	in := ComposeInput{Deployment: "shop", Content: c, Live: map[string]Live{}, ChangeSets: map[string]ChangeSet{}, Now: m.tick()}
	for _, s := range orderStacks {
		in.Live["shop-"+s] = Live{StackName: "shop-" + s, StackID: "id-" + s, Status: "UPDATE_COMPLETE", LastUpdated: m.updated[s]}
	}
	for id := range m.made {
		cs := ChangeSet{Found: true, Status: "CREATE_COMPLETE", ExecutionStatus: "AVAILABLE"}
		if m.obsolete[id] {
			cs.ExecutionStatus = "OBSOLETE"
		}
		in.ChangeSets[id] = cs
	}
	if only != nil {
		in.Plans, in.Only = []*Document{only}, only.ID
	} else {
		for _, p := range m.plans {
			if p.Composable() {
				in.Plans = append(in.Plans, p)
			}
		}
	}
	return Compose(in)
}

// apply runs composition c as the run would, checking that every change it makes was
// shown in a plan a reviewer approved: a merged pull request's newest plan, for exactly
// the content it runs, or the plan the gate approved (only).
func (m *orderModel) apply(c Composition, only *Document) {
	stopped := map[string]bool{}
	for _, s := range orderStacks {
		if up, ok := orderUp[s]; ok && stopped[up] {
			stopped[s] = true // blocked
			continue
		}
		own, in := m.main[s] != m.applied[s], m.input(s)
		pk, picked := c.Picks[s]
		if picked {
			m.approved(s, pk, only)
		}
		switch {
		case own && !picked:
			m.rt.Fatalf("stack %s changes (content %d → %d) and no entry covers it, yet the apply ran", s, m.applied[s], m.main[s])
		case own:
			if pk.Rebased || pk.Entry.Inputs != orderInputs(m.main[s]) || pk.Entry.ChangeSetID == "" {
				m.rt.Fatalf("stack %s runs an entry of plan %s made for other content (%v, want %v)", s, pk.Plan.ID, pk.Entry.Inputs, orderInputs(m.main[s]))
			}
			if m.obsolete[pk.Entry.ChangeSetID] {
				m.rt.Fatalf("stack %s: the apply executes change set %s of a stack updated since", s, pk.Entry.ChangeSetID)
			}
			if e := pk.Entry.Consumed; len(e) > 0 && firstValue(e) != in {
				// Its inputs came out otherwise than planned: a new change set would hold
				// its own change too, which they do not explain: stopped for review.
				stopped[s] = true
				continue
			}
			m.change(s, in)
		case in != m.param[s] && picked:
			if !pk.Ripple || !pk.Plan.Stack(s).InputsMayChange {
				m.rt.Fatalf("stack %s: its inputs changed and it runs plan %s's entry, which did not show it known after apply", s, pk.Plan.ID)
			}
			m.change(s, in) // a change set its new inputs explain
		case in != m.param[s]:
			stopped[s] = true // re-checked: changed inputs, no plan showed it: stops for review
		}
	}
	for _, id := range c.Whole {
		for _, p := range m.plans {
			if p.ID == id {
				p.Status = Applied
			}
		}
	}
}

func firstValue(e map[string]string) string {
	for _, k := range slices.Sorted(maps.Keys(e)) {
		return e[k]
	}
	return ""
}

// approved checks that pick's plan is one a reviewer approved for what runs: the gate's
// plan, or the newest plan of a merged pull request; or, for content that merged already
// (a stack a merged pull request changed that stopped or failed before), the plan of an
// open pull request made from a checkout holding it: the content is what merged, and an
// open pull request's own change never runs.
func (m *orderModel) approved(s string, pk Pick, only *Document) {
	p := pk.Plan
	if only != nil {
		if p.ID != only.ID {
			m.rt.Fatalf("the gate approved plan %s, and the apply runs plan %s's entry", only.ID, p.ID)
		}
		return
	}
	if p.AfterMerge() {
		m.rt.Fatalf("cairn apply runs plan %s of merged content, which only the gate applies", p.ID)
	}
	pr := m.prs[p.Bundle.Source.PullRequest-1]
	if !pr.merged {
		if v, ok := pr.changes[s]; ok && v == m.main[s] {
			m.rt.Fatalf("the apply runs plan %s of pull request #%d, not merged, for its own change of stack %s", p.ID, pr.n, s)
		}
		return
	}
	for _, q := range m.plans {
		if q.Bundle.Source.PullRequest == pr.n && !q.AfterMerge() && q.ID > p.ID {
			m.rt.Fatalf("the apply runs plan %s of #%d, but its comment shows the newer plan %s", p.ID, pr.n, q.ID)
		}
	}
}

// change applies stack s's content on main with input in.
func (m *orderModel) change(s, in string) {
	m.applied[s], m.param[s], m.updated[s] = m.main[s], in, m.tick()
	for id, stack := range m.made {
		if stack == s {
			m.obsolete[id] = true
		}
	}
}

// justified reports whether the refusal of a merge, uncovered, has a reason the model
// shows: for each stack refused, it changes on main, and no open plan of a merged pull
// request holds an entry for its content on an unchanged base.
func (m *orderModel) justified(c Composition) string {
	for _, u := range c.Uncovered {
		s := u.Stack
		if m.main[s] == m.applied[s] {
			return fmt.Sprintf("stack %s is refused, but its own content is what is applied (a ripple): %s", s, u.Reason)
		}
		for _, p := range m.plans {
			e := p.Stack(s)
			if p.Status != Planned || p.AfterMerge() || e == nil || e.Inputs != orderInputs(m.main[s]) {
				continue
			}
			up, reads := orderUp[s]
			deferred := reads && m.main[up] != m.applied[up]
			if e.LastUpdated.Equal(m.updated[s]) && (deferred || !reads || firstValue(e.Consumed) == m.input(s)) {
				return fmt.Sprintf("stack %s is refused, yet plan %s's entry was made for its content on a base that did not change: %s", s, p.ID, u.Reason)
			}
		}
	}
	return ""
}

// applyJob is the apply job of main's content after pr merged: cairn apply composes it
// from the open plans; where that is refused (it reports true), the job plans the merged
// content and the gate approves exactly that plan.
func (m *orderModel) applyJob(pr *orderPR) bool {
	c := m.compose(nil)
	if c.Covered() {
		m.apply(c, nil)
		return false
	}
	if why := m.justified(c); why != "" {
		m.rt.Fatalf("merge of #%d refused for merge order alone: %s", pr.n, why)
	}
	gate := m.plan(pr.n, maps.Clone(m.main), true)
	g := m.compose(gate)
	if !g.Covered() {
		var why []string
		for _, u := range g.Uncovered {
			why = append(why, u.String())
		}
		m.rt.Fatalf("the gate's approval of %s, the plan of what was merged, is refused: %s", gate.ID, strings.Join(why, "; "))
	}
	m.apply(g, gate)
	gate.Status = Applied
	return true
}

// TestReviewOverRandomGitHubOrders: over random weeks of pull requests, plans, updates of
// branches, merges in any order and late plan jobs, (1) every change an apply makes was
// shown in a plan a reviewer approved for exactly that content (a merged pull request's
// newest plan, or the plan the gate approved), a ripple only where a plan showed it known
// after apply; (2) no merge is refused unless a stack it changes has no plan for its
// content on a base that still stands (merge order alone never refuses one), and a ripple
// is never refused; (3) the plan of merged content the gate approves always applies;
// (4) a plan job of a merged pull request is late.
func TestReviewOverRandomGitHubOrders(t *testing.T) {
	var orders, merges, refused int
	rapid.Check(t, func(rt *rapid.T) {
		orders++
		m := newOrderModel(rt)
		version := 0
		for i := range rapid.IntRange(2, 4).Draw(rt, "pull requests") {
			pr := &orderPR{n: i + 1, changes: map[string]int{}}
			for _, s := range orderStacks {
				if rapid.Bool().Draw(rt, fmt.Sprintf("#%d changes %s", pr.n, s)) {
					version++
					pr.changes[s] = version
					m.outOf[version] = "o0"
					if rapid.Bool().Draw(rt, fmt.Sprintf("#%d changes %s's output", pr.n, s)) {
						m.outOf[version] = fmt.Sprintf("o%d", version)
					}
				}
			}
			if len(pr.changes) == 0 {
				version++
				pr.changes["jobs"] = version
				m.outOf[version] = "o0"
			}
			m.prs = append(m.prs, pr)
		}
		checkout := func(pr *orderPR) map[string]int {
			c := maps.Clone(m.main)
			maps.Copy(c, pr.changes)
			return c
		}
		for steps := 0; steps < 40; steps++ {
			var open, planned, merged []*orderPR
			for _, pr := range m.prs {
				switch {
				case pr.merged:
					merged = append(merged, pr)
				case pr.planned:
					planned = append(planned, pr)
					open = append(open, pr)
				default:
					open = append(open, pr)
				}
			}
			if len(open) == 0 {
				break
			}
			kinds := []string{"plan"}
			if len(planned) > 0 {
				kinds = append(kinds, "merge", "merge")
			}
			if len(merged) > 0 {
				kinds = append(kinds, "late plan job", "apply job re-run")
			}
			switch rapid.SampledFrom(kinds).Draw(rt, "event") {
			case "plan": // the pull request's plan job: a first push, or its branch updated
				pr := rapid.SampledFrom(open).Draw(rt, "planned")
				pr.base = maps.Clone(m.main)
				m.plan(pr.n, checkout(pr), false)
				pr.planned = true
			case "late plan job": // a push's plan job that runs after its merge
				pr := rapid.SampledFrom(merged).Draw(rt, "late")
				src := provenance.Source{PullRequest: pr.n, Ref: fmt.Sprintf("refs/pull/%d/merge", pr.n), HeadRef: fmt.Sprintf("b%d", pr.n)}
				if LateFor(src, m.merges, m.tick()) == "" {
					rt.Fatalf("a plan job of #%d, merged, is not late", pr.n)
				}
			case "merge":
				pr := rapid.SampledFrom(planned).Draw(rt, "merged")
				maps.Copy(m.main, pr.changes)
				pr.merged = true
				merges++
				m.merges = append(m.merges, Merge{PullRequest: pr.n, Run: fmt.Sprintf("A%d", pr.n), At: m.tick()})
				if m.applyJob(pr) {
					refused++
				}
			case "apply job re-run": // GitHub re-runs a merge's apply job on its commit
				pr := rapid.SampledFrom(merged).Draw(rt, "re-run")
				if m.applyJob(pr) {
					refused++
				}
			}
		}
	})
	t.Logf("%d random event orders, %d merges, %d refused (each justified, then applied through the gate)", orders, merges, refused)
}
