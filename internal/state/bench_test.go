package state_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cairn-dev/cairn/internal/state"
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
		if _, err := s.Read(ctx, l); err != nil && !errors.Is(err, state.ErrNotFound) {
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
