package statestore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

var stackNames = []string{"app", "cache", "db", "queue", "vpc", "web"}

// drawGraph draws a graph that is valid often but not always: dependencies may be missing
// or form cycles, and real stack names may collide.
func drawGraph(t *rapid.T) *state.Graph {
	chosen := rapid.Permutation(stackNames).Draw(t, "order")
	chosen = chosen[:rapid.IntRange(0, len(chosen)).Draw(t, "stacks")]
	// Dependencies come from earlier stacks only (acyclic), from any chosen stack (cycles
	// and self-dependencies possible) or from any name (missing dependencies likely).
	mode := rapid.SampledFrom([]string{"forward", "forward", "forward", "chosen", "chosen", "any"}).Draw(t, "mode")
	g := &state.Graph{Stacks: map[string]*state.Stack{}}
	for i, name := range chosen {
		st := &state.Stack{Name: name, StackName: "shop-" + name, Status: "CREATE_COMPLETE",
			TemplateHash: rapid.StringMatching(`[0-9a-f]{4}`).Draw(t, "template")}
		if rapid.IntRange(0, 15).Draw(t, "collide") == 0 {
			st.StackName = "shop-" + rapid.SampledFrom(stackNames).Draw(t, "collideWith")
		}
		var pool []string
		switch mode {
		case "forward":
			pool = chosen[:i]
		case "chosen":
			pool = slices.DeleteFunc(slices.Clone(chosen), func(n string) bool { return n == name && i%2 == 0 })
		default:
			pool = append(slices.Clone(stackNames), "ghost")
		}
		if len(pool) > 0 {
			st.Requires = rapid.SliceOfN(rapid.SampledFrom(pool), 0, 3).Draw(t, "requires")
		}
		g.Stacks[name] = st
	}
	return g
}

// modelValid decides validity independently of Validate: Kahn's algorithm by counting.
func modelValid(g *state.Graph) bool {
	real := map[string]bool{}
	indeg := map[string]int{}
	for name, st := range g.Stacks {
		if st.Name != name || st.StackName == "" || real[st.StackName] {
			return false
		}
		real[st.StackName] = true
		for _, d := range st.Requires {
			if _, ok := g.Stacks[d]; !ok || d == name {
				return false
			}
		}
		indeg[name] = len(slices.Compact(slices.Sorted(slices.Values(st.Requires))))
	}
	var ready []string
	for n, d := range indeg {
		if d == 0 {
			ready = append(ready, n)
		}
	}
	placed := 0
	for len(ready) > 0 {
		n := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		placed++
		for m, st := range g.Stacks {
			if slices.Contains(st.Requires, n) {
				if indeg[m]--; indeg[m] == 0 {
					ready = append(ready, m)
				}
			}
		}
	}
	return placed == len(g.Stacks)
}

func TestValidateAgreesWithModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := drawGraph(t)
		err := g.Validate()
		if want := modelValid(g); (err == nil) != want {
			t.Fatalf("Validate() = %v, model says valid=%v for %s", err, want, describe(g))
		}
	})
}

func TestValidateMessages(t *testing.T) {
	tests := []struct {
		name string
		edit func(g *state.Graph)
		want []string
	}{
		{"valid", func(*state.Graph) {}, nil},
		{"missing dependency", func(g *state.Graph) { g.Stacks["app"].Requires = []string{"db"} }, []string{`stack "app" requires "db", which is not in the graph`}},
		{"self dependency", func(g *state.Graph) { g.Stacks["vpc"].Requires = []string{"vpc"} }, []string{`stack "vpc" requires itself`}},
		{"cycle", func(g *state.Graph) { g.Stacks["vpc"].Requires = []string{"app"} }, []string{"dependency cycle: app -> vpc -> app"}},
		{"duplicate stack name", func(g *state.Graph) { g.Stacks["app"].StackName = "shop-vpc" }, []string{`stacks "app" and "vpc" both use stack name "shop-vpc"`}},
		{"misfiled entry", func(g *state.Graph) { g.Stacks["app"].Name = "web" }, []string{`stack "web" is filed under "app"`}},
		{"no real name", func(g *state.Graph) { g.Stacks["app"].StackName = "" }, []string{`stack "app" has no real stack name`}},
		{"all at once", func(g *state.Graph) {
			g.Stacks["app"].Requires = []string{"db"}
			g.Stacks["vpc"].Requires = []string{"vpc"}
		}, []string{`requires "db"`, `requires itself`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := twoStacks()
			g.Namespace, g.Key = "shop", "main"
			tc.edit(g)
			err := g.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) || !strings.Contains(err.Error(), "state shop/main") {
					t.Errorf("Validate() = %q, want it to contain %q and name the graph", err, w)
				}
			}
		})
	}
}

// TestWriteSequencesKeepInvariants drives random sequences of writes, takeovers by other
// runs, stale writes and releases through the store, and after every step checks the
// stored document: it is valid (dependencies exist, no cycles, unique names), its
// generation is the number of successful writes, it was written by the last successful
// writer, and refused writes changed nothing.
func TestWriteSequencesKeepInvariants(t *testing.T) {
	e := newEnv(t)
	s := e.store(nil)
	ctx := context.Background()
	iteration := 0
	rapid.Check(t, func(rt *rapid.T) {
		iteration++
		key := fmt.Sprintf("prop-%d", iteration)
		var (
			gen     int64
			token   string
			stacks  string // JSON of the stored stacks
			holder  *statestore.Lock
			stale   []*statestore.Lock
			holders int
		)
		acquire := func() {
			holders++
			l, err := s.Acquire(ctx, "shop", key, fmt.Sprintf("run-%d", holders), ownerA)
			if err != nil {
				rt.Fatalf("Acquire: %v", err)
			}
			g, err := s.Read(ctx, l)
			switch {
			case gen == 0 && !errors.Is(err, statestore.ErrNotFound):
				rt.Fatalf("Read of a never-written graph: %v, %v", g, err)
			case gen > 0 && (err != nil || g.Generation != gen):
				rt.Fatalf("Read after %d writes: %v, %v", gen, g, err)
			}
			holder = l
		}
		steps := rapid.IntRange(1, 8).Draw(rt, "steps")
		for range steps {
			switch rapid.SampledFrom([]string{"write", "write", "write", "takeover", "stale", "release"}).Draw(rt, "op") {
			case "write":
				if holder == nil {
					acquire()
				}
				g := drawGraph(rt)
				valid := modelValid(g)
				err := s.Write(ctx, holder, g)
				if (err == nil) != valid {
					rt.Fatalf("Write of a graph the model finds valid=%v: %v (%s)", valid, err, describe(g))
				}
				if err == nil {
					gen++
					token = holder.Token
					b, _ := json.Marshal(g.Stacks)
					stacks = string(b)
				}
			case "takeover":
				if holder == nil {
					acquire()
				}
				stale = append(stale, holder)
				e.clock.Advance(11*time.Minute + statestore.DefaultSkew)
				acquire()
				if holder.TakenOverFrom == nil || holder.TakenOverFrom.Token != stale[len(stale)-1].Token {
					rt.Fatalf("takeover not recorded: %+v", holder.TakenOverFrom)
				}
			case "stale":
				if len(stale) == 0 {
					continue
				}
				l := rapid.SampledFrom(stale).Draw(rt, "staleHolder")
				g := drawGraph(rt)
				err := s.Write(ctx, l, g)
				if err == nil {
					rt.Fatalf("a stale writer (run %s) wrote", l.RunID)
				}
				if modelValid(g) && !errors.Is(err, statestore.ErrLockLost) && !errors.Is(err, statestore.ErrLeaseExpired) {
					rt.Fatalf("stale writer: err = %v, want ErrLockLost or ErrLeaseExpired", err)
				}
			case "release":
				if holder == nil {
					continue
				}
				if err := s.Release(ctx, holder); err != nil {
					rt.Fatalf("Release: %v", err)
				}
				stale = append(stale, holder)
				holder = nil
			}

			got, err := s.Show(ctx, "shop", key, "")
			if gen == 0 {
				if !errors.Is(err, statestore.ErrNotFound) {
					rt.Fatalf("Show before any write: %v, %v", got, err)
				}
				continue
			}
			if err != nil {
				rt.Fatal(err)
			}
			if err := got.Validate(); err != nil {
				rt.Fatalf("stored graph invalid: %v", err)
			}
			b, _ := json.Marshal(got.Stacks)
			if got.Generation != gen || got.LockToken != token || string(b) != stacks {
				rt.Fatalf("stored generation %d token %s stacks %s; want %d %s %s", got.Generation, got.LockToken, b, gen, token, stacks)
			}
		}
	})
}

func describe(g *state.Graph) string {
	if g == nil {
		return "<nil>"
	}
	var parts []string
	for _, n := range g.Names() {
		st := g.Stacks[n]
		parts = append(parts, fmt.Sprintf("%s(%s)->%v", n, st.StackName, st.Requires))
	}
	return strings.Join(parts, " ")
}
