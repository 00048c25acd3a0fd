package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// build makes a graph from a compact spec: "a>b" adds nodes a and b and the edge "a
// depends on b"; a bare word adds a node. Tokens are applied in order.
func build(t testing.TB, spec string) *Graph {
	t.Helper()
	g := New()
	for _, tok := range strings.Fields(spec) {
		from, to, isEdge := strings.Cut(tok, ">")
		g.AddNode(from)
		if !isEdge {
			continue
		}
		g.AddNode(to)
		if err := g.AddEdge(from, to); err != nil {
			t.Fatalf("AddEdge(%q, %q): %v", from, to, err)
		}
	}
	return g
}

// edgesOf lists g's edges as sorted "a>b" strings, through the public API only.
func edgesOf(g *Graph) []string {
	out := []string{}
	for _, n := range g.Nodes() {
		for _, d := range g.Dependencies(n) {
			out = append(out, n+">"+d)
		}
	}
	return out
}

func TestAddEdge(t *testing.T) {
	tests := []struct {
		name     string
		from, to string
		wantErr  string
	}{
		{name: "both known", from: "app", to: "db"},
		{name: "duplicate collapses", from: "app", to: "cache"},
		{name: "self edge accepted", from: "db", to: "db"},
		{name: "unknown from", from: "web", to: "db", wantErr: `dependency web -> db: unknown stack "web": add it as a node first`},
		{name: "unknown to", from: "app", to: "queue", wantErr: `dependency app -> queue: unknown stack "queue": add it as a node first`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := build(t, "app>cache db")
			err := g.AddEdge(tt.from, tt.to)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("AddEdge: %v", err)
				}
				if !slices.Contains(g.Dependencies(tt.from), tt.to) {
					t.Errorf("Dependencies(%q) = %v, want it to contain %q", tt.from, g.Dependencies(tt.from), tt.to)
				}
				if got := g.Dependencies(tt.from); len(got) != len(slices.Compact(slices.Clone(got))) {
					t.Errorf("Dependencies(%q) = %v has duplicates", tt.from, got)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("AddEdge error = %v, want %q", err, tt.wantErr)
			}
			if !errors.Is(err, ErrUnknownStack) {
				t.Errorf("AddEdge error %v does not wrap ErrUnknownStack", err)
			}
			if g.Len() != 3 {
				t.Errorf("failed AddEdge changed Len to %d", g.Len())
			}
		})
	}
}

// TestAddEdgeDuplicatesOfManyDeps adds every edge of a node twice, for nodes with fewer,
// as many and more dependencies than AddEdge checks by a scan (manyDeps), and in both
// orders of adding: each dependency is kept once, in Dependencies and in the order.
func TestAddEdgeDuplicatesOfManyDeps(t *testing.T) {
	for _, n := range []int{manyDeps - 1, manyDeps, manyDeps + 1, 3 * manyDeps} {
		for _, interleaved := range []bool{false, true} {
			g := New()
			g.AddNode("app")
			var want []string
			for i := range n {
				name := fmt.Sprintf("dep-%03d", i)
				g.AddNode(name)
				want = append(want, name)
			}
			add := func(name string) {
				if err := g.AddEdge("app", name); err != nil {
					t.Fatal(err)
				}
			}
			for _, name := range want {
				add(name)
				if interleaved {
					add(name)
				}
			}
			for _, name := range want {
				add(name)
			}
			if got := g.Dependencies("app"); !slices.Equal(got, want) {
				t.Errorf("%d deps (interleaved %v): Dependencies = %v, want %v", n, interleaved, got, want)
			}
			order, err := g.Order()
			if err != nil || len(order) != n+1 || order[n] != "app" {
				t.Errorf("%d deps (interleaved %v): Order = %v, %v", n, interleaved, order, err)
			}
		}
	}
}

func TestNodesHasLen(t *testing.T) {
	tests := []struct {
		spec    string
		want    []string
		missing string
	}{
		{spec: "", want: []string{}, missing: "app"},
		{spec: "app", want: []string{"app"}, missing: "App"},
		{spec: "app app app>db db", want: []string{"app", "db"}, missing: "ap"},
		{spec: "zeta alpha>mid beta-2 beta-10", want: []string{"alpha", "beta-10", "beta-2", "mid", "zeta"}, missing: ""},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			g := build(t, tt.spec)
			if got := g.Nodes(); !slices.Equal(got, tt.want) {
				t.Errorf("Nodes() = %q, want %q", got, tt.want)
			}
			if g.Len() != len(tt.want) {
				t.Errorf("Len() = %d, want %d", g.Len(), len(tt.want))
			}
			for _, n := range tt.want {
				if !g.Has(n) {
					t.Errorf("Has(%q) = false", n)
				}
			}
			if g.Has(tt.missing) {
				t.Errorf("Has(%q) = true", tt.missing)
			}
		})
	}
}

// TestOrderAfterGrowth checks the order, kept once computed, follows every node and edge
// added after it, and that the slice Order returns is the caller's.
func TestOrderAfterGrowth(t *testing.T) {
	g := build(t, "a b c")
	steps := []struct {
		edge string // from>to, or a node
		want []string
		err  string
	}{
		{"", []string{"a", "b", "c"}, ""},
		{"a>c", []string{"b", "c", "a"}, ""},
		{"a>c", []string{"b", "c", "a"}, ""}, // a duplicate changes nothing
		{"0", []string{"0", "b", "c", "a"}, ""},
		{"c>0", []string{"0", "b", "c", "a"}, ""},
		{"0>a", nil, "dependency cycle: 0 -> a -> c -> 0"},
	}
	for _, st := range steps {
		if from, to, ok := strings.Cut(st.edge, ">"); ok {
			if err := g.AddEdge(from, to); err != nil {
				t.Fatal(err)
			}
		} else if st.edge != "" {
			g.AddNode(st.edge)
		}
		for range 2 {
			got, err := g.Order()
			if st.err != "" {
				if err == nil || err.Error() != st.err || g.Validate() == nil {
					t.Fatalf("after %s: Order() = %v, %v; want %s", st.edge, got, err, st.err)
				}
				continue
			}
			if err != nil || !slices.Equal(got, st.want) || g.Validate() != nil {
				t.Fatalf("after %s: Order() = %v, %v; want %v", st.edge, got, err, st.want)
			}
			got[0] = "changed by the caller"
		}
	}
}

func TestNodesAfterGrowth(t *testing.T) {
	// The sorted index is cached; adding a node must refresh it.
	g := build(t, "b a")
	if got := g.Nodes(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Nodes() = %q", got)
	}
	g.AddNode("0")
	if got := g.Nodes(); !slices.Equal(got, []string{"0", "a", "b"}) {
		t.Fatalf("Nodes() after AddNode = %q", got)
	}
	if got, _ := g.Order(); !slices.Equal(got, []string{"0", "a", "b"}) {
		t.Fatalf("Order() after AddNode = %q", got)
	}
}

func TestDependenciesDependents(t *testing.T) {
	const shop = "service>database service>cache service>network database>network cache>network edge>service edge>network service>cache"
	tests := []struct {
		node           string
		deps, requirer []string
	}{
		{node: "network", deps: []string{}, requirer: []string{"cache", "database", "edge", "service"}},
		{node: "service", deps: []string{"cache", "database", "network"}, requirer: []string{"edge"}},
		{node: "edge", deps: []string{"network", "service"}, requirer: []string{}},
		{node: "unknown", deps: nil, requirer: nil},
	}
	g := build(t, shop)
	for _, tt := range tests {
		t.Run(tt.node, func(t *testing.T) {
			if got := g.Dependencies(tt.node); !slices.Equal(got, tt.deps) || (got == nil) != (tt.deps == nil) {
				t.Errorf("Dependencies(%q) = %#v, want %#v", tt.node, got, tt.deps)
			}
			if got := g.Dependents(tt.node); !slices.Equal(got, tt.requirer) || (got == nil) != (tt.requirer == nil) {
				t.Errorf("Dependents(%q) = %#v, want %#v", tt.node, got, tt.requirer)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		spec  string
		cycle []string // nil: acyclic
	}{
		{name: "empty", spec: ""},
		{name: "chain", spec: "c>b b>a"},
		{name: "diamond", spec: "app>db app>cache db>net cache>net"},
		{name: "self edge", spec: "a>a", cycle: []string{"a", "a"}},
		{name: "two nodes", spec: "b>a a>b", cycle: []string{"a", "b", "a"}},
		{name: "three nodes", spec: "app>db db>cache cache>app", cycle: []string{"app", "db", "cache", "app"}},
		{name: "inserted from the middle", spec: "db>cache cache>app app>db", cycle: []string{"app", "db", "cache", "app"}},
		{name: "with upstream and downstream nodes", spec: "web>app app>db db>cache cache>app db>network", cycle: []string{"app", "db", "cache", "app"}},
		{name: "smallest of two cycles", spec: "x>y y>x c>b b>c", cycle: []string{"b", "c", "b"}},
		{name: "smallest node not on a cycle", spec: "a>z z>y y>z", cycle: []string{"y", "z", "y"}},
		{name: "shortest cycle through the start", spec: "a>b b>c c>a a>c", cycle: []string{"a", "c", "a"}},
		{name: "equal length: dependencies in name order", spec: "a>c a>b b>a c>a", cycle: []string{"a", "b", "a"}},
		{name: "node between two cycles", spec: "p>q q>p n>p m>n n>m", cycle: []string{"m", "n", "m"}},
		{name: "self edge beside a longer cycle", spec: "b>c c>b d>d", cycle: []string{"b", "c", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := build(t, tt.spec)
			err := g.Validate()
			if tt.cycle == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ce *CycleError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate() = %v, want *CycleError", err)
			}
			if !slices.Equal(ce.Cycle, tt.cycle) {
				t.Errorf("Cycle = %q, want %q", ce.Cycle, tt.cycle)
			}
			want := "dependency cycle: " + strings.Join(tt.cycle, " -> ")
			if err.Error() != want {
				t.Errorf("Error() = %q, want %q", err.Error(), want)
			}
			for _, call := range []struct {
				name string
				err  error
			}{
				{"Order", second(g.Order())},
				{"ReverseOrder", second(g.ReverseOrder())},
				{"MarshalJSON", second(g.MarshalJSON())},
			} {
				if call.err == nil || call.err.Error() != want {
					t.Errorf("%s error = %v, want %q", call.name, call.err, want)
				}
			}
		})
	}
}

func second[T any](_ T, err error) error { return err }

func TestCycleErrorMessage(t *testing.T) {
	err := error(&CycleError{Cycle: []string{"app", "db", "cache", "app"}})
	if got, want := err.Error(), "dependency cycle: app -> db -> cache -> app"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestOrder(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want []string
	}{
		{name: "empty", spec: "", want: []string{}},
		{name: "single", spec: "solo", want: []string{"solo"}},
		{name: "independent by name, not insertion", spec: "z y x", want: []string{"x", "y", "z"}},
		{name: "chain against name order", spec: "a>b b>c", want: []string{"c", "b", "a"}},
		{name: "diamond", spec: "app>db app>cache db>net cache>net", want: []string{"net", "cache", "db", "app"}},
		{name: "smallest available first", spec: "a>z b", want: []string{"b", "z", "a"}},
		{name: "duplicate edges", spec: "a>b a>b a>b", want: []string{"b", "a"}},
		{
			name: "web shop",
			spec: "service>database service>cache service>network database>network cache>network edge>service edge>network",
			want: []string{"network", "cache", "database", "service", "edge"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := build(t, tt.spec)
			got, err := g.Order()
			if err != nil {
				t.Fatalf("Order(): %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Order() = %q, want %q", got, tt.want)
			}
			rev, err := g.ReverseOrder()
			if err != nil {
				t.Fatalf("ReverseOrder(): %v", err)
			}
			wantRev := slices.Clone(tt.want)
			slices.Reverse(wantRev)
			if !slices.Equal(rev, wantRev) {
				t.Errorf("ReverseOrder() = %q, want %q", rev, wantRev)
			}
		})
	}
}

func TestSubgraph(t *testing.T) {
	const shop = "service>database service>cache service>network database>network cache>network edge>service"
	tests := []struct {
		name  string
		names []string
		nodes []string
		edges []string
	}{
		{name: "none", names: nil, nodes: []string{}, edges: []string{}},
		{name: "all", names: []string{"edge", "service", "cache", "database", "network"},
			nodes: []string{"cache", "database", "edge", "network", "service"},
			edges: []string{"cache>network", "database>network", "edge>service", "service>cache", "service>database", "service>network"}},
		{name: "edges leaving the set dropped", names: []string{"service", "edge", "cache"},
			nodes: []string{"cache", "edge", "service"}, edges: []string{"edge>service", "service>cache"}},
		{name: "no implied edge added", names: []string{"edge", "network"},
			nodes: []string{"edge", "network"}, edges: []string{}},
		{name: "unknown and repeated names ignored", names: []string{"cache", "ghost", "cache", "network"},
			nodes: []string{"cache", "network"}, edges: []string{"cache>network"}},
	}
	g := build(t, shop)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := g.Subgraph(tt.names)
			if got := sub.Nodes(); !slices.Equal(got, tt.nodes) {
				t.Errorf("Nodes() = %q, want %q", got, tt.nodes)
			}
			if got := edgesOf(sub); !slices.Equal(got, tt.edges) {
				t.Errorf("edges = %q, want %q", got, tt.edges)
			}
		})
	}
	if got := len(edgesOf(g)); got != 6 {
		t.Errorf("Subgraph modified the original: %d edges", got)
	}
}

func TestTransitiveReduction(t *testing.T) {
	tests := []struct {
		name  string
		spec  string
		edges []string
	}{
		{name: "empty", spec: "", edges: []string{}},
		{name: "triangle", spec: "a>b b>c a>c", edges: []string{"a>b", "b>c"}},
		{name: "long shortcut", spec: "a>b b>c c>d d>e a>e a>d", edges: []string{"a>b", "b>c", "c>d", "d>e"}},
		{name: "diamond kept", spec: "app>db app>cache db>net cache>net", edges: []string{"app>cache", "app>db", "cache>net", "db>net"}},
		{name: "diamond with shortcut", spec: "app>db app>cache db>net cache>net app>net", edges: []string{"app>cache", "app>db", "cache>net", "db>net"}},
		{
			name:  "web shop",
			spec:  "service>database service>cache service>network database>network cache>network edge>service edge>network",
			edges: []string{"cache>network", "database>network", "edge>service", "service>cache", "service>database"},
		},
		{name: "cycle returned unreduced", spec: "a>b b>c c>a a>c", edges: []string{"a>b", "a>c", "b>c", "c>a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := build(t, tt.spec)
			before := edgesOf(g)
			red := g.TransitiveReduction()
			if got := edgesOf(red); !slices.Equal(got, tt.edges) {
				t.Errorf("reduction edges = %q, want %q", got, tt.edges)
			}
			if !slices.Equal(red.Nodes(), g.Nodes()) {
				t.Errorf("reduction nodes = %q, want %q", red.Nodes(), g.Nodes())
			}
			if !slices.Equal(edgesOf(g), before) {
				t.Errorf("TransitiveReduction modified the original")
			}
		})
	}
}

func TestDOT(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want string
	}{
		{name: "empty", spec: "", want: "digraph cairn {\n\t// a -> b: a depends on b, so b is deployed first\n}\n"},
		{name: "sorted", spec: "b>a c a>c", want: "digraph cairn {\n\t// a -> b: a depends on b, so b is deployed first\n" +
			"\t\"a\";\n\t\"b\";\n\t\"c\";\n\t\"a\" -> \"c\";\n\t\"b\" -> \"a\";\n}\n"},
		{name: "quoted", spec: `say"hi>back\slash`, want: "digraph cairn {\n\t// a -> b: a depends on b, so b is deployed first\n" +
			"\t\"back\\\\slash\";\n\t\"say\\\"hi\";\n\t\"say\\\"hi\" -> \"back\\\\slash\";\n}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := build(t, tt.spec).DOT(); got != tt.want {
				t.Errorf("DOT() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// shopSpec is the web-shop fixture's graph, inserted in an arbitrary order: the golden
// files must not depend on it.
const shopSpec = "edge>service edge>network service>database service>cache service>network database>network cache>network"

func TestGolden(t *testing.T) {
	g := build(t, shopSpec)
	js, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ file, got string }{
		{"shop.dot", g.DOT()},
		{"shop-reduced.dot", g.TransitiveReduction().DOT()},
		{"shop.json", string(js) + "\n"},
	} {
		want, err := os.ReadFile(filepath.Join("testdata", f.file))
		if err != nil {
			t.Fatal(err)
		}
		if f.got != string(want) {
			t.Errorf("%s differs:\n got:\n%s\nwant:\n%s", f.file, f.got, want)
		}
	}
}

func TestMarshalJSON(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want string
	}{
		{name: "empty", spec: "", want: `{"nodes":[],"order":[]}`},
		{name: "lone node", spec: "solo", want: `{"nodes":[{"name":"solo","requires":[]}],"order":["solo"]}`},
		{name: "diamond", spec: "app>db app>cache db>net cache>net",
			want: `{"nodes":[{"name":"app","requires":["cache","db"]},{"name":"cache","requires":["net"]},{"name":"db","requires":["net"]},{"name":"net","requires":[]}],"order":["net","cache","db","app"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(build(t, tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("json.Marshal =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	_, err := json.Marshal(build(t, "a>b b>a"))
	var ce *CycleError
	if !errors.As(err, &ce) || !slices.Equal(ce.Cycle, []string{"a", "b", "a"}) {
		t.Errorf("json.Marshal(cyclic) error = %v, want *CycleError [a b a]", err)
	}
}

// TestConcurrentReaders runs the read-only methods from several goroutines on a fresh
// graph, so the lazily built name index is raced for under -race.
func TestConcurrentReaders(t *testing.T) {
	g := build(t, shopSpec)
	wantOrder := []string{"network", "cache", "database", "service", "edge"}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got, err := g.Order(); err != nil || !slices.Equal(got, wantOrder) {
				t.Errorf("Order() = %q, %v", got, err)
			}
			if got := g.Dependencies("service"); len(got) == 0 {
				t.Errorf("Dependencies(service) = %q", got)
			}
			g.DOT()
			g.TransitiveReduction()
		})
	}
	wg.Wait()
}
