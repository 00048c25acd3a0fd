package cfnlocal

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
)

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
//	POST custom-resources  body: StandIn JSON       answer Lambda-backed custom resources
//	DELETE custom-resources, GET custom-resources
//	POST signals           body: SignalStandIn JSON what the stand-in signals (SUCCESS, FAILURE, NONE)
//	DELETE signals, GET signals
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
		case what == "custom-resources" && r.Method == http.MethodPost:
			var a StandIn
			if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
				reply(nil, fmt.Errorf("custom-resources body must be {\"stack\", \"logicalId\", \"data\" or \"reason\", \"requestTypes\"}: %w", err))
				return
			}
			reply(map[string]bool{"ok": true}, s.SetStandIn(a))
		case what == "custom-resources" && r.Method == http.MethodDelete:
			s.ClearStandIns()
			reply(map[string]bool{"ok": true}, nil)
		case what == "custom-resources":
			reply(s.StandIns(), nil)
		case what == "signals" && r.Method == http.MethodPost:
			var a SignalStandIn
			if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
				reply(nil, fmt.Errorf(`signals body must be {"stack", "logicalId", "signal": SUCCESS, FAILURE or NONE}: %w`, err))
				return
			}
			reply(map[string]bool{"ok": true}, s.SetSignalStandIn(a))
		case what == "signals" && r.Method == http.MethodDelete:
			s.ClearSignalStandIns()
			reply(map[string]bool{"ok": true}, nil)
		case what == "signals":
			reply(s.SignalStandIns(), nil)
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
			reply(nil, fmt.Errorf("unknown control %s %s: use faults, tamper, custom-resources, executed-change-sets or calls", r.Method, r.URL.Path))
		}
	})
}
