package crashtest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
)

const (
	deployment   = "shop"
	namespace    = "shop"
	graphKeyName = "shop" // persistent_graph_key defaults to the deployment
)

// step is one push of the scenario.
type step struct {
	Name   string
	Config string   // testdata file that becomes the bundle's cairn.yaml
	Keep   []string // the stacks its config keeps
}

// scenario creates four stacks, then updates one, creates one, deletes one and leaves two
// alone.
var scenario = []step{
	{Name: "push v1", Config: "v1.yaml", Keep: []string{"shop-network", "shop-events", "shop-app", "shop-legacy"}},
	{Name: "push v2", Config: "v2.yaml", Keep: []string{"shop-network", "shop-events", "shop-app", "shop-web"}},
}

var bundles struct {
	once sync.Once
	zips map[string][]byte
	err  error
}

// bundleZip is the zip of a step's bundle: built once, so every world pushes the same
// bytes (and the stacks carry the same bundle digest).
func bundleZip(t testing.TB, s step) []byte {
	t.Helper()
	bundles.once.Do(func() {
		bundles.zips = map[string][]byte{}
		for _, st := range scenario {
			dir, err := os.MkdirTemp("", "crashtest-bundle-")
			if err != nil {
				bundles.err = err
				return
			}
			defer os.RemoveAll(dir)
			if err := os.CopyFS(filepath.Join(dir, "templates"), os.DirFS("testdata/templates")); err != nil {
				bundles.err = err
				return
			}
			cfg, err := os.ReadFile(filepath.Join("testdata", st.Config))
			if err != nil {
				bundles.err = err
				return
			}
			if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), cfg, 0o644); err != nil {
				bundles.err = err
				return
			}
			if bundles.zips[st.Name], err = bundle.Zip(dir); err != nil {
				bundles.err = err
				return
			}
		}
	})
	if bundles.err != nil {
		t.Fatal(bundles.err)
	}
	return bundles.zips[s.Name]
}

// outcome is what one play of the scenario did and found.
type outcome struct {
	Snapshots  []snapshot
	Violations [][]violation // per step that ran
	Calls      []call
	Fired      []firedPoint
	Unfired    []point
	Processes  int
	Restarts   int // of the emulator
	DeadLetter string
}

// play runs the scenario in a fresh world, crashing the deployer at points, and checks
// each step's invariants (against ref's snapshots, unless ref is nil). It stops after the
// first step with a violation: later steps would start from a broken state.
func play(t testing.TB, points []point, ref *outcome) outcome {
	t.Helper()
	ctx := context.Background()
	inj := newInjector(points)
	dir := ""
	if slices.ContainsFunc(points, func(p point) bool { return p.How == restarts }) {
		dir = t.TempDir() // `cairn local up --dir`, so it can be restarted on it
	}
	w := newWorld(t, inj, dir)
	var out outcome
	steps := map[string]string{}
	for i, st := range scenario {
		inj.setPhase(st.Name)
		v := w.push(deployment, bundleZip(t, st))
		steps[v] = st.Name
		var vs []violation
		if err := w.settle(); err != nil {
			vs = append(vs, violation{converges, err.Error()})
		}
		w.waitRestarts()
		snap, more, err := w.observe(ctx, v, st.Keep, steps)
		if err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
		vs = append(vs, more...)
		if ref != nil {
			vs = append(vs, compare(snap, ref.Snapshots[i])...)
		}
		out.Snapshots = append(out.Snapshots, snap)
		out.Violations = append(out.Violations, vs)
		if len(vs) > 0 {
			break
		}
	}
	out.Calls, out.Fired, out.Unfired = inj.log()
	w.mu.Lock()
	out.Processes, out.Restarts = w.processes, w.restarts
	w.mu.Unlock()
	out.DeadLetter, _ = w.deadLetters(ctx)
	return out
}

var reference struct {
	once sync.Once
	out  outcome
	ok   bool
}

// uncrashed is the scenario played without a crash: what every crashed play must
// converge to, and the calls crash points are drawn from.
func uncrashed(t *testing.T) outcome {
	t.Helper()
	reference.once.Do(func() {
		ran := false
		uncrashedPlay := func(t *testing.T) {
			ran = true
			out := play(t, nil, nil)
			ok := len(out.Snapshots) == len(scenario)
			for i, vs := range out.Violations {
				for _, v := range vs {
					t.Errorf("%s without a crash: %s", scenario[i].Name, v)
					ok = false
				}
			}
			if len(out.Snapshots) != len(scenario) {
				t.Errorf("the uncrashed play stopped after %d of %d steps", len(out.Snapshots), len(scenario))
			}
			reference.out, reference.ok = out, ok
		}
		t.Run("uncrashed", uncrashedPlay)
		if !ran {
			// A -run pattern naming one play leaves the subtest out: play it in t.
			uncrashedPlay(t)
		}
	})
	if !reference.ok {
		t.Fatal("the uncrashed play of the scenario failed: nothing to compare crashed plays with")
	}
	return reference.out
}
