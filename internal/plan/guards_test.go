package plan

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

// guardConfig is a config of stack keep, stack db (with the keys of db, one a line) and
// the other stacks named, with top at the top of cairn.yaml.
func guardConfig(t *testing.T, top, db string, others ...string) *config.Config {
	t.Helper()
	var b strings.Builder
	b.WriteString("namespace: shop\n" + top + "stacks:\n  - name: keep\n    template_body: |" + tmpl + "\n  - name: db\n")
	for _, l := range strings.Split(db, "\n") {
		if l != "" {
			b.WriteString("    " + l + "\n")
		}
	}
	b.WriteString("    template_body: |" + tmpl + "\n")
	for _, n := range others {
		b.WriteString("  - name: " + n + "\n    template_body: |" + tmpl + "\n")
	}
	cfg, err := config.LoadOptions{Deployment: "shop"}.Load(bundle.FromYAML("cairn.yaml", []byte(b.String())))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, b.String())
	}
	return cfg
}

// guardedAs is the graph and the live stacks a successful push of cfg left behind, with
// its guards recorded (graph-wide ones too unless legacy: a graph written before they were).
func guardedAs(t *testing.T, cfg *config.Config, legacy bool) (*state.Graph, map[string]Live) {
	t.Helper()
	g := applied(t, cfg)
	if !legacy {
		g.Guards = GuardsOf(cfg)
	}
	live := map[string]Live{}
	for _, s := range cfg.Stacks {
		st := g.Stacks[s.Name]
		st.PlanOnly, st.Target = s.Protected, s.Target
		st.TerminationProtection = s.TerminationProtection && !legacy
		l := liveOf(cfg, s.Name)[s.StackName]
		l.TerminationProtection = s.TerminationProtection
		l.Tags = maps.Clone(l.Tags)
		live[target.Key(s.Target.Location(target.Target{}), s.StackName)] = l
	}
	return g, live
}

// TestGuardsJudgedByTheStricter: for every guard, a push is judged by the stricter of the
// graph's last applied setting and its own: loosening one (relaxed) is refused in a push,
// naming the change and the way through an approved plan, and planned it is shown and
// allowed; tightening one passes and is recorded.
func TestGuardsJudgedByTheStricter(t *testing.T) {
	const (
		roleA = "arn:aws:iam::111111111111:role/old"
		roleB = "arn:aws:iam::111111111111:role/new"
	)
	tests := []struct {
		name            string
		oldTop, oldDB   string
		top, db         string
		gone            []string // stacks of the old config the new one leaves out
		legacy          bool     // a graph written before guards were recorded
		wantChanges     []string
		wantRefusal     string // in a push; "" none
		wantDBAction    Action
		wantDBReasonHas string
	}{
		{name: "max_deletions dropped while deleting", oldTop: "deletion_policy: {max_deletions: 2}\n", gone: []string{"a", "b", "c"},
			wantChanges: []string{"guard relaxed: deletion_policy.max_deletions 2 → (none)"},
			wantRefusal: "guard relaxed: deletion_policy.max_deletions 2 → (none): the persistent graph applied the stricter setting, and a push never loosens a guard; nothing was changed: plan it (`cairn plan PATH --deployment shop`), review the plan, which shows the relaxation, then approve it (`cairn approve shop PLAN_ID`); or set it back in cairn.yaml and push again"},
		{name: "max_deletions raised: the applied limit holds", oldTop: "deletion_policy: {max_deletions: 2}\n", top: "deletion_policy: {max_deletions: 5}\n", gone: []string{"a", "b", "c"},
			wantChanges: []string{"guard relaxed: deletion_policy.max_deletions 2 → 5"},
			wantRefusal: "the run would delete 3 stacks (a, b, c), more than deletion_policy.max_deletions 2"},
		{name: "max_deletions dropped, nothing deleted", oldTop: "deletion_policy: {max_deletions: 2}\n",
			wantChanges: []string{"guard relaxed: deletion_policy.max_deletions 2 → (none)"}, wantRefusal: "guard relaxed: deletion_policy.max_deletions 2 → (none)"},
		{name: "max_deletions set", top: "deletion_policy: {max_deletions: 2}\n",
			wantChanges: []string{"guard tightened: deletion_policy.max_deletions (none) → 2"}},
		{name: "max_deletions lowered", oldTop: "deletion_policy: {max_deletions: 3}\n", top: "deletion_policy: {max_deletions: 1}\n",
			wantChanges: []string{"guard tightened: deletion_policy.max_deletions 3 → 1"}},
		{name: "max_deletions of a graph before guards", legacy: true, top: "deletion_policy: {max_deletions: 2}\n",
			wantChanges: []string{"guard tightened: deletion_policy.max_deletions (none) → 2"}},
		{name: "no guards before or now", legacy: true},
		{name: "hand_over_graph_to given", top: "hand_over_graph_to: web\n",
			wantChanges: []string{"guard relaxed: hand_over_graph_to (none) → web"}, wantRefusal: "guard relaxed: hand_over_graph_to (none) → web"},
		{name: "hand_over_graph_to moved", oldTop: "hand_over_graph_to: web\n", top: "hand_over_graph_to: evil\n",
			wantChanges: []string{"guard relaxed: hand_over_graph_to web → evil"}, wantRefusal: "hand_over_graph_to web → evil"},
		{name: "hand_over_graph_to withdrawn", oldTop: "hand_over_graph_to: web\n",
			wantChanges: []string{"guard tightened: hand_over_graph_to web → (none)"}},
		{name: "protected dropped", oldDB: "protected: true",
			wantChanges: []string{"stack db: protected true → false (guard relaxed)"}, wantRefusal: "protected stack(s) db (its protection is removed) change only through an approved plan"},
		{name: "protected set", db: "protected: true",
			wantChanges: []string{"stack db: protected false → true (guard tightened)"}},
		{name: "termination protection dropped", oldDB: "termination_protection: true",
			wantChanges: []string{"stack db: termination_protection on → off (guard relaxed)"}, wantRefusal: "stack db: termination_protection on → off (guard relaxed): the persistent graph applied",
			wantDBAction: Update, wantDBReasonHas: "termination protection changed"},
		{name: "termination protection of a graph before guards, on live", legacy: true, oldDB: "termination_protection: true",
			wantChanges: []string{"stack db: termination_protection on → off (guard relaxed)"}, wantRefusal: "termination_protection on → off", wantDBAction: Update},
		{name: "termination protection set", db: "termination_protection: true",
			wantChanges: []string{"stack db: termination_protection off → on (guard tightened)"}, wantDBAction: Update},
		{name: "service_role of a protected stack", oldDB: "protected: true\nservice_role: " + roleA, db: "protected: true\nservice_role: " + roleB,
			wantChanges:  []string{"stack db: service_role " + roleA + " → " + roleB + " (guard relaxed)"},
			wantRefusal:  "stack db: service_role " + roleA + " → " + roleB + " (guard relaxed)",
			wantDBAction: Update, wantDBReasonHas: "service role changed (" + roleA + " → " + roleB + ")"},
		{name: "service_role of a stack protected in the graph only", oldDB: "protected: true\nservice_role: " + roleA, db: "service_role: " + roleB,
			wantChanges: []string{"stack db: protected true → false (guard relaxed)", "stack db: service_role " + roleA + " → " + roleB + " (guard relaxed)"},
			wantRefusal: "service_role " + roleA + " → " + roleB, wantDBAction: Update},
		{name: "service_role given to a protected stack", oldDB: "protected: true", db: "protected: true\nservice_role: " + roleB,
			wantChanges: []string{"stack db: service_role (none) → " + roleB + " (guard relaxed)"}, wantRefusal: "service_role (none) → " + roleB, wantDBAction: Update},
		{name: "service_role of an unprotected stack", oldDB: "service_role: " + roleA, db: "service_role: " + roleB,
			wantChanges: []string{"stack db: service_role " + roleA + " → " + roleB}, wantDBAction: Update, wantDBReasonHas: "service role changed"},
		{name: "role_arn of a protected stack", oldDB: "protected: true\nregion: eu-west-1\nrole_arn: " + roleA, db: "protected: true\nregion: eu-west-1\nrole_arn: " + roleB,
			wantChanges: []string{"stack db: role_arn " + roleA + " → " + roleB + " (guard relaxed)"}, wantRefusal: "role_arn " + roleA + " → " + roleB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := guardConfig(t, tt.oldTop, tt.oldDB, tt.gone...)
			cfg := guardConfig(t, tt.top, tt.db)
			g, live := guardedAs(t, old, tt.legacy)
			var got []string
			for _, c := range GuardChanges(cfg, g, live, target.Target{}) {
				got = append(got, c.String())
			}
			if !slices.Equal(got, tt.wantChanges) {
				t.Fatalf("changes:\n%q\nwant\n%q", got, tt.wantChanges)
			}
			push := mustMake(t, Input{Config: cfg, Graph: g, Live: live})
			refusals := strings.Join(push.Refusals, "\n")
			if tt.wantRefusal == "" && refusals != "" || !strings.Contains(refusals, tt.wantRefusal) {
				t.Fatalf("push refusals:\n%s\nwant %q", refusals, tt.wantRefusal)
			}
			if tt.wantRefusal == "" && push.Run.Guards.MaxDeletions != cfg.DeletionPolicy.MaxDeletions {
				t.Errorf("the run records guards %+v", *push.Run.Guards)
			}
			planned := mustMake(t, Input{Config: cfg, Graph: g, Live: live, Mode: run.ModePlan})
			if len(planned.Refusals) > 0 {
				t.Fatalf("planned, refused: %q", planned.Refusals)
			}
			if n := len(planned.Run.GuardChanges); n != len(tt.wantChanges) {
				t.Fatalf("the plan shows %d guard change(s), want %d", n, len(tt.wantChanges))
			}
			for _, gone := range tt.gone {
				if actions(planned)[gone] != Delete {
					t.Errorf("planned: %s %s, want delete", gone, actions(planned)[gone])
				}
			}
			want := tt.wantDBAction
			if want == "" {
				want = Check
			}
			for _, d := range planned.Decisions {
				if d.Stack == "db" && (d.Action != want || !strings.Contains(d.Reason, tt.wantDBReasonHas)) {
					t.Errorf("db: %s %q, want %s %q", d.Action, d.Reason, want, tt.wantDBReasonHas)
				}
			}
		})
	}
}

func TestStricterMaxDeletions(t *testing.T) {
	tests := []struct{ applied, pushed, want int }{
		{0, 0, 0}, {0, 3, 3}, {3, 0, 3}, {3, 5, 3}, {5, 3, 3}, {2, 2, 2},
	}
	for _, tt := range tests {
		if got := StricterMaxDeletions(tt.applied, tt.pushed); got != tt.want {
			t.Errorf("StricterMaxDeletions(%d, %d) = %d, want %d", tt.applied, tt.pushed, got, tt.want)
		}
	}
}
