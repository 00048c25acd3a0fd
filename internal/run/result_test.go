package run

import "testing"

func TestResult(t *testing.T) {
	failed := Observation{Stack: "db", Err: "AccessDenied: not authorized to perform cloudformation:UpdateTerminationProtection"}
	done := Observation{Stack: "db", StackStatus: "UPDATE_COMPLETE"}
	for _, tc := range []struct {
		name    string
		kind    ActionKind
		o       Observation
		pending bool
		warning string
	}{
		{"protection set", SetTerminationProtection, done, false, ""},
		{"protection refused: a warning, the stack is done", SetTerminationProtection, failed, false, failed.Err},
		{"change set deleted", DeleteChangeSet, done, false, ""},
		{"change set not deleted: harmless", DeleteChangeSet, failed, false, ""},
		{"change set made", CreateChangeSet, Observation{Stack: "db", ChangeSetID: "cs-1"}, true, ""},
		{"change set refused: the next step fails or retries it", CreateChangeSet, failed, true, ""},
		{"execution", ExecuteChangeSet, done, true, ""},
		{"deletion", DeleteStack, failed, true, ""},
		{"rollback continued", ContinueUpdateRollback, done, true, ""},
	} {
		pending, warning := Result(Action{Kind: tc.kind, Stack: "db"}, tc.o)
		if pending != tc.pending || warning != tc.warning {
			t.Errorf("%s: Result = %v, %q; want %v, %q", tc.name, pending, warning, tc.pending, tc.warning)
		}
	}
}
