package cfnlocal

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// --- stack policies ---

type policyStatement struct {
	Effect      string
	Action      any
	NotAction   any
	Resource    any
	NotResource any
	Condition   map[string]map[string]any
}

type stackPolicy struct{ Statement []policyStatement }

func parsePolicy(body string) (*stackPolicy, error) {
	var p stackPolicy
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		return nil, validation("Stack policy is not valid JSON: %v", err)
	}
	for i, st := range p.Statement {
		if st.Effect != "Allow" && st.Effect != "Deny" {
			return nil, validation("Stack policy statement %d: Effect must be Allow or Deny, not %q", i, st.Effect)
		}
	}
	return &p, nil
}

func strList(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, scalarString(e))
		}
		return out
	}
	return nil
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok || p == s || p == "*" {
			return true
		}
	}
	return false
}

func (st policyStatement) matches(action string, r *resource) bool {
	res := "LogicalResourceId/" + r.LogicalID
	if st.Action != nil && !matchAny(strList(st.Action), action) {
		return false
	}
	if st.NotAction != nil && matchAny(strList(st.NotAction), action) {
		return false
	}
	if st.Resource != nil && !matchAny(strList(st.Resource), res) {
		return false
	}
	if st.NotResource != nil && matchAny(strList(st.NotResource), res) {
		return false
	}
	for op, kv := range st.Condition {
		for k, v := range kv {
			if k != "ResourceType" {
				continue
			}
			switch op {
			case "StringEquals":
				if !contains(strList(v), r.Type) {
					return false
				}
			case "StringLike":
				if !matchAny(strList(v), r.Type) {
					return false
				}
			}
		}
	}
	return true
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// policyDeniesAction returns the denial reason when the stack policy forbids action on r.
func (s *Service) policyDeniesAction(st *stack, r *resource, action string) string {
	if st.Policy == "" {
		return ""
	}
	p, err := parsePolicy(st.Policy)
	if err != nil {
		return ""
	}
	allowed := false
	for i, stmt := range p.Statement {
		if !stmt.matches(action, r) {
			continue
		}
		if stmt.Effect == "Deny" {
			return fmt.Sprintf("Action denied by stack policy: Statement [#%d] has a Deny for %s on resource %s", i, action, r.LogicalID)
		}
		allowed = true
	}
	if !allowed {
		return fmt.Sprintf("Action denied by stack policy: no Allow statement covers %s on resource %s", action, r.LogicalID)
	}
	return ""
}

func (s *Service) policyDenies(st *stack, r *resource, replace bool) string {
	if replace {
		return s.policyDeniesAction(st, r, "Update:Replace")
	}
	return s.policyDeniesAction(st, r, "Update:Modify")
}

// --- faults ---

// Fault makes the emulator misbehave on purpose.
type Fault struct {
	// Stack and LogicalID select what fails; empty matches any stack or resource.
	Stack     string `json:"stack,omitempty"`
	LogicalID string `json:"logicalId,omitempty"`
	// Operation is CREATE, UPDATE or DELETE; empty matches all.
	Operation string `json:"operation,omitempty"`
	// Reason makes the matching resource operation fail with this ResourceStatusReason.
	Reason string `json:"reason,omitempty"`
	// Delay is added to each matching resource operation; in JSON a Go duration string
	// ("90s") or a number of seconds.
	Delay time.Duration `json:"-"`
	// ThrottleRate answers that fraction (0..1) of API calls with Throttling "Rate exceeded".
	ThrottleRate float64 `json:"throttleRate,omitempty"`
	// Count limits how many times the fault applies; 0 is unlimited.
	Count int `json:"count,omitempty"`
	// DuringRollback makes the fault apply to rollback steps too (by default they are
	// spared, so a failed update rolls back cleanly).
	DuringRollback bool `json:"duringRollback,omitempty"`
	Used           int  `json:"used,omitempty"`
}

// UnmarshalJSON reads a fault as the control endpoint receives it.
func (f *Fault) UnmarshalJSON(b []byte) error {
	type plain Fault
	var aux struct {
		*plain
		Delay any `json:"delay"`
	}
	aux.plain = (*plain)(f)
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	switch d := aux.Delay.(type) {
	case nil:
	case float64:
		f.Delay = time.Duration(d * float64(time.Second))
	case string:
		v, err := time.ParseDuration(d)
		if err != nil {
			return fmt.Errorf("fault delay %q: want a duration like 90s: %w", d, err)
		}
		f.Delay = v
	default:
		return fmt.Errorf("fault delay %v: want a duration like \"90s\" or seconds", d)
	}
	return nil
}

// MarshalJSON writes a fault with its delay as a duration string.
func (f Fault) MarshalJSON() ([]byte, error) {
	type plain Fault
	return json.Marshal(struct {
		plain
		Delay string `json:"delay,omitempty"`
	}{plain(f), durationString(f.Delay)})
}

func durationString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// InjectFault adds a fault. A Fault with only ThrottleRate throttles API calls.
func (s *Service) InjectFault(f Fault) error {
	f.Operation = strings.ToUpper(f.Operation)
	switch f.Operation {
	case "", "CREATE", "UPDATE", "DELETE":
	default:
		return fmt.Errorf("fault operation %q: want CREATE, UPDATE, DELETE or empty", f.Operation)
	}
	if f.ThrottleRate < 0 || f.ThrottleRate > 1 {
		return fmt.Errorf("fault throttle rate %v: want a fraction between 0 and 1", f.ThrottleRate)
	}
	if f.Reason == "" && f.Delay == 0 && f.ThrottleRate == 0 {
		return fmt.Errorf("fault does nothing: set reason, delay or throttleRate")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Faults = append(s.st.Faults, &f)
	return nil
}

// ClearFaults removes every fault.
func (s *Service) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Faults = nil
}

func (s *Service) matchFault(stackName, logicalID, verb string, rollback bool) *Fault {
	for _, f := range s.st.Faults {
		if f.ThrottleRate > 0 && f.Reason == "" && f.Delay == 0 {
			continue
		}
		if (f.Stack != "" && f.Stack != stackName) || (f.LogicalID != "" && f.LogicalID != logicalID) ||
			(f.Operation != "" && f.Operation != verb) || (rollback && !f.DuringRollback) ||
			(f.Count > 0 && f.Used >= f.Count) {
			continue
		}
		f.Used++
		return f
	}
	return nil
}

// throttled decides, deterministically, whether this call is throttled.
func (s *Service) throttled() bool {
	for _, f := range s.st.Faults {
		if f.ThrottleRate <= 0 || (f.Count > 0 && f.Used >= f.Count) {
			continue
		}
		n := float64(s.callCount)
		if int(n*f.ThrottleRate) > int((n-1)*f.ThrottleRate) {
			f.Used++
			return true
		}
	}
	return false
}

// --- EventBridge ---

func (s *Service) emitStatusChange(st *stack, at time.Time, status, reason string) {
	if s.o.PutEvent == nil {
		return
	}
	detail, _ := json.Marshal(map[string]any{
		"stack-id":             st.ID,
		"status-details":       map[string]string{"status": status, "status-reason": reason},
		"client-request-token": st.LastClientToken,
	})
	evt := events.CloudWatchEvent{
		Version: "0", ID: hashUUID("evt", st.ID, fmt.Sprint(len(st.Events))), DetailType: "CloudFormation Stack Status Change",
		Source: "aws.cloudformation", AccountID: s.o.AccountID, Time: at.UTC().Truncate(time.Second), Region: s.o.Region,
		Resources: []string{st.ID}, Detail: detail,
	}
	s.outbox = append(s.outbox, func(ctx context.Context) {
		if err := s.o.PutEvent(ctx, evt); err != nil {
			s.log.Warn("cloudformation emulator: status change event not delivered", "stack", st.Name, "err", err)
		}
	})
}

// --- drift ---

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
	return nil
}

func normPath(p string) string {
	p = strings.ReplaceAll(p, ".", "/")
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}

// actualProps applies tampering to the expected properties.
func actualProps(r *resource) map[string]any {
	m := copyProps(r.Props)
	if m == nil {
		m = map[string]any{}
	}
	for p, v := range r.Tampered {
		setPath(m, strings.Split(strings.TrimPrefix(p, "/"), "/"), v)
	}
	return m
}

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
			} else {
				act := actualProps(r)
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
			d.Results = append(d.Results, rd)
		}
		if d.Drifted > 0 {
			d.StackDrift = "DRIFTED"
		}
		st.DriftStatus, st.DriftChecked = d.StackDrift, d.ReadyAt
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

// --- HTTP handlers for custom resource responses and control ---

// ResponseHandler accepts the PUT a custom resource provider sends to its ResponseURL.
func (s *Service) ResponseHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut && r.Method != http.MethodPost {
			http.Error(w, "custom resource responses are PUT to their ResponseURL", http.StatusMethodNotAllowed)
			return
		}
		reqID := path.Base(r.URL.Path)
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			http.Error(w, "read response body: "+err.Error(), http.StatusBadRequest)
			return
		}
		var resp struct {
			Status, Reason, PhysicalResourceId, StackId, RequestId, LogicalResourceId string
			Data                                                                      map[string]any
		}
		if err := json.Unmarshal(body, &resp); err != nil {
			http.Error(w, "custom resource response is not JSON: "+err.Error(), http.StatusBadRequest)
			return
		}
		if resp.Status != "SUCCESS" && resp.Status != "FAILED" {
			http.Error(w, fmt.Sprintf("custom resource response Status %q: want SUCCESS or FAILED", resp.Status), http.StatusBadRequest)
			return
		}
		if resp.RequestId != "" && resp.RequestId != reqID {
			http.Error(w, fmt.Sprintf("custom resource response RequestId %s does not match its URL (%s)", resp.RequestId, reqID), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		ok := s.deliverResponse(reqID, &crResult{Status: resp.Status, Reason: resp.Reason, PhysicalID: resp.PhysicalResourceId, Data: resp.Data}, s.clk.Now())
		if err := s.save(); err != nil {
			s.log.Error("cloudformation emulator: save state", "err", err)
		}
		out := s.takeOutbox()
		s.mu.Unlock()
		s.flush(out)
		if !ok {
			// AWS's presigned URL accepts late or duplicate answers; the stack ignores them
			s.log.Warn("cloudformation emulator: custom resource response for no pending request", "requestId", reqID)
		}
		w.WriteHeader(http.StatusOK)
	})
}

// ControlHandler serves, below /_local/cloudformation/:
//
//	POST faults            body: Fault JSON         inject a fault
//	DELETE faults                                   clear faults
//	GET faults                                      list faults
//	POST tamper            body: {"stack","logicalId","property","value"}
//	GET executed-change-sets
//	GET calls                                       API calls per action
func (s *Service) ControlHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		what := path.Base(strings.TrimSuffix(r.URL.Path, "/"))
		reply := func(v any, err error) {
			w.Header().Set("Content-Type", "application/json")
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
				return
			}
			_ = json.NewEncoder(w).Encode(v)
		}
		switch {
		case what == "faults" && r.Method == http.MethodPost:
			var f Fault
			if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
				reply(nil, fmt.Errorf("fault body is not a fault JSON object: %w", err))
				return
			}
			reply(map[string]bool{"ok": true}, s.InjectFault(f))
		case what == "faults" && r.Method == http.MethodDelete:
			s.ClearFaults()
			reply(map[string]bool{"ok": true}, nil)
		case what == "faults":
			s.mu.Lock()
			fs := append([]*Fault(nil), s.st.Faults...)
			s.mu.Unlock()
			reply(fs, nil)
		case what == "tamper" && r.Method == http.MethodPost:
			var t struct{ Stack, LogicalID, Property, Value string }
			if err := json.NewDecoder(r.Body).Decode(&t); err != nil {
				reply(nil, fmt.Errorf("tamper body must be {\"stack\",\"logicalId\",\"property\",\"value\"}: %w", err))
				return
			}
			reply(map[string]bool{"ok": true}, s.Tamper(t.Stack, t.LogicalID, t.Property, t.Value))
		case what == "executed-change-sets":
			reply(s.ExecutedChangeSets(), nil)
		case what == "calls":
			s.mu.Lock()
			c := map[string]int{}
			for k, v := range s.calls {
				c[k] = v
			}
			s.mu.Unlock()
			reply(c, nil)
		default:
			w.WriteHeader(http.StatusNotFound)
			reply(nil, fmt.Errorf("unknown control %s %s: use faults, tamper, executed-change-sets or calls", r.Method, r.URL.Path))
		}
	})
}
