package follow_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/target"
)

// slowEvents answers DescribeStackEvents with no event, each call taking took on the
// clock (as the follower's budget paces them), and records which stacks were read.
type slowEvents struct {
	mu   sync.Mutex
	clk  *clock.Fake
	took time.Duration
	read []string
}

func (s *slowEvents) DescribeStackEvents(_ context.Context, in *cloudformation.DescribeStackEventsInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStackEventsOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clk.Advance(s.took)
	s.read = append(s.read, aws.ToString(in.StackName))
	return &cloudformation.DescribeStackEventsOutput{}, nil
}

func (s *slowEvents) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.read
	s.read = nil
	return r
}

// TestEventsReadInTurns: with more stacks in flight than one poll can read, each Read
// stops at PerRead and the next goes on where it stopped, so every stack is read in turn
// and the follower polls the run on time; once the run ended, the last Read notes the
// stacks whose last events it did not read, rather than read them all first (at 500
// stacks, push --wait returned ~45 s after the run ended).
func TestEventsReadInTurns(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	api := &slowEvents{clk: clk, took: 200 * time.Millisecond}
	e := &follow.Events{Clock: clk, PerRead: time.Second, Budget: awsclient.Budget{Limiter: rate.NewLimiter(rate.Inf, 1), Clock: clk},
		At: func(context.Context, target.Spec) (follow.EventsAPI, error) { return api, nil }}
	doc := &rundoc.Document{Run: &run.Run{ID: "r1", Deployment: "shop", Status: run.Running, StartedAt: t0, Stacks: map[string]*run.Stack{}}}
	const n = 12
	for i := range n {
		name := fmt.Sprintf("s%02d", i)
		doc.Run.Stacks[name] = &run.Stack{Name: name, StackName: "shop-" + name, StackID: "id-" + name, Phase: run.Executing, ExecutedAt: t0, PhaseSince: t0}
	}
	seen := map[string]int{}
	for poll := range 3 {
		_, notes := e.Read(context.Background(), nil, doc)
		got := api.take()
		if len(got) != 5 || len(notes) != 0 {
			t.Fatalf("poll %d read %v (notes %q), want 5 stacks (a second's worth) and no note", poll, got, notes)
		}
		for _, id := range got {
			seen[id]++
		}
	}
	for i := range n {
		if id := fmt.Sprintf("id-s%02d", i); seen[id] == 0 {
			t.Errorf("stack %s never read in 3 polls (reads %v)", id, seen)
		}
	}
	// The run ends: one more bounded Read, and a note for the rest.
	prev := &rundoc.Document{Run: doc.Run.Clone()}
	doc.Run.Status = run.Succeeded
	for _, s := range doc.Run.Stacks {
		s.Phase, s.FinishedAt = run.Done, clk.Now()
	}
	before := clk.Now()
	_, notes := e.Read(context.Background(), prev, doc)
	if took := clk.Now().Sub(before); took > time.Second+api.took {
		t.Errorf("the last Read took %s, want at most PerRead", took)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "the last resource events of 7 stack(s) are not shown") || !strings.Contains(notes[0], "cairn follow shop r1") {
		t.Errorf("notes %q, want one naming the 7 stacks not read and `cairn follow shop r1`", notes)
	}
}

// endsAt is a run of n stacks in flight that has ended once the clock passes end: the
// document the follower reads, and when it read it.
type endsAt struct {
	mu    sync.Mutex
	clk   *clock.Fake
	end   time.Time
	n     int
	reads []time.Time
}

func (r *endsAt) RunIDs(context.Context, string) ([]string, error) { return []string{"r1"}, nil }

func (r *endsAt) Run(context.Context, string, string) (*rundoc.Document, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clk.Now()
	r.reads = append(r.reads, now)
	doc := &rundoc.Document{Run: &run.Run{ID: "r1", Deployment: "shop", Status: run.Running, StartedAt: t0, Stacks: map[string]*run.Stack{}}}
	if !now.Before(r.end) {
		doc.Run.Status, doc.Run.FinishedAt = run.Succeeded, r.end
	}
	for i := range r.n {
		name := fmt.Sprintf("s%02d", i)
		s := &run.Stack{Name: name, StackName: "shop-" + name, StackID: "id-" + name, Phase: run.Executing, ExecutedAt: t0, PhaseSince: t0}
		if doc.Run.Status != run.Running {
			s.Phase, s.FinishedAt, s.PhaseSince = run.Done, r.end, r.end
		}
		doc.Run.Stacks[name] = s
	}
	return doc, nil
}

// TestPollsBeginEveryPoll: while more stacks are in flight than a poll reads, each poll's
// event reads take their whole bound, and the next poll begins Poll after the one before
// began, not Poll after its reads ended; so the run's end is reported at most a Poll and
// one bounded read after it (at 500 stacks in real time, polls were 4.1 s apart with
// --poll 2s, and push --wait returned 4 to 6 s after the run ended).
func TestPollsBeginEveryPoll(t *testing.T) {
	clk := clock.NewFake(t0)
	api := &slowEvents{clk: clk, took: 200 * time.Millisecond}
	runs := &endsAt{clk: clk, end: t0.Add(7500 * time.Millisecond), n: 30}
	f := &follow.Follower{Runs: runs, Clock: clk, Poll: 2 * time.Second, Timeout: time.Hour,
		Events: &follow.Events{Clock: clk, PerRead: 1500 * time.Millisecond, Budget: awsclient.Budget{Limiter: rate.NewLimiter(rate.Inf, 1), Clock: clk},
			At: func(context.Context, target.Spec) (follow.EventsAPI, error) { return api, nil }}}
	done := make(chan error, 1)
	go func() {
		_, err := f.Follow(context.Background(), follow.Target{Deployment: "shop", Run: "r1"}, &silent{})
		done <- err
	}()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			var at []time.Duration
			for _, r := range runs.reads {
				at = append(at, r.Sub(t0))
			}
			if want := []time.Duration{0, 2 * time.Second, 4 * time.Second, 6 * time.Second, 8 * time.Second}; !slices.Equal(at, want) {
				t.Errorf("the run was read at %v, want every 2 s: %v", at, want)
			}
			if lag, most := clk.Now().Sub(runs.end), f.Poll+f.Events.PerRead+api.took; lag > most {
				t.Errorf("the follower returned %s after the run ended, want at most %s (the next poll and one bounded read)", lag, most)
			}
			return
		default:
		}
		if clk.WaitForWaiters(1, 10*time.Millisecond) {
			if at, ok := clk.Next(); ok {
				clk.Set(at)
			}
		}
	}
}

// silent is a ResourceObserver that shows nothing.
type silent struct{}

func (silent) Found(*rundoc.Document)             {}
func (silent) Stepped(follow.Step)                {}
func (silent) Changed(follow.Resource)            {}
func (silent) Noted(string)                       {}
func (silent) Polled(*rundoc.Document, time.Time) {}

// TestReplayReadsEveryStack: a run that had ended before the follower first read it
// (`cairn follow NAME RUN`, which the note of a bounded Read names to see every stack's
// last events) is replayed whole: every stack that executed is read, however long that
// takes, and nothing is noted as not shown.
func TestReplayReadsEveryStack(t *testing.T) {
	clk := clock.NewFake(t0)
	api := &slowEvents{clk: clk, took: 200 * time.Millisecond}
	e := &follow.Events{Clock: clk, PerRead: time.Second, Budget: awsclient.Budget{Limiter: rate.NewLimiter(rate.Inf, 1), Clock: clk},
		At: func(context.Context, target.Spec) (follow.EventsAPI, error) { return api, nil }}
	runs := &endsAt{clk: clk, end: t0, n: 12}
	doc, _ := runs.Run(context.Background(), "shop", "r1")
	_, notes := e.Read(context.Background(), nil, doc)
	if got := api.take(); len(got) != 12 || len(notes) != 0 {
		t.Errorf("a replay read %d of 12 stacks, notes %q; want every stack and no note", len(got), notes)
	}
}
