package statestore

import (
	"errors"
	"fmt"
	"testing"
)

func TestFenced(t *testing.T) {
	ours := &Lock{RunID: "R1", Token: "t1"}
	lost := fmt.Errorf("renew lock shop/shop: %w", ErrLockLost)
	for _, tc := range []struct {
		name    string
		cause   error
		current *Lock
		fenced  bool
	}{
		{"another invocation of the run resumed it: carry on", lost, ours, false},
		{"taken over by another run", lost, &Lock{RunID: "R2", Token: "t2"}, true},
		{"acquired again by the same run (a new token)", lost, &Lock{RunID: "R1", Token: "t9"}, true},
		{"removed (cairn unlock --force), or unreadable", lost, nil, true},
		{"the lease expired before the step renewed it", fmt.Errorf("write: %w", ErrLeaseExpired), ours, true},
		{"any other failure", errors.New("S3 is down"), ours, true},
	} {
		if got := Fenced(tc.cause, tc.current, "R1", "t1"); got != tc.fenced {
			t.Errorf("%s: Fenced = %v, want %v", tc.name, got, tc.fenced)
		}
	}
}
