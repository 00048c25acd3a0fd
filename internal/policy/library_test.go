package policy

import (
	"context"
	"testing"
	"time"
)

// TestLibraryRegoTests runs the starter library's own Rego tests: each passes.
func TestLibraryRegoTests(t *testing.T) {
	set, err := LibrarySet(Team)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Test(context.Background(), set, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d Rego tests", len(res))
	if len(res) < 40 {
		t.Errorf("%d tests ran, want the library's tests", len(res))
	}
	for _, r := range res {
		if !r.Pass {
			t.Errorf("%s (%s:%d) failed: %v", r.Name, r.File, r.Line, r.Err)
		}
	}
}
