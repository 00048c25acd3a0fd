package plan

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"
)

func TestUnreadable(t *testing.T) {
	denied := fmt.Errorf("SSM refused to read the parameters /shop/db: %w", &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized"})
	for _, tc := range []struct {
		name   string
		err    error
		retry  bool
		reason string
	}{
		{"access denied fails the run", denied, false, "no plan: " + denied.Error()},
		{"throttled past the retries: deliver again", &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"}, true, ""},
		{"a service failure: deliver again", &smithy.GenericAPIError{Code: "InternalServerError", Fault: smithy.FaultServer}, true, ""},
		{"no answer: deliver again", errors.New("dial tcp: connection refused"), true, ""},
		{"the invocation's deadline: deliver again", context.DeadlineExceeded, true, ""},
	} {
		retry, reason := Unreadable(tc.err)
		if retry != tc.retry || reason != tc.reason {
			t.Errorf("%s: Unreadable = %v, %q; want %v, %q", tc.name, retry, reason, tc.retry, tc.reason)
		}
	}
}
