package run

import (
	"slices"
	"strings"
	"testing"
)

// TestRemovedImportersAreDeletedBeforeTheirExportersChange: a stack the run deploys that
// waits for deletions (Stack.After: removed stacks importing its exports) changes only
// once they are gone, in push and plan runs alike; those deletions (and the deletions of
// their dependents) start first, the other deletions still after every deploy; an
// importer that is not deleted blocks its exporter.
func TestRemovedImportersAreDeletedBeforeTheirExportersChange(t *testing.T) {
	del := func(name string, requires ...string) *Stack {
		return &Stack{Name: name, StackName: "shop-" + name, Intent: IntentDelete, Phase: Pending, Exists: true, Requires: requires}
	}
	for _, tc := range []struct {
		name    string
		mode    Mode
		deletes []*Stack
		after   []string // the exporter's After
		apiErrs map[string]int
		want    []string
		status  Status
		phases  map[string]Phase
		reason  string // of the exporter, when blocked
	}{
		{name: "importer removed, exporter updated", mode: ModeDeploy, deletes: []*Stack{del("importer")}, after: []string{"importer"},
			want: []string{"DeleteStack importer", "CreateChangeSet exporter", "ExecuteChangeSet exporter"}, status: Succeeded},
		{name: "the deletions of the importer's dependents go first", mode: ModeDeploy,
			deletes: []*Stack{del("importer", "reader"), del("reader")}, after: []string{"importer"},
			want: []string{"DeleteStack reader", "DeleteStack importer", "CreateChangeSet exporter", "ExecuteChangeSet exporter"}, status: Succeeded},
		{name: "other deletions still wait for the deploys", mode: ModeDeploy, deletes: []*Stack{del("importer"), del("other")}, after: []string{"importer"},
			want: []string{"DeleteStack importer", "CreateChangeSet exporter", "ExecuteChangeSet exporter", "DeleteStack other"}, status: Succeeded},
		{name: "without After the deletion comes last, as before", mode: ModeDeploy, deletes: []*Stack{del("importer")},
			want: []string{"CreateChangeSet exporter", "ExecuteChangeSet exporter", "DeleteStack importer"}, status: Succeeded},
		{name: "plan: the deletion is planned, the exporter's change set made", mode: ModePlan, deletes: []*Stack{del("importer")}, after: []string{"importer"},
			want: []string{"CreateChangeSet exporter"}, status: Succeeded, phases: map[string]Phase{"importer": Ready, "exporter": Ready}},
		{name: "an importer that is not deleted blocks its exporter", mode: ModeDeploy, deletes: []*Stack{del("importer")}, after: []string{"importer"},
			apiErrs: map[string]int{"importer": 5},
			want:    []string{"DeleteStack importer", "DeleteStack importer", "DeleteStack importer"}, status: RunFailed,
			phases: map[string]Phase{"importer": Failed, "exporter": Blocked},
			reason: "not changed: stack shop-importer, removed from the config, imports its exports and was not deleted (failed): CloudFormation refuses to drop or change an export in use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			r := chain("exporter")
			r.Mode = tc.mode
			r.Stacks["exporter"].Exists = true
			r.Stacks["exporter"].After = tc.after
			for _, d := range tc.deletes {
				r.Stacks[d.Name] = d
			}
			for k, v := range tc.apiErrs {
				w.apiErrs[k] = v
				w.stacks[k] = &fakeStack{status: "UPDATE_COMPLETE"}
			}
			got := w.drive(r, Options{})
			if k := kinds(w.calls); !slices.Equal(k, tc.want) {
				t.Errorf("calls %v, want %v", k, tc.want)
			}
			if got.Status != tc.status {
				t.Errorf("status %s (%s), want %s", got.Status, got.Reason, tc.status)
			}
			for n, p := range tc.phases {
				if got.Stacks[n].Phase != p {
					t.Errorf("%s is %s, want %s", n, got.Stacks[n].Phase, p)
				}
			}
			if tc.reason != "" && !strings.Contains(got.Stacks["exporter"].Reason, tc.reason) {
				t.Errorf("exporter's reason %q, want %q", got.Stacks["exporter"].Reason, tc.reason)
			}
		})
	}
}

// TestEarlyChangeSetOfAnExporterWhoseImporterWasNotDeleted: an exporter whose change set
// was made early, waiting for the deletion of a removed importer (After) that is blocked
// (a deploy failed first), has that change set deleted and is blocked, so the run ends
// (before: it waited forever, found by TestRandomRunsTerminate).
func TestEarlyChangeSetOfAnExporterWhoseImporterWasNotDeleted(t *testing.T) {
	r := &Run{ID: "r1", Mode: ModeDeploy, Status: Running, Stacks: map[string]*Stack{
		"importer": {Name: "importer", StackName: "shop-importer", Intent: IntentDelete, Phase: Blocked, Exists: true,
			Reason: "not deleted: stack other failed, so the run stopped before deletions"},
		"other": {Name: "other", StackName: "shop-other", Intent: IntentDeploy, Phase: Failed},
		"exporter": {Name: "exporter", StackName: "shop-exporter", Intent: IntentDeploy, Phase: Ready, Exists: true, Early: true, MadeEarly: true,
			ChangeSetName: "cairn-r1-1", ChangeSetID: "cs-1", After: []string{"importer"}},
	}}
	next, actions := Advance(r, nil, t0, Options{})
	if k := kinds(actions); !slices.Equal(k, []string{"DeleteChangeSet exporter"}) {
		t.Fatalf("actions %v, want the early change set deleted", k)
	}
	if s := next.Stacks["exporter"]; s.Phase != Blocked || !strings.Contains(s.Reason, "shop-importer") {
		t.Fatalf("exporter is %s (%q), want blocked naming the importer", s.Phase, s.Reason)
	}
}
