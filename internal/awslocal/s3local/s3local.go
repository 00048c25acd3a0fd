// Package s3local is the emulator's S3: path-style buckets on github.com/rclone/gofakes3
// (versioning, tagging, conditional writes and deletes) plus what gofakes3 lacks and cairn
// relies on: bucket notifications delivering AWS's exact S3 event JSON, and persistence.
//
// Persistence is a journal of every successful mutating request, replayed through the same
// handler at start with the original clock readings and version-id seed, so version ids,
// ETags and modification times survive a restart exactly as a client saw them.
package s3local

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rclone/gofakes3"
	"github.com/rclone/gofakes3/s3mem"

	"github.com/cairn-dev/cairn/internal/clock"
)

// Options configures a Service.
type Options struct {
	// Region is reported in event records (default us-east-1).
	Region string
	// Dir keeps the journal that makes state persistent; "" keeps everything in memory.
	Dir string
	// Clock stamps objects and events (default clock.Real).
	Clock clock.Clock
	// Notify delivers a bucket notification body to an SQS queue ARN. Nil drops queue
	// notifications (they are still accepted and returned by GetBucketNotificationConfiguration).
	Notify func(ctx context.Context, queueARN, body string) error
	// Publish delivers a bucket notification to an SNS topic ARN; nil drops them.
	Publish func(ctx context.Context, topicARN, subject, message string) error
	// Invoke invokes a Lambda function asynchronously with a bucket notification (an
	// events.S3Event); nil drops them.
	Invoke func(ctx context.Context, functionARN string, event []byte) error
	// QueueExists, TopicExists and FunctionExists tell whether a notification destination
	// exists; PutBucketNotificationConfiguration refuses a configuration naming one that
	// does not, as S3 does. Nil accepts any.
	QueueExists, TopicExists, FunctionExists func(arn string) bool
	// Logger receives delivery failures (default slog.Default()).
	Logger *slog.Logger
}

// Service is an http.Handler serving path-style S3.
type Service struct {
	opts    Options
	backend *s3mem.Backend
	handler http.Handler

	// mu serialises mutating requests (so the journal's order is the order they took
	// effect) against reads.
	mu        sync.RWMutex
	now       time.Time // the time of the mutating request in progress, zero otherwise
	replaying bool
	notif     map[string]*notificationConfiguration
	policies  map[string]string // bucket policies, by bucket
	cors      map[string][]byte // CORS configurations, by bucket
	locks     map[string][]byte // Object Lock configurations, by bucket
	// multipartETags maps bucket/key to the MD5 ETags of content made by a multipart
	// upload and the ETag S3 gives it instead (see complete).
	multipartETags map[string]map[string]string
	sequencer      uint64
	journal        *os.File
}

// New returns a Service, replaying the journal under opts.Dir if there is one.
func New(opts Options) (*Service, error) {
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := checkLayout(); err != nil {
		return nil, err
	}
	s := &Service{opts: opts, notif: map[string]*notificationConfiguration{}, policies: map[string]string{},
		cors: map[string][]byte{}, locks: map[string][]byte{}, multipartETags: map[string]map[string]string{}}
	seed := opts.Clock.Now().UnixNano()
	var records []record
	if opts.Dir != "" {
		if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("s3 emulator: create state folder: %w", err)
		}
		var err error
		seed, records, err = readJournal(filepath.Join(opts.Dir, "journal.jsonl"), seed)
		if err != nil {
			return nil, err
		}
	}
	ts := timeSource{s}
	s.backend = s3mem.New(s3mem.WithTimeSource(ts), s3mem.WithVersionSeed(seed))
	fake := gofakes3.New(listedBackend{Backend: s.backend, now: ts.Now, etag: s.multipartETag},
		gofakes3.WithTimeSource(ts),
		gofakes3.WithTimeSkewLimit(0), // a fake clock may be far from the signer's
		gofakes3.WithIntegrityCheck(true),
	)
	s.handler = fake.Server()

	if opts.Dir != "" {
		if err := s.replay(records); err != nil {
			return nil, err
		}
		path := filepath.Join(opts.Dir, "journal.jsonl")
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, fmt.Errorf("s3 emulator: open journal: %w", err)
		}
		if len(records) == 0 {
			if err := json.NewEncoder(f).Encode(record{Seed: seed}); err != nil {
				f.Close()
				return nil, fmt.Errorf("s3 emulator: write journal %s: %w", path, err)
			}
		}
		s.journal = f
	}
	return s, nil
}

// Close flushes and closes the journal. The Service must not be used afterwards.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal == nil {
		return nil
	}
	err := s.journal.Close()
	s.journal = nil
	return err
}

// GetObject returns the current content of bucket/key, for in-process callers such as the
// CloudFormation emulator resolving a TemplateURL.
func (s *Service) GetObject(ctx context.Context, bucket, key string) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	obj, err := s.backend.GetObject(ctx, bucket, key, nil)
	if err != nil {
		return nil, fmt.Errorf("s3 emulator: get s3://%s/%s: %w", bucket, key, err)
	}
	defer obj.Contents.Close()
	return io.ReadAll(obj.Contents)
}

// ServeHTTP serves one S3 request.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.expired(w, r) {
		return
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
		s.mu.RLock()
		defer s.mu.RUnlock()
		if s.refused(w, r) {
			return
		}
		s.route(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "IncompleteBody", "could not read the request body: "+err.Error(), "")
		return
	}
	var pending []delivery
	func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.now = s.opts.Clock.Now()
		defer func() { s.now = time.Time{} }()
		if s.refused(w, r) {
			return
		}
		var errs []byte
		if body, errs = s.deletesAllowed(w, r, body); body == nil {
			return
		}
		rec := &capture{ResponseWriter: w, status: http.StatusOK}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if errs != nil {
			rec.ResponseWriter = httptest.NewRecorder()
		}
		s.route(rec, r)
		if errs != nil {
			inner := rec.ResponseWriter.(*httptest.ResponseRecorder)
			for k, v := range inner.Header() {
				w.Header()[k] = v
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(inner.Code)
			out := inner.Body.Bytes()
			if inner.Code == http.StatusOK {
				out = withErrors(out, errs)
			}
			w.Write(out)
		}
		if rec.status/100 != 2 {
			return
		}
		if err := s.append(r, body); err != nil {
			s.opts.Logger.Error("s3 emulator: state will not survive a restart", "err", err)
		}
		pending = s.events(r, rec)
	}()
	for _, d := range pending {
		s.deliver(r.Context(), d)
	}
}

// refused answers, and reports, a request the bucket's policy explicitly denies (see
// access.go). Replayed requests were allowed when they were made.
func (s *Service) refused(w http.ResponseWriter, r *http.Request) bool {
	if s.replaying {
		return false
	}
	bucket, key := splitPath(r.URL.Path)
	q, ok := requestOf(r, bucket, key)
	if !ok || !deniedBy(s.policies[bucket], q) {
		return false
	}
	s.opts.Logger.Info("s3 emulator: refused by the bucket policy", "caller", q.callerARN, "action", q.action, "resource", q.resource)
	denial(w, q)
	return true
}

// deletesAllowed takes out of a DeleteObjects request the keys the bucket's policy denies:
// it returns the body to serve and the <Error> elements of the denied keys (nil when it
// denies none). When it denies every key it answers the request itself and returns a nil
// body.
func (s *Service) deletesAllowed(w http.ResponseWriter, r *http.Request, body []byte) ([]byte, []byte) {
	bucket, key := splitPath(r.URL.Path)
	if s.replaying || key != "" || r.Method != http.MethodPost || !r.URL.Query().Has("delete") || s.policies[bucket] == "" {
		return body, nil
	}
	q, ok := callerOf(r, bucket)
	if !ok {
		return body, nil
	}
	kept, left, errs, ok := deleteObjects(s.policies[bucket], q, bucket, body)
	if !ok || errs == nil {
		return body, nil
	}
	s.opts.Logger.Info("s3 emulator: keys of a DeleteObjects refused by the bucket policy", "caller", q.callerARN, "bucket", bucket)
	if left == 0 {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusOK)
		w.Write(withErrors([]byte(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></DeleteResult>`), errs))
		return nil, nil
	}
	resetDigests(r, kept)
	return kept, errs
}

// route handles the sub-resources gofakes3 lacks and passes the rest to it.
func (s *Service) route(w http.ResponseWriter, r *http.Request) {
	bucket, key := splitPath(r.URL.Path)
	if v, ok := r.Header["If-None-Match"]; ok && key != "" && writes(r) && (len(v) != 1 || v[0] != "*" || r.Header.Get("If-Match") != "") {
		// S3 implements only If-None-Match: * (create if absent) on writes, and not with If-Match.
		writeError(w, http.StatusNotImplemented, "NotImplemented", "A header you provided implies functionality that is not implemented", "", [2]string{"Header", "If-None-Match"})
		return
	}
	if _, ok := r.URL.Query()["notification"]; ok && bucket != "" && key == "" {
		s.serveNotification(w, r, bucket)
		return
	}
	if _, ok := r.URL.Query()["policy"]; ok && bucket != "" && key == "" {
		s.servePolicy(w, r, bucket)
		return
	}
	if s.serveBucketConfig(w, r, bucket, key) || s.recreate(w, r, bucket, key) {
		return
	}
	if s.markerVersion(w, r, bucket, key) || s.behindMarker(w, r, bucket, key) || s.complete(w, r, bucket, key) {
		return
	}
	if key != "" {
		s.translateConditions(r, bucket, key)
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			w = etagWriter{ResponseWriter: w, s: s, bucket: bucket, key: key}
		}
	}
	if q := r.URL.Query(); r.Method == http.MethodGet && key == "" && bucket != "" && q.Get("list-type") == "2" {
		s.listV2(w, r)
		return
	}
	if locked := createsLocked(r, bucket, key); locked {
		// gofakes3 refuses Object Lock; the bucket is made without it, then locked
		inner := r.Clone(r.Context())
		inner.Header.Del("X-Amz-Bucket-Object-Lock-Enabled")
		s.handler.ServeHTTP(w, inner)
		s.lockAtCreation(r, bucket)
	} else {
		s.handler.ServeHTTP(w, r)
	}
	if ew, ok := w.(etagWriter); ok {
		ew.fix()
	}
	if key != "" && writes(r) && r.Method == http.MethodPut {
		s.forgetSinglePut(w.Header(), bucket, key)
	}
	if q := r.URL.Query(); r.Method == http.MethodDelete && key == "" && bucket != "" && (len(q) == 0 || len(q) == 1 && q.Has("x-id")) {
		if exists, _ := s.backend.BucketExists(r.Context(), bucket); !exists {
			delete(s.notif, bucket)
			delete(s.policies, bucket)
			delete(s.cors, bucket)
			delete(s.locks, bucket)
			for k := range s.multipartETags {
				if strings.HasPrefix(k, bucket+"/") {
					delete(s.multipartETags, k)
				}
			}
		}
	}
}

// markerVersion answers a GET or HEAD of a delete marker's own version as S3 does, with
// 405 Method Not Allowed and x-amz-delete-marker: true (gofakes3 answers 404); it
// reports whether r was such a request.
// See https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html ("If the
// specified version is a delete marker, the response returns a 405 Method Not Allowed
// error and the Last-Modified: timestamp response header").
func (s *Service) markerVersion(w http.ResponseWriter, r *http.Request, bucket, key string) bool {
	q := r.URL.Query()
	id := q.Get("versionId")
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || key == "" || id == "" || q.Has("tagging") || q.Has("acl") {
		return false
	}
	obj, err := s.backend.HeadObjectVersion(bucket, key, gofakes3.VersionID(id))
	if err != nil || !obj.IsDeleteMarker {
		return false
	}
	w.Header().Set("x-amz-delete-marker", "true")
	w.Header().Set("x-amz-version-id", id)
	w.Header().Set("Allow", "DELETE")
	if at, ok := s.versionTime(bucket, key, id); ok {
		w.Header().Set("Last-Modified", at.UTC().Format(http.TimeFormat))
	}
	writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The specified method is not allowed against this resource.", "",
		[2]string{"Method", r.Method}, [2]string{"ResourceType", "DeleteMarker"})
	return true
}

// behindMarker answers a GET or HEAD of a key whose current version is a delete marker as
// S3 does: 404 NoSuchKey with x-amz-delete-marker: true and the marker's version id
// (gofakes3's s3mem answers a plain 404). It reports whether r was such a request.
// See https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html ("If the current
// version of the object is a delete marker, Amazon S3 behaves as if the object was deleted
// and includes x-amz-delete-marker: true in the response").
func (s *Service) behindMarker(w http.ResponseWriter, r *http.Request, bucket, key string) bool {
	q := r.URL.Query()
	q.Del("x-id")
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || key == "" || len(q) > 0 {
		return false
	}
	id, ok := currentMarker(s.backend, bucket, key)
	if !ok {
		return false
	}
	w.Header().Set("x-amz-delete-marker", "true")
	w.Header().Set("x-amz-version-id", id)
	writeError(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.", "", [2]string{"Key", key})
	return true
}

// versionTime returns when the version id of bucket/key was made.
func (s *Service) versionTime(bucket, key, id string) (time.Time, bool) {
	list, err := s.backend.ListBucketVersions(bucket, &gofakes3.Prefix{Prefix: key, HasPrefix: true}, nil)
	if err != nil {
		return time.Time{}, false
	}
	for _, v := range list.Versions {
		if m, ok := v.(*gofakes3.DeleteMarker); ok && m.Key == key && string(m.VersionID) == id {
			return m.LastModified.Time, true
		}
	}
	return time.Time{}, false
}

// listV2 serves ListObjectsV2 through gofakes3, adding the KeyCount it leaves out when it
// is 0 (S3 always sends it: "KeyCount is the number of keys returned with this request",
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html).
func (s *Service) listV2(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	if rec.Code == http.StatusOK && !bytes.Contains(body, []byte("<KeyCount>")) {
		if i := bytes.LastIndex(body, []byte("</ListBucketResult>")); i >= 0 {
			body = append(body[:i:i], append([]byte("<KeyCount>0</KeyCount>"), body[i:]...)...)
		}
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	w.Write(body)
}

// writes reports whether r writes an object: PutObject or CompleteMultipartUpload.
func writes(r *http.Request) bool {
	q := r.URL.Query()
	q.Del("x-id")
	switch r.Method {
	case http.MethodPut:
		return len(q) == 0 && r.Header.Get("X-Amz-Copy-Source") == ""
	case http.MethodPost:
		return q.Get("uploadId") != "" && len(q) == 1
	}
	return false
}

// capture records the status of a response while passing it through.
type capture struct {
	http.ResponseWriter
	status int
}

func (c *capture) WriteHeader(code int) {
	c.status = code
	c.ResponseWriter.WriteHeader(code)
}

// timeSource gives gofakes3 the time of the mutating request in progress (the recorded one
// during replay), and the Service's clock otherwise.
type timeSource struct{ s *Service }

func (t timeSource) Now() time.Time {
	if !t.s.now.IsZero() {
		return t.s.now
	}
	return t.s.opts.Clock.Now()
}

func (t timeSource) Since(at time.Time) time.Duration { return t.Now().Sub(at) }

func splitPath(p string) (bucket, key string) {
	for len(p) > 0 && p[0] == '/' {
		p = p[1:]
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			return p[:i], p[i+1:]
		}
	}
	return p, ""
}

// writeError answers with S3's XML error document; elems are further elements (name,
// text) some errors carry, such as Header or ArgumentName1 and ArgumentValue1.
func writeError(w http.ResponseWriter, status int, code, message, bucket string, elems ...[2]string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<Error><Code>")
	xmlEscape(&b, code)
	b.WriteString("</Code><Message>")
	xmlEscape(&b, message)
	b.WriteString("</Message>")
	for _, e := range elems {
		b.WriteString("<" + e[0] + ">")
		xmlEscape(&b, e[1])
		b.WriteString("</" + e[0] + ">")
	}
	if bucket != "" {
		b.WriteString("<BucketName>")
		xmlEscape(&b, bucket)
		b.WriteString("</BucketName>")
	}
	b.WriteString("<RequestId>" + strconv.FormatInt(time.Now().UnixNano(), 16) + "</RequestId></Error>")
	w.Write(b.Bytes())
}

func xmlEscape(b *bytes.Buffer, s string) { xml.EscapeText(b, []byte(s)) }

// servePolicy serves GetBucketPolicy, PutBucketPolicy and DeleteBucketPolicy, which
// gofakes3 lacks. The emulator evaluates their explicit Deny statements (access.go).
func (s *Service) servePolicy(w http.ResponseWriter, r *http.Request, bucket string) {
	if exists, _ := s.backend.BucketExists(r.Context(), bucket); !exists {
		writeError(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist", bucket)
		return
	}
	switch r.Method {
	case http.MethodGet:
		p, ok := s.policies[bucket]
		if !ok {
			writeError(w, http.StatusNotFound, "NoSuchBucketPolicy", "The bucket policy does not exist", bucket)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(p))
	case http.MethodPut:
		body, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "IncompleteBody", err.Error(), bucket)
			return
		}
		var doc map[string]any
		if trimmed := strings.TrimSpace(string(body)); !strings.HasPrefix(trimmed, "{") || json.Unmarshal(body, &doc) != nil {
			writeError(w, http.StatusBadRequest, "MalformedPolicy", "Policies must be valid JSON and the first byte must be '{'", bucket)
			return
		}
		if _, ok := doc["Statement"]; !ok {
			writeError(w, http.StatusBadRequest, "MalformedPolicy", "Missing required field Statement", bucket)
			return
		}
		s.policies[bucket] = string(body)
		w.WriteHeader(http.StatusNoContent)
	case http.MethodDelete:
		delete(s.policies, bucket)
		w.WriteHeader(http.StatusNoContent)
	default:
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The specified method is not allowed against this resource.", bucket)
	}
}
