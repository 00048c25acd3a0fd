package cfnlocal

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

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
