package plan

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

// TestPlanAcrossTargets: a stack is found live in its own account and region only (the same
// name elsewhere is another stack); a stack whose place cannot be reached fails with the
// reason, and one leaving the config there waits rather than being dropped; stacks of
// other places are planned as usual.
func TestPlanAcrossTargets(t *testing.T) {
	cfg, err := config.LoadOptions{Deployment: "shop"}.Load(bundle.FromYAML("cairn.yaml", []byte(`namespace: shop
stacks:
  - {name: home, stack_name: shop-net, template_body: "Resources: {T: {Type: AWS::SNS::Topic}}"}
  - {name: west, stack_name: shop-net, region: us-west-2, template_body: "Resources: {T: {Type: AWS::SNS::Topic}}"}
  - {name: far, region: eu-west-1, role_arn: "arn:aws:iam::111111111111:role/r", template_body: "Resources: {T: {Type: AWS::SNS::Topic}}"}
`)))
	if err != nil {
		t.Fatal(err)
	}
	home := target.Target{Account: "000000000000", Region: "us-east-1"}
	west := target.Target{Region: "us-west-2"}
	far := target.Target{Account: "111111111111", Region: "eu-west-1"}
	s := cfg.Stack("west")
	homeTags := Tags(cfg, cfg.Stack("home"), nil, state.BundleRef{})
	homeTags[state.TagTemplateHash] = TemplateHash(cfg.Stack("home")) // as the graph records it
	live := map[string]Live{
		// Only the home shop-net exists: west's is to be created in us-west-2.
		"shop-net": {StackName: "shop-net", StackID: "arn:aws:cloudformation:us-east-1:000000000000:stack/shop-net/1", Status: "CREATE_COMPLETE",
			Tags: homeTags},
	}
	g := &state.Graph{Namespace: "shop", Key: "shop", Stacks: map[string]*state.Stack{
		"home": {Name: "home", StackName: "shop-net", TemplateHash: TemplateHash(cfg.Stack("home"))},
		"gone": {Name: "gone", StackName: "shop-gone", Target: target.Spec{Region: "eu-west-1", RoleARN: "arn:aws:iam::111111111111:role/r"}},
	}}
	res := mustMake(t, Input{Config: cfg, Graph: g, Live: live, Home: home,
		Unreachable: map[target.Target]string{far: "cannot reach account 111111111111 in eu-west-1: AccessDenied: no"}})
	got := actions(res)
	want := map[string]Action{"home": Check, "west": Create, "far": Unreachable, "gone": Unreachable}
	for n, a := range want {
		if got[n] != a {
			t.Errorf("%s: %s, want %s", n, got[n], a)
		}
	}
	r := res.Run
	if r.Stacks["west"].At != west || r.Stacks["west"].Key() != "/us-west-2/shop-net" || r.Stacks["west"].Target != s.Target {
		t.Errorf("west: at %v key %s", r.Stacks["west"].At, r.Stacks["west"].Key())
	}
	if f := r.Stacks["far"]; f.Phase != run.Failed || !strings.Contains(f.Reason, "AccessDenied") || f.At != far {
		t.Errorf("far: %s %q at %v", f.Phase, f.Reason, f.At)
	}
	if gs := r.Stacks["gone"]; gs.Phase != run.Failed || !strings.HasPrefix(gs.Reason, "deletion waits: cannot reach") {
		t.Errorf("gone: %s %q", gs.Phase, gs.Reason)
	}
}

// TestMovedStackIsRefused: a stack of the graph whose config now puts it in another region
// or account, or names it otherwise, would leave the old stack behind, out of the graph;
// the run is refused before any call, naming both places and the way to move a stack.
func TestMovedStackIsRefused(t *testing.T) {
	home := target.Target{Account: "000000000000", Region: "us-east-1"}
	for _, tc := range []struct {
		name, keys string
		graph      state.Stack
		want       string
	}{
		{"region changed", "region: us-west-2", state.Stack{StackName: "shop-db"},
			"stack db: it now names shop-db (cairn's account, us-west-2), but the graph's is shop-db: cairn does not move or rename a live stack"},
		{"account changed", `role_arn: "arn:aws:iam::111111111111:role/r"`, state.Stack{StackName: "shop-db"},
			"stack db: it now names shop-db (111111111111, cairn's region), but the graph's is shop-db:"},
		{"back home", "", state.Stack{StackName: "shop-db", Target: target.Spec{Region: "eu-west-1"}},
			"stack db: it now names shop-db, but the graph's is shop-db (cairn's account, eu-west-1):"},
		{"renamed", "stack_name: shop-database", state.Stack{StackName: "shop-db"},
			"stack db: it now names shop-database, but the graph's is shop-db:"},
		{"the same role, another name for the region", "region: us-east-1", state.Stack{StackName: "shop-db"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys := ""
			if tc.keys != "" {
				keys = ", " + tc.keys
			}
			cfg, err := config.LoadOptions{Deployment: "shop"}.Load(bundle.FromYAML("cairn.yaml", []byte(`namespace: shop
stacks:
  - {name: db`+keys+`, template_body: "Resources: {T: {Type: AWS::SNS::Topic}}"}
`)))
			if err != nil {
				t.Fatal(err)
			}
			gs := tc.graph
			gs.Name, gs.TemplateHash = "db", TemplateHash(cfg.Stack("db"))
			g := &state.Graph{Namespace: "shop", Key: "shop", Stacks: map[string]*state.Stack{"db": &gs}}
			res := mustMake(t, Input{Config: cfg, Graph: g, Home: home})
			got := strings.Join(res.Refusals, "\n")
			if tc.want == "" {
				if got != "" {
					t.Fatalf("refused: %s", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) || !strings.Contains(got, "give the stack a new name in cairn.yaml") {
				t.Fatalf("refusals %q, want %q", got, tc.want)
			}
			if _, ok := res.Run.Stacks["db"]; ok {
				t.Fatal("the moved stack is still planned")
			}
		})
	}
}
