package cfnlocal

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

type driftDetection struct {
	ID, StackID     string
	Status          string // DETECTION_IN_PROGRESS, DETECTION_COMPLETE
	StackDrift      string
	Drifted         int
	Started         time.Time
	ReadyAt         time.Time
	Results         []resourceDrift
	LogicalIDFilter []string
}

type resourceDrift struct {
	LogicalID, PhysicalID, Type, Status string
	Expected, Actual                    string
	Diffs                               []propertyDiff
	Time                                time.Time
}

type propertyDiff struct{ Path, Expected, Actual, Type string }

// Tamper changes a resource property out of band, as if someone edited it in the console.
// property is a path like "VersioningConfiguration/Status" or "Tags.0.Value"; value is
// parsed as JSON when it is valid JSON, else taken as a string.
func (s *Service) Tamper(stackName, logicalID, property, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.findStack(stackName)
	if st == nil {
		return fmt.Errorf("tamper: stack %s does not exist", stackName)
	}
	r := st.Resources[logicalID]
	if r == nil {
		return fmt.Errorf("tamper: stack %s has no resource %s (it has %s)", stackName, logicalID, strings.Join(sortedKeys(st.Resources), ", "))
	}
	if property == "" {
		return fmt.Errorf("tamper: property path is empty")
	}
	var v any
	if err := json.Unmarshal([]byte(value), &v); err != nil {
		v = value
	}
	if r.Tampered == nil {
		r.Tampered = map[string]any{}
	}
	r.Tampered[normPath(property)] = v
	s.touchResource(st, logicalID)
	return nil
}

// update gives r the properties now (an update's, from was) and drops the out-of-band
// values (Tamper's) of the properties it sets anew: its provider writes them, as an update
// writes a property the template changes whatever it became; the others stay drifted.
func update(r *resource, was, now map[string]any) {
	r.Props = now
	for path := range r.Tampered {
		if k := splitPath(path)[0]; !equalJSON(was[k], now[k]) {
			delete(r.Tampered, path)
		}
	}
}

func normPath(p string) string {
	p = strings.ReplaceAll(p, ".", "/")
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}

func splitPath(p string) []string { return strings.Split(strings.TrimPrefix(p, "/"), "/") }

func setPath(m map[string]any, parts []string, v any) {
	if len(parts) == 1 {
		m[parts[0]] = v
		return
	}
	next, ok := m[parts[0]].(map[string]any)
	if !ok {
		if l, isList := m[parts[0]].([]any); isList {
			var i int
			if _, err := fmt.Sscanf(parts[1], "%d", &i); err == nil && i >= 0 && i < len(l) {
				if len(parts) == 2 {
					l[i] = v
					return
				}
				if mm, ok := l[i].(map[string]any); ok {
					setPath(mm, parts[2:], v)
					return
				}
			}
		}
		next = map[string]any{}
		m[parts[0]] = next
	}
	setPath(next, parts[1:], v)
}

func (s *Service) detectStackDrift(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	if st.inProgress() || st.Status == "REVIEW_IN_PROGRESS" || st.deleted() {
		return nil, validation("Drift detection is not supported for stack %s in status %s", st.Name, st.Status)
	}
	now := s.clk.Now()
	d := &driftDetection{ID: hashUUID("drift", st.ID, fmt.Sprint(s.nextSeq())), StackID: st.ID, Status: "DETECTION_IN_PROGRESS",
		Started: now, ReadyAt: now.Add(s.o.ResourceDelay), LogicalIDFilter: f.list("LogicalResourceIds")}
	s.st.Drifts = append(s.st.Drifts, d)
	s.poke(d.ReadyAt)
	return struct{ StackDriftDetectionId string }{d.ID}, nil
}

func (s *Service) advanceDrifts(now time.Time) {
	for _, d := range s.st.Drifts {
		if d.Status != "DETECTION_IN_PROGRESS" || d.ReadyAt.After(now) {
			continue
		}
		st := s.byID[d.StackID]
		d.Status, d.StackDrift = "DETECTION_COMPLETE", "IN_SYNC"
		if st == nil {
			continue
		}
		for _, n := range sortedKeys(st.Resources) {
			if len(d.LogicalIDFilter) > 0 && !contains(d.LogicalIDFilter, n) {
				continue
			}
			r := st.Resources[n]
			rd := resourceDrift{LogicalID: n, PhysicalID: r.PhysicalID, Type: r.Type, Time: d.ReadyAt}
			if isCustomType(r.Type) {
				rd.Status = "NOT_CHECKED"
			} else if act, found := s.readLive(st, r); !found {
				exp, _ := json.Marshal(orEmpty(r.Props))
				rd.Expected, rd.Status = string(exp), "DELETED"
				d.Drifted++
			} else {
				exp, _ := json.Marshal(orEmpty(r.Props))
				actB, _ := json.Marshal(act)
				rd.Expected, rd.Actual = string(exp), string(actB)
				rd.Diffs = propDiffs("", orEmpty(r.Props), act)
				rd.Status = "IN_SYNC"
				if len(rd.Diffs) > 0 {
					rd.Status = "MODIFIED"
					d.Drifted++
				}
			}
			r.DriftStatus, r.DriftChecked = rd.Status, d.ReadyAt
			s.touchResource(st, n)
			d.Results = append(d.Results, rd)
		}
		if d.Drifted > 0 {
			d.StackDrift = "DRIFTED"
		}
		st.DriftStatus, st.DriftChecked = d.StackDrift, d.ReadyAt
		s.touch(st)
		s.emitDrift(st, d)
	}
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// propDiffs compares expected and actual property trees.
func propDiffs(prefix string, exp, act any) []propertyDiff {
	em, eok := exp.(map[string]any)
	am, aok := act.(map[string]any)
	if eok && aok {
		var out []propertyDiff
		for _, k := range sortedKeys(union(em, am)) {
			ev, ein := em[k]
			av, ain := am[k]
			p := prefix + "/" + k
			switch {
			case ein && !ain:
				out = append(out, propertyDiff{p, jsonScalar(ev), "", "REMOVE"})
			case !ein && ain:
				out = append(out, propertyDiff{p, "", jsonScalar(av), "ADD"})
			default:
				out = append(out, propDiffs(p, ev, av)...)
			}
		}
		return out
	}
	el, elok := exp.([]any)
	al, alok := act.([]any)
	if elok && alok && len(el) == len(al) {
		var out []propertyDiff
		for i := range el {
			out = append(out, propDiffs(fmt.Sprintf("%s/%d", prefix, i), el[i], al[i])...)
		}
		return out
	}
	if equalJSON(exp, act) || scalarString(exp) == scalarString(act) {
		return nil
	}
	return []propertyDiff{{prefix, jsonScalar(exp), jsonScalar(act), "NOT_EQUAL"}}
}

func jsonScalar(v any) string {
	switch v.(type) {
	case map[string]any, []any:
		b, _ := json.Marshal(v)
		return string(b)
	}
	return scalarString(v)
}

func (s *Service) emitDrift(st *stack, d *driftDetection) {
	if s.o.PutEvent == nil {
		return
	}
	detail, _ := json.Marshal(map[string]any{
		"stack-id":                 st.ID,
		"stack-drift-detection-id": d.ID,
		"status-details": map[string]any{
			"stack-drift-status": d.StackDrift,
			"detection-status":   d.Status,
		},
		"drift-detection-details": map[string]any{"drifted-stack-resource-count": d.Drifted},
	})
	evt := events.CloudWatchEvent{
		Version: "0", ID: hashUUID("drift-evt", d.ID), DetailType: "CloudFormation Drift Detection Status Change",
		Source: "aws.cloudformation", AccountID: s.o.AccountID, Time: d.ReadyAt.UTC().Truncate(time.Second), Region: s.o.Region,
		Resources: []string{st.ID}, Detail: detail,
	}
	s.outbox = append(s.outbox, func(ctx context.Context) {
		if err := s.o.PutEvent(ctx, evt); err != nil {
			s.log.Warn("cloudformation emulator: drift event not delivered", "stack", st.Name, "err", err)
		}
	})
}

func (s *Service) findDrift(id string) *driftDetection {
	for _, d := range s.st.Drifts {
		if d.ID == id {
			return d
		}
	}
	return nil
}

func (s *Service) describeStackDriftDetectionStatus(f form) (any, error) {
	d := s.findDrift(f.get("StackDriftDetectionId"))
	if d == nil {
		return nil, validation("Stack drift detection %s does not exist", f.get("StackDriftDetectionId"))
	}
	res := struct {
		StackId                   string
		StackDriftDetectionId     string
		StackDriftStatus          string `xml:",omitempty"`
		DetectionStatus           string
		DetectionStatusReason     string `xml:",omitempty"`
		DriftedStackResourceCount *int   `xml:",omitempty"`
		Timestamp                 *xtime
	}{StackId: d.StackID, StackDriftDetectionId: d.ID, DetectionStatus: d.Status, Timestamp: tp(d.Started)}
	if d.Status == "DETECTION_COMPLETE" {
		n := d.Drifted
		res.StackDriftStatus, res.DriftedStackResourceCount, res.Timestamp = d.StackDrift, &n, tp(d.ReadyAt)
	}
	return res, nil
}

func (s *Service) describeStackResourceDrifts(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	var last *driftDetection
	for _, d := range s.st.Drifts {
		if d.StackID == st.ID && d.Status == "DETECTION_COMPLETE" {
			last = d
		}
	}
	filter := f.list("StackResourceDriftStatusFilters")
	type xDiff struct{ PropertyPath, ExpectedValue, ActualValue, DifferenceType string }
	type xDrift struct {
		StackId                  string
		LogicalResourceId        string
		PhysicalResourceId       string
		ResourceType             string
		ExpectedProperties       string  `xml:",omitempty"`
		ActualProperties         string  `xml:",omitempty"`
		PropertyDifferences      []xDiff `xml:"PropertyDifferences>member"`
		StackResourceDriftStatus string
		Timestamp                *xtime
	}
	var out []xDrift
	if last != nil {
		for _, r := range last.Results {
			if len(filter) > 0 && !contains(filter, r.Status) {
				continue
			}
			x := xDrift{StackId: st.ID, LogicalResourceId: r.LogicalID, PhysicalResourceId: r.PhysicalID, ResourceType: r.Type,
				ExpectedProperties: r.Expected, ActualProperties: r.Actual, StackResourceDriftStatus: r.Status, Timestamp: tp(r.Time)}
			for _, d := range r.Diffs {
				x.PropertyDifferences = append(x.PropertyDifferences, xDiff{d.Path, d.Expected, d.Actual, d.Type})
			}
			out = append(out, x)
		}
	}
	pg, next, err := page(out, f.get("NextToken"), s.o.PageSize)
	if err != nil {
		return nil, err
	}
	return struct {
		StackResourceDrifts []xDrift `xml:"StackResourceDrifts>member"`
		NextToken           string   `xml:",omitempty"`
	}{pg, next}, nil
}
