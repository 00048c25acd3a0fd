package awsjson

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type apiErr struct{}

func (apiErr) Error() string { return "no such key" }
func (apiErr) JSONFault() (code, message string, status int) {
	return "NotFoundException", "no such key", 404
}

// TestServe: the action comes from X-Amz-Target, an empty body reaches the service as {},
// a Fault answers with its code, message and status, any other error as the protocol's
// internal error (500), with the message under the protocol's key.
func TestServe(t *testing.T) {
	tests := []struct {
		name       string
		p          Protocol
		body       string
		err        error
		wantStatus int
		wantBody   string
		wantGot    string
	}{
		{"an answer", Protocol{Internal: "X"}, `{"Name":"a"}`, nil, 200, `{"ok":true}`, `Describe {"Name":"a"}`},
		{"an empty body is {}", Protocol{Internal: "X"}, " \n", nil, 200, `{"ok":true}`, `Describe {}`},
		{"a fault", Protocol{Internal: "X"}, "{}", apiErr{}, 404, `{"__type":"NotFoundException","message":"no such key"}`, `Describe {}`},
		{"another error", Protocol{Internal: "KMSInternalException"}, "{}", errors.New("disk full"), 500, `{"__type":"KMSInternalException","message":"disk full"}`, `Describe {}`},
		{"the message key", Protocol{Internal: "X", MessageKey: "Message"}, "{}", apiErr{}, 404, `{"Message":"no such key","__type":"NotFoundException"}`, `Describe {}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tt.body))
			r.Header.Set("X-Amz-Target", "TrentService.Describe")
			w := httptest.NewRecorder()
			tt.p.Serve(w, r, func(action string, body []byte) (any, error) {
				got = action + " " + string(body)
				if tt.err != nil {
					return nil, tt.err
				}
				return map[string]bool{"ok": true}, nil
			})
			if got != tt.wantGot {
				t.Errorf("call got %q, want %q", got, tt.wantGot)
			}
			if w.Code != tt.wantStatus || strings.TrimSpace(w.Body.String()) != tt.wantBody || w.Header().Get("Content-Type") != "application/x-amz-json-1.1" {
				t.Errorf("answer %d %s (%s), want %d %s", w.Code, w.Body.String(), w.Header().Get("Content-Type"), tt.wantStatus, tt.wantBody)
			}
		})
	}
}
