package s3local

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"time"
)

// record is one journal line: the first holds only the version-id seed.
type record struct {
	Seed   int64       `json:"seed,omitempty"`
	Time   time.Time   `json:"time,omitzero"`
	Method string      `json:"method,omitempty"`
	URI    string      `json:"uri,omitempty"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

func readJournal(path string, seed int64) (int64, []record, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return seed, nil, nil
	} else if err != nil {
		return 0, nil, fmt.Errorf("s3 emulator: open journal: %w", err)
	}
	defer f.Close()
	var records []record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for line := 1; sc.Scan(); line++ {
		var rec record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			// A torn last line (the process died mid-write) loses only that request.
			break
		}
		if line == 1 {
			if rec.Seed == 0 {
				return 0, nil, fmt.Errorf("s3 emulator: journal %s does not start with a seed: delete the folder to start afresh", path)
			}
			seed = rec.Seed
		}
		records = append(records, rec)
	}
	if err := sc.Err(); err != nil {
		return 0, nil, fmt.Errorf("s3 emulator: read journal %s: %w", path, err)
	}
	return seed, records, nil
}

func (s *Service) replay(records []record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replaying = true
	defer func() { s.replaying, s.now = false, time.Time{} }()
	for i, rec := range records {
		if rec.Method == "" {
			continue
		}
		req := httptest.NewRequest(rec.Method, rec.URI, bytes.NewReader(rec.Body))
		req.Header = rec.Header
		s.now = rec.Time
		w := httptest.NewRecorder()
		s.route(w, req)
		if w.Code/100 != 2 {
			s.opts.Logger.Warn("s3 emulator: journal entry no longer applies", "entry", i, "method", rec.Method, "uri", rec.URI, "status", w.Code)
		}
	}
	return nil
}

func (s *Service) append(r *http.Request, body []byte) error {
	if s.journal == nil || s.replaying {
		return nil
	}
	line, err := json.Marshal(record{Time: s.now, Method: r.Method, URI: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
	if err != nil {
		return err
	}
	_, err = s.journal.Write(append(line, '\n'))
	return err
}
