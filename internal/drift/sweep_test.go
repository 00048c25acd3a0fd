package drift

import (
	"slices"
	"testing"
	"time"
)

func graphOfStatuses(sts ...Status) *Graph {
	g := &Graph{Name: "shop"}
	for i, st := range sts {
		name := string(rune('a' + i))
		g.Stacks = append(g.Stacks, &Stack{Name: name, StackName: "shop-" + name, Status: st})
	}
	return g
}

func TestNextKeepsAtMostLimitInFlight(t *testing.T) {
	for _, tc := range []struct {
		name   string
		graphs [][]Status
		limit  int
		want   []string
	}{
		{"empty", nil, 5, nil},
		{"fills free slots in order", [][]Status{{Pending, Pending, Pending}}, 2, []string{"shop-a", "shop-b"}},
		{"counts in flight of every graph", [][]Status{{Detecting, Pending}, {Detecting, Pending, Pending}}, 3, []string{"shop-b"}},
		{"full", [][]Status{{Detecting, Detecting, Pending}}, 2, nil},
		{"skips settled", [][]Status{{InSync, NotChecked, Pending, Drifted, Pending}}, 5, []string{"shop-c", "shop-e"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sw := &Sweep{}
			for _, sts := range tc.graphs {
				sw.Graphs = append(sw.Graphs, graphOfStatuses(sts...))
			}
			var got []string
			for _, s := range sw.Next(tc.limit) {
				got = append(got, s.StackName)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Next(%d) = %v, want %v", tc.limit, got, tc.want)
			}
		})
	}
}

func drifted(name, path, actual string) *Stack {
	return &Stack{Name: name, StackName: "shop-" + name, Status: Drifted, Resources: []Resource{{LogicalID: "Bucket", Type: "AWS::S3::Bucket", Status: "MODIFIED",
		Differences: []Difference{{Path: path, Expected: "Enabled", Actual: actual, Type: "NOT_EQUAL"}}}}}
}

func inSync(name string) *Stack { return &Stack{Name: name, StackName: "shop-" + name, Status: InSync} }

func notChecked(name string) *Stack {
	return &Stack{Name: name, StackName: "shop-" + name, Status: NotChecked, Reason: "deploy in progress"}
}

func TestChangesComparesOnlyStacksCheckedInBoth(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prev, now *Graph
		want      int
	}{
		{"no previous report", nil, &Graph{Stacks: []*Stack{drifted("app", "/V", "Suspended")}}, 0},
		{"same drift", &Graph{Stacks: []*Stack{drifted("app", "/V", "Suspended")}}, &Graph{Stacks: []*Stack{drifted("app", "/V", "Suspended")}}, 0},
		{"other actual value", &Graph{Stacks: []*Stack{drifted("app", "/V", "Suspended")}}, &Graph{Stacks: []*Stack{drifted("app", "/V", "Off")}}, 1},
		{"back in sync", &Graph{Stacks: []*Stack{drifted("app", "/V", "Suspended")}}, &Graph{Stacks: []*Stack{inSync("app")}}, 1},
		{"newly drifted", &Graph{Stacks: []*Stack{inSync("app")}}, &Graph{Stacks: []*Stack{drifted("app", "/V", "Suspended")}}, 1},
		{"skipped during a deploy", &Graph{Stacks: []*Stack{drifted("app", "/V", "Suspended")}}, &Graph{Stacks: []*Stack{notChecked("app")}}, 0},
		{"checked again after a skip", &Graph{Stacks: []*Stack{notChecked("app")}}, &Graph{Stacks: []*Stack{inSync("app")}}, 0},
		{"newly missing", &Graph{}, &Graph{Missing: []string{"shop-gone"}}, 1},
		{"still missing", &Graph{Missing: []string{"shop-gone"}}, &Graph{Missing: []string{"shop-gone"}}, 0},
		{"newly untracked", &Graph{}, &Graph{Untracked: []string{"shop-stray"}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.now.Changes(tc.prev); len(got) != tc.want {
				t.Fatalf("Changes = %q, want %d", got, tc.want)
			}
		})
	}
}

func TestIgnorePatternsSettleResourcesAndStacks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		patterns []string
		want     Status
		ignored  string
	}{
		{"no pattern", nil, Drifted, ""},
		{"logical id", []string{"Buck*"}, InSync, "Buck*"},
		{"config name and logical id", []string{"app/Bucket"}, InSync, "app/Bucket"},
		{"stack name and logical id", []string{"shop-*/Bucket"}, InSync, "shop-*/Bucket"},
		{"other stack", []string{"web/Bucket"}, Drifted, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := drifted("app", "/V", "Suspended")
			applyIgnore(s, tc.patterns)
			if s.Status != tc.want || s.Resources[0].Ignored != tc.ignored {
				t.Fatalf("status %s, ignored by %q; want %s, %q", s.Status, s.Resources[0].Ignored, tc.want, tc.ignored)
			}
		})
	}
}

func TestGraphDriftedCountsMissingAndUntracked(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    *Graph
		want bool
	}{
		{"in sync", &Graph{Stacks: []*Stack{inSync("app")}}, false},
		{"not checked", &Graph{Stacks: []*Stack{notChecked("app")}}, false},
		{"drifted", &Graph{Stacks: []*Stack{drifted("app", "/V", "x")}}, true},
		{"missing", &Graph{Missing: []string{"shop-gone"}}, true},
		{"untracked", &Graph{Untracked: []string{"shop-stray"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.g.Drifted(); got != tc.want {
				t.Fatalf("Drifted() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNewIDSortsByTimeAndStaysAKeySegment(t *testing.T) {
	a := NewID(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), "53dc4d37-cffa-4f76")
	b := NewID(time.Date(2026, 11, 30, 12, 5, 0, 0, time.UTC), "../../x")
	if a != "20261130T120000Z-53dc4d37" || b != "20261130T120500Z-x" || !(a < b) {
		t.Fatalf("ids %q, %q", a, b)
	}
}
