package run

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// DriftedProperty is a property of a stack's resource changed outside cairn, as the
// stack's drift-aware change set shows it (ResourceDriftStatus MODIFIED or DELETED), and
// what executing the change set does with it: Revert brings it back to the template's
// value; else it is SyncWithActual (the template now sets the value it has: kept, its
// drift reset). Property is "" for a resource deleted out of band. Values are not kept
// here: they may be secrets; the plan's report shows them masked.
//
// A property an ordinary change set meets (Stack.Outside) has Does instead: DriftLeft
// (CloudFormation does not touch it: the drift stays) or DriftOverwritten (the change set
// changes it: the template's new value replaces the out-of-band one).
type DriftedProperty struct {
	LogicalID string `json:"logical_id"`
	Property  string `json:"property,omitempty"`
	Revert    bool   `json:"revert,omitempty"`
	Does      string `json:"does,omitempty"`
}

// What an ordinary change set does with a property changed outside cairn (DriftedProperty.Does).
const (
	DriftLeft        = "leave"
	DriftOverwritten = "overwrite"
)

// TopProperty is the top-level property a drift report's property path is in:
// "/SecurityGroupIngress/1/CidrIp" is in SecurityGroupIngress.
func TopProperty(path string) string {
	path = strings.TrimPrefix(path, "/")
	if i := strings.IndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return path
}

// Touch is how an observation names a property its change set changes (Observation.Touched).
func Touch(logicalID, property string) string { return logicalID + "/" + property }

// settleOutside says, once a push's stack's ordinary change set is made, what it does with
// each property its drift report says changed outside cairn: overwritten when the change
// set changes the property (touched), else left; a resource deleted out of band is left
// (an ordinary change set does not re-create it).
func settleOutside(s *Stack, touched []string) {
	for i := range s.Outside {
		d := &s.Outside[i]
		d.Does = DriftLeft
		if d.Property != "" && slices.Contains(touched, Touch(d.LogicalID, TopProperty(d.Property))) {
			d.Does = DriftOverwritten
		}
	}
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

// DriftDetectionTimeout bounds how long a plan waits for a stack's drift detection: past
// it the plan says the stack's drift is not known, rather than wait on.
const DriftDetectionTimeout = 5 * time.Minute

// DriftDetectionPrior is when a stack's drift detection is likely over: CloudFormation
// reads every resource, a few seconds for a small stack.
var DriftDetectionPrior = struct{ From, To time.Duration }{1 * time.Second, 30 * time.Second}

// The stack drift statuses a plan records (StackDrift).
const (
	StackDrifted = "DRIFTED"
	StackInSync  = "IN_SYNC"
	DriftUnknown = "UNKNOWN"
)

// ChangeSetReady reports whether the stack's change set is made and waits to execute:
// Ready, or, in a plan run, detecting its drift (DetectingDrift) meanwhile.
func (s *Stack) ChangeSetReady() bool { return s.Phase == Ready || s.Phase == DetectingDrift }

// detected applies to a stack detecting its drift what the driver saw: the detection's
// id, then its end. A detection that fails, or cannot start, leaves the stack's drift
// not known (the plan says so) and the stack ready: drift never fails a plan.
func detected(s *Stack, o Observation, now time.Time) {
	if o.DriftDetectionID != "" {
		s.DriftDetection = o.DriftDetectionID
	}
	switch {
	case o.Err != "":
		driftUnknown(s, "drift detection could not start: "+o.Err, now)
	case o.DriftDetectionStatus == "DETECTION_COMPLETE":
		s.StackDrift = o.StackDriftStatus
		setPhase(s, Ready, now)
		s.FinishedAt = now
	case o.DriftDetectionStatus == "DETECTION_FAILED" && o.StackDriftStatus == StackDrifted:
		// Some resources could not be checked, the others drifted: what drifted is known.
		s.StackDrift, s.DriftNote = StackDrifted, "drift detection checked only some resources: "+o.DriftDetectionReason
		setPhase(s, Ready, now)
		s.FinishedAt = now
	case o.DriftDetectionStatus == "DETECTION_FAILED":
		driftUnknown(s, "drift detection failed: "+o.DriftDetectionReason, now)
	}
}

// driftUnknown ends a stack's drift detection without a result: the stack is ready, its
// drift not known (why).
func driftUnknown(s *Stack, why string, now time.Time) {
	s.StackDrift, s.DriftNote = DriftUnknown, why
	setPhase(s, Ready, now)
	s.FinishedAt = now
}
