package run

import "strings"

// Result decides what the result o of performing action a gives the run: whether the next
// step's Advance needs it (pending), or only the run's report (a warning). A stack whose
// termination protection could not be set is done either way: its failure is a warning
// of the report. A change set that could not be deleted is harmless: its result is
// dropped. Every other action's result, a failure included, goes to the next step.
func Result(a Action, o Observation) (pending bool, warning string) {
	switch a.Kind {
	case SetTerminationProtection:
		return false, o.Err
	case DeleteChangeSet:
		return false, ""
	}
	return true, ""
}

// IsNoChanges reports whether a FAILED change set's reason means "nothing to change".
func IsNoChanges(reason string) bool {
	for _, r := range noChangeReasons {
		if strings.Contains(reason, r) {
			return true
		}
	}
	return false
}
