package recovery_test

import (
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/recovery"
	"github.com/cairn-dev/cairn/internal/state"
)

func TestChoose(t *testing.T) {
	tests := []struct {
		status   string
		rollback bool
		want     recovery.Action
		wantErr  string
	}{
		{"UPDATE_ROLLBACK_FAILED", false, recovery.ContinueUpdateRollback, ""},
		{"UPDATE_FAILED", true, recovery.RollbackStack, ""},
		{"CREATE_FAILED", true, recovery.RollbackStack, ""},
		{"UPDATE_COMPLETE", false, "", "stack is UPDATE_COMPLETE; ContinueUpdateRollback needs UPDATE_ROLLBACK_FAILED, and --rollback needs CREATE_FAILED or UPDATE_FAILED: there is nothing to recover"},
		{"CREATE_FAILED", false, "", "stack is CREATE_FAILED; roll it back with --rollback (RollbackStack)"},
		{"UPDATE_ROLLBACK_COMPLETE", true, "", "stack is UPDATE_ROLLBACK_COMPLETE; --rollback (RollbackStack) takes a stack that is CREATE_FAILED or UPDATE_FAILED"},
		// CloudFormation can only delete these: neither call would work, so neither is made.
		{"ROLLBACK_FAILED", false, "", "stack is ROLLBACK_FAILED: CloudFormation can only delete it, which neither ContinueUpdateRollback nor RollbackStack does: plan it (`cairn plan PATH --deployment NAME`) and approve that plan: it deletes the stack keeping the resources that fail to delete (listed in the plan), and creates it again if the config keeps it"},
		{"ROLLBACK_FAILED", true, "", "stack is ROLLBACK_FAILED: CloudFormation can only delete it, which neither ContinueUpdateRollback nor RollbackStack does: plan it (`cairn plan PATH --deployment NAME`) and approve that plan: it deletes the stack keeping the resources that fail to delete (listed in the plan), and creates it again if the config keeps it"},
		{"DELETE_FAILED", false, "", "stack is DELETE_FAILED: CloudFormation can only delete it, which neither ContinueUpdateRollback nor RollbackStack does: plan it (`cairn plan PATH --deployment NAME`) and approve that plan: it deletes the stack keeping the resources that fail to delete (listed in the plan), and creates it again if the config keeps it"},
	}
	for _, tt := range tests {
		got, err := recovery.Choose(tt.status, tt.rollback)
		if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
			t.Errorf("Choose(%s, %v) = %q, %v; want %q, %q", tt.status, tt.rollback, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestSettled(t *testing.T) {
	for status, want := range map[string][2]bool{
		"UPDATE_ROLLBACK_IN_PROGRESS": {false, false},
		"UPDATE_ROLLBACK_COMPLETE":    {true, false},
		"UPDATE_ROLLBACK_FAILED":      {true, true},
		"ROLLBACK_COMPLETE":           {true, false},
	} {
		if settled, failed := recovery.Settled(status); settled != want[0] || failed != want[1] {
			t.Errorf("Settled(%s) = %v, %v; want %v", status, settled, failed, want)
		}
	}
}

func TestRecord(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	g := &state.Graph{Stacks: map[string]*state.Stack{
		"a": {Name: "a", StackName: "rb-a", Status: "UPDATE_ROLLBACK_FAILED", Outputs: map[string]string{"Old": "x"}},
		"b": {Name: "b", StackName: "rb-b", Status: "UPDATE_COMPLETE"},
	}}
	entry, was, ok := recovery.Record(g, "rb-a", "UPDATE_ROLLBACK_COMPLETE", "arn:stack/rb-a/1", map[string]string{"Name": "p"}, now)
	if !ok || was != "UPDATE_ROLLBACK_FAILED" || entry != g.Stacks["a"] {
		t.Fatalf("Record = %+v, %q, %v", entry, was, ok)
	}
	if a := g.Stacks["a"]; a.Status != "UPDATE_ROLLBACK_COMPLETE" || a.StackID != "arn:stack/rb-a/1" || !a.UpdatedAt.Equal(now) || len(a.Outputs) != 1 || a.Outputs["Name"] != "p" {
		t.Errorf("a after Record: %+v", a)
	}
	if b := g.Stacks["b"]; b.Status != "UPDATE_COMPLETE" || !b.UpdatedAt.IsZero() {
		t.Errorf("Record changed b: %+v", b)
	}
	if _, _, ok := recovery.Record(g, "rb-zz", "UPDATE_COMPLETE", "", nil, now); ok {
		t.Errorf("Record of a stack the graph does not hold reported ok")
	}
}
