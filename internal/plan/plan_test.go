package plan

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
)

const tmpl = `
      Parameters:
        In: {Type: String, Default: x}
      Resources:
        Topic: {Type: AWS::SNS::Topic}
      Outputs:
        Out: {Value: !Ref Topic}`

// load builds a config of the named stacks; "b<-a" style edges come from output lookups.
func load(t *testing.T, extra string, stacks ...string) *config.Config {
	t.Helper()
	var b strings.Builder
	b.WriteString("namespace: shop\n" + extra + "stacks:\n")
	for _, s := range stacks {
		name, dep, _ := strings.Cut(s, "<-")
		b.WriteString("  - name: " + name + "\n")
		if dep != "" {
			b.WriteString("    parameters: {In: '${output " + dep + "::Out}'}\n")
		}
		b.WriteString("    template_body: |" + tmpl + "\n")
	}
	cfg, err := config.LoadOptions{Deployment: "shop"}.Load(bundle.FromYAML("cairn.yaml", []byte(b.String())))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, b.String())
	}
	return cfg
}

func liveOf(cfg *config.Config, names ...string) map[string]Live {
	live := map[string]Live{}
	for _, n := range names {
		s := cfg.Stack(n)
		tags := Tags(cfg, s, s.Tags, state.BundleRef{})
		maps.Copy(tags, state.StackTags(cfg.Namespace, cfg.PersistentGraphKey, state.BundleRef{}, &state.Stack{Name: n, TemplateHash: TemplateHash(s)}))
		live[s.StackName] = Live{StackName: s.StackName, StackID: "id-" + n, Status: "CREATE_COMPLETE",
			Tags: tags, Outputs: map[string]string{"Out": "arn:" + n}}
	}
	return live
}

// oldTemplate makes stack name of g and live as a run applied it before its template
// changed: the graph and the stack's tag both hold the old template's hash.
func oldTemplate(g *state.Graph, live map[string]Live, name string) {
	g.Stacks[name].TemplateHash = "old"
	l := live[g.Stacks[name].StackName]
	l.Tags = maps.Clone(l.Tags)
	l.Tags[state.TagTemplateHash] = "old"
	live[l.StackName] = l
}

// applied is the graph a successful run over cfg leaves behind.
func applied(t *testing.T, cfg *config.Config) *state.Graph {
	t.Helper()
	g := &state.Graph{Namespace: "shop", Key: "shop", Stacks: map[string]*state.Stack{}}
	dg, err := cfg.Graph()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cfg.Stacks {
		g.Stacks[s.Name] = &state.Stack{Name: s.Name, StackName: s.StackName, Requires: dg.Dependencies(s.Name), TemplateHash: TemplateHash(s)}
	}
	return g
}

func actions(r *Result) map[string]Action {
	m := map[string]Action{}
	for _, d := range r.Decisions {
		m[d.Stack] = d.Action
	}
	return m
}

func mustMake(t *testing.T, in Input) *Result {
	t.Helper()
	in.RunID, in.Deployment, in.Now = "r1", "shop", time.Unix(0, 0)
	res, err := Make(in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestFirstRunCreatesEverything(t *testing.T) {
	cfg := load(t, "", "net", "db<-net", "app<-db")
	res := mustMake(t, Input{Config: cfg})
	if got := actions(res); !maps.Equal(got, map[string]Action{"net": Create, "db": Create, "app": Create}) {
		t.Fatalf("actions %v", got)
	}
	if res.Refusals != nil {
		t.Fatalf("refusals %v", res.Refusals)
	}
	if req := res.Run.Stacks["app"].Requires; !slices.Equal(req, []string{"db"}) {
		t.Fatalf("app requires %v", req)
	}
	if res.Run.Stacks["net"].Exists || res.Run.Stacks["net"].StackName != "shop-net" {
		t.Fatalf("net: %+v", res.Run.Stacks["net"])
	}
}

func TestUnchangedRunOnlyChecks(t *testing.T) {
	cfg := load(t, "", "net", "db<-net")
	res := mustMake(t, Input{Config: cfg, Graph: applied(t, cfg), Live: liveOf(cfg, "net", "db")})
	if got := actions(res); !maps.Equal(got, map[string]Action{"net": Check, "db": Check}) {
		t.Fatalf("actions %v", got)
	}
	if s := res.Run.Stacks["db"]; !s.Exists || s.Force || s.Outputs["Out"] != "arn:db" {
		t.Fatalf("db: %+v", s)
	}
}

func TestUpdatesAndAdoption(t *testing.T) {
	cfg := load(t, "", "net", "db<-net", "cache")
	g := applied(t, cfg)
	live := liveOf(cfg, "net", "db", "cache")
	oldTemplate(g, live, "net")
	delete(g.Stacks, "cache")
	l := live["shop-db"]
	l.Tags = maps.Clone(l.Tags)
	l.Tags["team"] = "someone-else"
	live["shop-db"] = l
	res := mustMake(t, Input{Config: cfg, Graph: g, Live: live})
	if got := actions(res); !maps.Equal(got, map[string]Action{"net": Update, "db": Check, "cache": Adopt}) {
		t.Fatalf("actions %v", got)
	}
	// A tag the config does not set is not a reason to update; one it sets differently is.
	cfg2 := load(t, "tags: {team: payments}\n", "net", "db<-net", "cache")
	res = mustMake(t, Input{Config: cfg2, Graph: applied(t, cfg2), Live: live})
	if got := actions(res)["db"]; got != Update || !res.Run.Stacks["db"].Force {
		t.Fatalf("db %s", got)
	}
}

func TestDeletionsDependentsFirstAndGuards(t *testing.T) {
	old := load(t, "", "net", "db<-net", "app<-db", "keep", "guarded", "exporter")
	cfg := load(t, "", "keep")
	live := liveOf(old, "net", "db", "app", "keep", "guarded", "exporter")
	g := applied(t, old)
	gl := live["shop-guarded"]
	gl.TerminationProtection = true
	live["shop-guarded"] = gl
	ex := live["shop-exporter"]
	ex.Exports = map[string]string{"Out": "shop-exporter-Out"}
	live["shop-exporter"] = ex
	res := mustMake(t, Input{Config: cfg, Graph: g, Live: live, Importers: map[string][]string{"shop-exporter-Out": {"shop-keep"}}})
	want := map[string]Action{"keep": Check, "net": Delete, "db": Delete, "app": Delete, "guarded": Refuse, "exporter": Refuse}
	if got := actions(res); !maps.Equal(got, want) {
		t.Fatalf("actions %v, want %v", got, want)
	}
	if r := res.Run.Stacks["net"].Requires; !slices.Equal(r, []string{"db"}) {
		t.Fatalf("net waits for %v, want db", r)
	}
	if r := res.Run.Stacks["db"].Requires; !slices.Equal(r, []string{"app"}) {
		t.Fatalf("db waits for %v, want app", r)
	}
	if s := res.Run.Stacks["exporter"]; s.Phase != run.Failed || s.Reason != "deletion refused: export shop-exporter-Out is imported by shop-keep: remove the imports first" {
		t.Fatalf("exporter %s %q", s.Phase, s.Reason)
	}
	if s := res.Run.Stacks["guarded"]; s.Phase != run.Failed || !strings.HasPrefix(s.Reason, "deletion refused: termination protection is on") {
		t.Fatalf("guarded %s %q", s.Phase, s.Reason)
	}
}

func TestDeletionRequiresMatchingTags(t *testing.T) {
	old := load(t, "", "keep", "other")
	cfg := load(t, "", "keep")
	live := liveOf(old, "keep", "other")
	l := live["shop-other"]
	l.Tags = map[string]string{"cairn:namespace": "shop", "cairn:graph-key": "elsewhere", "cairn:name": "other"}
	live["shop-other"] = l
	res := mustMake(t, Input{Config: cfg, Graph: applied(t, old), Live: live})
	s := res.Run.Stacks["other"]
	if s.Phase != run.Failed || !strings.Contains(s.Reason, `cairn:graph-key="elsewhere"`) {
		t.Fatalf("other %s %q", s.Phase, s.Reason)
	}
}

func TestMaxDeletionsRefusesTheRun(t *testing.T) {
	old := load(t, "", "keep", "a", "b", "c")
	cfg := load(t, "deletion_policy: {max_deletions: 2}\n", "keep")
	in := Input{Config: cfg, Graph: applied(t, old), Live: liveOf(old, "keep", "a", "b", "c")}
	res := mustMake(t, in)
	want := "the run would delete 3 stacks (a, b, c), more than deletion_policy.max_deletions 2: plan and approve it (`cairn plan PATH --deployment shop`)"
	if !slices.Equal(res.Refusals, []string{want}) {
		t.Fatalf("refusals %q", res.Refusals)
	}
	in.AllowDeletions = true
	if res := mustMake(t, in); res.Refusals != nil {
		t.Fatalf("approved plan refused: %v", res.Refusals)
	}
}

func TestVanishedStacks(t *testing.T) {
	old := load(t, "", "keep", "gone")
	cfg := load(t, "", "keep")
	res := mustMake(t, Input{Config: cfg, Graph: applied(t, old), Live: map[string]Live{}})
	if got := actions(res); !maps.Equal(got, map[string]Action{"keep": Create, "gone": Drop}) {
		t.Fatalf("actions %v", got)
	}
	if _, ok := res.Run.Stacks["gone"]; ok {
		t.Fatal("a vanished stack must not be deleted again")
	}
}

func TestFailedAndForeignStacks(t *testing.T) {
	cfg := load(t, "", "a", "b", "c", "d", "e")
	live := liveOf(cfg, "a", "b", "c", "d", "e")
	set := func(name, status string, tags map[string]string) {
		l := live["shop-"+name]
		l.Status = status
		if tags != nil {
			l.Tags = tags
		}
		live["shop-"+name] = l
	}
	set("a", "ROLLBACK_COMPLETE", nil)
	set("b", "ROLLBACK_COMPLETE", map[string]string{})
	set("c", "UPDATE_IN_PROGRESS", nil)
	set("d", "UPDATE_ROLLBACK_FAILED", nil)
	set("e", "CREATE_COMPLETE", map[string]string{"owner": "someone"})
	g := applied(t, cfg)
	delete(g.Stacks, "e")
	res := mustMake(t, Input{Config: cfg, Graph: g, Live: live})
	if res.Run.Stacks["a"].Intent != run.IntentRecreate || actions(res)["a"] != Recreate {
		t.Fatalf("a: %s", res.Run.Stacks["a"].Intent)
	}
	want := []string{
		"stack shop-b is ROLLBACK_COMPLETE but its cairn tags do not name namespace shop, graph shop, stack b: delete it by hand or tag it",
		"stack shop-d is UPDATE_ROLLBACK_FAILED: recover it with `cairn recover shop d`, then push again",
		"stack shop-e exists but cairn did not create it (no cairn:* tags): rename the stack in the config, or adopt it: tag it with cairn:namespace=shop, cairn:graph-key=shop, cairn:name=e (the command keeps its template, parameters and tags, and adds cairn's), then push again: `aws cloudformation update-stack --stack-name shop-e --use-previous-template --capabilities CAPABILITY_IAM CAPABILITY_NAMED_IAM CAPABILITY_AUTO_EXPAND --tags Key=cairn:namespace,Value=shop Key=cairn:graph-key,Value=shop Key=cairn:name,Value=e Key=owner,Value=someone`; the push that adopts it gives it the tags of cairn.yaml, which lacks owner: add it under tags to keep it",
	}
	if !slices.Equal(res.Refusals, want) {
		t.Fatalf("refusals\n%s", strings.Join(res.Refusals, "\n"))
	}
	// A stack another hand is changing is not refused: the run waits for it to settle.
	if !maps.Equal(res.Busy, map[string]string{"shop-c": "UPDATE_IN_PROGRESS"}) || res.Run.Stacks["c"] == nil {
		t.Errorf("busy %v", res.Busy)
	}
}

// TestBusyStacksWait: stacks in a transient state (a cleanup after a replacement, an update
// cairn did not start), kept or deleted, are Busy; REVIEW_IN_PROGRESS is not. The
// reason given when they never settle names the command used.
func TestBusyStacksWait(t *testing.T) {
	cfg := load(t, "", "a", "b", "r")
	old := load(t, "", "a", "b", "r", "gone")
	live := liveOf(old, "a", "b", "r", "gone")
	for name, status := range map[string]string{"a": "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS", "r": "REVIEW_IN_PROGRESS", "gone": "DELETE_IN_PROGRESS"} {
		l := live["shop-"+name]
		l.Status = status
		live["shop-"+name] = l
	}
	res := mustMake(t, Input{Config: cfg, Graph: applied(t, old), Live: live, Mode: run.ModePlan})
	if want := map[string]string{"shop-a": "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS", "shop-gone": "DELETE_IN_PROGRESS"}; !maps.Equal(res.Busy, want) || len(res.Refusals) > 0 {
		t.Fatalf("busy %v refusals %v", res.Busy, res.Refusals)
	}
	for _, tc := range []struct{ command, want string }{
		{"plan", "then plan again (`cairn plan PATH --deployment shop`)"},
		{"push", "then push again (`cairn push PATH --deployment shop`)"},
		{"apply", "then apply again (`cairn apply PATH --deployment shop`)"},
		{"approve", "then approve again (`cairn approve shop P1`)"},
	} {
		got := BusyReason(res.Busy, tc.command, "shop", "P1", 15*time.Minute)
		if !strings.HasPrefix(got, "stack(s) shop-a (UPDATE_COMPLETE_CLEANUP_IN_PROGRESS), shop-gone (DELETE_IN_PROGRESS) stayed busy for 15m0s: ") || !strings.HasSuffix(got, tc.want) {
			t.Errorf("%s: %s", tc.command, got)
		}
	}
}

func TestLockedAndDisabled(t *testing.T) {
	cfg := load(t, "", "a", "b")
	yaml := strings.Replace(strings.Replace(cfgYAML(t, "a", "b"), "  - name: a\n", "  - name: a\n    locked: true\n", 1), "  - name: b\n", "  - name: b\n    enabled: false\n", 1)
	cfg2, err := config.LoadOptions{Deployment: "shop"}.Load(bundle.FromYAML("cairn.yaml", []byte(yaml)))
	if err != nil {
		t.Fatal(err)
	}
	res := mustMake(t, Input{Config: cfg2, Graph: applied(t, cfg), Live: liveOf(cfg, "a", "b")})
	if got := actions(res); !maps.Equal(got, map[string]Action{"a": Read, "b": Disabled}) {
		t.Fatalf("actions %v", got)
	}
	if _, ok := res.Run.Stacks["b"]; ok {
		t.Fatal("a disabled stack must not be in the run (and never deleted)")
	}
	if res.Run.External["b::Out"] != "arn:b" {
		t.Fatalf("disabled stack's outputs not available to lookups: %v", res.Run.External)
	}
}

func cfgYAML(t *testing.T, names ...string) string {
	var b strings.Builder
	b.WriteString("namespace: shop\nstacks:\n")
	for _, n := range names {
		b.WriteString("  - name: " + n + "\n    template_body: |" + tmpl + "\n")
	}
	return b.String()
}

func TestNoConfigChangesNothing(t *testing.T) {
	if _, err := Make(Input{}); err == nil || err.Error() != "no valid config: nothing is deployed and nothing is deleted" {
		t.Fatalf("err %v", err)
	}
}

func TestProtectedStacksChangeOnlyThroughAPlan(t *testing.T) {
	protect := func(cfg *config.Config, name string) {
		for _, s := range cfg.Stacks {
			if s.Name == name {
				s.Protected = true
			}
		}
	}
	tests := []struct {
		name        string
		changed     string // stack whose template changed
		mode        run.Mode
		wantRefusal string
	}{
		{name: "protected stack updated", changed: "db", mode: run.ModeDeploy, wantRefusal: "protected stack(s) db change only through an approved plan: run `cairn plan PATH --deployment shop`"},
		{name: "input of a protected stack changes", changed: "net", mode: run.ModeDeploy, wantRefusal: "protected stack(s) db (its input net may change) change only"},
		{name: "only a dependent changes", changed: "app", mode: run.ModeDeploy},
		{name: "plan runs may touch it", changed: "db", mode: run.ModePlan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := load(t, "", "net", "db<-net", "app<-db")
			protect(cfg, "db")
			g, live := applied(t, cfg), liveOf(cfg, "net", "db", "app")
			oldTemplate(g, live, tt.changed)
			res := mustMake(t, Input{Config: cfg, Graph: g, Live: live, Mode: tt.mode})
			got := strings.Join(res.Refusals, "\n")
			if tt.wantRefusal == "" && got != "" || tt.wantRefusal != "" && !strings.Contains(got, tt.wantRefusal) {
				t.Fatalf("refusals %q, want %q", got, tt.wantRefusal)
			}
		})
	}
}

func TestPlanRunsMayExceedMaxDeletions(t *testing.T) {
	old := load(t, "deletion_policy: {max_deletions: 1}\n", "a", "b", "keep")
	cfg := load(t, "deletion_policy: {max_deletions: 1}\n", "keep")
	for _, mode := range []run.Mode{run.ModeDeploy, run.ModePlan} {
		res := mustMake(t, Input{Config: cfg, Graph: applied(t, old), Live: liveOf(old, "a", "b", "keep"), Mode: mode})
		refused := strings.Contains(strings.Join(res.Refusals, "\n"), "more than deletion_policy.max_deletions 1: plan and approve it (`cairn plan PATH --deployment shop`)")
		if refused != (mode == run.ModeDeploy) {
			t.Errorf("mode %s: refusals %v", mode, res.Refusals)
		}
	}
}

// TestGraphHashesTrustedOnlyWhereTheLiveTagsAgree: a stack whose input hash tags differ from
// what the graph records was changed by someone the graph does not know of (a fenced run,
// an update outside cairn), so its unchanged inputs must not spare it a change set.
func TestGraphHashesTrustedOnlyWhereTheLiveTagsAgree(t *testing.T) {
	p1 := run.HashParameters(map[string]string{}) // what the stack, which has no parameters, was applied with
	tests := []struct {
		name       string
		tags       map[string]string // set on the live stack; "" removes the tag
		wantAction Action
		wantReason string
	}{
		{name: "tags agree", wantAction: Check},
		{name: "parameters changed by a fenced run", tags: map[string]string{state.TagParametersHash: "aaaaaaaaaaaaaaaaaaaa"}, wantAction: Update,
			wantReason: "the live stack's tag cairn:parameters-sha256 is aaaaaaaaaaaa where the graph says " + p1[:12] + ": re-planned"},
		{name: "template changed outside cairn", tags: map[string]string{state.TagTemplateHash: "bbbb"}, wantAction: Update,
			wantReason: "tag cairn:template-sha256 is bbbb where the graph says "},
		{name: "hash tags missing", tags: map[string]string{state.TagTemplateHash: "", state.TagParametersHash: ""}, wantAction: Update,
			wantReason: "tag cairn:template-sha256 is (none) where the graph says "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := load(t, "", "net")
			g := applied(t, cfg)
			g.Stacks["net"].ParametersHash = p1
			live := liveOf(cfg, "net")
			l := live["shop-net"]
			l.Tags[state.TagParametersHash] = p1
			for k, v := range tt.tags {
				if v == "" {
					delete(l.Tags, k)
				} else {
					l.Tags[k] = v
				}
			}
			res := mustMake(t, Input{Config: cfg, Graph: g, Live: live})
			d := res.Decisions[0]
			if d.Action != tt.wantAction || !strings.Contains(d.Reason, strings.TrimSuffix(tt.wantReason, ": re-planned")) {
				t.Fatalf("decision %s: %q, want %s: %q", d.Action, d.Reason, tt.wantAction, tt.wantReason)
			}
			if force := res.Run.Stacks["net"].Force; force != (tt.wantAction == Update) {
				t.Errorf("force %v", force)
			}
		})
	}
}

// TestGraphOwner: a graph another deployment owns is refused before anything is decided,
// naming the owner and the way to take it over; take_over_graph_from naming the owner lets
// the run take it over only when the owner's graph records its consent
// (hand_over_graph_to naming this deployment); a graph with no owner recorded is anyone's
// first.
func TestGraphOwner(t *testing.T) {
	tests := []struct {
		name, owner, extra string
		handOver           string // the owner's consent, as its graph records it
		wantRefusal        string
		wantTakeOver       string
	}{
		{name: "own graph", owner: "shop"},
		{name: "no owner recorded", owner: ""},
		{name: "another deployment's", owner: "guard", wantRefusal: "the persistent graph shop/shop belongs to deployment guard: deployment shop may not write it; if shop is guard renamed, set `take_over_graph_from: guard` in cairn.yaml and have guard consent with `hand_over_graph_to: shop`, else choose another persistent_graph_key"},
		{name: "taken over with consent", owner: "guard", extra: "take_over_graph_from: guard\n", handOver: "shop", wantTakeOver: "guard"},
		{name: "taken over without consent", owner: "guard", extra: "take_over_graph_from: guard\n",
			wantRefusal: "deployment shop may not take over the persistent graph shop/shop of deployment guard (take_over_graph_from): the graph records no consent; nothing was changed: the owner consents by setting `hand_over_graph_to: shop` in deployment guard's config and applying it through an approved plan"},
		{name: "taken over with consent for another", owner: "guard", extra: "take_over_graph_from: guard\n", handOver: "web",
			wantRefusal: "the graph hands it over to deployment web only"},
		{name: "take over names another", owner: "guard", extra: "take_over_graph_from: someone\n", handOver: "shop", wantRefusal: "belongs to deployment guard"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := load(t, "", "net", "gone")
			cfg := load(t, tt.extra, "net")
			g := applied(t, old)
			g.Deployment = tt.owner
			if tt.handOver != "" {
				g.Guards = &run.Guards{HandOverTo: tt.handOver}
			}
			res := mustMake(t, Input{Config: cfg, Graph: g, Live: liveOf(old, "net", "gone")})
			got := strings.Join(res.Refusals, "\n")
			if tt.wantRefusal == "" && got != "" || tt.wantRefusal != "" && !strings.Contains(got, tt.wantRefusal) {
				t.Fatalf("refusals %q, want %q", got, tt.wantRefusal)
			}
			if tt.wantRefusal != "" && (len(res.Decisions) > 0 || len(res.Run.Stacks) > 0) {
				t.Errorf("a refused graph got decisions %v", res.Decisions)
			}
			if tt.wantRefusal == "" && actions(res)["gone"] != Delete {
				t.Errorf("actions %v", actions(res))
			}
			if res.TakesOverFrom != tt.wantTakeOver {
				t.Errorf("takes over from %q, want %q", res.TakesOverFrom, tt.wantTakeOver)
			}
		})
	}
}

// TestNamespacesOutsideTheAllowList: a stack of the graph named outside the allowed
// namespaces is never deleted, and a plan whose stacks are outside them cannot be applied.
func TestNamespacesOutsideTheAllowList(t *testing.T) {
	old := load(t, "", "net", "gone")
	cfg := load(t, "", "net")
	g := applied(t, old)
	g.Stacks["gone"].StackName = "finance-gone"
	live := liveOf(old, "net", "gone")
	l := live["shop-gone"]
	l.StackName = "finance-gone"
	live = map[string]Live{"shop-net": live["shop-net"], "finance-gone": l}
	res := mustMake(t, Input{Config: cfg, Graph: g, Live: live, Namespaces: config.Namespaces{"shop"}})
	if s := res.Run.Stacks["gone"]; actions(res)["gone"] != Refuse || s.Reason != `deletion refused: stack name "finance-gone" is outside the namespaces this cairn may manage: it must be named shop-*` {
		t.Errorf("gone: %s %q", actions(res)["gone"], s.Reason)
	}
	p := &Document{ID: "p1", Namespace: "shop", Stacks: []Stack{{Name: "net", StackName: "shop-net"}, {Name: "x", StackName: "web-x"}}}
	if got := p.Outside(config.Namespaces{"shop", "web"}); got != nil {
		t.Errorf("allowed plan refused: %v", got)
	}
	if got := strings.Join(p.Outside(config.Namespaces{"shop"}), "\n"); got != `plan p1: stack x: stack name "web-x" is outside the namespaces this cairn may manage: it must be named shop-*; re-plan` {
		t.Errorf("outside: %q", got)
	}
	if got := strings.Join(p.Outside(config.Namespaces{"web"}), "\n"); !strings.HasPrefix(got, `plan p1: namespace "shop" is not one this cairn may manage (allowed: web)`) {
		t.Errorf("outside: %q", got)
	}
}
