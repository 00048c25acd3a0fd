package bucket

import (
	"strings"
	"testing"
)

func TestKeys(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{DeploymentKey("shop"), "deployments/shop.zip"},
		{PlanUploadKey("shop"), "plans/shop.zip"},
		{ApprovalKey("shop", "20261130-080000-1a2b3c4d"), "approvals/shop/20261130-080000-1a2b3c4d"},
		{PlanKey("shop", "P1"), "plans/shop/P1.json"},
		{PlanMarkdownKey("shop", "P1"), "plans/shop/P1.md"},
		{PlanPageKey("shop", "P1"), "plans/shop/P1.html"},
		{StateKey("shop", "prod"), "state/shop/prod.json"},
		{LockKey("shop", "prod"), "locks/shop/prod.lock"},
		{RunKey("shop", "R1"), "runs/shop/R1.json"},
		{RunReportKey("shop", "R1"), "runs/shop/R1.md"},
		{RunPageKey("shop", "R1"), "runs/shop/R1.html"},
		{OpenRunKey("R1"), "runs/active/R1.json"},
		{TemplateKey("ab12"), "templates/ab12.json"},
		{AssetKey("1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b", "zip"), "assets/1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b.zip"},
		{AssetKey("1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b", ""), "assets/1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b1a2b"},
		{PoolKey("default"), "ports/default.json"},
		{DriftReportKey("shop", "S1"), "drift/shop/S1.json"},
		{DriftMarkdownKey("shop", "S1"), "drift/shop/S1.md"},
		{SweepKey("S1"), "drift/sweeps/S1.json"},
		{URI("cairn-state", "runs/shop/R1.json"), "s3://cairn-state/runs/shop/R1.json"},
	} {
		if tc.got != tc.want {
			t.Errorf("key %q, want %q", tc.got, tc.want)
		}
	}
}

func TestParseAssetKey(t *testing.T) {
	sha := strings.Repeat("1a2b", 16)
	for _, tc := range []struct {
		key, sha, ext string
		ok            bool
	}{
		{AssetKey(sha, "zip"), sha, "zip", true},
		{AssetKey(sha, "json"), sha, "json", true},
		{AssetKey(sha, ""), sha, "", true},
		{"assets/" + sha[:10] + ".zip", "", "", false},
		{"assets/" + strings.ToUpper(sha) + ".zip", "", "", false},
		{"templates/" + sha + ".json", "", "", false},
		{"assets/" + sha + ".zip/x", "", "", false},
	} {
		sha, ext, ok := ParseAssetKey(tc.key)
		if sha != tc.sha || ext != tc.ext || ok != tc.ok {
			t.Errorf("ParseAssetKey(%q) = %q, %q, %v; want %q, %q, %v", tc.key, sha, ext, ok, tc.sha, tc.ext, tc.ok)
		}
	}
}

func TestParseUpload(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want Upload
		ok   bool
	}{
		{"deployments/shop.zip", Upload{Kind: DeployUpload, Deployment: "shop"}, true},
		{"plans/shop.zip", Upload{Kind: PlanUpload, Deployment: "shop"}, true},
		{"approvals/shop/P1", Upload{Kind: ApprovalUpload, Deployment: "shop", PlanID: "P1"}, true},
		{"approvals/shop.zip", Upload{Kind: ApplyUpload, Deployment: "shop"}, true},
		{"approvals/shop/P1.zip", Upload{Kind: ApprovalUpload, Deployment: "shop", PlanID: "P1.zip"}, true}, // an approval of no plan: refused by the deployer
		{"deployments/active.zip", Upload{Kind: DeployUpload, Deployment: "active"}, true},                  // parsed; CheckDeployment refuses it
		{"deployments/.zip", Upload{}, false},
		{"deployments/a/b.zip", Upload{}, false},
		{"deployments/shop.tar", Upload{}, false},
		{"plans/shop/P1.json", Upload{}, false}, // the deployer's own plan document
		{"approvals/shop", Upload{}, false},
		{"approvals/shop/", Upload{}, false},
		{"approvals//P1", Upload{}, false},
		{"approvals/shop/P1/x", Upload{}, false},
		{"runs/shop/R1.json", Upload{}, false},
		{"", Upload{}, false},
	} {
		got, ok := ParseUpload(tc.key)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseUpload(%q) = %+v, %v; want %+v, %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
}

// TestUploadFiltersMatchTheUploads checks that the bucket notifications select exactly the
// keys ParseUpload accepts, among the keys cairn writes.
func TestUploadFiltersMatchTheUploads(t *testing.T) {
	matches := func(key string) bool {
		for _, f := range UploadFilters() {
			if strings.HasPrefix(key, f.Prefix) && strings.HasSuffix(key, f.Suffix) {
				return true
			}
		}
		return false
	}
	for _, key := range []string{
		DeploymentKey("shop"), PlanUploadKey("shop"), ApprovalKey("shop", "P1"),
		PlanKey("shop", "P1"), PlanMarkdownKey("shop", "P1"), StateKey("shop", "shop"), LockKey("shop", "shop"),
		RunKey("shop", "R1"), RunReportKey("shop", "R1"), OpenRunKey("R1"), TemplateKey("ab"), AssetKey("ab", "zip"), PoolKey("default"),
		DriftReportKey("shop", "S1"), DriftMarkdownKey("shop", "S1"), SweepKey("S1"),
	} {
		_, upload := ParseUpload(key)
		if matches(key) != upload {
			t.Errorf("%s: notified %v, upload %v", key, matches(key), upload)
		}
	}
}

func TestCheckDeployment(t *testing.T) {
	for _, tc := range []struct{ name, err string }{
		{"shop", ""},
		{"shop-prod_2", ""},
		{"", "deployment name is empty"},
		{"a/b", `deployment "a/b": use a name without slashes or spaces`},
		{`a\b`, "without slashes or spaces"},
		{"a b", "without slashes or spaces"},
		{"v1.2_x-y", ""},
		{"\u202eevil", "use letters, digits, '.', '_' and '-' only"},
		{"shop\nprod", "use letters, digits"},
		{"shop<!--", "use letters, digits"},
		{"-shop", "starting with a letter or digit"},
		{"shop`|", "use letters, digits"},
		{strings.Repeat("a", 129), "at most 128 characters"},
		{"active", `deployment "active": the name is reserved (runs/active/ holds the index of open runs): choose another name`},
		{"sweeps", `deployment "sweeps": the name is reserved (drift/sweeps/ holds the drift sweeps in progress): choose another name`},
	} {
		err := CheckDeployment(tc.name)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.name, err, tc.err)
		}
		if Reserved(tc.name) != (tc.name == "active" || tc.name == "sweeps") {
			t.Errorf("Reserved(%q) = %v", tc.name, Reserved(tc.name))
		}
	}
}

func TestCheckPlanID(t *testing.T) {
	for id, ok := range map[string]bool{"20261130-080000123-1a2b3c4d": true, "": false, "a/b": false, "\u202eid": false, "id\n": false, "../x": false} {
		if err := CheckPlanID(id); (err == nil) != ok {
			t.Errorf("CheckPlanID(%q) = %v", id, err)
		}
	}
}

// TestReservedNamesAreTheCollisions shows why the reserved names are refused: their runs
// and drift reports would share keys with the open-run index and the open sweeps.
func TestReservedNamesAreTheCollisions(t *testing.T) {
	if RunKey("active", "R1") != OpenRunKey("R1") {
		t.Error("a deployment named active no longer collides with the open-run index: update Reserved")
	}
	if DriftReportKey("sweeps", "S1") != SweepKey("S1") {
		t.Error("drift reports named sweeps no longer collide with the open sweeps: update Reserved")
	}
	if _, ok := RunIDOf("shop", OpenRunKey("R1")); ok {
		t.Error("an index object reads as a run of deployment shop")
	}
}

func TestParsers(t *testing.T) {
	type parsed struct {
		a, b string
		ok   bool
	}
	one := func(f func(string) (string, bool)) func(string) parsed {
		return func(k string) parsed { v, ok := f(k); return parsed{v, "", ok} }
	}
	of := func(f func(string, string) (string, bool), name string) func(string) parsed {
		return func(k string) parsed { v, ok := f(name, k); return parsed{v, "", ok} }
	}
	state := func(k string) parsed { ns, key, ok := ParseStateKey(k); return parsed{ns, key, ok} }
	for _, tc := range []struct {
		what  string
		parse func(string) parsed
		key   string
		want  parsed
	}{
		{"deployment", one(DeploymentOf), "deployments/shop.zip", parsed{"shop", "", true}},
		{"deployment", one(DeploymentOf), "deployments/a/shop.zip", parsed{}},
		{"deployment", one(DeploymentOf), "plans/shop.zip", parsed{}},
		{"plan", of(PlanIDOf, "shop"), "plans/shop/P1.json", parsed{"P1", "", true}},
		{"plan", of(PlanIDOf, "shop"), "plans/shop/P1.md", parsed{}},
		{"plan", of(PlanIDOf, "shop"), "plans/shop.zip", parsed{}},
		{"plan", of(PlanIDOf, "shop"), "plans/shop-prod/P1.json", parsed{}},
		{"run", of(RunIDOf, "shop"), "runs/shop/R1.json", parsed{"R1", "", true}},
		{"run", of(RunIDOf, "shop"), "runs/shop/R1.md", parsed{}},
		{"run", of(RunIDOf, "shop"), "runs/shop/R1.html", parsed{}},
		{"plan", of(PlanIDOf, "shop"), "plans/shop/P1.html", parsed{}},
		{"open run", one(OpenRunOf), "runs/active/R1.json", parsed{"R1", "", true}},
		{"open run", one(OpenRunOf), "runs/shop/R1.json", parsed{}},
		{"pool", one(PoolOf), "ports/default.json", parsed{"default", "", true}},
		{"pool", one(PoolOf), "ports/a/b.json", parsed{}},
		{"sweep", one(SweepOf), "drift/sweeps/S1.json", parsed{"S1", "", true}},
		{"sweep", one(SweepOf), "drift/shop/S1.json", parsed{}},
		{"drift report", of(DriftReportOf, "shop"), "drift/shop/S1.json", parsed{"S1", "", true}},
		{"drift report", of(DriftReportOf, "shop"), "drift/shop/S1.md", parsed{}},
		{"state", state, "state/shop/prod.json", parsed{"shop", "prod", true}},
		{"state", state, "state/shop/a/prod.json", parsed{}},
		{"state", state, "state//prod.json", parsed{}},
		{"state", state, "state/shop/.json", parsed{}},
		{"state", state, "locks/shop/prod.lock", parsed{}},
	} {
		if got := tc.parse(tc.key); got != tc.want {
			t.Errorf("%s %q: %+v, want %+v", tc.what, tc.key, got, tc.want)
		}
	}
}

// FuzzParseUpload checks that every key ParseUpload accepts is the key of what it parsed,
// so an upload can never name a deployment or plan other than the one it spells.
func FuzzParseUpload(f *testing.F) {
	for _, k := range []string{"deployments/shop.zip", "plans/shop.zip", "approvals/shop/P1", "approvals/a/b/c", "plans/shop/P1.json", "deployments/.zip"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		u, ok := ParseUpload(key)
		if !ok {
			return
		}
		var back string
		switch u.Kind {
		case DeployUpload:
			back = DeploymentKey(u.Deployment)
		case PlanUpload:
			back = PlanUploadKey(u.Deployment)
		case ApprovalUpload:
			back = ApprovalKey(u.Deployment, u.PlanID)
		default:
			t.Fatalf("%q: kind %d", key, u.Kind)
		}
		if back != key {
			t.Fatalf("%q parses as %+v, whose key is %q", key, u, back)
		}
		if u.Deployment == "" || strings.Contains(u.Deployment, "/") || strings.Contains(u.PlanID, "/") {
			t.Fatalf("%q parses as %+v", key, u)
		}
	})
}

// TestPolicyRuleOf: an override's key names its rule for exactly one plan of one
// deployment; anything else lifts nothing.
func TestPolicyRuleOf(t *testing.T) {
	for _, tc := range []struct {
		key, rule string
		ok        bool
	}{
		{PolicyOverrideKey("shop", "P1", "cairn.s3_public"), "cairn.s3_public", true},
		{"policy-overrides/shop/P1/shop.tags.json", "shop.tags", true},
		{"policy-overrides/shop/P2/cairn.s3_public.json", "", false},
		{"policy-overrides/web/P1/cairn.s3_public.json", "", false},
		{"policy-overrides/shop/P1/cairn..s3_public.json", "", false},
		{"policy-overrides/shop/P1/sub/cairn.s3_public.json", "", false},
		{"policy-overrides/shop/P1/cairn.s3_public", "", false},
		{"policy-overrides/shop/P1/.json", "", false},
	} {
		rule, ok := PolicyRuleOf("shop", "P1", tc.key)
		if rule != tc.rule || ok != tc.ok {
			t.Errorf("PolicyRuleOf(%q) = %q, %v; want %q, %v", tc.key, rule, ok, tc.rule, tc.ok)
		}
	}
	for key, want := range map[string]bool{"policies/a.rego": true, "policies/x/config.json": true, "policies/README.md": false, "plans/a.rego": false} {
		if PolicyFile(key) != want {
			t.Errorf("PolicyFile(%q) = %v", key, !want)
		}
	}
}
