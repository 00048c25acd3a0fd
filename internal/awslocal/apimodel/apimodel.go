// Package apimodel is AWS's API models, as the emulator needs them: for each service it
// serves, every operation of the service's model (the service JSON the SDKs are generated
// from), the top-level members of its input with their required flag and the model's
// limits (length, range, enum, pattern), and the error codes the model declares for it.
//
// The table is generated from botocore's models, pinned and stored in
// internal/awslocal/testdata/apimodels, by `make apimodels`; TestTableCurrent checks it is
// current. Only this compact table is embedded (the models themselves are about 1 MB
// compressed, the table a small fraction of it).
package apimodel

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"io"
	"sort"
	"strings"
	"sync"
)

//go:embed operations.json.gz
var compressed []byte

// Table is every service's operations, as generated from the pinned models.
type Table struct {
	Botocore string     `json:"botocore"` // the version of botocore the models come from
	Services []*Service `json:"services"`
}

// Service is one service's model.
type Service struct {
	Signing         string       `json:"signing"`   // the SigV4 signing name (metadata.signingName, else endpointPrefix)
	ID              string       `json:"id"`        // metadata.serviceId
	Version         string       `json:"version"`   // metadata.apiVersion
	Protocols       []string     `json:"protocols"` // metadata.protocols, the preferred first
	Target          string       `json:"target,omitempty"`
	QueryCompatible bool         `json:"queryCompatible,omitempty"` // awsQueryCompatible: JSON errors carry query-era codes
	Operations      []*Operation `json:"operations"`
	byName          map[string]*Operation
}

// Operation is one operation of a service's model.
type Operation struct {
	Name   string    `json:"name"`
	Method string    `json:"method,omitempty"` // the HTTP binding, for REST protocols
	URI    string    `json:"uri,omitempty"`
	Errors []string  `json:"errors,omitempty"` // the error codes the model declares (shape names, and wire codes where they differ)
	Input  []*Member `json:"input,omitempty"`
}

// Member is a top-level member of an operation's input and the model's constraints on it.
type Member struct {
	Name     string   `json:"name"`
	Wire     string   `json:"wire,omitempty"`     // locationName, where it differs from Name
	Location string   `json:"location,omitempty"` // uri, querystring, header, headers; "" for the body
	Type     string   `json:"type"`               // string, integer, long, boolean, list, map, structure, timestamp, blob, ...
	Required bool     `json:"required,omitempty"`
	Min      *float64 `json:"min,omitempty"` // length of a string or blob, items of a list or map, value of a number
	Max      *float64 `json:"max,omitempty"`
	Enum     []string `json:"enum,omitempty"`
	Pattern  string   `json:"pattern,omitempty"` // a Java regular expression the whole value must match
	// Sensitive: the model marks the value secret (a secret string, a parameter value):
	// never repeated in an answer.
	Sensitive bool `json:"sensitive,omitempty"`
}

var (
	loadOnce sync.Once
	loaded   *Table
	loadErr  error
)

// Load returns the embedded table, decoded once.
func Load() (*Table, error) {
	loadOnce.Do(func() { loaded, loadErr = Decode(compressed) })
	return loaded, loadErr
}

// Decode reads a table as operations.json.gz stores it.
func Decode(gz []byte) (*Table, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	var t Table
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, err
	}
	for _, s := range t.Services {
		s.byName = make(map[string]*Operation, len(s.Operations))
		for _, op := range s.Operations {
			s.byName[op.Name] = op
		}
	}
	return &t, nil
}

// Service returns the model of the service signed as signing, nil when no model is stored.
func (t *Table) Service(signing string) *Service {
	for _, s := range t.Services {
		if s.Signing == signing {
			return s
		}
	}
	return nil
}

// Operation returns the named operation, nil when the model has none of that name.
func (s *Service) Operation(name string) *Operation {
	return s.byName[name]
}

// Speaks reports whether the service's model lists the protocol (json, query, rest-json,
// rest-xml, smithy-rpc-v2-cbor).
func (s *Service) Speaks(protocol string) bool {
	for _, p := range s.Protocols {
		if p == protocol {
			return true
		}
	}
	return false
}

// Names lists the service's operations in order.
func (s *Service) Names() []string {
	out := make([]string, 0, len(s.Operations))
	for _, op := range s.Operations {
		out = append(out, op.Name)
	}
	sort.Strings(out)
	return out
}

// Declares reports whether the model declares the error code for the operation.
func (op *Operation) Declares(code string) bool {
	for _, c := range op.Errors {
		if c == code {
			return true
		}
	}
	return false
}

// Match names the operation of a REST service (rest-json, rest-xml) whose HTTP binding a
// request's method and path take, nil when none does: the binding with the most literal
// path segments wins ("/2015-03-31/functions/{FunctionName}/policy" over
// "/2015-03-31/functions/{FunctionName}/{Other}"); a binding's query literals
// ("?versioning") must be in the request's query.
func (s *Service) Match(method, path string, query map[string][]string) *Operation {
	var best *Operation
	bestScore := -1
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, op := range s.Operations {
		if op.Method != method || op.URI == "" {
			continue
		}
		tmpl, q, _ := strings.Cut(op.URI, "?")
		score, ok := matchPath(strings.Split(strings.Trim(tmpl, "/"), "/"), segs)
		if !ok {
			continue
		}
		for _, part := range strings.Split(q, "&") {
			if k, _, _ := strings.Cut(part, "="); k != "" {
				if _, has := query[k]; !has {
					ok = false
				}
				score++
			}
		}
		if ok && score > bestScore {
			best, bestScore = op, score
		}
	}
	return best
}

// matchPath matches path segments against a URI template's, counting the literal ones.
func matchPath(tmpl, segs []string) (int, bool) {
	score := 0
	for i, t := range tmpl {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "+}") {
			return score, i < len(segs) // a greedy label takes the rest
		}
		if i >= len(segs) {
			return 0, t == "" && len(segs) == 1 && segs[0] == ""
		}
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			if segs[i] == "" {
				return 0, false
			}
			continue
		}
		if t != segs[i] {
			return 0, false
		}
		score++
	}
	return score, len(tmpl) == len(segs)
}
