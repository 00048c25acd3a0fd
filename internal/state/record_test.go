package state_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
)

// t0 is when the graphs of these tests were last written.
var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func recorded() *state.Graph {
	return &state.Graph{Namespace: "shop", Key: "shop", Generation: 4, Bundle: state.BundleRef{VersionID: "v1"}, Stacks: map[string]*state.Stack{
		"vpc": {Name: "vpc", StackName: "shop-vpc", StackID: "id-vpc", TemplateHash: "t1", ParametersHash: "p1", Status: "CREATE_COMPLETE",
			Outputs: map[string]string{"VpcId": "vpc-1"}, Tags: map[string]string{"team": "net"}, UpdatedAt: t0},
		"app": {Name: "app", StackName: "shop-app", StackID: "id-app", Requires: []string{"vpc"}, TemplateHash: "t1", Status: "UPDATE_COMPLETE", UpdatedAt: t0},
		"old": {Name: "old", StackName: "shop-old", StackID: "id-old", Requires: []string{"vpc"}, Status: "CREATE_COMPLETE", UpdatedAt: t0},
		"ext": {Name: "ext", StackName: "shop-ext", StackID: "id-ext", Outputs: map[string]string{"Zone": "z1"}, UpdatedAt: t0},
	}}
}

func TestRecord(t *testing.T) {
	now := t0.Add(time.Hour)
	v2 := state.BundleRef{VersionID: "v2", SHA256: "ab"}
	type stackWant struct {
		status, templateHash string
		requires             []string
		outputs              map[string]string
		updated              bool
	}
	for _, tc := range []struct {
		name     string
		status   run.Status
		mode     run.Mode
		stacks   map[string]*run.Stack
		finished []string
		drop     []string
		changed  bool
		want     map[string]stackWant // nil: the stack is gone
		bundle   string
		statuses map[string]string // more CloudFormation statuses, by config name
	}{
		{
			name: "deployed stack recorded with its new inputs, keeping tags and id", status: run.Running, finished: []string{"vpc"},
			stacks: map[string]*run.Stack{"vpc": {Name: "vpc", StackName: "shop-vpc", Intent: run.IntentDeploy, Phase: run.Done, TemplateHash: "t2", ParametersHash: "p2",
				Outputs: map[string]string{"VpcId": "vpc-2"}}},
			changed: true, bundle: "v1",
			want: map[string]stackWant{"vpc": {status: "UPDATE_COMPLETE", templateHash: "t2", outputs: map[string]string{"VpcId": "vpc-2"}, updated: true},
				"app": {status: "UPDATE_COMPLETE", templateHash: "t1", requires: []string{"vpc"}}},
		},
		{
			name: "failed stack keeps its applied inputs with its new status", status: run.Running, finished: []string{"app"},
			stacks:  map[string]*run.Stack{"app": {Name: "app", Intent: run.IntentDeploy, Phase: run.Failed, TemplateHash: "t9"}},
			changed: true, bundle: "v1",
			want: map[string]stackWant{"app": {status: "UPDATE_ROLLBACK_COMPLETE", templateHash: "t1", requires: []string{"vpc"}, updated: true}},
		},
		{
			name: "deleted stack leaves the graph and its dependents' lists", status: run.Running, finished: []string{"vpc"},
			stacks:  map[string]*run.Stack{"vpc": {Name: "vpc", Intent: run.IntentDelete, Phase: run.Done}},
			changed: true, bundle: "v1",
			want: map[string]stackWant{"vpc": {}, "app": {status: "UPDATE_COMPLETE", templateHash: "t1"}},
		},
		{
			name: "blocked and refused deletions change nothing", status: run.Running, finished: []string{"old", "app"},
			stacks: map[string]*run.Stack{"old": {Name: "old", Intent: run.IntentDelete, Phase: run.Failed},
				"app": {Name: "app", Intent: run.IntentDeploy, Phase: run.Blocked}},
			bundle: "v1",
		},
		{
			name: "locked stack refreshes its outputs", status: run.Running, finished: []string{"ext"},
			stacks:  map[string]*run.Stack{"ext": {Name: "ext", Intent: run.IntentRead, Phase: run.Done, Outputs: map[string]string{"Zone": "z2"}}},
			changed: true, bundle: "v1",
			want: map[string]stackWant{"ext": {outputs: map[string]string{"Zone": "z2"}}},
		},
		{
			name: "dropped stack leaves", status: run.Running, drop: []string{"old", "never-there"},
			stacks: map[string]*run.Stack{}, changed: true, bundle: "v1",
			want: map[string]stackWant{"old": {}},
		},
		{
			name: "a run that succeeded records its bundle, and every stack", status: run.Succeeded,
			stacks: map[string]*run.Stack{"app": {Name: "app", StackName: "shop-app", Intent: run.IntentDeploy, Phase: run.Unchanged, TemplateHash: "t1",
				Requires: []string{"vpc", "disabled"}}},
			changed: true, bundle: "v2",
			want: map[string]stackWant{"app": {status: "UPDATE_ROLLBACK_COMPLETE", templateHash: "t1", requires: []string{"vpc"}, updated: true}},
		},
		{
			name: "a run that failed keeps the applied bundle", status: run.RunFailed,
			stacks: map[string]*run.Stack{"app": {Name: "app", Intent: run.IntentDeploy, Phase: run.Blocked}},
			bundle: "v1",
		},
		{
			name: "a failed create is recorded: the stack it made exists, tagged with the inputs tried", status: run.Running, finished: []string{"new"},
			stacks: map[string]*run.Stack{"new": {Name: "new", StackName: "shop-new", StackID: "id-new", Intent: run.IntentDeploy, Phase: run.Failed,
				TemplateHash: "t7", ParametersHash: "p7", Requires: []string{"vpc"}, ChangeSetName: "cairn-r2-1"}},
			statuses: map[string]string{"new": "ROLLBACK_COMPLETE"},
			changed:  true, bundle: "v1",
			want: map[string]stackWant{"new": {status: "ROLLBACK_COMPLETE", templateHash: "t7", requires: []string{"vpc"}, updated: true}},
		},
		{
			name: "a failed create that made no stack is not", status: run.Running, finished: []string{"new"},
			stacks: map[string]*run.Stack{"new": {Name: "new", StackName: "shop-new", Intent: run.IntentDeploy, Phase: run.Failed, TemplateHash: "t7"}},
			bundle: "v1",
			want:   map[string]stackWant{"new": {}},
		},
		{
			name: "a plan changes nothing", status: run.Succeeded, mode: run.ModePlan, drop: []string{"old"},
			stacks: map[string]*run.Stack{"vpc": {Name: "vpc", Intent: run.IntentDelete, Phase: run.Done}},
			bundle: "v1",
		},
		{
			name: "nothing finished, nothing dropped", status: run.Running,
			stacks: map[string]*run.Stack{"vpc": {Name: "vpc", Intent: run.IntentDeploy, Phase: run.Executing}},
			bundle: "v1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := recorded()
			before, _ := json.Marshal(g)
			mode := tc.mode
			if mode == "" {
				mode = run.ModeDeploy
			}
			r := &run.Run{ID: "r2", Deployment: "shop-eu", Mode: mode, Status: tc.status, Stacks: tc.stacks}
			statuses := map[string]string{"vpc": "UPDATE_COMPLETE", "app": "UPDATE_ROLLBACK_COMPLETE"}
			maps.Copy(statuses, tc.statuses)
			next, changed := state.Record(g, state.Recording{Run: r, Finished: tc.finished, Drop: tc.drop, Bundle: v2, Region: "eu-west-1", Now: now,
				Statuses: statuses})
			if after, _ := json.Marshal(g); string(after) != string(before) {
				t.Fatalf("Record changed its input:\n%s\n%s", before, after)
			}
			if changed != tc.changed {
				t.Fatalf("changed %v, want %v", changed, tc.changed)
			}
			if !changed && next != g {
				t.Error("an unchanged graph is not the one given")
			}
			if owner := map[bool]string{true: "shop-eu"}[changed]; next.Deployment != owner {
				t.Errorf("owner %q, want %q: a graph a run wrote belongs to the run's deployment", next.Deployment, owner)
			}
			if next.Bundle.VersionID != tc.bundle {
				t.Errorf("bundle %s, want %s", next.Bundle.VersionID, tc.bundle)
			}
			for name, w := range tc.want {
				st := next.Stacks[name]
				if w.status == "" && w.templateHash == "" && w.outputs == nil {
					if st != nil {
						t.Errorf("%s still in the graph", name)
					}
					continue
				}
				if st == nil {
					t.Fatalf("%s missing", name)
				}
				if st.Status != w.status || st.TemplateHash != w.templateHash || !slices.Equal(st.Requires, w.requires) ||
					(w.outputs != nil && st.Outputs["VpcId"]+st.Outputs["Zone"] != w.outputs["VpcId"]+w.outputs["Zone"]) || st.UpdatedAt.Equal(now) != w.updated {
					t.Errorf("%s: %+v, want %+v", name, st, w)
				}
			}
			if vpc := next.Stacks["vpc"]; vpc != nil && (vpc.StackID != "id-vpc" || vpc.Tags["team"] != "net") {
				t.Errorf("vpc lost its id or tags: %+v", vpc)
			}
			if vpc := next.Stacks["vpc"]; tc.changed && vpc != nil && vpc.UpdatedAt.Equal(now) && vpc.Region != "eu-west-1" {
				t.Errorf("vpc recorded without the region: %+v", vpc)
			}
		})
	}
}

func TestRecordingIdle(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  state.Recording
		idle bool
	}{
		{"plan", state.Recording{Run: &run.Run{Mode: run.ModePlan, Status: run.Succeeded}, Finished: []string{"a"}}, true},
		{"nothing finished", state.Recording{Run: &run.Run{Mode: run.ModeDeploy, Status: run.Running}}, true},
		{"a stack finished", state.Recording{Run: &run.Run{Mode: run.ModeDeploy, Status: run.Running}, Finished: []string{"a"}}, false},
		{"ended", state.Recording{Run: &run.Run{Mode: run.ModeDeploy, Status: run.RunFailed}}, false},
		{"a drop", state.Recording{Run: &run.Run{Mode: run.ModeDeploy, Status: run.Running}, Drop: []string{"a"}}, false},
	} {
		if got := tc.rec.Idle(); got != tc.idle {
			t.Errorf("%s: Idle = %v, want %v", tc.name, got, tc.idle)
		}
	}
}

// TestRecordFirstRunWritesTheGraph: a first run that made a change set writes a graph even
// when nothing succeeded, so the next run finds it rather than rebuilding it from tags as
// if it had been lost; a first run that called nothing writes none.
func TestRecordFirstRunWritesTheGraph(t *testing.T) {
	for _, tc := range []struct {
		name      string
		changeSet string
		want      bool
	}{
		{"made a change set", "cairn-r1-1", true},
		{"refused before any call", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			empty := &state.Graph{Namespace: "shop", Key: "shop", Stacks: map[string]*state.Stack{}}
			r := &run.Run{ID: "r1", Deployment: "shop", Mode: run.ModeDeploy, Status: run.RunFailed, Stacks: map[string]*run.Stack{
				"app": {Name: "app", StackName: "shop-app", Intent: run.IntentDeploy, Phase: run.Failed, ChangeSetName: tc.changeSet}}}
			next, changed := state.Record(empty, state.Recording{Run: r, Now: t0})
			if changed != tc.want || len(next.Stacks) != 0 {
				t.Errorf("changed %v with %d stack(s), want changed %v and none", changed, len(next.Stacks), tc.want)
			}
		})
	}
}

// TestRecordKeepsImports: a deployed or unchanged stack is recorded with the exports its
// templates import, known or not, so a later run that deletes it knows whose exports it
// holds; a failed update keeps those of what was applied; a graph written before they
// were kept reads as not knowing them.
func TestRecordKeepsImports(t *testing.T) {
	g := recorded()
	g.SchemaVersion = state.SchemaVersion
	g.Stacks["app"].Imports, g.Stacks["app"].ImportsKnown = []string{"shop-vpc-Id"}, true
	for _, tc := range []struct {
		name  string
		stack *run.Stack
		want  []string
		known bool
	}{
		{"deployed", &run.Stack{Name: "vpc", StackName: "shop-vpc", Intent: run.IntentDeploy, Phase: run.Done, Imports: []string{"net-Zone", "net-Cidr"}, ImportsKnown: true}, []string{"net-Zone", "net-Cidr"}, true},
		{"unchanged", &run.Stack{Name: "vpc", StackName: "shop-vpc", Intent: run.IntentDeploy, Phase: run.Unchanged, ImportsKnown: true}, nil, true},
		{"an import computes its name", &run.Stack{Name: "vpc", StackName: "shop-vpc", Intent: run.IntentDeploy, Phase: run.Done, Imports: []string{"net-Zone"}}, []string{"net-Zone"}, false},
		{"a failed update keeps the applied ones", &run.Stack{Name: "app", StackName: "shop-app", Intent: run.IntentDeploy, Phase: run.Failed, Imports: []string{"other"}, ImportsKnown: true}, []string{"shop-vpc-Id"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &run.Run{ID: "r2", Mode: run.ModeDeploy, Status: run.Running, Stacks: map[string]*run.Stack{tc.stack.Name: tc.stack}}
			next, _ := state.Record(g, state.Recording{Run: r, Finished: []string{tc.stack.Name}, Now: t0})
			body, err := json.Marshal(next)
			if err != nil {
				t.Fatal(err)
			}
			back, err := state.Decode(body)
			if err != nil {
				t.Fatal(err)
			}
			st := back.Stacks[tc.stack.Name]
			if !slices.Equal(st.Imports, tc.want) || st.ImportsKnown != tc.known {
				t.Errorf("recorded imports %v (known %v), want %v (known %v)", st.Imports, st.ImportsKnown, tc.want, tc.known)
			}
		})
	}
	old, err := state.Decode([]byte(`{"schema_version":1,"namespace":"shop","key":"shop","stacks":{"app":{"name":"app","stack_name":"shop-app"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if st := old.Stacks["app"]; st.Imports != nil || st.ImportsKnown {
		t.Errorf("a graph of an older cairn reads imports %v (known %v), want none, not known", st.Imports, st.ImportsKnown)
	}
}

// TestRecordGuards: a run's graph-wide guards are recorded with the write its step makes
// (a run that wrote nothing records none; a run made before runs carried guards leaves the
// graph's as they are), and each stack's termination protection with its entry; an old
// document without them reads as none.
func TestRecordGuards(t *testing.T) {
	now := t0.Add(time.Hour)
	strict := &run.Guards{MaxDeletions: 2, HandOverTo: "shop2"}
	tests := []struct {
		name   string
		graph  *run.Guards
		run    *run.Guards
		status run.Status
		want   *run.Guards
	}{
		{name: "recorded when the run ends", run: strict, status: run.Succeeded, want: strict},
		{name: "loosened by an (approved) run", graph: strict, run: &run.Guards{}, status: run.Succeeded, want: &run.Guards{}},
		{name: "a run without guards keeps the graph's", graph: strict, status: run.Succeeded, want: strict},
		{name: "nothing written, nothing recorded", graph: strict, run: &run.Guards{}, status: run.Running, want: strict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := recorded()
			g.Guards = tt.graph
			r := &run.Run{ID: "r2", Deployment: "shop", Mode: run.ModeDeploy, Status: tt.status, Guards: tt.run, Stacks: map[string]*run.Stack{
				"vpc": {Name: "vpc", StackName: "shop-vpc", Intent: run.IntentDeploy, Phase: run.Unchanged, TemplateHash: "t1", ParametersHash: "p1", Protect: true}}}
			if tt.status == run.Running {
				r.Stacks["vpc"].Phase = run.Pending
			}
			next, _ := state.Record(g, state.Recording{Run: r, Statuses: map[string]string{"vpc": "CREATE_COMPLETE"}, Now: now})
			if (next.Guards == nil) != (tt.want == nil) || next.Guards != nil && *next.Guards != *tt.want {
				t.Fatalf("guards %+v, want %+v", next.Guards, tt.want)
			}
			if tt.status != run.Running && !next.Stacks["vpc"].TerminationProtection {
				t.Errorf("vpc's termination protection is not recorded")
			}
		})
	}
	var old state.Graph
	if err := json.Unmarshal([]byte(`{"schema_version":1,"namespace":"shop","key":"shop","stacks":{"a":{"name":"a","stack_name":"shop-a"}}}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.Guards != nil || old.Stacks["a"].TerminationProtection {
		t.Errorf("a graph written before guards were recorded reads as %+v", old)
	}
}
