package run

import (
	"fmt"
	"strings"
)

// DriftedProperty is a property of a stack's resource changed outside cairn, as the
// stack's drift-aware change set shows it (ResourceDriftStatus MODIFIED or DELETED), and
// what executing the change set does with it: Revert brings it back to the template's
// value; else it is SyncWithActual (the template now sets the value it has: kept, its
// drift reset). Property is "" for a resource deleted out of band. Values are not kept
// here: they may be secrets; the plan's report shows them masked.
type DriftedProperty struct {
	LogicalID string `json:"logical_id"`
	Property  string `json:"property,omitempty"`
	Revert    bool   `json:"revert,omitempty"`
}

func (d DriftedProperty) String() string {
	if d.Property == "" {
		return d.LogicalID + " (deleted)"
	}
	return d.LogicalID + "." + d.Property
}

// reverted are the drifted properties the change set brings back.
func reverted(drift []DriftedProperty) []string {
	var out []string
	for _, d := range drift {
		if d.Revert {
			out = append(out, d.String())
		}
	}
	return out
}

// driftStop says why a stack whose change set is made must not be executed because of
// its drift, or "": its on_drift is refuse and the change set would bring properties
// back; or it is protected (PlanOnly) and the change set, made by the apply of an
// approved plan rather than by the plan (its inputs came out of the apply), would bring
// back drift no reviewer saw: that one is planned again for review (replan).
func driftStop(r *Run, s *Stack, drift []DriftedProperty) (why string, replan bool) {
	back := reverted(drift)
	if len(back) == 0 {
		return "", false
	}
	plan := fmt.Sprintf("cairn plan PATH --deployment %s", r.Deployment)
	switch {
	case s.RefuseDrift:
		return fmt.Sprintf("stack %s: stopped: its on_drift is refuse and it was changed outside cairn: %s; its change set %s was not executed. "+
			"Adopt the change: set those properties in its template to what they are now (`cairn drift %s` shows the values), then `%s`; "+
			"or revert it through review: set `on_drift: revert` on the stack and `%s`, whose comment shows what it brings back",
			s.StackName, strings.Join(back, ", "), s.ChangeSetName, r.Deployment, plan, plan), false
	case r.Plan != "" && s.PlanOnly:
		return fmt.Sprintf("stack %s: stopped: it is protected, and its change set %s, made by this apply (the plan could not make it), would bring back properties changed outside cairn that the approved plan did not show: %s; it was not executed: re-plan (`%s`) and review what the new plan reverts",
			s.StackName, s.ChangeSetName, strings.Join(back, ", "), plan), true
	}
	return "", false
}
