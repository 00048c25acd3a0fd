package s3local

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rclone/gofakes3"
)

// maxPresignedExpiry is the longest X-Amz-Expires S3 accepts: seven days.
const maxPresignedExpiry = 7 * 24 * time.Hour

// expired refuses a presigned request past its X-Amz-Date plus X-Amz-Expires, on the
// Service's clock, as S3 does (403 AccessDenied "Request has expired"), and one whose
// X-Amz-Expires is not a number of seconds up to seven days. It reports whether it
// answered. See https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html.
func (s *Service) expired(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	date, expires := q.Get("X-Amz-Date"), q.Get("X-Amz-Expires")
	if q.Get("X-Amz-Signature") == "" || date == "" || expires == "" {
		return false
	}
	bucket, _ := splitPath(r.URL.Path)
	secs, err := strconv.Atoi(expires)
	if err != nil || secs < 1 || time.Duration(secs)*time.Second > maxPresignedExpiry {
		writeError(w, http.StatusBadRequest, "AuthorizationQueryParametersError",
			"X-Amz-Expires must be a number of seconds from 1 to 604800 (seven days); presign the URL again with an expiry in that range", bucket)
		return true
	}
	signed, err := time.Parse("20060102T150405Z", date)
	if err != nil {
		writeError(w, http.StatusBadRequest, "AuthorizationQueryParametersError",
			"X-Amz-Date must be in the ISO 8601 basic format, yyyyMMdd'T'HHmmss'Z'", bucket)
		return true
	}
	now := s.opts.Clock.Now().UTC()
	if until := signed.Add(time.Duration(secs) * time.Second); now.After(until) {
		writeError(w, http.StatusForbidden, "AccessDenied", "Request has expired", "",
			[2]string{"X-Amz-Expires", expires}, [2]string{"Expires", until.Format(time.RFC3339)}, [2]string{"ServerTime", now.Format(time.RFC3339)})
		return true
	}
	return false
}

// recreate answers a CreateBucket of a bucket that exists as S3 does for its owner (the
// emulator's buckets all belong to the caller): 200 in us-east-1, 409
// BucketAlreadyOwnedByYou in any other region. It reports whether it answered. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_CreateBucket.html ("In the North
// Virginia Region (us-east-1), Amazon S3 returns 200 OK and resets the bucket access control
// lists").
func (s *Service) recreate(w http.ResponseWriter, r *http.Request, bucket, key string) bool {
	q := r.URL.Query()
	q.Del("x-id")
	if r.Method != http.MethodPut || bucket == "" || key != "" || len(q) > 0 {
		return false
	}
	if exists, _ := s.backend.BucketExists(r.Context(), bucket); !exists {
		return false
	}
	if region := requestRegion(r, s.opts.Region); region != "us-east-1" {
		writeError(w, http.StatusConflict, "BucketAlreadyOwnedByYou",
			"Your previous request to create the named bucket succeeded and you already own it.", bucket)
		return true
	}
	w.Header().Set("Location", "/"+bucket)
	w.WriteHeader(http.StatusOK)
	return true
}

// requestRegion is the region of a request's SigV4 credential scope, def when unsigned.
func requestRegion(r *http.Request, def string) string {
	cred := r.URL.Query().Get("X-Amz-Credential")
	if _, rest, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok {
		cred, _, _ = strings.Cut(rest, ",")
	}
	if parts := strings.Split(strings.TrimSpace(cred), "/"); len(parts) >= 5 && parts[2] != "" {
		return parts[2]
	}
	return def
}

// corsConfiguration is the body of PutBucketCors.
type corsConfiguration struct {
	Rules []struct {
		AllowedMethods []string `xml:"AllowedMethod"`
		AllowedOrigins []string `xml:"AllowedOrigin"`
	} `xml:"CORSRule"`
}

// lockConfiguration is the body of PutObjectLockConfiguration.
type lockConfiguration struct {
	ObjectLockEnabled string
	Rule              *struct {
		DefaultRetention struct {
			Mode  string
			Days  int
			Years int
		}
	}
}

// serveBucketConfig serves GetBucketCors, PutBucketCors, DeleteBucketCors,
// GetObjectLockConfiguration and PutObjectLockConfiguration, which gofakes3 lacks: the
// configurations are stored and answered, not enforced. It reports whether it answered.
func (s *Service) serveBucketConfig(w http.ResponseWriter, r *http.Request, bucket, key string) bool {
	q := r.URL.Query()
	_, cors := q["cors"]
	_, lock := q["object-lock"]
	if bucket == "" || key != "" || !cors && !lock {
		return false
	}
	if exists, _ := s.backend.BucketExists(r.Context(), bucket); !exists {
		writeError(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist", bucket)
		return true
	}
	store, missingCode, missingMessage := s.cors, "NoSuchCORSConfiguration", "The CORS configuration does not exist"
	if lock {
		store, missingCode, missingMessage = s.locks, "ObjectLockConfigurationNotFoundError", "Object Lock configuration does not exist for this bucket"
	}
	switch r.Method {
	case http.MethodGet:
		doc, ok := store[bucket]
		if !ok {
			writeError(w, http.StatusNotFound, missingCode, missingMessage, bucket)
			return true
		}
		w.Header().Set("Content-Type", "application/xml")
		w.Write(doc)
	case http.MethodPut:
		body, err := readBody(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, "IncompleteBody", "could not read the request body: "+err.Error(), bucket)
			return true
		}
		check := s.checkCORS
		if lock {
			check = s.checkLock
		}
		if status, code, message := check(r, bucket, body); code != "" {
			writeError(w, status, code, message, bucket)
			return true
		}
		store[bucket] = body
		w.WriteHeader(http.StatusOK)
	case http.MethodDelete:
		if lock {
			writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The specified method is not allowed against this resource.", bucket)
			return true
		}
		delete(store, bucket)
		w.WriteHeader(http.StatusNoContent)
	default:
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The specified method is not allowed against this resource.", bucket)
	}
	return true
}

// checkCORS validates a CORS configuration as S3 does: at least one rule, at most 100, each
// with an origin and methods among GET, PUT, POST, DELETE and HEAD.
func (s *Service) checkCORS(_ *http.Request, _ string, body []byte) (int, string, string) {
	var c corsConfiguration
	if err := xml.Unmarshal(body, &c); err != nil || len(c.Rules) == 0 || len(c.Rules) > 100 {
		return http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema"
	}
	for _, rule := range c.Rules {
		if len(rule.AllowedMethods) == 0 || len(rule.AllowedOrigins) == 0 {
			return http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema"
		}
		for _, m := range rule.AllowedMethods {
			switch m {
			case "GET", "PUT", "POST", "DELETE", "HEAD":
			default:
				return http.StatusBadRequest, "InvalidRequest", "Found unsupported HTTP method in CORS config. Unsupported method is " + m
			}
		}
	}
	return 0, "", ""
}

// checkLock validates an Object Lock configuration as S3 does: the bucket's versioning
// must be enabled, ObjectLockEnabled is Enabled, and a default retention has a mode
// (GOVERNANCE or COMPLIANCE) and either Days or Years.
func (s *Service) checkLock(_ *http.Request, bucket string, body []byte) (int, string, string) {
	if v, err := s.backend.VersioningConfiguration(bucket); err != nil || v.Status != "Enabled" {
		return http.StatusConflict, "InvalidBucketState", "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration"
	}
	var c lockConfiguration
	if err := xml.Unmarshal(body, &c); err != nil || c.ObjectLockEnabled != "Enabled" {
		return http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema"
	}
	if c.Rule != nil {
		d := c.Rule.DefaultRetention
		if d.Mode != "GOVERNANCE" && d.Mode != "COMPLIANCE" || (d.Days > 0) == (d.Years > 0) || d.Days < 0 || d.Years < 0 {
			return http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema"
		}
	}
	return 0, "", ""
}

// readBody reads r's body and puts it back for the next reader.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(r.Body)
	r.Body = readCloser(body)
	return body, err
}

func readCloser(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// createsLocked reports whether r is a CreateBucket with x-amz-bucket-object-lock-enabled: true.
func createsLocked(r *http.Request, bucket, key string) bool {
	q := r.URL.Query()
	q.Del("x-id")
	return r.Method == http.MethodPut && bucket != "" && key == "" && len(q) == 0 && strings.EqualFold(r.Header.Get("X-Amz-Bucket-Object-Lock-Enabled"), "true")
}

// lockAtCreation enables Object Lock (and versioning, which it needs) on a bucket created
// with x-amz-bucket-object-lock-enabled: true, as S3 does; called after CreateBucket.
// See https://docs.aws.amazon.com/AmazonS3/latest/API/API_CreateBucket.html.
func (s *Service) lockAtCreation(r *http.Request, bucket string) {
	if _, ok := s.locks[bucket]; ok {
		return
	}
	if exists, _ := s.backend.BucketExists(r.Context(), bucket); !exists {
		return
	}
	if err := s.backend.SetVersioningConfiguration(bucket, gofakes3.VersioningConfiguration{Status: gofakes3.VersioningEnabled}); err != nil {
		s.opts.Logger.Error("s3 emulator: versioning for Object Lock not enabled", "bucket", bucket, "err", err)
		return
	}
	s.locks[bucket] = []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<ObjectLockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>`)
}
