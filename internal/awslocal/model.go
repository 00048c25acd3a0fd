package awslocal

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/apimodel"
)

// served answers whether the emulator serves a service's operation (ServedOperations).
func served(service, action string) bool {
	for _, s := range servedOperations {
		if s.Service == service {
			for _, op := range s.Operations {
				if op == action {
					return true
				}
			}
		}
	}
	return false
}

var servedOperations = ServedOperations()

// answerFromModel answers, from AWS's API model of the service, a request of an RPC
// protocol (AWS JSON, query, RPC v2 CBOR) that its handler must not see, and reports
// whether it did:
//   - an operation the model does not know, as AWS answers an unknown action:
//     InvalidAction in the query protocol, UnknownOperationException in the others;
//   - an operation of the model the emulator does not serve, with the same code (it is
//     what AWS answers for an operation its endpoint does not support) and a message
//     saying the emulator does not serve it;
//   - a served operation whose top-level input breaks the model (a required member
//     missing, a length, range, enum or pattern not met), as the service answers it
//     (validationCodes), before the handler runs.
//
// REST services route by path and method: Lambda's served operations are validated the
// same way (validateREST); its other paths, and all of S3, are answered by their packages.
func (e *Emulator) answerFromModel(w http.ResponseWriter, r *http.Request, service, action string) bool {
	tab, err := apimodel.Load()
	if err != nil {
		return false
	}
	s := tab.Service(service)
	if s == nil {
		return false
	}
	protocol := protocolOf(r, service)
	if s.Speaks("rest-json") {
		return e.validateREST(w, r, s, service)
	}
	if protocol == "s3" || s.Speaks("rest-xml") {
		return false
	}
	writer := protocol
	if service == "sqs" && protocol == "json" {
		writer = "sqs-json"
	}
	unknownCode := "UnknownOperationException"
	if protocol == "query" {
		unknownCode = "InvalidAction"
	}
	op := s.Operation(action)
	if op == nil {
		msg := fmt.Sprintf("Could not find operation %s for version %s", action, s.Version)
		if protocol != "query" {
			msg = fmt.Sprintf("%s is not an operation of %s (API version %s)", action, s.ID, s.Version)
		}
		writeServiceError(w, writer, http.StatusBadRequest, unknownCode, msg)
		return true
	}
	if !served(service, action) {
		n := 0
		for _, o := range servedOperations {
			if o.Service == service {
				n = len(o.Operations)
			}
		}
		writeServiceError(w, writer, http.StatusBadRequest, unknownCode,
			fmt.Sprintf("%s is an operation of %s that the local emulator does not serve (it serves %d of its %d operations: see docs/local.md)",
				action, s.ID, n, len(s.Operations)))
		return true
	}
	var in apimodel.Input
	switch {
	case protocol == "json" && s.Speaks("json"):
		body, err := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			return false
		}
		if in, err = apimodel.JSONInput(body); err != nil {
			return false // not a JSON object: the handler answers it as the service does
		}
	case protocol == "query" && s.Speaks("query"):
		form, ok := queryForm(r)
		if !ok {
			return false
		}
		in = apimodel.QueryInput(form)
	default:
		return false // RPC v2 CBOR bodies, and SQS's legacy query requests, are left to their handler
	}
	vs := op.Validate(in)
	if len(vs) == 0 {
		return false
	}
	code, msg := validationAnswer(service, protocol, vs)
	e.log.Debug("emulator: refused by the API model", "service", service, "action", action, "code", code, "err", msg)
	writeServiceError(w, writer, http.StatusBadRequest, code, msg)
	return true
}

// validationAnswer words violations of the model as the service answers them. Most
// services validate their input with AWS's common validation (ValidationError in the
// query protocol, ValidationException in JSON: "1 validation error detected: Value null at
// 'name' failed to satisfy constraint: Member must not be null"). SQS and SNS answer with
// the codes their API references give for a missing or invalid parameter: SQS
// MissingParameter ("The request must contain the parameter QueueUrl.") and
// InvalidParameterValue, SNS InvalidParameter ("Invalid parameter: Name"); ECR
// InvalidParameterException ("Invalid parameter at 'repositoryName' failed to satisfy
// constraint: '...'"), as ecrlocal words its own checks.
func validationAnswer(service, protocol string, vs []apimodel.Violation) (code, message string) {
	switch service {
	case "sqs":
		if vs[0].Missing {
			return "MissingParameter", "The request must contain the parameter " + vs[0].Member + "."
		}
		return "InvalidParameterValue", apimodel.Message(vs)
	case "ecr":
		v := vs[0]
		return "InvalidParameterException", fmt.Sprintf("Invalid parameter at '%s' failed to satisfy constraint: '%s'", strings.ToLower(v.Member[:1])+v.Member[1:], v.Reason)
	case "sns":
		return "InvalidParameter", "Invalid parameter: " + vs[0].Member + " Reason: " + apimodel.Message(vs)
	}
	if protocol == "query" {
		return "ValidationError", apimodel.Message(vs)
	}
	return "ValidationException", apimodel.Message(vs)
}

// queryForm reads a query-protocol request's parameters, from the URL and a form body
// (read and put back for the handler).
func queryForm(r *http.Request) (url.Values, bool) {
	form := url.Values{}
	for k, v := range r.URL.Query() {
		form[k] = v
	}
	if r.Method == http.MethodPost && r.Body != nil && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		body, err := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			return nil, false
		}
		f, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, false
		}
		for k, v := range f {
			form[k] = append(form[k], v...)
		}
	}
	return form, true
}

// validateREST validates a request of a REST JSON service (Lambda) bound to an operation the
// emulator serves: its path labels, query string and headers against the model, answered as
// Lambda answers a constraint its input breaks, 400 ValidationException in the service's
// REST error shape. Members of the body are left to the handler.
func (e *Emulator) validateREST(w http.ResponseWriter, r *http.Request, s *apimodel.Service, service string) bool {
	op := s.Match(r.Method, r.URL.EscapedPath(), r.URL.Query())
	if op == nil || !served(service, op.Name) {
		return false
	}
	vs := op.Validate(apimodel.RESTInput(op, r.URL.EscapedPath(), r.URL.Query(), r.Header))
	if len(vs) == 0 {
		return false
	}
	e.log.Debug("emulator: refused by the API model", "service", service, "action", op.Name, "code", "ValidationException")
	writeRESTError(w, http.StatusBadRequest, "ValidationException", apimodel.Message(vs))
	return true
}
