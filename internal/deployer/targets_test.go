package deployer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/localcairn"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
)

// targetTemplate makes a queue and records where its upstream's queue is, so outputs flow
// from stack to stack across accounts and regions.
const targetTemplate = `Parameters:
  Purpose: {Type: String}
  Upstream: {Type: String, Default: none}
Resources:
  Queue:
    Type: AWS::SQS::Queue
  Link:
    Type: AWS::SSM::Parameter
    Properties: {Name: !Sub "/shop/${Purpose}/upstream", Type: String, Value: !Ref Upstream}
Outputs:
  QueueUrl: {Value: !Ref Queue}
`

// withTargets gives w target stacks (as `cairn local up --targets` does, their events
// forwarded to cairn's bus, which admits the other accounts), and returns the emulator's
// configuration of each place.
func (w *world) withTargets(ts ...target.Target) {
	w.t.Helper()
	ctx := context.Background()
	if _, err := localcairn.ProvisionTargets(ctx, w.em, localcairn.Options{Targets: ts}); err != nil {
		w.t.Fatal(err)
	}
	for _, tg := range ts {
		if tg.Account == w.em.AccountID() {
			continue
		}
		w.createStackIn(w.em.AccountID(), w.em.Region(), "admit-"+tg.Account, `{"Resources":{"Admit":{"Type":"AWS::Events::EventBusPolicy","Properties":{
		  "StatementId":"cairn-target-`+tg.Account+`","Action":"events:PutEvents","Principal":"`+tg.Account+`"}}}}`)
	}
}

// createStackIn creates a stack in account and region outside any run and waits for it.
func (w *world) createStackIn(account, region, name, body string) {
	w.t.Helper()
	ctx := context.Background()
	cf := cloudformation.NewFromConfig(w.at(account, region))
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body),
		Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityNamedIam}}); err != nil {
		w.t.Fatal(err)
	}
	for {
		out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
		if err != nil {
			w.t.Fatal(err)
		}
		switch out.Stacks[0].StackStatus {
		case cfntypes.StackStatusCreateComplete:
			return
		case cfntypes.StackStatusCreateInProgress: // the world's clock runs on its own
		default:
			w.t.Fatalf("stack %s in %s/%s: %s", name, account, region, out.Stacks[0].StackStatus)
		}
	}
}

// at is the emulator's configuration for account's plain credentials in region.
func (w *world) at(account, region string) aws.Config {
	w.t.Helper()
	cfg, err := w.em.AWSConfigAt(context.Background(), account, region)
	if err != nil {
		w.t.Fatal(err)
	}
	return cfg
}

// stackIn describes a stack of account and region; nil when it does not exist there.
func (w *world) stackIn(account, region, name string) *cfntypes.Stack {
	w.t.Helper()
	out, err := cloudformation.NewFromConfig(w.at(account, region)).DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if awserr.StackMissing(err) {
		return nil
	}
	if err != nil {
		w.t.Fatal(err)
	}
	if out.Stacks[0].StackStatus == cfntypes.StackStatusDeleteComplete {
		return nil
	}
	return &out.Stacks[0]
}

// parameter reads an SSM parameter of account and region ("" when it does not exist).
func (w *world) parameter(account, region, name string) string {
	w.t.Helper()
	out, err := ssm.NewFromConfig(w.at(account, region)).GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		return ""
	}
	return aws.ToString(out.Parameter.Value)
}

func (w *world) callsAt(account, region string) map[string]int {
	w.t.Helper()
	resp, err := http.Get(w.em.URL() + "/_local/calls?account=" + account + "&region=" + region)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var calls map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&calls); err != nil {
		w.t.Fatal(err)
	}
	return calls
}

func writeBundle(t *testing.T, cfg string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"cairn.yaml": cfg, "templates/queue.yaml": targetTemplate} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestStacksInManyAccountsAndRegions: one bundle deploys into cairn's account and region,
// another region of it, and a region of a second account reached through role_arn, with
// outputs flowing across all three; a stack whose role refuses cairn fails with STS's
// reason and a region that throttles every call fails its stack, each blocking only the
// stacks depending on it; the role is assumed once per run. Removing the second account's
// stack deletes it there and touches nothing else.
func TestStacksInManyAccountsAndRegions(t *testing.T) {
	w := newWorld(t, worldOptions{FastRetries: true})
	remote := target.Target{Account: "111111111111", Region: "eu-west-1"}
	w.withTargets(remote, target.Target{Account: "000000000000", Region: "us-west-2"})
	// A role of a third account that trusts someone else only.
	w.createStackIn("222222222222", "eu-central-1", "strangers", `{"Resources":{"Role":{"Type":"AWS::IAM::Role","Properties":{"RoleName":"cairn-deploy-eu-central-1",
	  "AssumeRolePolicyDocument":{"Statement":[{"Effect":"Allow","Principal":{"AWS":"333333333333"},"Action":"sts:AssumeRole"}]}}}}}`)
	postFault(t, w.em.URL(), `{"faults":[{"target":"cloudformation.*","region":"ap-south-1","throttleRate":1}]}`)

	cfg := `namespace: shop
stacks:
  - {name: base, template_path: templates/queue.yaml, parameters: {Purpose: base}}
  - name: west
    region: us-west-2
    template_path: templates/queue.yaml
    parameters: {Purpose: west, Upstream: "${output base::QueueUrl}"}
  - name: remote
    region: eu-west-1
    role_arn: arn:aws:iam::111111111111:role/cairn-deploy-eu-west-1
    template_path: templates/queue.yaml
    parameters: {Purpose: remote, Upstream: "${output west::QueueUrl}"}
  - {name: summary, template_path: templates/queue.yaml, parameters: {Purpose: summary, Upstream: "${output remote::QueueUrl}"}}
  - name: refused
    region: eu-central-1
    role_arn: arn:aws:iam::222222222222:role/cairn-deploy-eu-central-1
    template_path: templates/queue.yaml
    parameters: {Purpose: refused}
  - {name: after-refused, template_path: templates/queue.yaml, parameters: {Purpose: after-refused, Upstream: "${output refused::QueueUrl}"}}
  - {name: throttled, region: ap-south-1, template_path: templates/queue.yaml, parameters: {Purpose: throttled}}
  - {name: after-throttled, template_path: templates/queue.yaml, parameters: {Purpose: after-throttled, Upstream: "${output throttled::QueueUrl}"}}
`
	dir := writeBundle(t, cfg)
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.RunFailed {
		t.Fatalf("run %s, want failed (two stacks cannot be reached): %s", doc.Run.Status, doc.Run.Reason)
	}
	want := map[string]run.Phase{"base": run.Done, "west": run.Done, "remote": run.Done, "summary": run.Done,
		"refused": run.Failed, "after-refused": run.Blocked, "throttled": run.Failed, "after-throttled": run.Blocked}
	for name, ph := range want {
		if got := doc.Run.Stacks[name].Phase; got != ph {
			t.Errorf("stack %s: %s (%s), want %s", name, got, doc.Run.Stacks[name].Reason, ph)
		}
	}
	if r := doc.Run.Stacks["refused"].Reason; !strings.Contains(r, "cannot reach account 222222222222 in eu-central-1: cannot assume role arn:aws:iam::222222222222:role/cairn-deploy-eu-central-1: AccessDenied: User: arn:aws:iam::000000000000:root is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::222222222222:role/cairn-deploy-eu-central-1") {
		t.Errorf("refused: %s", r)
	}
	if r := doc.Run.Stacks["throttled"].Reason; !strings.Contains(r, "cannot reach cairn's account in ap-south-1") || !strings.Contains(r, "Rate exceeded") {
		t.Errorf("throttled: %s", r)
	}

	// Where each stack lives, and nowhere else; outputs flowed home -> us-west-2 ->
	// 111111111111/eu-west-1 -> home.
	places := map[string][2]string{"base": {"000000000000", "us-east-1"}, "west": {"000000000000", "us-west-2"},
		"remote": {"111111111111", "eu-west-1"}, "summary": {"000000000000", "us-east-1"}}
	every := [][2]string{{"000000000000", "us-east-1"}, {"000000000000", "us-west-2"}, {"111111111111", "eu-west-1"}, {"111111111111", "us-east-1"}, {"000000000000", "eu-west-1"}}
	for name, p := range places {
		for _, q := range every {
			st := w.stackIn(q[0], q[1], "shop-"+name)
			if (q == p) != (st != nil) {
				t.Errorf("stack shop-%s in %s/%s: exists %v, want %v", name, q[0], q[1], st != nil, q == p)
			}
		}
	}
	upstream := func(name string) string {
		p := places[name]
		return w.parameter(p[0], p[1], "/shop/"+name+"/upstream")
	}
	for name, from := range map[string]string{"west": "base", "remote": "west", "summary": "remote"} {
		if got, want := upstream(name), doc.Run.Stacks[from].Outputs["QueueUrl"]; got != want || want == "" {
			t.Errorf("%s's upstream is %q, want %s's queue %q", name, got, from, want)
		}
	}
	if !strings.Contains(upstream("summary"), "/111111111111/shop-remote-Queue") {
		t.Errorf("summary's upstream %q is not the second account's queue", upstream("summary"))
	}
	g := w.graph("shop", "shop")
	if st := g.Stacks["remote"]; st == nil || st.Account != "111111111111" || st.Region != "eu-west-1" || st.Target.RoleARN != "arn:aws:iam::111111111111:role/cairn-deploy-eu-west-1" {
		t.Errorf("graph's remote: %+v", g.Stacks["remote"])
	}
	if n := w.callsAt("000000000000", "us-east-1")["sts.AssumeRole"]; n != 2 {
		t.Errorf("AssumeRole called %d times in the run, want twice (the remote role once for the run, the refused one)", n)
	}

	// Removing the second account's stack deletes it there and nothing else.
	before := map[string]*cfntypes.Stack{}
	for _, name := range []string{"base", "west"} {
		before[name] = w.stackIn(places[name][0], places[name][1], "shop-"+name)
	}
	// The stacks that never reached their place go too: a failed stack stops a run before
	// its deletions.
	cfg = `namespace: shop
stacks:
  - {name: base, template_path: templates/queue.yaml, parameters: {Purpose: base}}
  - name: west
    region: us-west-2
    template_path: templates/queue.yaml
    parameters: {Purpose: west, Upstream: "${output base::QueueUrl}"}
  - {name: summary, template_path: templates/queue.yaml, parameters: {Purpose: summary, Upstream: "${output west::QueueUrl}"}}
`
	doc = w.wait("shop", w.push("shop", writeBundle(t, cfg)))
	if got := doc.Run.Stacks["remote"]; got == nil || got.Intent != run.IntentDelete || got.Phase != run.Done {
		t.Fatalf("remote after leaving the config: %+v (run %s: %s)", got, doc.Run.Status, doc.Run.Reason)
	}
	if w.stackIn("111111111111", "eu-west-1", "shop-remote") != nil {
		t.Error("shop-remote still exists in 111111111111/eu-west-1")
	}
	for name, b := range before {
		a := w.stackIn(places[name][0], places[name][1], "shop-"+name)
		if a == nil || a.StackStatus != b.StackStatus || !aws.ToTime(a.LastUpdatedTime).Equal(aws.ToTime(b.LastUpdatedTime)) {
			t.Errorf("shop-%s changed while shop-remote was removed: %v -> %v", name, b.StackStatus, a)
		}
	}
	if w.stackIn("111111111111", "eu-west-1", target.StackName) == nil {
		t.Error("the target stack went with shop-remote")
	}
	if _, ok := w.graph("shop", "shop").Stacks["remote"]; ok {
		t.Error("remote is still in the graph")
	}
}

func postFault(t *testing.T, url, body string) {
	t.Helper()
	resp, err := http.Post(url+"/_local/faults", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST /_local/faults: %s", resp.Status)
	}
}

// TestApplyRecordsTheStatusOfStacksElsewhere: an approved plan that leaves a stack of
// another region untouched still records its live status in the graph, as it does for the
// stacks of cairn's own region.
func TestApplyRecordsTheStatusOfStacksElsewhere(t *testing.T) {
	w := newReviewWorld(t)
	w.withTargets(target.Target{Account: "000000000000", Region: "us-west-2"})
	cfg := `namespace: shop
stacks:
  - {name: base, template_path: templates/queue.yaml, parameters: {Purpose: base}}
  - {name: west, region: us-west-2, template_path: templates/queue.yaml, parameters: {Purpose: west}}
`
	if doc := w.wait("shop", w.push("shop", writeBundle(t, cfg))); doc.Run.Status != run.Succeeded {
		t.Fatalf("first run: %s (%s)", doc.Run.Status, doc.Run.Reason)
	}
	// Only base changes: west is unchanged in the plan and in its apply.
	p := w.planOf("shop", w.uploadPlan("shop", writeBundle(t, strings.Replace(cfg, "Purpose: base}", "Purpose: base-2}", 1))))
	doc := w.approve("shop", p.ID)
	if doc.Run.Status != run.Succeeded || doc.Run.Stacks["west"].Phase != run.Unchanged {
		t.Fatalf("apply run: %s (%s), west %s", doc.Run.Status, doc.Run.Reason, doc.Run.Stacks["west"].Phase)
	}
	if st := w.graph("shop", "shop").Stacks["west"]; st == nil || st.Status != "CREATE_COMPLETE" {
		t.Errorf("graph's west after the apply: %+v, want its live status CREATE_COMPLETE", st)
	}
}
