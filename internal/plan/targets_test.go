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
	live := map[string]Live{
		// Only the home shop-net exists: west's is to be created in us-west-2.
		"shop-net": {StackName: "shop-net", StackID: "arn:aws:cloudformation:us-east-1:000000000000:stack/shop-net/1", Status: "CREATE_COMPLETE",
			Tags: Tags(cfg, cfg.Stack("home"), nil, state.BundleRef{})},
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
