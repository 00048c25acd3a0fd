package cfnlocal

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A Lambda-backed custom resource (a ServiceToken that is a function ARN) is sent to the
// function when a handler runs it in process (Options.FunctionRuns). A function the
// emulator does not run — one a stack made with inline ZipFile code, which is recorded and
// never run, or one of another account — is answered by a stand-in, so that such stacks
// deploy, update and delete locally: SUCCESS with no data by default, with a warning in
// the stack's events; a StandIn set through the control endpoint gives data to return, or
// a failure reason, per logical id.

// StandInPath is the control endpoint of stand-in answers, below the emulator's URL.
const StandInPath = "/_local/cloudformation/custom-resources"

// StandIn is the answer to the requests of the custom resources named LogicalID (of Stack,
// or of any stack when Stack is "") whose function the emulator does not run.
type StandIn struct {
	Stack     string `json:"stack,omitempty"`
	LogicalID string `json:"logicalId"`
	// Data is what Fn::GetAtt reads.
	Data map[string]any `json:"data,omitempty"`
	// PhysicalResourceID is returned on Create (and replaces the resource on Update when
	// it differs); by default a generated id.
	PhysicalResourceID string `json:"physicalResourceId,omitempty"`
	// Reason, when set, answers FAILED with it.
	Reason string `json:"reason,omitempty"`
	// RequestTypes are the requests (Create, Update, Delete) answered so; by default all of
	// them, but Create and Update only for a failure, so the stack can still be deleted.
	RequestTypes []string `json:"requestTypes,omitempty"`
}

func (a *StandIn) applies(stack, logicalID, reqType string) bool {
	if a.LogicalID != logicalID || a.Stack != "" && a.Stack != stack {
		return false
	}
	types := a.RequestTypes
	if len(types) == 0 {
		types = []string{"Create", "Update", "Delete"}
		if a.Reason != "" {
			types = types[:2]
		}
	}
	return slices.Contains(types, reqType)
}

// SetStandIn records how the emulator answers custom resources named a.LogicalID whose
// function it does not run; a later answer for the same stack and logical id replaces it.
func (s *Service) SetStandIn(a StandIn) error {
	if a.LogicalID == "" {
		return fmt.Errorf("a stand-in answer needs the logicalId of the custom resource it answers")
	}
	for _, t := range a.RequestTypes {
		if t != "Create" && t != "Update" && t != "Delete" {
			return fmt.Errorf("requestTypes %q: use Create, Update and Delete", t)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.StandIns = slices.DeleteFunc(s.st.StandIns, func(o *StandIn) bool { return o.Stack == a.Stack && o.LogicalID == a.LogicalID })
	s.st.StandIns = append(s.st.StandIns, &a)
	return nil
}

// ClearStandIns forgets every stand-in answer: requests get the default again.
func (s *Service) ClearStandIns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.StandIns = nil
}

// StandIns lists the stand-in answers set.
func (s *Service) StandIns() []StandIn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]StandIn, len(s.st.StandIns))
	for i, a := range s.st.StandIns {
		out[i] = *a
	}
	return out
}

// invokeCustomResource sends a custom resource request to the Lambda function fn when it
// runs in process, else answers it with the stand-in. Called with mu held.
func (s *Service) invokeCustomResource(st *stack, r *resource, fn, reqType, reqID string, payload []byte, t time.Time) {
	op := st.Op
	if s.o.FunctionRuns != nil && s.o.InvokeFunction != nil && s.o.FunctionRuns(fn) {
		s.outbox = append(s.outbox, func(ctx context.Context) {
			if err := s.o.InvokeFunction(ctx, fn, payload); err != nil {
				s.customResourceFailed(reqID, fmt.Sprintf("could not invoke %s: %v", fn, err))
			}
		})
		return
	}
	var answer *StandIn
	for _, a := range s.st.StandIns {
		if a.applies(st.Name, r.LogicalID, reqType) && (answer == nil || a.Stack != "") {
			answer = a
		}
	}
	res := &crResult{Status: "SUCCESS", PhysicalID: r.PhysicalID}
	how := "SUCCESS with no data (set its answer with POST " + StandInPath + ")"
	if answer != nil {
		how = "as set through " + StandInPath
		if answer.Reason != "" {
			res.Status, res.Reason = "FAILED", answer.Reason
		} else {
			res.Data = answer.Data
			if answer.PhysicalResourceID != "" && reqType != "Delete" {
				res.PhysicalID = answer.PhysicalResourceID
			}
		}
	}
	if res.PhysicalID == "" {
		res.PhysicalID = st.Name + "-" + r.LogicalID + "-" + hashUpper(12, r.Seed)
	}
	op.CRResult = res
	op.Due = t.Add(s.resourceDelay(st.Name))
	what := "is not a function the local emulator runs"
	if strings.Contains(fn, ":function:") {
		what = "does not run in the local emulator (its code is not run locally)"
	}
	s.addEvent(st, t, r.LogicalID, r.PhysicalID, r.Type, r.Status,
		fmt.Sprintf("Warning: the ServiceToken's Lambda function %s %s: a stand-in answered the %s request %s", fn, what, reqType, how), nil)
}
