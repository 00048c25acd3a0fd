package plan

import (
	"maps"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/seal"
	"github.com/cairn-dev/cairn/internal/state"
)

// protectedConfig is a config of stack net and protected stack db, whose parameter In is
// value (a literal, or lookups), and of app reading db unless noApp.
func protectedConfig(t *testing.T, value string, protected bool) *config.Config {
	t.Helper()
	db := tmpl
	if strings.Contains(value, "/shop/pw") { // a SecureString goes only to a NoEcho parameter
		db = strings.Replace(tmpl, "In: {Type: String, Default: x}", "In: {Type: String, Default: x, NoEcho: true}", 1)
	}
	y := "namespace: shop\nstacks:\n  - name: net\n    parameters: {In: n1}\n    template_body: |" + tmpl + "\n" +
		"  - name: db\n    protected: " + map[bool]string{true: "true", false: "false"}[protected] + "\n    parameters: {In: '" + value + "'}\n    template_body: |" + db + "\n" +
		"    requires: [net]\n"
	cfg, err := config.LoadOptions{Deployment: "shop"}.Load(bundle.FromYAML("cairn.yaml", []byte(y)))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y)
	}
	return cfg
}

// appliedAs is the graph, and the live stacks' hash tags, a push of cfg left behind when
// the live stacks and SSM values were live and ssm: the parameters hashes a run recorded.
func appliedAs(t *testing.T, k seal.Key, cfg *config.Config, live map[string]Live, ssm map[string]config.SSMValue) *state.Graph {
	t.Helper()
	g := applied(t, cfg)
	res := mustMake(t, Input{Config: cfg, Graph: g, Live: live, SSM: ssm, Mode: run.ModePlan, Key: k})
	lookups := map[string][]config.Lookup{}
	for _, s := range cfg.Stacks {
		lookups[s.Name] = s.StoredLookups()
	}
	resolve := Resolver(res.Run, lookups, ssm)
	for name, rs := range res.Run.Stacks {
		params, err := resolve(name, rs.RawParameters, Outputs(res.Run))
		if err != nil {
			t.Fatalf("stack %s: %v", name, err)
		}
		h := run.HashParameters(Seal(k)(rs, params))
		g.Stacks[name].ParametersHash = h
		l := live[rs.StackName]
		l.Tags = maps.Clone(l.Tags)
		l.Tags[state.TagParametersHash] = h
		live[rs.StackName] = l
	}
	return g
}

// TestProtectedStackInputChangesNeedAPlan: a push changing any input of a protected stack
// (a parameter value, an SSM value, a SecureString, an output it reads, another stack's
// output by xref) is refused before it starts, naming the stack; the same change planned
// is an update the reviewer sees; an unchanged push passes.
func TestProtectedStackInputChangesNeedAPlan(t *testing.T) {
	key := testKey(t, "one")
	secure := func(v string) config.SSMValue { return config.NewSSMValue(key, "/shop/pw", config.SecureString, v, 1) }
	plain := func(v string) config.SSMValue { return config.NewSSMValue(key, "/shop/db", "String", v, 1) }
	tests := []struct {
		name        string
		before, now string // db's In
		change      func(live map[string]Live, ssm map[string]config.SSMValue)
		unprotected bool
		want        string
	}{
		{name: "nothing changed", before: "v1", now: "v1"},
		{name: "a parameter value", before: "v1", now: "v2", want: "protected stack(s) db change only through an approved plan"},
		{name: "an SSM value", before: "${ssm /shop/db}", now: "${ssm /shop/db}",
			change: func(_ map[string]Live, ssm map[string]config.SSMValue) { ssm["/shop/db"] = plain("b") }, want: "protected stack(s) db change only"},
		{name: "a SecureString, unchanged", before: "${ssm /shop/pw}", now: "${ssm /shop/pw}"},
		{name: "a SecureString", before: "${ssm /shop/pw}", now: "${ssm /shop/pw}",
			change: func(_ map[string]Live, ssm map[string]config.SSMValue) { ssm["/shop/pw"] = secure("hunter3") }, want: "protected stack(s) db change only"},
		{name: "an output it reads", before: "${output net::Out}", now: "${output net::Out}",
			change: func(live map[string]Live, _ map[string]config.SSMValue) {
				l := live["shop-net"]
				l.Outputs = map[string]string{"Out": "arn:net-2"}
				live["shop-net"] = l
			}, want: "protected stack(s) db change only"},
		{name: "another stack's output", before: "${xref legacy-stack::Out}", now: "${xref legacy-stack::Out}",
			change: func(live map[string]Live, _ map[string]config.SSMValue) {
				live["legacy-stack"] = Live{StackName: "legacy-stack", Status: "UPDATE_COMPLETE", Outputs: map[string]string{"Out": "changed"}}
			}, want: "protected stack(s) db change only"},
		{name: "an unprotected stack may change", before: "v1", now: "v2", unprotected: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ssm := map[string]config.SSMValue{"/shop/db": plain("a"), "/shop/pw": secure("hunter2")}
			before := protectedConfig(t, tt.before, !tt.unprotected)
			live := liveOf(before, "net", "db")
			live["legacy-stack"] = Live{StackName: "legacy-stack", Status: "CREATE_COMPLETE", Outputs: map[string]string{"Out": "first"}}
			g := appliedAs(t, key, before, live, ssm)
			if tt.change != nil {
				tt.change(live, ssm)
			}
			cfg := protectedConfig(t, tt.now, !tt.unprotected)
			for _, mode := range []run.Mode{run.ModeDeploy, run.ModePlan} {
				res := mustMake(t, Input{Config: cfg, Graph: g, Live: live, SSM: ssm, Mode: mode, Key: key})
				got := strings.Join(res.Refusals, "\n")
				switch {
				case mode == run.ModePlan && got != "":
					t.Errorf("plan refused: %s", got)
				case mode == run.ModeDeploy && tt.want == "" && got != "":
					t.Errorf("push refused: %s", got)
				case mode == run.ModeDeploy && tt.want != "" && !strings.Contains(got, tt.want):
					t.Errorf("push: refusals %q, want %q", got, tt.want)
				}
				if want := map[bool]Action{true: Check, false: Update}[tt.want == "" && !tt.unprotected || tt.before == tt.now && tt.change == nil]; actions(res)["db"] != want {
					t.Errorf("%s: db %s, want %s", mode, actions(res)["db"], want)
				}
			}
		})
	}
}

// TestProtectedStackDeletionNeedsAPlan: a push that drops a protected stack from the
// config, or drops its protection, is refused; a plan lists the deletion, and only its
// apply (a run applying an approved plan) deletes the stack.
func TestProtectedStackDeletionNeedsAPlan(t *testing.T) {
	before := protectedConfig(t, "v1", true)
	live := liveOf(before, "net", "db")
	g := appliedAs(t, seal.Unkeyed, before, live, nil)
	g.Stacks["db"].PlanOnly = true
	dropped := load(t, "", "net")
	dropped.Stacks[0].Parameters = map[string]string{"In": "n1"}

	res := mustMake(t, Input{Config: dropped, Graph: g, Live: live})
	if got := strings.Join(res.Refusals, "\n"); !strings.Contains(got, "protected stack(s) db (removed from the config: deleted) change only through an approved plan: run `cairn plan PATH --deployment shop`") {
		t.Errorf("push dropping db: refusals %q", got)
	}
	res = mustMake(t, Input{Config: dropped, Graph: g, Live: live, Mode: run.ModePlan})
	if len(res.Refusals) > 0 || actions(res)["db"] != Delete || !res.Run.Stacks["db"].PlanOnly {
		t.Errorf("plan dropping db: refusals %q, action %s, plan only %v", res.Refusals, actions(res)["db"], res.Run.Stacks["db"].PlanOnly)
	}
	res = mustMake(t, Input{Config: protectedConfig(t, "v1", false), Graph: g, Live: live})
	if got := strings.Join(res.Refusals, "\n"); !strings.Contains(got, "protected stack(s) db (its protection is removed) change only through an approved plan") {
		t.Errorf("push unprotecting db: refusals %q", got)
	}
	// Recorded: a graph written before stacks recorded protection protects nothing yet.
	g.Stacks["db"].PlanOnly = false
	if res := mustMake(t, Input{Config: dropped, Graph: g, Live: live}); len(res.Refusals) > 0 {
		t.Errorf("push dropping an unrecorded stack: %q", res.Refusals)
	}
}

// TestSecretIntoAParameterThatIsNotNoEchoIsRefused: a SecureString, or a secret output of
// a stack of the config (by ${output} or by name), given to a parameter that is not NoEcho
// is refused at push and at plan, before any change set is made (before: a warning, and
// both change sets held the value in clear); to a NoEcho parameter it passes.
func TestSecretIntoAParameterThatIsNotNoEchoIsRefused(t *testing.T) {
	key := testKey(t, "one")
	ssm := map[string]config.SSMValue{"/shop/pw": config.NewSSMValue(key, "/shop/pw", config.SecureString, "hunter2", 1)}
	db := "\n      Parameters:\n        Password: {Type: String, NoEcho: true}\n      Resources:\n        P: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: !Ref Password}}\n      Outputs:\n        Secret: {Value: !GetAtt P.Value}"
	for _, tc := range []struct {
		name, value string
		noEcho      bool
		want        string
	}{
		{"a SecureString", "${ssm /shop/pw}", false, "parameter In receives SecureString /shop/pw but is not NoEcho"},
		{"a secret output", "${output db::Secret}", false, "parameter In receives the secret output Secret of stack db but is not NoEcho"},
		{"a secret output by name", "${xref shop-db::Secret}", false, "parameter In receives the secret output Secret of stack db but is not NoEcho"},
		{"a SecureString to NoEcho", "${ssm /shop/pw}", true, ""},
		{"a secret output to NoEcho", "${output db::Secret}", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := tmpl
			if tc.noEcho {
				app = strings.Replace(tmpl, "In: {Type: String, Default: x}", "In: {Type: String, Default: x, NoEcho: true}", 1)
			}
			y := "namespace: shop\nstacks:\n  - name: db\n    parameters: {Password: hunter22}\n    template_body: |" + db + "\n" +
				"  - name: app\n    requires: [db]\n    parameters: {In: '" + tc.value + "'}\n    template_body: |" + app + "\n"
			cfg, err := config.LoadOptions{Deployment: "shop"}.Load(bundle.FromYAML("cairn.yaml", []byte(y)))
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []run.Mode{run.ModeDeploy, run.ModePlan} {
				res := mustMake(t, Input{Config: cfg, Graph: applied(t, cfg), Live: map[string]Live{}, SSM: ssm, Mode: mode, Key: key})
				got := strings.Join(res.Refusals, "\n")
				if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
					t.Errorf("%s: refusals %q, want %q", mode, got, tc.want)
				}
			}
		})
	}
}
