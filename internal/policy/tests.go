package policy

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

// TestResult is the outcome of one Rego test of a policy set.
type TestResult struct {
	// Name is the test's package and rule (data.cairn.s3_public.test_public_acl_denied);
	// File and Line where it is.
	Name string
	File string
	Line int
	// Pass, or Err (the test's error) or neither (it failed: undefined or false).
	Pass     bool
	Err      error
	Duration time.Duration
}

// Test runs the Rego tests (test_ rules of the _test.rego files) of set against its
// modules and data, with Capabilities, each test within timeout.
func Test(ctx context.Context, set Set, timeout time.Duration) ([]TestResult, error) {
	mods, err := parse(append(append([]File(nil), set.Modules...), set.Tests...), set.Origin)
	if err != nil {
		return nil, err
	}
	if _, err := compile(mods, set.Origin); err != nil {
		return nil, err
	}
	store := inmem.NewFromObject(set.Data)
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return nil, err
	}
	defer store.Abort(ctx, txn)
	ch, err := tester.NewRunner().SetCompiler(compilerFor()).SetStore(store).SetTimeout(timeout).
		RaiseBuiltinErrors(true).SetModules(mods).RunTests(ctx, txn)
	if err != nil {
		return nil, located(set.Origin, err)
	}
	var out []TestResult
	for r := range ch {
		tr := TestResult{Name: r.Package + "." + r.Name, Pass: r.Pass(), Err: r.Error, Duration: r.Duration}
		if r.Location != nil {
			tr.File, tr.Line = r.Location.File, r.Location.Row
		}
		if r.Error != nil {
			tr.Err = fmt.Errorf("%w", r.Error)
		}
		out = append(out, tr)
	}
	slices.SortFunc(out, func(a, b TestResult) int { return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line)) })
	return out, nil
}
