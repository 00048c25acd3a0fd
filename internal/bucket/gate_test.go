package bucket

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestScopeAllows(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	run := ForDeployment("shop")
	run.SetRun("20261207-010203004-1a2b3c4d")
	run.Hold("shop", "prod")
	for _, tc := range []struct {
		scope *Scope
		op    Op
		key   string
		ok    bool
	}{
		// Its own deployment's keys.
		{run, OpRead, "deployments/shop.zip", true},
		{run, OpList, "deployments/shop.zip", true},
		{run, OpRead, "plans/shop.zip", true},
		{run, OpRead, "approvals/shop.zip", true},
		{run, OpRead, "approvals/shop/20261207-010203004-1a2b3c4d", true},
		{run, OpList, "approvals/shop/", true},
		{run, OpWrite, "plans/shop/P1.json", true},
		{run, OpWrite, "plans/shop/P1.md", true},
		{run, OpWrite, "plans/shop/P1.html", true},
		{run, OpWrite, "runs/shop/R1.html", true},
		{run, OpWrite, "runs/web/R1.html", false},
		{run, OpWrite, "runs/shop/R1.htm", false},
		{run, OpWrite, "runs/shop/R1.json", true},
		{run, OpWrite, "runs/active/20261207-010203004-1a2b3c4d.json", true},
		{run, OpWrite, "runs/active/stacks/shop-app.json", true},
		{run, OpWrite, "state/shop/prod.json", true},
		{run, OpDelete, "locks/shop/prod.lock", true},
		{run, OpWrite, "templates/" + sha + ".json", true},
		{run, OpWrite, "assets/" + sha + ".zip", true},
		{run, OpWrite, "assets/" + sha, true},
		// What the attacks wrote with the deployer's credentials.
		{run, OpWrite, "approvals/web/P1", false},
		{run, OpWrite, "approvals/shop/P1", false},
		{run, OpWrite, "deployments/web.zip", false},
		{run, OpWrite, "deployments/shop.zip", false},
		{run, OpWrite, "locks/web/web.lock", false},
		{run, OpRead, "deployments/web.zip", false},
		{run, OpRead, "state/web/web.json", false},
		{run, OpWrite, "state/shop/other.json", false},
		{run, OpWrite, "runs/web/R1.json", false},
		{run, OpWrite, "runs/active/OTHER.json", false},
		{run, OpList, "runs/", false},
		{run, OpList, "", false},
		{run, OpWrite, "ports/default.json", false},
		{run, OpWrite, "drift/shop/S1.json", false},
		{run, OpRead, "drift/shop/S1.json", true},
		{run, OpList, "drift/shop/", true},
		{run, OpRead, "drift/web/S1.json", false},
		{run, OpList, "drift/web/", false},
		{run, OpList, "drift/", false},
		{run, OpRead, "drift/sweeps/S1.json", false},
		{run, OpDelete, "drift/shop/S1.json", false},
		// Policies and their overrides: read, never written (only the policy role writes).
		{run, OpList, "policies/", true},
		{run, OpRead, "policies/s3_public.rego", true},
		{run, OpRead, "policies/security/config.json", true},
		{run, OpRead, "policies/README.md", false},
		{run, OpWrite, "policies/s3_public.rego", false},
		{run, OpDelete, "policies/s3_public.rego", false},
		{run, OpList, "policy-overrides/shop/P1/", true},
		{run, OpRead, "policy-overrides/shop/P1/cairn.s3_public.json", true},
		{run, OpWrite, "policy-overrides/shop/P1/cairn.s3_public.json", false},
		{run, OpRead, "policy-overrides/web/P1/cairn.s3_public.json", false},
		{run, OpList, "policy-overrides/web/P1/", false},
		{run, OpList, "policy-overrides/", false},
		{run, OpRead, "policy-overrides/shop/P1/cairn..s3_public.json", false},
		// The reports of the graph it holds, filed under NAMESPACE.KEY: no other graph's.
		{run, OpList, "drift/" + DriftReportName("shop", "prod") + "/", true},
		{run, OpRead, DriftReportKey(DriftReportName("shop", "prod"), "S1"), true},
		{run, OpRead, DriftReportKey(DriftReportName("shop", "other"), "S1"), false},
		{run, OpList, "drift/" + DriftReportName("web", "prod") + "/", false},
		{run, OpRead, DriftMarkdownKey(DriftReportName("shop", "prod"), "S1"), false},
		{run, OpWrite, DriftReportKey(DriftReportName("shop", "prod"), "S1"), false},
		{run, OpList, "drift/shop.prod.x/", false},
		{run, OpWrite, "assets/" + sha + ".zip/../../approvals/web/P1", false},
		{run, OpWrite, "assets/" + strings.ToUpper(sha) + ".zip", false},
		{run, OpWrite, "plans/shop/../web/P1.json", false},
		{run, OpDelete, "state/shop/other.json", false},
		// Routing: the open-run index, read only.
		{Routing(), OpList, "runs/active/", true},
		{Routing(), OpRead, "runs/active/R1.json", true},
		{Routing(), OpRead, "runs/active/stacks/shop-app.json", true},
		{Routing(), OpWrite, "runs/active/R1.json", false},
		{Routing(), OpRead, "deployments/shop.zip", false},
		{nil, OpRead, "deployments/shop.zip", false},
	} {
		err := tc.scope.Allows(tc.op, tc.key)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %s %s: %v, want allowed %v", tc.scope, tc.op, tc.key, err, tc.ok)
		}
		var refused *RefusedError
		if err != nil && (!errors.As(err, &refused) || !strings.Contains(err.Error(), tc.key)) {
			t.Errorf("%s %s: the refusal %q names neither the key nor its rule", tc.op, tc.key, err)
		}
	}
}

// TestScopeNeverReachesAnotherDeployment draws keys of cairn's bucket built from two
// deployments' names: a run of one may touch none of the keys that name the other's.
func TestScopeNeverReachesAnotherDeployment(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.StringMatching(`[a-z][a-z0-9-]{0,8}`)
		mine, theirs := name.Draw(t, "mine"), name.Draw(t, "theirs")
		if mine == theirs {
			t.Skip("the same deployment")
		}
		s := ForDeployment(mine)
		s.SetRun("R1")
		s.Hold(mine, mine)
		id := rapid.StringMatching(`[A-Za-z0-9][A-Za-z0-9._-]{0,12}`).Draw(t, "id")
		keys := []string{
			DeploymentKey(theirs), PlanUploadKey(theirs), ApplyKey(theirs), ApprovalKey(theirs, id),
			PlanKey(theirs, id), PlanMarkdownKey(theirs, id), RunKey(theirs, id), RunReportKey(theirs, id),
			StateKey(theirs, theirs), LockKey(theirs, theirs), StateKey(mine, theirs), LockKey(theirs, mine),
			ApprovalKey(mine, id), ApprovalsPrefix + theirs + "/", PlansOf(theirs), RunsOf(theirs),
			DriftReportsOf(theirs), DriftReportKey(theirs, id), DriftReportsOf(DriftReportName(theirs, mine)),
			DriftReportKey(DriftReportName(mine, theirs), id), DriftReportKey(DriftReportName(theirs, theirs), id),
		}
		key := rapid.SampledFrom(keys).Draw(t, "key")
		for _, op := range []Op{OpWrite, OpDelete} {
			if err := s.Allows(op, key); err == nil {
				t.Fatalf("a run of %s may %s %s", mine, op, key)
			}
		}
		if strings.Contains(key, theirs+"/") || strings.Contains(key, theirs+".") {
			if err := s.Allows(OpRead, key); err == nil && !strings.HasPrefix(key, ApprovalsPrefix+mine+"/") {
				t.Fatalf("a run of %s may read %s", mine, key)
			}
		}
	})
}

// TestThreatModelTable: the threat model's table (docs/threat-model.md) of what a run of deployment D may touch is the
// gate's own (Rules, RoutingRules), row for row, so the two cannot drift apart.
func TestThreatModelTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "threat-model.md"))
	if err != nil {
		t.Fatal(err)
	}
	const start, end = "<!-- gate:begin -->\n", "<!-- gate:end -->"
	_, rest, ok := strings.Cut(string(readme), start)
	table, _, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatalf("docs/threat-model.md has no table between %q and %q", start, end)
	}
	var want strings.Builder
	want.WriteString("| Keys | Who | May | Why |\n|---|---|---|---|\n")
	for _, set := range []struct {
		who   string
		rules []Rule
	}{{"a run of D", Rules}, {"any invocation, before it knows the run", RoutingRules}} {
		for _, r := range set.rules {
			fmt.Fprintf(&want, "| `%s` | %s | %s | %s |\n", r.Pattern, set.who, r.Ops, r.Why)
		}
	}
	if table != want.String() {
		t.Errorf("docs/threat-model.md's gate table is not bucket.Rules; want:\n%s", want.String())
	}
}
