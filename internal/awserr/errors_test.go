package awserr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func respErr(status int, code string) error {
	var err error = &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: errors.New("x")}
	if code != "" {
		err = &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err: &smithy.GenericAPIError{Code: code, Message: "m"}}
	}
	return fmt.Errorf("operation error S3: PutObject: %w", err)
}

func TestClassification(t *testing.T) {
	tests := []struct {
		name                   string
		err                    error
		notFound, precondition bool
	}{
		{"NoSuchKey", respErr(404, "NoSuchKey"), true, false},
		{"HEAD 404 without a code", respErr(404, ""), true, false},
		{"NoSuchVersion", respErr(404, "NoSuchVersion"), true, false},
		{"412", respErr(412, "PreconditionFailed"), false, true},
		{"409 conflict", respErr(409, "ConditionalRequestConflict"), false, true},
		{"access denied", respErr(403, "AccessDenied"), false, false},
		{"no response", errors.New("dial tcp: refused"), false, false},
		{"nil", nil, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NotFound(tc.err); got != tc.notFound {
				t.Errorf("NotFound = %v", got)
			}
			if got := PreconditionFailed(tc.err); got != tc.precondition {
				t.Errorf("PreconditionFailed = %v", got)
			}
		})
	}
}

func TestPermanent(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		permanent bool
	}{
		{"throttling outlasting retries", &smithy.GenericAPIError{Code: "Throttling", Message: "Rate exceeded"}, false},
		{"json throttling", &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"}, false},
		{"service failure", &smithy.GenericAPIError{Code: "InternalFailure", Fault: smithy.FaultServer}, false},
		{"unknown server fault", &smithy.GenericAPIError{Code: "Whatever", Fault: smithy.FaultServer}, false},
		{"lost connection", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, false},
		{"deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), false},
		{"validation", &smithy.GenericAPIError{Code: "ValidationError", Message: "Template format error"}, true},
		{"capabilities", &smithy.GenericAPIError{Code: "InsufficientCapabilitiesException", Message: "Requires capabilities : [CAPABILITY_IAM]"}, true},
		{"access denied", &smithy.GenericAPIError{Code: "AccessDenied"}, true},
		{"limit", &smithy.GenericAPIError{Code: "LimitExceededException"}, true},
		{"throttling as S3 says it", &smithy.GenericAPIError{Code: "SlowDown"}, false},
		{"cancelled", context.Canceled, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Permanent(tc.err); got != tc.permanent {
				t.Errorf("Permanent(%v) = %v, want %v", tc.err, got, tc.permanent)
			}
		})
	}
}

func TestThrottledStackMissingMessage(t *testing.T) {
	wrap := func(code, msg string) error {
		return fmt.Errorf("operation error CloudFormation: DescribeStacks: %w", &smithy.GenericAPIError{Code: code, Message: msg})
	}
	for _, tc := range []struct {
		name                    string
		err                     error
		throttled, stackMissing bool
		message                 string
	}{
		{"throttling", wrap("Throttling", "Rate exceeded"), true, false, "Throttling: Rate exceeded"},
		{"json throttling", wrap("ThrottlingException", "Rate exceeded"), true, false, "ThrottlingException: Rate exceeded"},
		{"too many requests", wrap("TooManyRequestsException", "slow down"), true, false, "TooManyRequestsException: slow down"},
		{"request limit", wrap("RequestLimitExceeded", "x"), true, false, "RequestLimitExceeded: x"},
		{"no stack", wrap("ValidationError", "Stack with id shop-app does not exist"), false, true, "ValidationError: Stack with id shop-app does not exist"},
		{"other validation", wrap("ValidationError", "Template format error"), false, false, "ValidationError: Template format error"},
		{"service failure", wrap("InternalFailure", "oops"), false, false, "InternalFailure: oops"},
		{"no answer", errors.New("dial tcp: refused"), false, false, "dial tcp: refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Throttled(tc.err); got != tc.throttled {
				t.Errorf("Throttled = %v", got)
			}
			if got := StackMissing(tc.err); got != tc.stackMissing {
				t.Errorf("StackMissing = %v", got)
			}
			if got := Message(tc.err); got != tc.message {
				t.Errorf("Message = %q, want %q", got, tc.message)
			}
		})
	}
}

// TestReason: a failure reason keeps the service's words, never the SDK's dump of the
// operation, status code and request id; a condition the caller caused is the message
// alone, others keep their code.
func TestReason(t *testing.T) {
	dump := func(code, msg string) error {
		return fmt.Errorf("operation error CloudFormation: CreateChangeSet, https response error StatusCode: 400, RequestID: 1a2b: %w",
			&smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 400}}, Err: &smithy.GenericAPIError{Code: code, Message: msg}})
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"validation error", dump("ValidationError", "Template error: unresolved resource dependencies [Topic]"), "Template error: unresolved resource dependencies [Topic]"},
		{"missing capabilities", dump("InsufficientCapabilitiesException", "Requires capabilities : [CAPABILITY_IAM]"), "Requires capabilities : [CAPABILITY_IAM]"},
		{"throttling keeps its code", dump("Throttling", "Rate exceeded"), "Throttling: Rate exceeded"},
		{"no answer", errors.New("dial tcp 127.0.0.1:4566: connection refused"), "dial tcp 127.0.0.1:4566: connection refused"},
	} {
		if got := Reason(tc.err); got != tc.want {
			t.Errorf("%s: Reason = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCloudFormationAndIAMAnswers: what the deployer's callers tell apart by the answer's
// code and message, each classified here once.
func TestCloudFormationAndIAMAnswers(t *testing.T) {
	wrap := func(code, msg string) error {
		return fmt.Errorf("operation error CloudFormation: X: %w", &smithy.GenericAPIError{Code: code, Message: msg})
	}
	for _, tc := range []struct {
		name                                   string
		err                                    error
		stackMissing, changeSetMissing, denied bool
	}{
		{"stack gone", wrap("ValidationError", "Stack with id shop-app does not exist"), true, true, false},
		{"change set gone", wrap("ChangeSetNotFound", "ChangeSet [cairn-1] does not exist"), false, true, false},
		{"another validation error", wrap("ValidationError", "Template format error"), false, false, false},
		{"IAM, query protocol", wrap("AccessDenied", "User: x is not authorized"), false, false, true},
		{"IAM, JSON protocol", wrap("AccessDeniedException", "User: x is not authorized"), false, false, true},
		{"throttled", wrap("Throttling", "Rate exceeded"), false, false, false},
		{"no answer", errors.New("dial tcp: refused"), false, false, false},
		{"nil", nil, false, false, false},
	} {
		if got := StackMissing(tc.err); got != tc.stackMissing {
			t.Errorf("%s: StackMissing = %v", tc.name, got)
		}
		if got := ChangeSetMissing(tc.err); got != tc.changeSetMissing {
			t.Errorf("%s: ChangeSetMissing = %v", tc.name, got)
		}
		if got := AccessDenied(tc.err); got != tc.denied {
			t.Errorf("%s: AccessDenied = %v", tc.name, got)
		}
	}
}
