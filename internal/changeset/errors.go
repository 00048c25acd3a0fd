package changeset

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/smithy-go"
)

// transientCodes are API error codes that may succeed when the same call is made again:
// throttling (the SDK's retryer has already backed off and given up) and service-side
// failures.
var transientCodes = map[string]bool{
	"Throttling": true, "ThrottlingException": true, "ThrottledException": true,
	"RequestLimitExceeded": true, "RequestThrottled": true, "TooManyRequestsException": true,
	"SlowDown": true, "ServiceUnavailable": true, "ServiceUnavailableException": true,
	"InternalFailure": true, "InternalError": true, "InternalServiceError": true,
	"RequestTimeout": true, "RequestTimeoutException": true, "RequestExpired": true,
	"PriorRequestNotComplete": true, "OperationInProgressException": true,
	"ConcurrentModificationException": true,
}

// Classify reports whether err is permanent: retrying the same call cannot help (a
// validation error, missing capabilities, access denied). Throttling that outlasted the
// SDK's retries, service failures and lost connections are transient.
func Classify(err error) (permanent bool) {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false // no answer from the service: a network error
	}
	if transientCodes[ae.ErrorCode()] {
		return false
	}
	if ae.ErrorFault() == smithy.FaultServer {
		return false
	}
	return true
}

// errorCode returns the API error code of err, or "".
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// stackMissing reports the error DescribeStacks answers for a stack that does not exist.
func stackMissing(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" && strings.Contains(ae.ErrorMessage(), "does not exist")
}
