package follow_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/target"
)

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// script is a bucket whose runs change at each poll: polls[i] are the documents the i-th
// poll reads (by run id), so the follower sees a run appear and move on.
type script struct {
	mu    sync.Mutex
	polls []map[string]*rundoc.Document
	i     int
	reads []string // run ids read, in order
}

func (s *script) now() map[string]*rundoc.Document {
	return s.polls[min(s.i, len(s.polls)-1)]
}

func (s *script) RunIDs(ctx context.Context, deployment string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id := range s.now() {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	return ids, nil
}

func (s *script) Run(ctx context.Context, deployment, id string) (*rundoc.Document, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads = append(s.reads, id)
	if d, ok := s.now()[id]; ok {
		return d, nil
	}
	return nil, history.ErrNotFound
}

// next moves the script to its next poll.
func (s *script) next() {
	s.mu.Lock()
	s.i++
	s.mu.Unlock()
}

type recorder struct {
	found []string
	steps []string
}

func (r *recorder) Found(doc *rundoc.Document) { r.found = append(r.found, doc.Run.ID) }
func (r *recorder) Stepped(s follow.Step) {
	r.steps = append(r.steps, fmt.Sprintf("%s %s %s %s", s.Elapsed, s.Name(), s.Action, s.Doing()))
}

// stack is a run stack that reached phase at t0+at.
func stack(name string, intent run.Intent, phase run.Phase, at time.Duration, reason string) *run.Stack {
	return &run.Stack{Name: name, StackName: "shop-" + name, Intent: intent, Phase: phase, PhaseSince: t0.Add(at), Reason: reason, ChangeSetType: "CREATE"}
}

func runDoc(id, version string, status run.Status, stacks ...*run.Stack) *rundoc.Document {
	d := &rundoc.Document{Run: &run.Run{ID: id, Deployment: "shop", Mode: run.ModeDeploy, Status: status, StartedAt: t0, Stacks: map[string]*run.Stack{}},
		Bundle: rundoc.Bundle{VersionID: version}}
	for _, s := range stacks {
		d.Run.Stacks[s.Name] = s
	}
	return d
}

// followAll runs f.Follow on a fake clock, moving the script and the clock one poll at a
// time while the follower waits.
func followAll(t *testing.T, s *script, target follow.Target, timeout time.Duration) (*rundoc.Document, *recorder, error) {
	t.Helper()
	clk := clock.NewFake(t0)
	f := &follow.Follower{Runs: s, Clock: clk, Poll: 2 * time.Second, Timeout: timeout}
	rec := &recorder{}
	type result struct {
		doc *rundoc.Document
		err error
	}
	done := make(chan result, 1)
	go func() {
		doc, err := f.Follow(context.Background(), target, rec)
		done <- result{doc, err}
	}()
	for {
		select {
		case r := <-done:
			return r.doc, rec, r.err
		default:
		}
		if clk.WaitForWaiters(1, 10*time.Millisecond) {
			s.next()
			clk.Advance(2 * time.Second)
		}
	}
}

func TestFollowPrintsStepsInTheOrderTheyHappened(t *testing.T) {
	old := runDoc("20261130-070000-0000", "v1", run.Succeeded, stack("db", run.IntentDeploy, run.Done, 0, ""))
	s := &script{polls: []map[string]*rundoc.Document{
		{old.Run.ID: old}, // the upload's run does not exist yet
		{old.Run.ID: old, "20261130-080000-aaaa": runDoc("20261130-080000-aaaa", "v2", run.Running,
			stack("web", run.IntentDeploy, run.CreatingChangeSet, 3*time.Second, ""),
			stack("app", run.IntentDeploy, run.Executing, 2*time.Second, ""),
			stack("db", run.IntentDeploy, run.Pending, 0, ""))},
		{old.Run.ID: old, "20261130-080000-aaaa": runDoc("20261130-080000-aaaa", "v2", run.Running,
			stack("web", run.IntentDeploy, run.CreatingChangeSet, 3*time.Second, ""),
			stack("app", run.IntentDeploy, run.Done, 9*time.Second, ""),
			stack("db", run.IntentDelete, run.Deleting, 5*time.Second, ""))},
		{old.Run.ID: old, "20261130-080000-aaaa": runDoc("20261130-080000-aaaa", "v2", run.RunFailed,
			stack("web", run.IntentDeploy, run.Failed, 12*time.Second, "stack shop-web is ROLLBACK_COMPLETE: Topic: denied"),
			stack("app", run.IntentDeploy, run.Done, 9*time.Second, ""),
			stack("db", run.IntentDelete, run.Done, 11*time.Second, ""))},
	}}
	// web lives in another account and region: its steps say where.
	for _, docs := range s.polls {
		if d := docs["20261130-080000-aaaa"]; d != nil {
			d.Run.Stacks["web"].At = target.Target{Account: "111111111111", Region: "eu-west-1"}
		}
	}
	doc, rec, err := followAll(t, s, follow.Target{Deployment: "shop", Version: "v2"}, time.Hour)
	if err != nil || doc == nil || doc.Run.Status != run.RunFailed {
		t.Fatalf("Follow = %v, %v; want the failed run", doc, err)
	}
	want := []string{
		"2s app create executing change set",
		"3s web (111111111111, eu-west-1) create creating change set",
		"5s db delete deleting",
		"9s app create done",
		"11s db delete done",
		"12s web (111111111111, eu-west-1) create failed: stack shop-web is ROLLBACK_COMPLETE: Topic: denied",
	}
	if w := follow.Width(doc); w != len("web (111111111111, eu-west-1)") {
		t.Errorf("width %d, want the width of web's name with its place", w)
	}
	if !slices.Equal(rec.steps, want) {
		t.Errorf("steps:\n%q\nwant:\n%q", rec.steps, want)
	}
	if !slices.Equal(rec.found, []string{"20261130-080000-aaaa"}) {
		t.Errorf("found %v", rec.found)
	}
	// The older run is read once, found not to be the upload's, and never again.
	if n := count(s.reads, old.Run.ID); n != 1 {
		t.Errorf("the older run was read %d times, want once: %v", n, s.reads)
	}
	sum := follow.Summarize(doc)
	if got := sum.String(); got != "1 created, 0 updated, 1 deleted, 0 unchanged, 1 failed" {
		t.Errorf("summary %q", got)
	}
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func TestFollowTimesOut(t *testing.T) {
	s := &script{polls: []map[string]*rundoc.Document{{}}}
	doc, _, err := followAll(t, s, follow.Target{Deployment: "shop", Version: "v9"}, 10*time.Second)
	if !errors.Is(err, follow.ErrTimeout) || doc != nil {
		t.Fatalf("Follow = %v, %v; want ErrTimeout and no run", doc, err)
	}
}

func TestTargetMatches(t *testing.T) {
	apply := runDoc("a", "v1", run.Running)
	apply.Plan = "p1"
	planRun := runDoc("p1", "v1", run.Running)
	planRun.Run.Mode = run.ModePlan
	tests := []struct {
		name   string
		target follow.Target
		doc    *rundoc.Document
		want   bool
	}{
		{"the upload's version", follow.Target{Version: "v1"}, runDoc("r", "v1", run.Running), true},
		{"another version", follow.Target{Version: "v1"}, runDoc("r", "v2", run.Running), false},
		{"unversioned: started since", follow.Target{Since: t0}, runDoc("r", "", run.Running), true},
		{"unversioned: started before", follow.Target{Since: t0.Add(time.Second)}, runDoc("r", "", run.Running), false},
		{"the apply run of the plan", follow.Target{Plan: "p1", Version: "v1"}, apply, true},
		{"not the plan run itself", follow.Target{Plan: "p1", Version: "v1"}, planRun, false},
	}
	for _, tt := range tests {
		if got := tt.target.Matches(tt.doc); got != tt.want {
			t.Errorf("%s: Matches = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	recreated := stack("cache", run.IntentDeploy, run.Done, time.Second, "")
	adopted := stack("extra", run.IntentDeploy, run.Done, time.Second, "")
	adopted.ChangeSetType, adopted.Exists = "UPDATE", true
	d := runDoc("r", "v", run.RunFailed,
		recreated, adopted,
		stack("db", run.IntentRead, run.Done, time.Second, ""),
		stack("web", run.IntentDeploy, run.Unchanged, time.Second, ""),
		stack("edge", run.IntentDeploy, run.Blocked, 0, "dependency web failed"),
	)
	d.Decisions = []plan.Decision{{Stack: "cache", Action: plan.Recreate}, {Stack: "extra", Action: plan.Adopt}}
	d.Run.FinishedAt = t0.Add(95 * time.Second)
	sum := follow.Summarize(d)
	if sum.String() != "1 created, 1 updated, 0 deleted, 2 unchanged, 0 failed, 1 blocked" || sum.Duration != 95*time.Second {
		t.Fatalf("Summarize = %q in %s", sum, sum.Duration)
	}
}

func TestStarted(t *testing.T) {
	s := &script{polls: []map[string]*rundoc.Document{
		{},
		{"20261130-080000-aaaa": runDoc("20261130-080000-aaaa", "v2", run.Running, stack("web", run.IntentDeploy, run.Pending, 0, ""))},
	}}
	clk := clock.NewFake(t0)
	f := &follow.Follower{Runs: s, Clock: clk, Poll: time.Second, Timeout: time.Minute}
	done := make(chan *rundoc.Document, 1)
	go func() {
		doc, err := f.Started(context.Background(), follow.Target{Deployment: "shop", Version: "v2"})
		if err != nil {
			t.Error(err)
		}
		done <- doc
	}()
	if !clk.WaitForWaiters(1, 10*time.Second) {
		t.Fatal("Started did not wait for the run")
	}
	s.next()
	clk.Advance(time.Second)
	if doc := <-done; doc == nil || doc.Run.ID != "20261130-080000-aaaa" || doc.Run.Status != run.Running {
		t.Fatalf("Started = %v, want the running run", doc)
	}
}

// TestStepsAtOneInstant: a stack finishing and the stack it lets start, seen at the same
// instant, read in that order.
func TestStepsAtOneInstant(t *testing.T) {
	cur := runDoc("r", "v", run.Running,
		stack("a-app", run.IntentDeploy, run.CreatingChangeSet, 17*time.Second, ""),
		stack("z-net", run.IntentDeploy, run.Done, 17*time.Second, ""))
	steps := follow.Steps(nil, cur)
	if len(steps) != 2 || steps[0].Stack != "z-net" || steps[1].Stack != "a-app" {
		t.Fatalf("Steps = %+v, want z-net done before a-app starts", steps)
	}
}
