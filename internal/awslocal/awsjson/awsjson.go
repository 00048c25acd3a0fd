// Package awsjson serves the AWS JSON 1.1 protocol the emulator's KMS, SSM, Secrets Manager
// and ECR speak: a POST whose X-Amz-Target header names SERVICE.ACTION, a JSON body, and a
// JSON answer, or an error as {"__type": CODE, "message": MESSAGE}. Each service decides
// its actions; this package owns the envelope, so they answer alike.
package awsjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// Fault is an error a service answers with: its error code, message and HTTP status.
type Fault interface {
	error
	JSONFault() (code, message string, status int)
}

// Protocol is how one service speaks the protocol.
type Protocol struct {
	// MaxBody is the largest request body read (bytes); 1 MiB when zero.
	MaxBody int64
	// Internal is the code of an error that is not a Fault (answered with status 500).
	Internal string
	// MessageKey is the key of an error's message: "message" when empty (Secrets Manager
	// answers "Message").
	MessageKey string
}

// Action is the ACTION of r's X-Amz-Target header (SERVICE.ACTION).
func Action(r *http.Request) string {
	_, action, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	return action
}

// Serve answers r: its action and body ({} when empty) go to call, whose result is encoded
// as the answer, or its error written as WriteError writes it.
func (p Protocol) Serve(w http.ResponseWriter, r *http.Request, call func(action string, body []byte) (any, error)) {
	limit := p.MaxBody
	if limit == 0 {
		limit = 1 << 20
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit))
	if err != nil {
		p.WriteError(w, fault{"SerializationException", err.Error(), http.StatusBadRequest})
		return
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	res, err := call(Action(r), body)
	if err != nil {
		p.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(res)
}

// WriteError answers err: a Fault with its code, message and status, any other error as
// the protocol's internal error with status 500.
func (p Protocol) WriteError(w http.ResponseWriter, err error) {
	code, msg, status := p.Internal, err.Error(), http.StatusInternalServerError
	var f Fault
	if errors.As(err, &f) {
		code, msg, status = f.JSONFault()
	}
	key := p.MessageKey
	if key == "" {
		key = "message"
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, key: msg})
}

// fault is the protocol's own error: a body that cannot be read.
type fault struct {
	code, message string
	status        int
}

func (f fault) Error() string                                 { return f.code + ": " + f.message }
func (f fault) JSONFault() (code, message string, status int) { return f.code, f.message, f.status }
