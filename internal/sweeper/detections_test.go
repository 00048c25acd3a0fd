package sweeper_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
)

// detections counts the drift detections in flight at the emulator: started by a
// successful DetectStackDrift and not yet reported finished to the caller.
type detections struct {
	mu       sync.Mutex
	inflight map[string]bool
	max      int
	started  int
}

func (c *detections) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, vals := range rec.Header() {
			w.Header()[k] = vals
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		if rec.Code != http.StatusOK {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		switch form.Get("Action") {
		case "DetectStackDrift":
			var out struct {
				ID string `xml:"DetectStackDriftResult>StackDriftDetectionId"`
			}
			if err := xml.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.ID == "" {
				panic(fmt.Sprintf("DetectStackDrift answer without an id: %v: %s", err, rec.Body.String()))
			}
			c.inflight[out.ID] = true
			c.started++
			c.max = max(c.max, len(c.inflight))
		case "DescribeStackDriftDetectionStatus":
			s := rec.Body.String()
			if strings.Contains(s, "DETECTION_COMPLETE") || strings.Contains(s, "DETECTION_FAILED") {
				delete(c.inflight, form.Get("StackDriftDetectionId"))
			}
		}
	})
}

func (c *detections) stats() (maxInFlight, started int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max, c.started
}
