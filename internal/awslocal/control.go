package awslocal

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"
	"time"

	"math/rand/v2"

	"github.com/cairn-dev/cairn/internal/awslocal/cloudwatchlocal"
)

const controlPrefix = "/_local/"

// Fault injects throttling and latency into calls of one action or one service.
//
// POST /_local/faults takes a JSON document
//
//	{"seed": 7, "faults": [
//	  {"target": "s3.PutObject", "throttleRate": 0.5},
//	  {"target": "cloudformation.*", "latencyMs": 250},
//	  {"target": "sqs.SendMessage", "throttleRate": 1, "times": 2}
//	]}
//
// whose faults replace any with the same target, account and region; seed, when given,
// reseeds the random draws. A fault with "region" (and/or "account") applies to calls made
// in that region (by that account) only, e.g. {"target": "cloudformation.*", "region":
// "eu-west-1", "throttleRate": 1} throttles CloudFormation there and nowhere else; one
// without applies everywhere. Each call of a matching action is delayed by latencyMs (on the emulator's clock)
// and then, with probability throttleRate, answered with the service's real throttling
// error (S3 503 SlowDown, SQS RequestThrottled, query services Throttling, JSON services
// ThrottlingException, all "Rate exceeded"), at most times times when times > 0.
// GET /_local/faults returns the faults in force; DELETE /_local/faults removes them all.
type Fault struct {
	Target       string  `json:"target"`
	Account      string  `json:"account,omitempty"`
	Region       string  `json:"region,omitempty"`
	ThrottleRate float64 `json:"throttleRate,omitempty"`
	LatencyMs    int     `json:"latencyMs,omitempty"`
	Times        int     `json:"times,omitempty"`
}

type faultRequest struct {
	Seed   *uint64 `json:"seed,omitempty"`
	Faults []Fault `json:"faults"`
}

// SetFaults adds or replaces faults, as POST /_local/faults does.
func (e *Emulator) SetFaults(faults ...Fault) error {
	for _, f := range faults {
		service, action, ok := strings.Cut(f.Target, ".")
		if !ok || service == "" || action == "" {
			return fmt.Errorf("fault target %q: want service.Action or service.* (e.g. s3.PutObject, sqs.*)", f.Target)
		}
		if f.ThrottleRate < 0 || f.ThrottleRate > 1 {
			return fmt.Errorf("fault %s: throttleRate %v is outside 0..1", f.Target, f.ThrottleRate)
		}
		if f.LatencyMs < 0 || f.Times < 0 {
			return fmt.Errorf("fault %s: latencyMs and times must not be negative", f.Target)
		}
		if f.Account != "" && !accountRE.MatchString(f.Account) {
			return fmt.Errorf("fault %s: account %q is not 12 digits", f.Target, f.Account)
		}
		if f.Region != "" && !regionRE.MatchString(f.Region) {
			return fmt.Errorf("fault %s: %q is not an AWS region name", f.Target, f.Region)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, f := range faults {
		replaced := false
		for i := range e.faults {
			if faultKey(e.faults[i]) == faultKey(f) {
				e.faults[i], replaced = f, true
			}
		}
		if !replaced {
			e.faults = append(e.faults, f)
		}
		delete(e.injected, faultKey(f))
	}
	return nil
}

// ClearFaults removes every fault.
func (e *Emulator) ClearFaults() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults = nil
	e.injected = map[string]int{}
}

func faultKey(f Fault) string { return f.Target + "@" + f.Account + "/" + f.Region }

// Calls returns the call counts keyed service.Action.
func (e *Emulator) Calls() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int, len(e.calls))
	for k, v := range e.calls {
		out[k] = v
	}
	return out
}

// CallsAt returns the call counts keyed service.Action of the calls made by account
// ("" any) in region ("" any).
func (e *Emulator) CallsAt(account, region string) map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for at, calls := range e.callsAt {
		a, r, _ := strings.Cut(at, "/")
		if (account != "" && a != account) || (region != "" && r != region) {
			continue
		}
		for k, v := range calls {
			out[k] += v
		}
	}
	return out
}

// fault applies the faults matching service.action in account and region; it reports
// whether it answered the request (with a throttling error). An exact action beats
// service.*, and a fault naming the place beats one that does not.
func (e *Emulator) fault(w http.ResponseWriter, r *http.Request, service, action, account, region string) bool {
	e.mu.Lock()
	var f *Fault
	best := -1
	for i := range e.faults {
		c := &e.faults[i]
		if (c.Account != "" && c.Account != account) || (c.Region != "" && c.Region != region) {
			continue
		}
		score := 0
		switch c.Target {
		case service + "." + action:
			score = 4
		case service + ".*":
		default:
			continue
		}
		if c.Account != "" {
			score++
		}
		if c.Region != "" {
			score++
		}
		if score > best {
			f, best = c, score
		}
	}
	if f == nil {
		e.mu.Unlock()
		return false
	}
	latency := time.Duration(f.LatencyMs) * time.Millisecond
	throttle := f.ThrottleRate > 0 && (f.Times == 0 || e.injected[faultKey(*f)] < f.Times) && e.rng.Float64() < f.ThrottleRate
	if throttle {
		e.injected[faultKey(*f)]++
	}
	e.mu.Unlock()
	if latency > 0 {
		select {
		case <-e.opts.Clock.After(latency):
		case <-r.Context().Done():
			return true
		}
	}
	if !throttle {
		return false
	}
	e.log.Debug("emulator: injected throttling", "service", service, "action", action, "account", account, "region", region)
	jsonProtocol := r.Header.Get("X-Amz-Target") != ""
	switch {
	case service == "s3":
		writeServiceError(w, "s3", http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
	case service == "sqs" && jsonProtocol:
		writeServiceError(w, "sqs-json", http.StatusBadRequest, "RequestThrottled", "Rate exceeded")
	case service == "sqs":
		writeServiceError(w, "query", http.StatusBadRequest, "RequestThrottled", "Rate exceeded")
	case protocolOf(r, service) == "cbor":
		writeServiceError(w, "cbor", http.StatusBadRequest, "Throttling", "Rate exceeded")
	case jsonProtocol:
		writeServiceError(w, "json", http.StatusBadRequest, "ThrottlingException", "Rate exceeded")
	default:
		writeServiceError(w, "query", http.StatusBadRequest, "Throttling", "Rate exceeded")
	}
	return true
}

// writeServiceError answers in the error format of a protocol: "s3" (REST-XML), "json"
// (AWS JSON), "sqs-json" (JSON 1.0 with the legacy query code in x-amzn-query-error, as SQS
// answers current SDKs), "cbor" (Smithy RPC v2 CBOR) or "query" (XML ErrorResponse).
func writeServiceError(w http.ResponseWriter, protocol string, status int, code, message string) {
	var msg strings.Builder
	xml.EscapeText(&msg, []byte(message))
	id := fmt.Sprintf("%016x", rand.Uint64())
	w.Header().Set("x-amzn-RequestId", id)
	switch protocol {
	case "cbor":
		cloudwatchlocal.WriteCBORError(w, status, code, message)
	case "s3":
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<Error><Code>%s</Code><Message>%s</Message><RequestId>%s</RequestId></Error>`, code, msg.String(), id)
	case "json", "sqs-json":
		typ := code
		if protocol == "sqs-json" {
			typ = "com.amazonaws.sqs#" + code
			if code == "RequestThrottled" {
				typ = "com.amazonaws.sqs#ThrottlingException"
			}
			w.Header().Set("x-amzn-query-error", code+";Sender")
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(status)
		b, _ := json.Marshal(map[string]string{"__type": typ, "message": message})
		w.Write(b)
	default:
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<ErrorResponse><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>`, code, msg.String(), id)
	}
}

func (e *Emulator) serveControl(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, controlPrefix), "/")
	writeJSON := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(v)
	}
	switch {
	case path == "health" && r.Method == http.MethodGet:
		writeJSON(e.Health())
	case path == "calls" && r.Method == http.MethodGet:
		if q := r.URL.Query(); q.Get("account") != "" || q.Get("region") != "" {
			writeJSON(e.CallsAt(q.Get("account"), q.Get("region")))
			return
		}
		writeJSON(e.Calls())
	case path == "calls/reset" && r.Method == http.MethodPost:
		e.mu.Lock()
		e.calls = map[string]int{}
		e.callsAt = map[string]map[string]int{}
		e.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case path == "faults" && r.Method == http.MethodGet:
		e.mu.Lock()
		faults := append([]Fault{}, e.faults...)
		e.mu.Unlock()
		writeJSON(faultRequest{Faults: faults})
	case path == "faults" && r.Method == http.MethodPost:
		var req faultRequest
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			http.Error(w, "faults: "+err.Error()+` (want {"seed": N, "faults": [{"target": "s3.PutObject", "throttleRate": 0.5, "latencyMs": 100, "times": 0}]})`, http.StatusBadRequest)
			return
		}
		if err := e.SetFaults(req.Faults...); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if req.Seed != nil {
			e.mu.Lock()
			e.rng = rand.New(rand.NewPCG(*req.Seed, *req.Seed))
			e.mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	case path == "faults" && r.Method == http.MethodDelete:
		e.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	case path == "lambda/functions" && r.Method == http.MethodGet:
		writeJSON(e.Functions())
	default:
		http.Error(w, "unknown control endpoint "+r.Method+" "+r.URL.Path+": use GET /_local/health, GET /_local/calls, POST /_local/calls/reset, GET|POST|DELETE /_local/faults, GET /_local/lambda/functions", http.StatusNotFound)
	}
}

// Health is the answer of GET /_local/health, shaped like LocalStack's
// /_localstack/health: every service served, and whether the emulator is ready (see
// Options.HoldUntilReady).
type Health struct {
	Services map[string]string `json:"services"`
	Ready    bool              `json:"ready"`
	// Waiting counts the requests held until the emulator is ready.
	Waiting int    `json:"waiting"`
	Version string `json:"version"`
	// Places are the accounts and regions served so far, ACCOUNT/REGION.
	Places []string `json:"places"`
}

// Health reports the services and readiness.
func (e *Emulator) Health() Health {
	h := Health{Services: map[string]string{}, Ready: e.Ready(), Waiting: int(e.waiting.Load()), Version: "cairn-local", Places: e.Places()}
	for _, name := range e.serviceNames() {
		h.Services[name] = "running"
	}
	return h
}
