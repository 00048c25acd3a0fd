// Package awserr classifies the errors AWS answers with: not found, throttled, permanent
// or worth a retry, a stack or change set missing, access denied, and the reason a person
// reads. It is the one owner of that classification, and needs nothing of the SDK's
// service clients (only smithy's error types), so the decision packages can use it and
// stay free of them.
package awserr

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// HTTPStatus returns the HTTP status of an AWS error, or 0 when there was no response.
func HTTPStatus(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// ErrorCode returns the AWS error code of err ("NoSuchKey", "Throttling", ...), or "".
func ErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// NotFound reports an S3 object (or version) that does not exist. HEAD answers carry no
// error code, so a bare 404 counts too.
func NotFound(err error) bool {
	switch ErrorCode(err) {
	case "NoSuchKey", "NotFound", "NoSuchVersion":
		return true
	}
	return HTTPStatus(err) == http.StatusNotFound
}

// PreconditionFailed reports a conditional S3 write that lost: If-Match or If-None-Match
// failed (412), or S3 refused a concurrent conditional write (409
// ConditionalRequestConflict). Callers re-read and retry, or give up on purpose.
func PreconditionFailed(err error) bool {
	switch ErrorCode(err) {
	case "PreconditionFailed", "ConditionalRequestConflict":
		return true
	}
	switch HTTPStatus(err) {
	case http.StatusPreconditionFailed, http.StatusConflict:
		return true
	}
	return false
}

// throttlingCodes are the codes AWS services answer when a caller exceeds its rate.
var throttlingCodes = map[string]bool{
	"Throttling": true, "ThrottlingException": true, "ThrottledException": true,
	"RequestLimitExceeded": true, "RequestThrottled": true, "TooManyRequestsException": true,
	"SlowDown": true,
}

// transientCodes are the other codes of calls that may succeed when made again: service
// failures, timeouts and operations still in progress.
var transientCodes = map[string]bool{
	"ServiceUnavailable": true, "ServiceUnavailableException": true,
	"InternalFailure": true, "InternalError": true, "InternalServiceError": true,
	"RequestTimeout": true, "RequestTimeoutException": true, "RequestExpired": true,
	"PriorRequestNotComplete": true, "OperationInProgressException": true,
	"ConcurrentModificationException": true,
}

// Throttled reports an error that says the caller exceeded its rate: the SDK's retryer
// backed off and gave up, and the call may succeed later.
func Throttled(err error) bool { return throttlingCodes[ErrorCode(err)] }

// Permanent reports whether retrying the same call cannot help: a validation error,
// missing capabilities, access denied. Throttling, service failures, lost connections and
// cancelled contexts are transient.
func Permanent(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false // no answer from the service: a network error
	}
	code := ae.ErrorCode()
	return !throttlingCodes[code] && !transientCodes[code] && ae.ErrorFault() != smithy.FaultServer
}

// StackMissing reports CloudFormation's answer for a stack that does not exist.
func StackMissing(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" && strings.Contains(ae.ErrorMessage(), "does not exist")
}

// ChangeSetMissing reports CloudFormation's answer for a change set that does not exist
// (ChangeSetNotFound, or a ValidationError saying so when the stack named is gone).
func ChangeSetMissing(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	return ae.ErrorCode() == "ChangeSetNotFound" || ae.ErrorCode() == "ValidationError" && strings.Contains(ae.ErrorMessage(), "does not exist")
}

// AccessDenied reports an answer of IAM refusing the call (AccessDenied,
// AccessDeniedException): the caller's role lacks a permission.
func AccessDenied(err error) bool {
	return strings.HasPrefix(ErrorCode(err), "AccessDenied")
}

// Reason is an AWS error as a stack's failure reason says it, without the SDK's operation,
// status code and request id: for a condition the caller caused (a validation error,
// missing capabilities, access denied: Permanent) CloudFormation's message alone, else
// "Code: message" (throttling, a service failure); other errors (no answer) as they are.
func Reason(err error) string {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return err.Error()
	}
	if Permanent(err) && ae.ErrorMessage() != "" {
		return ae.ErrorMessage()
	}
	return Message(err)
}

// Message is an AWS error as a person reads it, "Code: message", without the SDK's
// operation and request details; other errors as they are.
func Message(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	return err.Error()
}
