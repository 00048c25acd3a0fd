package awslocal

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/cloudwatchlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/s3local"
)

// targetServices maps X-Amz-Target prefixes to signing names, for JSON protocols whose
// requests may arrive unsigned.
var targetServices = map[string]string{
	"AmazonSQS": "sqs",
	"AmazonSSM": "ssm",
	"AWSEvents": "events",
	// CloudWatch's AWS JSON 1.0 (the AWS CLI); its RPC v2 CBOR requests are signed.
	"GraniteServiceVersion20100801": "monitoring",
}

// Handler returns the emulator's root handler: mounts first, then service routing with call
// counting and fault injection.
func (e *Emulator) Handler() http.Handler {
	return http.HandlerFunc(e.serveHTTP)
}

func (e *Emulator) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if h := e.mount(r.URL.Path); h != nil {
		h.ServeHTTP(w, r)
		return
	}
	service := serviceOf(r)
	if !e.awaitReady(w, r, service) {
		return
	}
	e.mu.Lock()
	h := e.services[service]
	e.mu.Unlock()
	if h == nil {
		writeServiceError(w, protocolOf(r, service), http.StatusNotImplemented, "NotImplemented",
			"the local emulator does not serve "+service+" (served: "+strings.Join(e.serviceNames(), ", ")+")")
		return
	}
	action := actionOf(r, service)
	key := service + "." + action
	e.mu.Lock()
	e.calls[key]++
	e.mu.Unlock()
	if e.fault(w, r, service, action) {
		return
	}
	h.ServeHTTP(w, r)
}

// awaitReady holds a service request until the emulator is ready (Options.HoldUntilReady),
// unless it comes from SetupConfig. It reports whether to serve it: false when the client
// went away or the emulator stopped first (answered 503).
func (e *Emulator) awaitReady(w http.ResponseWriter, r *http.Request, service string) bool {
	if e.Ready() || r.Header.Get(setupHeader) == e.setupToken {
		return true
	}
	e.waiting.Add(1)
	defer e.waiting.Add(-1)
	select {
	case <-e.ready:
		return true
	case <-r.Context().Done():
		return false
	case <-e.ctx.Done():
		writeServiceError(w, protocolOf(r, service), http.StatusServiceUnavailable, "ServiceUnavailable",
			"the local emulator stopped before it was ready")
		return false
	}
}

// protocolOf names the error format writeServiceError answers a request in.
func protocolOf(r *http.Request, service string) string {
	switch {
	case service == "s3":
		return "s3"
	case r.Header.Get("Smithy-Protocol") != "":
		return "cbor"
	case r.Header.Get("X-Amz-Target") != "":
		return "json"
	}
	return "query"
}

func (e *Emulator) mount(path string) http.Handler {
	e.mu.Lock()
	defer e.mu.Unlock()
	best := ""
	for p := range e.mounts {
		if strings.HasPrefix(path, p) && len(p) > len(best) {
			best = p
		}
	}
	if best == "" {
		return nil
	}
	return e.mounts[best]
}

func (e *Emulator) serviceNames() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return sortedKeys(e.services)
}

// serviceOf names the service a request is for, as LocalStack decides on its single port:
// the X-Amz-Target prefix, else the SigV4 credential scope (header or presigned query),
// else S3.
func serviceOf(r *http.Request) string {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		prefix, _, _ := strings.Cut(t, ".")
		if s, ok := targetServices[prefix]; ok {
			return s
		}
	}
	if s := scopeService(r.Header.Get("Authorization")); s != "" {
		return s
	}
	if c := r.URL.Query().Get("X-Amz-Credential"); c != "" {
		if parts := strings.Split(c, "/"); len(parts) >= 5 {
			return parts[3]
		}
	}
	return "s3"
}

// scopeService extracts the service of "AWS4-HMAC-SHA256 Credential=AKID/DATE/REGION/SERVICE/aws4_request, ...".
func scopeService(auth string) string {
	_, rest, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	cred, _, _ := strings.Cut(rest, ",")
	parts := strings.Split(strings.TrimSpace(cred), "/")
	if len(parts) < 5 {
		return ""
	}
	return parts[3]
}

// actionOf names the API action of a request: X-Amz-Target, the query protocol's Action
// (from the URL or the form body, which is read and put back), or the S3 operation.
func actionOf(r *http.Request, service string) string {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		if _, a, ok := strings.Cut(t, "."); ok {
			return a
		}
		return t
	}
	if a := r.URL.Query().Get("Action"); a != "" {
		return a
	}
	if a := cloudwatchlocal.Operation(r); a != "" {
		return a
	}
	if service == "s3" {
		return s3local.Operation(r)
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); r.Method == http.MethodPost && ct == "application/x-www-form-urlencoded" && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err == nil {
			if form, err := url.ParseQuery(string(body)); err == nil && form.Get("Action") != "" {
				return form.Get("Action")
			}
		}
	}
	return r.Method + " " + r.URL.Path
}
