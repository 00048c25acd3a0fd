package awsclient

import (
	"errors"
	"fmt"
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
