package awslocal

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/cloudwatchlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/s3local"
	"github.com/cairn-dev/cairn/internal/awslocal/stslocal"
)

// targetServices maps X-Amz-Target prefixes to signing names, for JSON protocols whose
// requests may arrive unsigned.
var targetServices = map[string]string{
	"AmazonSQS":                            "sqs",
	"AmazonSSM":                            "ssm",
	"secretsmanager":                       "secretsmanager",
	"TrentService":                         "kms",
	"AWSEvents":                            "events",
	"AmazonEC2ContainerRegistry_V20150921": "ecr",
	// CloudWatch's AWS JSON 1.0 (the AWS CLI); its RPC v2 CBOR requests are signed.
	"GraniteServiceVersion20100801": "monitoring",
}

// Handler returns the emulator's root handler: mounts first, then service routing with call
// counting and fault injection.
func (e *Emulator) Handler() http.Handler {
	return http.HandlerFunc(e.serveHTTP)
}

func (e *Emulator) serveHTTP(w http.ResponseWriter, r *http.Request) {
	e.working.Add(1)
	defer e.working.Add(-1)
	if h := e.mount(r.URL.Path); h != nil {
		h.ServeHTTP(w, r)
		return
	}
	service := serviceOf(r)
	if !e.awaitReady(w, r, service) {
		return
	}
	caller, region, err := e.identify(r)
	if err != nil {
		e.refuse(w, r, service, err)
		return
	}
	r = r.WithContext(stslocal.WithCaller(r.Context(), caller))
	e.mu.Lock()
	h := e.services[service]
	e.mu.Unlock()
	var p *Place
	if h == nil {
		if p, err = e.Place(caller.Account, region); err != nil {
			writeServiceError(w, protocolOf(r, service), http.StatusBadRequest, "InvalidClientTokenId", "the local emulator cannot serve this request: "+err.Error())
			return
		}
		h = p.services[service]
	}
	if h == nil {
		writeServiceError(w, protocolOf(r, service), http.StatusNotImplemented, "NotImplemented",
			"the local emulator does not serve "+service+" (served: "+strings.Join(e.serviceNames(), ", ")+")")
		return
	}
	action := actionOf(r, service)
	key := service + "." + action
	at := placeKey(caller.Account, region)
	e.mu.Lock()
	e.calls[key]++
	if e.callsAt[at] == nil {
		e.callsAt[at] = map[string]int{}
	}
	e.callsAt[at][key]++
	e.mu.Unlock()
	if e.fault(w, r, service, action, caller.Account, region) {
		return
	}
	if e.answerFromModel(w, r, service, action) {
		return
	}
	h.ServeHTTP(w, r)
}

// identify names who signed a request and for which region: the account of its
// credentials (see stslocal.Service.Identify) and the region of its SigV4 signature, the
// home region when the request is unsigned.
func (e *Emulator) identify(r *http.Request) (stslocal.Caller, string, error) {
	key, region := credentialScope(r)
	token := r.Header.Get("X-Amz-Security-Token")
	if token == "" {
		token = r.URL.Query().Get("X-Amz-Security-Token")
	}
	caller, err := e.sts.Identify(key, token, e.opts.AccountID)
	if region == "" {
		region = e.opts.Region
	}
	return caller, region, err
}

// refuse answers a request whose credentials the emulator does not accept, in the error
// format of its service, as AWS does.
func (e *Emulator) refuse(w http.ResponseWriter, r *http.Request, service string, err error) {
	code, status := "InvalidClientTokenId", http.StatusForbidden
	if errors.Is(err, stslocal.ErrExpired) {
		code = "ExpiredToken"
		if protocolOf(r, service) == "json" {
			code = "ExpiredTokenException"
		}
		if service == "s3" {
			status = http.StatusBadRequest
		}
	} else if service == "s3" {
		code = "InvalidAccessKeyId"
	}
	writeServiceError(w, protocolOf(r, service), status, code, err.Error())
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
	names := map[string]bool{}
	for n := range e.services {
		names[n] = true
	}
	for n := range e.home.services {
		names[n] = true
	}
	return sortedKeys(names)
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
	if parts := scope(auth); len(parts) >= 5 {
		return parts[3]
	}
	return ""
}

// scope splits the credential of a SigV4 Authorization header, AKID/DATE/REGION/SERVICE/aws4_request.
func scope(auth string) []string {
	_, rest, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return nil
	}
	cred, _, _ := strings.Cut(rest, ",")
	return strings.Split(strings.TrimSpace(cred), "/")
}

// credentialScope returns the access key id and region a request is signed with (header
// or presigned query), "" for what it does not say.
func credentialScope(r *http.Request) (accessKeyID, region string) {
	parts := scope(r.Header.Get("Authorization"))
	if len(parts) < 5 {
		parts = strings.Split(r.URL.Query().Get("X-Amz-Credential"), "/")
	}
	if len(parts) >= 5 {
		return parts[0], parts[2]
	}
	return "", ""
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
