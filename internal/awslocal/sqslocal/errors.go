package sqslocal

import (
	"fmt"
	"net/http"
)

// Error is an SQS error as AWS reports it. Code is the JSON protocol's short name
// (the part after "com.amazonaws.sqs#" in __type); QueryCode is the legacy code the
// query protocol and the x-amzn-query-error header carry. In-process callers can use
// errors.As to tell a missing queue from a bad receipt handle.
type Error struct {
	Code      string
	QueryCode string
	Status    int
	Sender    bool
	Message   string
}

func (e *Error) Error() string { return fmt.Sprintf("sqs %s: %s", e.Code, e.Message) }

// fault returns "Sender" or "Receiver", the fault half of the query error code.
func (e *Error) fault() string {
	if e.Sender {
		return "Sender"
	}
	return "Receiver"
}

func senderError(code, queryCode, format string, args ...any) *Error {
	if queryCode == "" {
		queryCode = code
	}
	return &Error{Code: code, QueryCode: queryCode, Status: http.StatusBadRequest, Sender: true, Message: fmt.Sprintf(format, args...)}
}

func errNoQueue(name string) *Error {
	return senderError("QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue",
		"The specified queue does not exist: %q (create it with CreateQueue first)", name)
}

func errInvalidParameter(format string, args ...any) *Error {
	return senderError("InvalidParameterValue", "", format, args...)
}

func errMissingParameter(name string) *Error {
	return senderError("MissingParameter", "", "The request must contain the parameter %s.", name)
}

func errReceiptInvalid(handle string) *Error {
	return senderError("ReceiptHandleIsInvalid", "",
		"The input receipt handle %q is not a valid receipt handle: pass the ReceiptHandle a ReceiveMessage returned", handle)
}
