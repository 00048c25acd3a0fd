package graph

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// in returns a predicate true for the space-separated names of set.
func in(set string) func(string) bool {
	names := strings.Fields(set)
	return func(n string) bool { return slices.Contains(names, n) }
}

func TestReady(t *testing.T) {
	for _, tc := range []struct {
		name, spec, done string
		want             []string
	}{
		{"empty graph", "", "", nil},
		{"nothing done: the roots", "app>db db>net web>net", "", []string{"net"}},
		{"a root done", "app>db db>net web>net", "net", []string{"db", "web"}},
		{"all dependencies needed", "app>db app>cache db cache", "db", []string{"cache"}},
		{"all dependencies done", "app>db app>cache db cache", "db cache", []string{"app"}},
		{"everything done", "a>b", "a b", nil},
		{"done out of order counts as done", "a>b", "a", []string{"b"}},
		{"names sort against the order", "a>b b>c c>d", "d c", []string{"b"}},
		{"a self-edge is never ready", "a>a b", "", []string{"b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := build(t, tc.spec).Ready(in(tc.done)); !slices.Equal(got, tc.want) {
				t.Fatalf("Ready(%q) = %q, want %q", tc.done, got, tc.want)
			}
		})
	}
}

func TestBlockedBy(t *testing.T) {
	all := func(string) bool { return true }
	for _, tc := range []struct {
		name, spec, failed string
		through            func(string) bool
		want               []string
	}{
		{"nothing failed", "a>b", "", nil, nil},
		{"a leaf failed", "a>b", "a", nil, nil},
		{"a chain", "a>b b>c c>d", "d", nil, []string{"a", "b", "c"}},
		{"a chain named against its order", "d>c c>b b>a", "a", all, []string{"b", "c", "d"}},
		{"a fan-out", "x>r y>r z>r r>q", "r", nil, []string{"x", "y", "z"}},
		{"a diamond, once each", "top>l top>r l>base r>base", "base", nil, []string{"l", "r", "top"}},
		{"a failed dependent of a failed node", "a>b b>c", "b c", nil, []string{"a", "b"}},
		{"unknown names ignored", "a>b", "ghost b", nil, []string{"a"}},
		{"through stops the walk", "a>b b>c x>c", "c", in("a x"), []string{"x"}},
		{"a self-edge", "a>a b>a", "a", nil, []string{"a", "b"}},
		{"a cycle below", "a>b b>c c>b", "c", nil, []string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := build(t, tc.spec).BlockedBy(strings.Fields(tc.failed), tc.through); !slices.Equal(got, tc.want) {
				t.Fatalf("BlockedBy(%q) = %q, want %q", tc.failed, got, tc.want)
			}
		})
	}
}

func TestPrerequisites(t *testing.T) {
	for _, tc := range []struct {
		name, spec, nodes string
		through           func(string) bool
		want              []string
	}{
		{"a root", "a>b", "b", nil, nil},
		{"a chain", "a>b b>c c>d", "a", nil, []string{"b", "c", "d"}},
		{"two starts sharing", "a>c b>c c>d", "a b", nil, []string{"c", "d"}},
		{"one start needed by another", "a>b b>c", "a b", nil, []string{"b", "c"}},
		{"through stops the walk", "a>b b>c a>x", "a", in("b x"), []string{"b", "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := build(t, tc.spec).Prerequisites(strings.Fields(tc.nodes), tc.through); !slices.Equal(got, tc.want) {
				t.Fatalf("Prerequisites(%q) = %q, want %q", tc.nodes, got, tc.want)
			}
		})
	}
}

// TestWalk: the passes a walk makes when each node of settle settles (once) at a visit
// that finds its dependencies settled, as an unchanged stack does in a run's step.
func TestWalk(t *testing.T) {
	for _, tc := range []struct {
		name, spec, settle string
		want               []string // the passes, each "a b c"
	}{
		{"nothing settles", "a>b b>c", "", []string{"a b c"}},
		{"a chain in name order", "c>b b>a", "a b c", []string{"a b c", "b c"}},
		{"a chain named against its order: a pass per node", "a>b b>c", "a b c", []string{"a b c", "b", "a"}},
		{"a fan-out: dependents once each", "x>r y>r z>r", "r x", []string{"r x y z", "x y z"}},
		{"a diamond: the top once", "top>l top>r l>base r>base", "base l r", []string{"base l r top", "l r top"}},
		{"a diamond against the names", "a>l a>r l>z r>z", "a l r z", []string{"a l r z", "l r", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, tc.spec)
			w := g.Walk()
			settle, settled := in(tc.settle), map[string]bool{}
			var got []string
			for pass := w.Next(); pass != nil; pass = w.Next() {
				if len(got) > 10 {
					t.Fatalf("more than 10 passes: %q", got)
				}
				got = append(got, strings.Join(pass, " "))
				for _, n := range pass {
					if settle(n) && !settled[n] && !slices.ContainsFunc(g.Dependencies(n), func(d string) bool { return !settled[d] }) {
						settled[n] = true
						w.Settled(n)
					}
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("passes %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCycleErrorUnordered(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"a>b b>a", "a b"},
		{"a>b b>a c>a d", "a b c"},
		{"z>z y>z x", "y z"},
		{"app>db db>cache cache>app web>app web>x", "app cache db web"},
	} {
		var ce *CycleError
		if err := build(t, tc.spec).Validate(); !errors.As(err, &ce) {
			t.Fatalf("%s: Validate() = %v, want a cycle", tc.spec, err)
		}
		if got := strings.Join(ce.Unordered, " "); got != tc.want {
			t.Errorf("%s: Unordered %q, want %q", tc.spec, got, tc.want)
		}
	}
}

// TestPropertyWalker checks the walker against definitions on random graphs, cycles
// included: the order respects every edge, BlockedBy is the set of transitive dependents,
// Prerequisites that of transitive dependencies, Ready the nodes whose dependencies are
// all done, a cycle's Unordered every node that reaches a cycle, and a walk in which
// every node settles on its first visit visits each node once per dependency, plus once.
func TestPropertyWalker(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := genDAG(t, 25)
		nodes := g.Nodes()
		if len(nodes) > 0 && rapid.Bool().Draw(t, "cyclic") {
			from := rapid.SampledFrom(nodes).Draw(t, "from")
			if err := g.AddEdge(from, rapid.SampledFrom(nodes).Draw(t, "to")); err != nil {
				t.Fatalf("AddEdge: %v", err)
			}
		}
		r := reach(g)
		var onCycle []string
		for _, n := range nodes {
			if r[n][n] {
				onCycle = append(onCycle, n)
			}
		}
		order, err := g.Order()
		if len(onCycle) == 0 {
			if err != nil {
				t.Fatalf("Order(): %v", err)
			}
			checkRespects(t, g, order)
		} else {
			var ce *CycleError
			if !errors.As(err, &ce) {
				t.Fatalf("Order() error %v, want a cycle through %q", err, onCycle)
			}
			var want []string
			for _, n := range nodes {
				if slices.ContainsFunc(onCycle, func(c string) bool { return r[n][c] }) {
					want = append(want, n)
				}
			}
			if !slices.Equal(ce.Unordered, want) {
				t.Fatalf("Unordered %q, want %q", ce.Unordered, want)
			}
		}

		pick := rapid.SliceOfDistinct(rapid.SampledFrom(append(slices.Clone(nodes), "ghost")), rapid.ID[string]).Draw(t, "picked")
		var admitted func(string) bool
		if rapid.Bool().Draw(t, "limited") {
			admitted = in(strings.Join(rapid.SliceOf(rapid.SampledFrom(append(slices.Clone(nodes), "ghost"))).Draw(t, "admitted"), " "))
		}
		// The definitions: w is blocked (BlockedBy) when a path of dependents leads to it
		// from a picked node through admitted nodes only, itself included; so, looking
		// back from w along its dependencies through admitted nodes, a picked one is met.
		// Prerequisites is the same with the edges reversed.
		closure := func(back func(string) []string) []string {
			var out []string
			for _, w := range nodes {
				if admitted != nil && !admitted(w) {
					continue
				}
				seen := map[string]bool{}
				stack := []string{w}
			search:
				for len(stack) > 0 {
					x := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					for _, y := range back(x) {
						if slices.Contains(pick, y) {
							out = append(out, w)
							break search
						}
						if !seen[y] && (admitted == nil || admitted(y)) {
							seen[y] = true
							stack = append(stack, y)
						}
					}
				}
			}
			return out
		}
		if got, want := g.BlockedBy(pick, admitted), closure(g.Dependencies); !slices.Equal(got, want) {
			t.Fatalf("BlockedBy(%q) = %q, want %q", pick, got, want)
		}
		if got, want := g.Prerequisites(pick, admitted), closure(g.Dependents); !slices.Equal(got, want) {
			t.Fatalf("Prerequisites(%q) = %q, want %q", pick, got, want)
		}

		done := func(n string) bool { return slices.Contains(pick, n) }
		var ready []string
		for _, n := range nodes {
			if !done(n) && !slices.ContainsFunc(g.Dependencies(n), func(d string) bool { return !done(d) }) {
				ready = append(ready, n)
			}
		}
		if got := g.Ready(done); !slices.Equal(got, ready) {
			t.Fatalf("Ready(%q) = %q, want %q", pick, got, ready)
		}

		// A walk in which every node settles on its first visit: a node is visited once,
		// then once per pass after one in which a dependency of it settled.
		visits, settledIn := map[string]int{}, map[string]int{}
		w := g.Walk()
		for k, pass := 0, w.Next(); pass != nil; k, pass = k+1, w.Next() {
			if !slices.IsSorted(pass) || len(slices.Compact(slices.Clone(pass))) != len(pass) {
				t.Fatalf("pass %q is not in name order, once each", pass)
			}
			for _, n := range pass {
				if visits[n]++; visits[n] == 1 {
					settledIn[n] = k
					w.Settled(n)
				}
			}
		}
		for _, n := range nodes {
			passes := map[int]bool{}
			for _, d := range g.Dependencies(n) {
				passes[settledIn[d]] = true
			}
			if want := 1 + len(passes); visits[n] != want {
				t.Fatalf("%s visited %d times, want %d (once, then after each pass in which a dependency settled)", n, visits[n], want)
			}
		}
	})
}

// TestPropertyBuild: Build makes the graph AddNode and AddEdge make (edges outside the
// graph left out, duplicates kept once), in sorted or any order of names, and that graph
// grows as any other.
func TestPropertyBuild(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOf(rapid.StringMatching(`[a-e][0-9]?`)).Draw(t, "names")
		if rapid.Bool().Draw(t, "sorted") {
			slices.Sort(names)
		}
		targets := append(slices.Clone(names), "ghost")
		deps := map[string][]string{}
		for _, n := range names {
			if len(targets) > 1 {
				deps[n] = append(deps[n], rapid.SliceOfN(rapid.SampledFrom(targets), 0, 20).Draw(t, "deps of "+n)...)
			}
		}
		want := New()
		for _, n := range names {
			want.AddNode(n)
		}
		for _, n := range names {
			for _, d := range deps[n] {
				if want.Has(d) {
					_ = want.AddEdge(n, d)
				}
			}
		}
		got := Build(names, func(name string, depend func(string)) {
			for _, d := range deps[name] {
				depend(d)
			}
		})
		check := func() {
			if !slices.Equal(got.Nodes(), want.Nodes()) || !slices.Equal(edgesOf(got), edgesOf(want)) || got.nedges != want.nedges {
				t.Fatalf("Build: nodes %q edges %q, want %q %q", got.Nodes(), edgesOf(got), want.Nodes(), edgesOf(want))
			}
			for _, n := range want.Nodes() {
				if !slices.Equal(got.Dependents(n), want.Dependents(n)) {
					t.Fatalf("Dependents(%s) = %q, want %q", n, got.Dependents(n), want.Dependents(n))
				}
			}
			o1, e1 := got.Order()
			o2, e2 := want.Order()
			if !slices.Equal(o1, o2) || (e1 == nil) != (e2 == nil) {
				t.Fatalf("Order %q %v, want %q %v", o1, e1, o2, e2)
			}
		}
		check()
		// Both grow alike: a new node, and edges again (duplicates of many-dependency
		// nodes included).
		for _, g := range []*Graph{got, want} {
			g.AddNode("zz")
			for _, n := range names {
				_ = g.AddEdge(n, "zz")
				for _, d := range deps[n] {
					if g.Has(d) {
						_ = g.AddEdge(n, d)
					}
				}
			}
		}
		check()
	})
}
