package drift

import (
	"fmt"
	"time"
)

// Ref names one stack of a sweep: its graph's and its own place, which never change once
// the sweep is planned.
type Ref struct{ Graph, Stack int }

// Detection is what a pass saw of one detection in flight.
type Detection struct {
	Ref
	// Status is CloudFormation's detection status (DETECTION_IN_PROGRESS, _COMPLETE,
	// _FAILED), DriftStatus the stack's (IN_SYNC, DRIFTED, ...), Reason why it failed.
	Status, DriftStatus, Reason string
	// Resources are the drifted resources, read when the stack drifted (see
	// NeedsResources).
	Resources []Resource
	// StatusErr and ResourcesErr say the status or the resource drifts were unreadable;
	// Throttled that they were only for now (the next pass looks again).
	StatusErr, ResourcesErr string
	Throttled               bool
	// Secrets are where the stack's template, read from CloudFormation, holds secrets (see
	// Stack.Secrets), for a stack whose applied template is not known; SecretsRead says
	// they were read.
	Secrets     map[string][]string
	SecretsRead bool
}

// NeedsResources reports whether a detection that ended as status says drifted, so its
// resource drifts must be read.
func NeedsResources(status, driftStatus string) bool {
	return status != "DETECTION_IN_PROGRESS" && driftStatus == string(Drifted)
}

// Started is the answer to starting the detection of one stack.
type Started struct {
	Ref
	DetectionID string
	// Throttled: not started for now (the next pass tries again); Missing: the stack does
	// not exist; Err: CloudFormation refused the detection.
	Throttled, Missing bool
	Err                string
}

// Clone returns a deep copy of sw, so the pure functions never change their input.
func (sw *Sweep) Clone() *Sweep {
	c := *sw
	c.Graphs = make([]*Graph, len(sw.Graphs))
	for i, g := range sw.Graphs {
		cg := *g
		cg.Stacks = make([]*Stack, len(g.Stacks))
		for j, s := range g.Stacks {
			cs := *s
			cs.Resources = append([]Resource(nil), s.Resources...)
			cg.Stacks[j] = &cs
		}
		c.Graphs[i] = &cg
	}
	return &c
}

// At is the stack r names, or nil.
func (sw *Sweep) At(r Ref) *Stack {
	if r.Graph < 0 || r.Graph >= len(sw.Graphs) || r.Stack < 0 || r.Stack >= len(sw.Graphs[r.Graph].Stacks) {
		return nil
	}
	return sw.Graphs[r.Graph].Stacks[r.Stack]
}

// Watch lists the detections in flight, which a pass observes.
func (sw *Sweep) Watch() []Ref {
	var out []Ref
	for i, g := range sw.Graphs {
		for j, s := range g.Stacks {
			if s.Status == Detecting {
				out = append(out, Ref{i, j})
			}
		}
	}
	return out
}

// DefaultMaxAge is how long a sweep waits for its detections before what is left is
// settled UNKNOWN (Observe's maxAge).
const DefaultMaxAge = 6 * time.Hour

// Observe applies what a pass saw of the detections in flight, and settles as UNKNOWN
// every stack not checked maxAge after the sweep started.
func Observe(sw *Sweep, seen []Detection, now time.Time, maxAge time.Duration) *Sweep {
	next := sw.Clone()
	for _, d := range seen {
		if s := next.At(d.Ref); s != nil && s.Status == Detecting {
			observe(s, d, next.Graphs[d.Graph].Ignore, now.UTC())
		}
	}
	if now.Sub(next.StartedAt) > maxAge {
		for _, g := range next.Graphs {
			for _, s := range g.Stacks {
				if !s.Status.Final() {
					s.Status, s.Reason = Unknown, fmt.Sprintf("detection did not finish within %s of the sweep's start", maxAge)
				}
			}
		}
	}
	return next
}

func observe(s *Stack, d Detection, ignore []string, now time.Time) {
	switch {
	case d.StatusErr != "" && d.Throttled:
		return
	case d.StatusErr != "":
		s.Status, s.Reason = Unknown, fmt.Sprintf("detection %s: status unreadable: %s", s.DetectionID, d.StatusErr)
		return
	}
	switch d.Status {
	case "DETECTION_IN_PROGRESS":
		return
	case "DETECTION_FAILED":
		if d.DriftStatus != string(Drifted) {
			s.Status, s.Reason, s.CheckedAt = Unknown, "detection failed: "+d.Reason, now
			return
		}
		s.Reason = "detection failed for some resources: " + d.Reason
	}
	s.CheckedAt = now
	switch d.DriftStatus {
	case string(InSync):
		s.Status = InSync
	case string(Drifted):
		switch {
		case d.ResourcesErr != "" && d.Throttled:
		case d.ResourcesErr != "":
			s.Status, s.Reason = Unknown, "drifted, but its resource drifts are unreadable: "+d.ResourcesErr
		default:
			s.Resources = d.Resources
			if d.SecretsRead {
				s.Secrets = d.Secrets
			}
			applyIgnore(s, ignore)
			maskSecrets(s)
		}
	default:
		s.Status, s.Reason = Unknown, fmt.Sprintf("detection finished with stack drift status %q", d.DriftStatus)
	}
}

// Locks lists the graphs whose locks decide whether the next detections start: those of
// the stacks Next(limit) returns, in order.
func (sw *Sweep) Locks(limit int) []int {
	var out []int
	seen := map[int]bool{}
	for _, r := range sw.next(limit) {
		if !seen[r.Graph] {
			seen[r.Graph] = true
			out = append(out, r.Graph)
		}
	}
	return out
}

// DefaultConcurrency is how many drift detections are in flight at once, by default
// (Schedule's limit): CloudFormation limits concurrent detections per account.
const DefaultConcurrency = 5

// Schedule decides the detections to start now: the pending stacks that fit within limit
// detections in flight, in graph then stack order, but none of a graph whose lock is held
// (locked holds why, by graph): those are settled as NOT_CHECKED.
func Schedule(sw *Sweep, limit int, locked map[int]string) (*Sweep, []Ref) {
	next := sw.Clone()
	refs := next.next(limit)
	for g, why := range locked {
		if why != "" && g >= 0 && g < len(next.Graphs) {
			next.Graphs[g].SkipPending(why)
		}
	}
	var start []Ref
	for _, r := range refs {
		if next.At(r).Status == Pending {
			start = append(start, r)
		}
	}
	return next, start
}

// Start applies the answers to starting detections.
func Start(sw *Sweep, answers []Started, now time.Time) *Sweep {
	next := sw.Clone()
	for _, a := range answers {
		s := next.At(a.Ref)
		if s == nil || s.Status != Pending {
			continue
		}
		switch {
		case a.Throttled:
		case a.Missing:
			s.Status, s.Reason = NotChecked, "stack does not exist in AWS"
		case a.Err != "":
			s.Status, s.Reason = Unknown, "detection could not start: "+a.Err
		default:
			s.Status, s.DetectionID, s.StartedAt = Detecting, a.DetectionID, now.UTC()
		}
	}
	return next
}

// Unreported lists the graphs whose stacks are all settled and whose report is not
// written yet.
func (sw *Sweep) Unreported() []int {
	var out []int
	for i, g := range sw.Graphs {
		if g.Report == "" && g.Settled() {
			out = append(out, i)
		}
	}
	return out
}

// WaitsFor reports whether sw waits for the detection detectionID, or a detection of the
// stack stackID (either may be ""): a drift status change of it may settle a stack.
func (sw *Sweep) WaitsFor(stackID, detectionID string) bool {
	for _, g := range sw.Graphs {
		for _, s := range g.Stacks {
			if s.Status == Detecting && (s.DetectionID == detectionID && detectionID != "" || s.StackID == stackID && stackID != "") {
				return true
			}
		}
	}
	return false
}
