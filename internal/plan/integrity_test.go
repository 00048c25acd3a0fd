package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/seal"
	"github.com/cairn-dev/cairn/internal/state"
)

// TestPlanIntegrity: an approval checks, per stack entry, that a plan document names only
// what its plan run made for the graph it names; each way an edited document can point
// elsewhere is refused with the check that failed, and an intact one passes.
func TestPlanIntegrity(t *testing.T) {
	const id = "20261130-120000000-1a2b3c4d"
	csID := "arn:aws:cloudformation:us-east-1:000000000000:changeSet/cairn-" + id + "-1/aaaa"
	stackID := "arn:aws:cloudformation:us-east-1:000000000000:stack/shop-web/bbbb"
	intact := func() (*Document, Observed) {
		p := &Document{ID: id, Deployment: "shop", Namespace: "shop", GraphKey: "shop", Status: Planned,
			Bundle: BundleVersion{Bucket: "cairn-state", Key: "plans/shop.zip", SHA256: "s1"},
			Stacks: []Stack{{Name: "web", StackName: "shop-web", StackID: stackID, Action: Update, ChangeSetName: "cairn-" + id + "-1", ChangeSetID: csID},
				{Name: "old", StackName: "shop-old", Action: Delete}},
			Run: &run.Run{ID: id, Deployment: "shop", Mode: run.ModePlan, Stacks: map[string]*run.Stack{
				"web": {Name: "web", StackName: "shop-web", StackID: stackID, Intent: run.IntentDeploy, Phase: run.Ready, ChangeSetName: "cairn-" + id + "-1", ChangeSetID: csID},
				"old": {Name: "old", StackName: "shop-old", Intent: run.IntentDelete, Phase: run.Ready, Exists: true},
			}}}
		o := Observed{
			Graph: &state.Graph{Deployment: "shop", Stacks: map[string]*state.Stack{"web": {Name: "web", StackName: "shop-web"}, "old": {Name: "old", StackName: "shop-old"}}},
			Live:  map[string]Live{"shop-old": {StackName: "shop-old", Tags: map[string]string{state.TagNamespace: "shop", state.TagGraphKey: "shop", state.TagName: "old"}}},
			ChangeSets: map[string]ChangeSet{csID: {Found: true, Status: "CREATE_COMPLETE", ExecutionStatus: "AVAILABLE", ID: csID, Name: "cairn-" + id + "-1",
				StackID: stackID, StackName: "shop-web", Tags: map[string]string{state.TagNamespace: "shop", state.TagGraphKey: "shop", state.TagName: "web", state.TagBundleSHA256: "s1"}}},
		}
		return p, o
	}
	tests := []struct {
		name   string
		tamper func(p *Document, o *Observed)
		want   string
	}{
		{"intact", func(*Document, *Observed) {}, ""},
		{"another plan's document", func(p *Document, _ *Observed) { p.ID = "20261130-110000000-ffffffff" }, `the document names plan "20261130-110000000-ffffffff"`},
		{"another deployment's run", func(p *Document, _ *Observed) { p.Run.Deployment = "other" }, `its run: plan ` + id + ` of deployment "other"`},
		{"an apply run", func(p *Document, _ *Observed) { p.Run.Mode = run.ModeDeploy }, "its run: deploy"},
		{"another deployment's graph", func(_ *Document, o *Observed) { o.Graph.Deployment = "finance" }, "the persistent graph shop/shop it names belongs to deployment finance"},
		{"another bundle", func(p *Document, _ *Observed) { p.Bundle.Key = "deployments/finance.zip" }, "its bundle is s3://cairn-state/deployments/finance.zip, not the deployment's plan upload s3://cairn-state/plans/shop.zip"},
		{"entries disagree", func(p *Document, _ *Observed) { p.Run.Stacks["web"].ChangeSetID = "arn:x" }, "its entries disagree"},
		{"another plan's change set name", func(p *Document, o *Observed) {
			p.Run.Stacks["web"].ChangeSetName, p.Stacks[0].ChangeSetName = "cairn-other-1", "cairn-other-1"
		}, "change set cairn-other-1 is not one of this plan's"},
		{"a name without an id", func(p *Document, _ *Observed) { p.Run.Stacks["web"].ChangeSetID, p.Stacks[0].ChangeSetID = "", "" }, "is named without its id"},
		{"another id described", func(_ *Document, o *Observed) { cs := o.ChangeSets[csID]; cs.ID = "arn:other"; o.ChangeSets[csID] = cs }, "CloudFormation describes arn:other"},
		{"another name described", func(_ *Document, o *Observed) { cs := o.ChangeSets[csID]; cs.Name = "cairn-x"; o.ChangeSets[csID] = cs }, "is named cairn-x"},
		{"another stack's", func(_ *Document, o *Observed) {
			cs := o.ChangeSets[csID]
			cs.StackName = "shop-db"
			o.ChangeSets[csID] = cs
		}, "belongs to stack shop-db"},
		{"another place", func(_ *Document, o *Observed) {
			cs := o.ChangeSets[csID]
			cs.StackID = strings.Replace(stackID, "us-east-1", "eu-west-1", 1)
			o.ChangeSets[csID] = cs
		}, "belongs to stack shop-web (arn:aws:cloudformation:eu-west-1"},
		{"another graph's tags", func(_ *Document, o *Observed) { o.ChangeSets[csID].Tags[state.TagGraphKey] = "finance" }, `tag cairn:graph-key="finance", where this plan says "shop"`},
		{"another bundle's tags", func(_ *Document, o *Observed) { o.ChangeSets[csID].Tags[state.TagBundleSHA256] = "s2" }, `tag cairn:bundle-sha256="s2"`},
		{"a deletion the graph does not hold", func(_ *Document, o *Observed) { delete(o.Graph.Stacks, "old") }, "stack old (shop-old): the plan deletes it, but the persistent graph holds no such stack"},
		{"a deletion of another stack", func(p *Document, _ *Observed) { p.Run.Stacks["old"].StackName = "finance-ledger" }, "the plan names finance-ledger, the persistent graph shop-old"},
		{"a deletion of a stack cairn did not tag", func(_ *Document, o *Observed) { o.Live["shop-old"].Tags[state.TagGraphKey] = "finance" }, "its tags do not say cairn made it for graph shop/shop as stack old"},
		{"an entry filed under another name", func(p *Document, _ *Observed) { p.Run.Stacks["web"].Name = "db" }, "stack entry db is filed under web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, o := intact()
			tt.tamper(p, &o)
			got := strings.Join(p.Integrity("shop", id, "cairn-state", o), "\n")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("intact plan refused: %s", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("reasons %q, want %q", got, tt.want)
			case tt.want != "" && !strings.HasSuffix(got, "nothing was executed: re-plan"):
				t.Errorf("reasons %q do not end with the way forward", got)
			}
		})
	}
}

// TestPlanSeal: the deployer seals each plan document it writes; the seal survives the
// trip through JSON and the status changes the deployer makes, and breaks on any other
// edit (a deletion added, a parameter, a lookup, an SSM value). A keyed deployer accepts
// no unkeyed seal, which anyone could compute.
func TestPlanSeal(t *testing.T) {
	key := testKey(t, "one")
	p := &Document{ID: "p1", Deployment: "shop", Namespace: "shop", GraphKey: "shop", Status: Planned,
		Stacks:  []Stack{{Name: "web", StackName: "shop-web", Action: Update}},
		Lookups: map[string][]config.Lookup{"web": {{Kind: "ssm", Name: "/shop/x", Param: "P"}}},
		SSM:     map[string]config.SSMValue{"/shop/x": {Type: "String", Value: "a"}},
		Run: &run.Run{ID: "p1", Deployment: "shop", Mode: run.ModePlan, Stacks: map[string]*run.Stack{
			"web": {Name: "web", StackName: "shop-web", Intent: run.IntentDeploy, Phase: run.Ready, RawParameters: map[string]string{"P": "${ssm /shop/x}"}},
		}}}
	p.Sign(key)
	roundTrip := func(p *Document) *Document {
		t.Helper()
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if got := roundTrip(p); !got.Signed(key) {
		t.Fatal("a signed plan read back does not verify")
	}
	applied := roundTrip(p)
	applied.Status, applied.AppliedBy, applied.Reason = Applied, "r2", "applied by run r2"
	if !applied.Signed(key) {
		t.Error("the status the deployer records breaks the seal")
	}
	for name, edit := range map[string]func(d *Document){
		"a deletion": func(d *Document) {
			d.Run.Stacks["db"] = &run.Stack{Name: "db", StackName: "shop-db", Intent: run.IntentDelete}
		},
		"a parameter":   func(d *Document) { d.Run.Stacks["web"].RawParameters["P"] = "other" },
		"a lookup":      func(d *Document) { d.Lookups["web"][0].Name = "/web/secret" },
		"an SSM value":  func(d *Document) { d.SSM["/shop/x"] = config.SSMValue{Type: "String", Value: "b"} },
		"the graph key": func(d *Document) { d.GraphKey = "other" },
		"no seal":       func(d *Document) { d.Seal = "" },
	} {
		d := roundTrip(p)
		edit(d)
		if d.Signed(key) {
			t.Errorf("%s edited: the seal still verifies", name)
		}
	}
	if roundTrip(p).Signed(testKey(t, "two")) {
		t.Error("another key verifies the seal")
	}
	forged := roundTrip(p)
	forged.Sign(seal.Unkeyed)
	if forged.Signed(key) || !forged.Signed(seal.Unkeyed) {
		t.Error("a keyed deployer accepts an unkeyed seal anyone can compute")
	}
}
