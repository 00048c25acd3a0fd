package cfnlocal

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

type crResult struct {
	Status, Reason, PhysicalID string
	Data                       map[string]any
}

// sendCustomResource publishes a custom resource request to its ServiceToken topic.
func (s *Service) sendCustomResource(st *stack, r *resource, reqType string, oldProps map[string]any, t time.Time) {
	op := st.Op
	token := scalarString(r.Props["ServiceToken"])
	if reqType == "Delete" && token == "" && oldProps != nil {
		token = scalarString(oldProps["ServiceToken"])
	}
	reqID := hashUUID("cr", st.ID, r.LogicalID, fmt.Sprint(s.nextSeq()))
	op.CRRequestID = reqID
	op.CROldProps = oldProps
	timeout := s.o.CustomResourceTimeout
	if v := scalarString(r.Props["ServiceTimeout"]); v != "" {
		var secs int
		if _, err := fmt.Sscanf(v, "%d", &secs); err == nil && secs > 0 {
			timeout = time.Duration(secs) * time.Second
		}
	}
	op.Due = t.Add(timeout)
	// A custom resource gets the values of ssm references, and secure ones as written.
	props, _ := s.resolveRefs(r.Props, false)
	old, _ := s.resolveRefs(oldProps, false)
	req := map[string]any{
		"RequestType":        reqType,
		"ResponseURL":        strings.TrimRight(s.o.BaseURL(), "/") + ResponsePath + reqID,
		"StackId":            st.ID,
		"RequestId":          reqID,
		"ResourceType":       r.Type,
		"LogicalResourceId":  r.LogicalID,
		"ResourceProperties": stringifyScalars(props),
	}
	if reqType != "Create" {
		req["PhysicalResourceId"] = r.PhysicalID
	}
	if reqType == "Update" {
		req["OldResourceProperties"] = stringifyScalars(old)
	}
	if reqType == "Delete" && r.Props == nil {
		req["ResourceProperties"] = stringifyScalars(old)
	}
	b, _ := json.Marshal(req)
	msg := string(b)
	switch {
	case strings.HasPrefix(token, "arn:aws:lambda:"):
		s.invokeCustomResource(st, r, token, reqType, reqID, b, t)
		return
	case !strings.HasPrefix(token, "arn:aws:sns:"):
		op.Fail = fmt.Sprintf("Invalid service token %q of %s: it must be the ARN of an SNS topic or a Lambda function", token, r.LogicalID)
		op.CRRequestID = ""
		op.Due = t
		return
	}
	s.outbox = append(s.outbox, func(ctx context.Context) {
		if s.o.Publish == nil {
			s.customResourceFailed(reqID, "the emulator has no SNS to deliver custom resource requests to")
			return
		}
		if err := s.o.Publish(ctx, token, "AWS CloudFormation custom resource request", msg); err != nil {
			s.customResourceFailed(reqID, fmt.Sprintf("could not publish the custom resource request to %s: %v", token, err))
		}
	})
}

// stringifyScalars converts scalars to strings as CloudFormation does for custom resources.
func stringifyScalars(v map[string]any) map[string]any {
	if v == nil {
		return nil
	}
	var conv func(any) any
	conv = func(x any) any {
		switch y := x.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, vv := range y {
				out[k] = conv(vv)
			}
			return out
		case []any:
			out := make([]any, len(y))
			for i, vv := range y {
				out[i] = conv(vv)
			}
			return out
		case nil:
			return nil
		default:
			return scalarString(y)
		}
	}
	return conv(v).(map[string]any)
}

func (s *Service) customResourceFailed(reqID, reason string) {
	s.mu.Lock()
	s.deliverResponse(reqID, &crResult{Status: "FAILED", Reason: reason}, s.clk.Now())
	out := s.takeOutbox()
	s.mu.Unlock()
	s.flush(out)
}

// deliverResponse records a custom resource response; called with mu held.
func (s *Service) deliverResponse(reqID string, res *crResult, now time.Time) bool {
	s.advance(now)
	for _, st := range s.st.Stacks {
		op := st.Op
		if op == nil || op.CRRequestID != reqID || !op.Started || op.CRResult != nil {
			continue
		}
		op.CRResult = res
		if op.Due.After(now) {
			op.Due = now
		}
		s.advanceStack(st, now)
		if st.Op != nil && !st.Op.Halted {
			s.poke(st.Op.Due)
		}
		return true
	}
	return false
}
