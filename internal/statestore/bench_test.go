package statestore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// BenchmarkLockedWrite measures one deployer step's state traffic against the emulator:
// acquire, read, write a 31-stack graph, release.
func BenchmarkLockedWrite(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b)
	s := e.store(nil)
	g := bigGraph()
	for b.Loop() {
		l, err := s.Acquire(ctx, "shop", "bench", "run", ownerA)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Read(ctx, l); err != nil && !errors.Is(err, statestore.ErrNotFound) {
			b.Fatal(err)
		}
		if err := s.Write(ctx, l, g); err != nil {
			b.Fatal(err)
		}
		if err := s.Release(ctx, l); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecord10k records the end of a 10,000-stack run in its persistent graph.
func BenchmarkRecord10k(b *testing.B) {
	const n = 10_000
	g := &state.Graph{Namespace: "shop", Key: "shop", Stacks: map[string]*state.Stack{}}
	r := &run.Run{ID: "b", Mode: run.ModeDeploy, Status: run.Succeeded, Stacks: map[string]*run.Stack{}}
	for i := range n {
		name := fmt.Sprintf("s%05d", i)
		var req []string
		if i > 0 {
			req = []string{fmt.Sprintf("s%05d", (i-1)/2)}
		}
		g.Stacks[name] = &state.Stack{Name: name, StackName: "x-" + name, Requires: req, TemplateHash: "t1"}
		r.Stacks[name] = &run.Stack{Name: name, StackName: "x-" + name, Intent: run.IntentDeploy, Phase: run.Done, Requires: req, TemplateHash: "t2"}
	}
	rec := state.Recording{Run: r, Bundle: state.BundleRef{VersionID: "v2"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, changed := state.Record(g, rec); !changed {
			b.Fatal("nothing recorded")
		}
	}
}
