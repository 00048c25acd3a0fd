package awsclient

import (
	"errors"
	"net/http"

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
