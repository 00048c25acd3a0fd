package plan

import (
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
)

// TestRetirement: which open plans hygiene supersedes or expires, by the newest plan made.
func TestRetirement(t *testing.T) {
	const ttl = 7 * 24 * time.Hour
	made := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	failedWithChangeSet := &Document{Run: &run.Run{Stacks: map[string]*run.Stack{"app": {Phase: run.Failed, ChangeSetID: "cs-1"}}},
		Stacks: []Stack{{Name: "app"}}}
	failedBare := &Document{Run: &run.Run{Stacks: map[string]*run.Stack{"app": {Phase: run.Failed}}}, Stacks: []Stack{{Name: "app"}}}
	pr := func(n int) provenance.Source { return provenance.Source{PullRequest: n} }
	newest := func(id string, n int) *Document {
		return &Document{ID: id, Deployment: "shop", Bundle: BundleVersion{Source: pr(n)}}
	}
	for _, tc := range []struct {
		name   string
		id     string
		pr     int
		status Status
		from   *Document // Run and Stacks of a failed plan
		by     *Document
		age    time.Duration
		want   Status
		retire bool
	}{
		{name: "older plan of the same pull request", id: "P1", pr: 21, status: Planned, by: newest("P2", 21), age: time.Hour, want: Superseded, retire: true},
		{name: "older plan of another pull request stays", id: "P1", pr: 22, status: Planned, by: newest("P2", 21), age: time.Hour},
		{name: "older plan of another pull request, past its TTL", id: "P1", pr: 22, status: Planned, by: newest("P2", 21), age: ttl + time.Second, want: Expired, retire: true},
		{name: "the plan made", id: "P2", pr: 21, status: Planned, by: newest("P2", 21), age: ttl + time.Hour},
		{name: "a newer plan of the same pull request, young", id: "P3", pr: 21, status: Planned, by: newest("P2", 21), age: ttl},
		{name: "a newer plan of the same pull request, past its TTL", id: "P3", pr: 21, status: Planned, by: newest("P2", 21), age: ttl + time.Second, want: Expired, retire: true},
		{name: "no plan made (after an apply): only an expired plan goes", id: "P1", status: Planned, age: ttl + time.Second, want: Expired, retire: true},
		{name: "no plan made: a young plan stays", id: "P1", status: Planned, age: time.Hour},
		{name: "applied", id: "P1", pr: 21, status: Applied, by: newest("P2", 21), age: time.Hour},
		{name: "applying", id: "P1", pr: 21, status: Applying, by: newest("P2", 21), age: ttl * 2},
		{name: "superseded already", id: "P1", pr: 21, status: Superseded, by: newest("P2", 21), age: time.Hour},
		{name: "failed after making a change set", id: "P1", pr: 21, status: PlanFailed, from: failedWithChangeSet, by: newest("P2", 21), age: time.Hour, want: Superseded, retire: true},
		{name: "failed before making any", id: "P1", pr: 21, status: PlanFailed, from: failedBare, by: newest("P2", 21), age: time.Hour},
	} {
		p := &Document{ID: tc.id, Deployment: "shop", Status: tc.status, CreatedAt: made, Run: &run.Run{Stacks: map[string]*run.Stack{}},
			Stacks: []Stack{{Name: "app", ChangeSetID: "cs-1"}}, Bundle: BundleVersion{Source: pr(tc.pr)}}
		if tc.from != nil {
			p.Run, p.Stacks = tc.from.Run, tc.from.Stacks
		}
		got, retire := p.Retirement(tc.by, made.Add(tc.age), ttl)
		if got != tc.want || retire != tc.retire {
			t.Errorf("%s: Retirement = %q, %v; want %q, %v", tc.name, got, retire, tc.want, tc.retire)
		}
	}
}

// TestMadeOnlyFor: a stack goes with a retired plan only while it is still the
// REVIEW_IN_PROGRESS stack the plan's CREATE change set made, tagged for the plan's graph
// and stack, and nothing newer keeps it.
func TestMadeOnlyFor(t *testing.T) {
	p := &Document{Namespace: "shop", GraphKey: "shop"}
	lo := Leftover{Stack: Stack{Name: "web", StackName: "shop-web", StackID: "id-web", Action: Create}, ChangeSetID: "cs-web"}
	tags := map[string]string{state.TagNamespace: "shop", state.TagGraphKey: "shop", state.TagName: "web"}
	own := Live{StackName: "shop-web", StackID: "id-web", Status: "REVIEW_IN_PROGRESS", Tags: tags}
	for _, tc := range []struct {
		name  string
		edit  func(lo *Leftover, l *Live)
		found bool
		keep  map[string]bool
		want  bool
	}{
		{name: "the plan's own stack", found: true, want: true},
		{name: "gone already", found: false},
		{name: "an update's stack", found: true, edit: func(lo *Leftover, _ *Live) { lo.Stack.Action = Update }},
		{name: "executed since (CREATE_COMPLETE)", found: true, edit: func(_ *Leftover, l *Live) { l.Status = "CREATE_COMPLETE" }},
		{name: "made again since (another stack id)", found: true, edit: func(_ *Leftover, l *Live) { l.StackID = "id-web-2" }},
		{name: "tagged for another graph", found: true, edit: func(_ *Leftover, l *Live) {
			l.Tags = map[string]string{state.TagNamespace: "shop", state.TagGraphKey: "other", state.TagName: "web"}
		}},
		{name: "untagged", found: true, edit: func(_ *Leftover, l *Live) { l.Tags = nil }},
		{name: "a newer plan uses it", found: true, keep: map[string]bool{"id-web": true}},
	} {
		lo, l := lo, own
		if tc.edit != nil {
			tc.edit(&lo, &l)
		}
		if got := p.MadeOnlyFor(lo, l, tc.found, tc.keep); got != tc.want {
			t.Errorf("%s: MadeOnlyFor = %v, want %v", tc.name, got, tc.want)
		}
	}
}
