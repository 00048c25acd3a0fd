package cfnlocal

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A resource created with a CreationPolicy's ResourceSignal (an EC2 instance, an Auto
// Scaling group, a WaitCondition, an AppStream fleet) is complete when Count SUCCESS
// signals arrived (SignalResource, which cfn-signal calls) within Timeout, as in AWS: a
// FAILURE signal fails it at once ("Received FAILURE signal with UniqueId ..."), and so
// does the timeout ("Failed to receive N resource signal(s) within the specified
// duration"). Signals with a UniqueId already received count once.
//
// Locally nothing boots an instance, so nothing would run its cfn-signal. The documented
// local default: a stand-in sends the Count SUCCESS signals one resource delay after the
// resource is made (unique ids the instance ids), noted as the stand-in's in the events.
// A SignalStandIn set through the control endpoint changes that per logical id: NONE waits
// for SignalResource (or the timeout), FAILURE sends a FAILURE signal.

// SignalPath is the control endpoint of signal stand-ins, below the emulator's URL.
const SignalPath = "/_local/cloudformation/signals"

// SignalStandIn says what the emulator's stand-in signals for the resources named
// LogicalID (of Stack, or of any stack when Stack is "") that wait for signals.
type SignalStandIn struct {
	Stack     string `json:"stack,omitempty"`
	LogicalID string `json:"logicalId"`
	// Signal is SUCCESS (the default), FAILURE, or NONE (no stand-in signal: the resource
	// waits for SignalResource).
	Signal string `json:"signal"`
}

// SetSignalStandIn records what the stand-in signals for a logical id; a later one for
// the same stack and logical id replaces it.
func (s *Service) SetSignalStandIn(a SignalStandIn) error {
	a.Signal = strings.ToUpper(a.Signal)
	if a.LogicalID == "" || !slices.Contains([]string{"SUCCESS", "FAILURE", "NONE"}, a.Signal) {
		return fmt.Errorf(`a signal stand-in needs a logicalId and a signal: SUCCESS, FAILURE or NONE (wait for SignalResource)`)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Signals = slices.DeleteFunc(s.st.Signals, func(o *SignalStandIn) bool { return o.Stack == a.Stack && o.LogicalID == a.LogicalID })
	s.st.Signals = append(s.st.Signals, &a)
	return nil
}

// SignalStandIns lists the signal stand-ins set.
func (s *Service) SignalStandIns() []SignalStandIn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SignalStandIn, len(s.st.Signals))
	for i, a := range s.st.Signals {
		out[i] = *a
	}
	return out
}

// ClearSignalStandIns forgets them: the default (SUCCESS) applies again.
func (s *Service) ClearSignalStandIns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Signals = nil
}

// standInSignal is what the stand-in signals for a resource: the stand-in set for its
// stack, else the one set for any stack, else SUCCESS.
func (s *Service) standInSignal(stack, logicalID string) string {
	signal := "SUCCESS"
	for _, a := range s.st.Signals {
		switch {
		case a.LogicalID != logicalID:
		case a.Stack == stack:
			return a.Signal
		case a.Stack == "":
			signal = a.Signal
		}
	}
	return signal
}

// signalPolicy is a resource's CreationPolicy ResourceSignal.
type signalPolicy struct {
	Count   int
	Timeout time.Duration
}

var isoDuration = regexp.MustCompile(`^PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?$`)

// creationSignals reads a CreationPolicy's ResourceSignal (Count 1 and Timeout PT5M by
// default, as AWS's); ok is false when the resource waits for no signal.
func creationSignals(policy map[string]any) (signalPolicy, bool, error) {
	rs, ok := policy["ResourceSignal"].(map[string]any)
	if !ok {
		return signalPolicy{}, false, nil
	}
	p := signalPolicy{Count: 1, Timeout: 5 * time.Minute}
	if v, ok := rs["Count"]; ok {
		n, err := strconv.Atoi(scalarString(v))
		if err != nil || n < 0 {
			return p, false, invalidf("CreationPolicy ResourceSignal Count %v must be a number of signals", v)
		}
		p.Count = n
	}
	if v, ok := rs["Timeout"]; ok {
		m := isoDuration.FindStringSubmatch(scalarString(v))
		if m == nil || m[1]+m[2]+m[3] == "" {
			return p, false, invalidf("CreationPolicy ResourceSignal Timeout %v must be an ISO 8601 duration such as PT15M", v)
		}
		h, _ := strconv.Atoi(orDefault(m[1], "0"))
		mi, _ := strconv.Atoi(orDefault(m[2], "0"))
		sec, _ := strconv.Atoi(orDefault(m[3], "0"))
		p.Timeout = time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(sec)*time.Second
		if p.Timeout > 12*time.Hour {
			return p, false, invalidf("CreationPolicy ResourceSignal Timeout %v is longer than the maximum of PT12H", v)
		}
	}
	return p, p.Count > 0, nil
}

// signalWait is a create step waiting for its resource's signals.
type signalWait struct {
	Need     int
	Received []string // unique ids of the SUCCESS signals
	Deadline time.Time
	StandIn  string    // what the stand-in sends, "" once sent or when none
	StandAt  time.Time // when
}

// awaitSignals keeps the create step of a resource with a CreationPolicy open until its
// signals arrived, the timeout passed or a FAILURE signal came; it reports whether the
// step still waits (op.Due re-armed). Called by endStep with mu held.
func (s *Service) awaitSignals(st *stack, sp step, t time.Time) bool {
	op := st.Op
	if sp.Action != "create" || op.Fail != "" && op.Signals == nil {
		return false
	}
	r := st.Resources[sp.LogicalID]
	w, err := s.signalWaitOf(st, sp, t)
	if r == nil || err != nil || w == nil {
		if err != nil && op.Fail == "" {
			op.Fail = err.Error()
		}
		return false
	}
	if w.StandIn != "" && !t.Before(w.StandAt) {
		sig := w.StandIn
		w.StandIn = ""
		for i := 0; len(w.Received) < w.Need; i++ {
			id := r.PhysicalID
			if r.Type != "AWS::EC2::Instance" || i > 0 {
				id = "i-" + hashHex(17, r.Seed, "signal", strconv.Itoa(i))
			}
			if !s.signal(st, r, id, sig, " (sent by the local emulator's stand-in: nothing runs cfn-signal locally)", t) {
				break
			}
		}
	}
	switch {
	case op.Fail != "":
	case len(w.Received) >= w.Need:
	case !t.Before(w.Deadline):
		op.Fail = fmt.Sprintf("Failed to receive %d resource signal(s) within the specified duration", w.Need)
	default:
		op.Due = w.Deadline
		if w.StandIn != "" && w.StandAt.Before(op.Due) {
			op.Due = w.StandAt
		}
		return true
	}
	op.Signals = nil
	return false
}

// signalWaitOf returns the wait of the current create step sp of st for its resource's
// signals, begun at t when it has not begun yet; nil when the resource waits for none.
func (s *Service) signalWaitOf(st *stack, sp step, t time.Time) (*signalWait, error) {
	op := st.Op
	if op.Signals != nil {
		return op.Signals, nil
	}
	if op.tpl == nil {
		op.tpl, _ = s.parse(op.Body)
	}
	policy, waits, err := creationSignals(op.tpl.decl(sp.LogicalID).CreationPolicy)
	if err != nil || !waits {
		return nil, err
	}
	w := &signalWait{Need: policy.Count, Deadline: t.Add(policy.Timeout)}
	if sig := s.standInSignal(st.Name, sp.LogicalID); sig != "NONE" {
		w.StandIn, w.StandAt = sig, t.Add(s.resourceDelay(st.Name))
	}
	op.Signals = w
	return w, nil
}

// signal records one signal of resource r of st; it reports whether r still waits.
// Called with mu held.
func (s *Service) signal(st *stack, r *resource, uniqueID, status, note string, t time.Time) bool {
	w := st.Op.Signals
	if status == "FAILURE" {
		st.Op.Fail = "Received FAILURE signal with UniqueId " + uniqueID
		return false
	}
	if slices.Contains(w.Received, uniqueID) {
		return len(w.Received) < w.Need // counted once
	}
	w.Received = append(w.Received, uniqueID)
	s.addEvent(st, t, r.LogicalID, r.PhysicalID, r.Type, r.Status, "Received SUCCESS signal with UniqueId "+uniqueID+note, nil)
	return len(w.Received) < w.Need
}

// signalResource is SignalResource: a signal for a resource that waits for one.
func (s *Service) signalResource(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	id, status, logicalID := f.get("UniqueId"), f.get("Status"), f.get("LogicalResourceId")
	if id == "" || logicalID == "" || (status != "SUCCESS" && status != "FAILURE") {
		return nil, validation("SignalResource needs LogicalResourceId, UniqueId and Status SUCCESS or FAILURE")
	}
	if !st.inProgress() {
		return nil, validation("Stack %s is in %s state and cannot be signaled", st.ID, st.Status)
	}
	r := st.Resources[logicalID]
	if r == nil {
		return nil, validation("Resource %s does not exist in stack %s", logicalID, st.Name)
	}
	// a signal may come while the resource is being made (an instance booting): it counts
	op, now := st.Op, s.clk.Now()
	var w *signalWait
	if op != nil && op.Started && op.Cur < len(op.Steps) && op.Steps[op.Cur].LogicalID == logicalID && op.Steps[op.Cur].Action == "create" {
		w, _ = s.signalWaitOf(st, op.Steps[op.Cur], now)
	}
	if w == nil {
		return nil, validation("Resource %s is in %s state and cannot be signaled", logicalID, r.Status)
	}
	if s.signal(st, r, id, status, "", now) {
		// more to come: the step keeps its due time
	} else if op.Due.After(now) {
		op.Due = now
	}
	s.touch(st)
	s.advanceStack(st, now)
	if st.Op != nil && !st.Op.Halted {
		s.poke(st.Op.Due)
	}
	return nil, nil
}
