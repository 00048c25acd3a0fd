package policy

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

func set(t *testing.T, origin string, files map[string]string) Set {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, src := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(src)}
	}
	s, err := Load(fsys, origin+"-policies", origin)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func evaluate(t *testing.T, in Input, sets ...Set) []Result {
	t.Helper()
	e, err := Compile(context.Background(), sets...)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := e.Evaluate(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestLibraryDeniesThePublicBucket: the starter library judges a plan with its bundle: the
// public ACL of web's bucket is denied, named by rule, stack and resource.
func TestLibraryDeniesThePublicBucket(t *testing.T) {
	lib, err := LibrarySet(Team)
	if err != nil {
		t.Fatal(err)
	}
	rs := evaluate(t, FromPlan(samplePlan(), webSource(t), evalTime), lib)
	var found bool
	for _, r := range rs {
		if r.Rule == "cairn.s3_public" && r.Level == Deny && r.Stack == "web" && r.Resource == "Site" && r.Origin == Team {
			found = true
		}
	}
	if !found || !Denied(rs) {
		t.Errorf("results = %v, want the public ACL of web's Site denied", rs)
	}
	// db is protected and deleted with its table: the stateful rule denies it.
	if !strings.Contains(resultsText(rs), "deny cairn.stateful_retain (team policy) stack db, resource Table") {
		t.Errorf("results = %s", resultsText(rs))
	}
}

func resultsText(rs []Result) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(r.String() + "\n")
	}
	return b.String()
}

const teamRule = `package cairn.guard

deny contains {"msg": "public bucket", "stack": s.name} if {
	some s in input.stacks
	bad(s)
}

bad(s) if s.name == "web"

allowed_regions := data.config.allowed_regions
`

var teamInput = Input{Kind: "plan", Stacks: []Stack{{Name: "web"}}}

// TestBundleCannotLiftATeamDenial: whatever a bundle's modules and data declare, the team's
// denial stands; the bundle only adds its own results.
func TestBundleCannotLiftATeamDenial(t *testing.T) {
	team := set(t, Team, map[string]string{"guard.rego": teamRule, "config.json": `{"config": {"allowed_regions": ["eu-west-1"]}}`})
	attacks := map[string]map[string]string{
		"same package, empty deny":       {"guard.rego": "package cairn.guard\n\ndeny := set()\n"},
		"same package, helper redefined": {"guard.rego": "package cairn.guard\n\nbad(_) := false\n\ndeny contains x if { x := \"none\"; false }\n"},
		"default deny":                   {"guard.rego": "package cairn.guard\n\ndefault deny := set()\n"},
		"import the team package":        {"x.rego": "package cairn.mine\n\nimport data.cairn.guard\n\nwarn contains sprintf(\"team sees %v\", [guard.deny]) if true\n"},
		"data file replacing the team's": {"config.json": `{"cairn": {"guard": {"deny": []}}, "config": {"allowed_regions": ["*"]}}`},
		"package data root":              {"x.rego": "package cairn\n\nguard := {\"deny\": set()}\n"},
		"a rule that fails":              {"x.rego": "package cairn.mine\n\nwarn contains x if { x := 1 / 0 }\n"},
		"warn of the same rule id":       {"guard.rego": "package cairn.guard\n\nwarn contains \"lift cairn.guard\" if true\n"},
	}
	for name, files := range attacks {
		t.Run(name, func(t *testing.T) {
			bundle := set(t, Bundle, files)
			e, err := Compile(context.Background(), team, bundle)
			if err != nil {
				t.Logf("refused at compile: %v", err)
				return // the bundle's policies do not compile: the evaluation fails, closed
			}
			rs, err := e.Evaluate(context.Background(), teamInput)
			if err != nil {
				if !strings.Contains(err.Error(), "bundle policy") {
					t.Errorf("error %v does not say the bundle's policy failed", err)
				}
				t.Logf("evaluation failed: %v", err)
				return // an error is a denial to every caller
			}
			t.Logf("results: %v", rs)
			var kept bool
			for _, r := range rs {
				if r.Origin == Team && r.Rule == "cairn.guard" && r.Level == Deny && r.Stack == "web" {
					kept = true
				}
				if r.Origin == Bundle && strings.Contains(r.Msg, "public bucket") {
					t.Errorf("the bundle's policy read the team's results: %v", r)
				}
			}
			if !kept || !Denied(rs) {
				t.Errorf("team denial lifted: %v", rs)
			}
		})
	}
}

// TestBundleAddsDenials: a bundle's own deny is a denial, with its origin.
func TestBundleAddsDenials(t *testing.T) {
	team := set(t, Team, map[string]string{"ok.rego": "package cairn.ok\n\nwarn contains \"fine\" if false\n"})
	bundle := set(t, Bundle, map[string]string{"mine.rego": "package shop.rules\n\ndeny contains \"no web\" if { some s in input.stacks; s.name == \"web\" }\n"})
	rs := evaluate(t, teamInput, team, bundle)
	if len(rs) != 1 || rs[0].Origin != Bundle || rs[0].Rule != "shop.rules" || rs[0].Msg != "no web" || !Denied(rs) {
		t.Errorf("results = %v", rs)
	}
}

// TestResultShapes: a message is a string or an object with msg, stack and resource;
// anything else is shown as JSON; deny and warn are found in any package.
func TestResultShapes(t *testing.T) {
	s := set(t, Team, map[string]string{"a.rego": `package anything.at_all

deny contains "plain"

deny contains {"msg": "named", "stack": "web", "resource": "Site"}

warn contains {"stack": "web"}

warn contains 7
`})
	got := resultsText(evaluate(t, teamInput, s))
	want := `deny anything.at_all (team policy): plain
deny anything.at_all (team policy) stack web, resource Site: named
warn anything.at_all (team policy): 7
warn anything.at_all (team policy) stack web: {"stack":"web"}
`
	if got != want {
		t.Errorf("results:\n%s\nwant:\n%s", got, want)
	}
}

// TestDenyMustBeASet: a deny that is not a set of messages is an error naming the rule.
func TestDenyMustBeASet(t *testing.T) {
	e, err := Compile(context.Background(), set(t, Team, map[string]string{"a.rego": "package p\n\ndeny := true\n"}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Evaluate(context.Background(), teamInput)
	if err == nil || !strings.Contains(err.Error(), "p: deny is a boolean, not a set of messages") {
		t.Errorf("err = %v", err)
	}
}

// TestErrorsNameFileAndLine: a module that does not parse or compile is named with its
// line, and the error says what to do.
func TestErrorsNameFileAndLine(t *testing.T) {
	for name, src := range map[string]string{
		"syntax":  "package p\n\ndeny contains msg if {\n  msg := \n}\n",
		"unsafe":  "package p\n\ndeny contains msg if {\n  x == 1\n}\n",
		"network": "package p\n\ndeny contains msg if {\n  msg := http.send({\"method\": \"get\", \"url\": \"http://169.254.169.254/\"})\n}\n",
		"runtime": "package p\n\ndeny contains msg if {\n  msg := opa.runtime().env\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(context.Background(), set(t, Bundle, map[string]string{"p.rego": src}))
			if err == nil {
				t.Fatal("compiled")
			}
			if !strings.Contains(err.Error(), "bundle policy bundle-policies/p.rego:") || !strings.Contains(err.Error(), "fix the policy") {
				t.Errorf("err = %v", err)
			}
		})
	}
}

// TestEvaluationTimesOut: an evaluation longer than the engine's timeout is an error that
// names the rule.
func TestEvaluationTimesOut(t *testing.T) {
	e, err := Compile(context.Background(), set(t, Bundle, map[string]string{"slow.rego": `package slow

deny contains "never" if {
	some i in numbers.range(1, 100000000)
	i < 0
}
`}))
	if err != nil {
		t.Fatal(err)
	}
	e.Timeout = 50 * time.Millisecond
	start := time.Now()
	_, err = e.Evaluate(context.Background(), teamInput)
	if err == nil || !strings.Contains(err.Error(), "bundle policies: evaluating slow.deny took longer than 50ms") {
		t.Errorf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("evaluation stopped after %s", d)
	}
}

// TestLoadBoundsThePolicies: a set over MaxBytes is refused, naming it; a data file that is
// not an object, or sets a key another sets, too.
func TestLoadBoundsThePolicies(t *testing.T) {
	big := fstest.MapFS{"a.rego": {Data: []byte(strings.Repeat("#", MaxBytes/2))}, "b.rego": {Data: []byte(strings.Repeat("#", MaxBytes/2+1))}}
	if _, err := Load(big, "dir", Bundle); err == nil || !strings.Contains(err.Error(), "bundle policies in dir exceed") {
		t.Errorf("err = %v", err)
	}
	bad := fstest.MapFS{"a.json": {Data: []byte(`[1]`)}}
	if _, err := Load(bad, "dir", Team); err == nil || !strings.Contains(err.Error(), "dir/a.json: not a JSON object") {
		t.Errorf("err = %v", err)
	}
	dup := fstest.MapFS{"a.json": {Data: []byte(`{"config": {}}`)}, "b.json": {Data: []byte(`{"config": {}}`)}}
	if _, err := Load(dup, "dir", Team); err == nil || !strings.Contains(err.Error(), `key "config" is set by another data file`) {
		t.Errorf("err = %v", err)
	}
}

// TestRegoTestsReportFailures: Test reports a failing test and an erroring one as not
// passed, with file and line.
func TestRegoTestsReportFailures(t *testing.T) {
	s := set(t, Team, map[string]string{
		"p.rego":      "package p\n\ndeny contains \"x\" if input.bad\n",
		"p_test.rego": "package p_test\n\nimport data.p\n\ntest_passes if { count(p.deny) == 1 with input as {\"bad\": true} }\n\ntest_fails if { count(p.deny) == 1 with input as {} }\n",
	})
	res, err := Test(context.Background(), s, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range res {
		got[r.Name] = r.Pass
		if r.File != "team-policies/p_test.rego" || r.Line == 0 {
			t.Errorf("%s at %s:%d", r.Name, r.File, r.Line)
		}
	}
	if len(got) != 2 || !got["data.p_test.test_passes"] || got["data.p_test.test_fails"] {
		t.Errorf("results = %v", got)
	}
}
