package deployer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
)

// newReviewWorld is newWorld with the bucket notifications cairn's stack sets up for
// reviews: plans/*.zip and approvals/ go to the deploy queue as well as deployments/.
func newReviewWorld(t *testing.T) *world {
	t.Helper()
	return newReviewWorldWith(t, worldOptions{})
}

func newReviewWorldWith(t *testing.T, o worldOptions) *world {
	t.Helper()
	w := newWorld(t, o)
	arn := w.em.SQS().QueueARN(queueName)
	rule := func(prefix, suffix string) s3types.QueueConfiguration {
		rules := []s3types.FilterRule{{Name: s3types.FilterRuleNamePrefix, Value: aws.String(prefix)}}
		if suffix != "" {
			rules = append(rules, s3types.FilterRule{Name: s3types.FilterRuleNameSuffix, Value: aws.String(suffix)})
		}
		return s3types.QueueConfiguration{QueueArn: aws.String(arn), Events: []s3types.Event{"s3:ObjectCreated:*"},
			Filter: &s3types.NotificationConfigurationFilter{Key: &s3types.S3KeyFilter{FilterRules: rules}}}
	}
	must(t, func() error {
		_, err := w.s3.PutBucketNotificationConfiguration(context.Background(), &s3.PutBucketNotificationConfigurationInput{
			Bucket: aws.String(bucket),
			NotificationConfiguration: &s3types.NotificationConfiguration{QueueConfigurations: []s3types.QueueConfiguration{
				rule("deployments/", ""), rule("plans/", ".zip"), rule("approvals/", ""),
			}},
		})
		return err
	})
	return w
}

// uploadPlan puts a bundle directory at plans/NAME.zip and returns the version id.
func (w *world) uploadPlan(name, dir string) string {
	w.t.Helper()
	return w.uploadPlanMeta(name, dir, nil)
}

// uploadPlanMeta is uploadPlan with extra object metadata (cairn-destroy).
func (w *world) uploadPlanMeta(name, dir string, extra map[string]string) string {
	w.t.Helper()
	data, err := bundle.Zip(dir)
	if err != nil {
		w.t.Fatal(err)
	}
	meta := map[string]string{"git-ref": "89abcdef0123456789abcdef0123456789abcdef", "git-remote": "https://example.com/shop.git"}
	for k, v := range extra {
		meta[k] = v
	}
	out, err := w.s3.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String("plans/" + name + ".zip"), Body: bytes.NewReader(data), Metadata: meta,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return aws.ToString(out.VersionId)
}

// planOf waits for the plan run of an upload and returns its plan document.
func (w *world) planOf(name, version string) *plan.Document {
	w.t.Helper()
	doc := w.wait(name, version)
	if doc.Run.Mode != run.ModePlan {
		w.t.Fatalf("run %s of version %s is a %s run", doc.Run.ID, version, doc.Run.Mode)
	}
	p, err := plan.Decode([]byte(w.object(layout.PlanKey(name, doc.Run.ID))))
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

// approve creates approvals/NAME/PLAN_ID and waits for the apply run it starts.
func (w *world) approve(name, planID string) *rundoc.Document {
	w.t.Helper()
	seen := map[string]bool{}
	for _, d := range w.runs(name) {
		seen[d.Run.ID] = true
	}
	_, err := w.s3.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(layout.ApprovalKey(name, planID)), Body: strings.NewReader("approved by reviewer"),
	})
	if err != nil {
		w.t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, d := range w.runs(name) {
			if !seen[d.Run.ID] && d.Plan == planID && d.Run.Status != run.Running {
				return d
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.t.Fatalf("no apply run of plan %s finished", planID)
	return nil
}

func (w *world) executedIDs() []string {
	var ids []string
	for _, x := range w.cfn.ExecutedChangeSets() {
		ids = append(ids, x.ChangeSetID)
	}
	return ids
}

// executedOverHTTP reads the emulator's record of executed change sets as a user of
// `cairn local` would.
func (w *world) executedOverHTTP() []string {
	w.t.Helper()
	resp, err := http.Get(w.em.URL() + "/_local/cloudformation/executed-change-sets")
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var got []struct{ ChangeSetID string }
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		w.t.Fatal(err)
	}
	var ids []string
	for _, x := range got {
		ids = append(ids, x.ChangeSetID)
	}
	return ids
}

func plannedIDs(p *plan.Document) []string {
	var ids []string
	for _, s := range p.Stacks {
		if s.ChangeSetID != "" {
			ids = append(ids, s.ChangeSetID)
		}
	}
	sort.Strings(ids)
	return ids
}

const workerStacks = `  - name: queue
    template_path: templates/topic.yaml
  - name: worker
    template_path: templates/parameter.yaml
    parameters:
      Value: ${output queue::TopicArn}
      Size: small
`

// TestPlanThenApproveExecutesExactlyThePlannedChangeSets plans a change of two stacks and
// two new stacks (one depending on the other, so created at apply), approves it, and
// checks the apply executed exactly the reviewed change sets and created only the one
// change set marked "created at apply"; a second approval is refused.
func TestPlanThenApproveExecutesExactlyThePlannedChangeSets(t *testing.T) {
	w := newReviewWorld(t)
	dir, _ := deployChain(t, w)
	edit(t, dir, "cairn.yaml", `      Value: ${output app::Name}
      Size: small`, `      Value: ${output app::Name}
      Size: medium
`+workerStacks)
	edit(t, dir, "cairn.yaml", `      Value: ${output network::VpcId}
      Size: small
    termination_protection: true`, `      Value: ${output network::VpcId}
      Size: large
    termination_protection: true`)
	executedBefore := len(w.executedIDs())
	p := w.planOf("shop", w.uploadPlan("shop", dir))
	if p.Status != plan.Planned {
		t.Fatalf("plan %s: %s (%s) refusals %v errors %v", p.ID, p.Status, p.Reason, p.Refusals, p.Errors)
	}
	want := map[string]plan.Action{"network": plan.None, "database": plan.Update, "cache": plan.None, "app": plan.None, "web": plan.Update, "queue": plan.Create, "worker": plan.Create}
	for name, action := range want {
		s := p.Stack(name)
		if s == nil || s.Action != action {
			t.Fatalf("plan stack %s: %+v, want action %s", name, s, action)
		}
	}
	if s := p.Stack("worker"); !s.CreatedAtApply || s.ChangeSetID != "" {
		t.Errorf("worker: created at apply %v, change set %q", s.CreatedAtApply, s.ChangeSetID)
	}
	// With no change set yet, what its creation adds is read from its template.
	if s := p.Stack("worker"); !slices.Equal(s.Resources, []plan.Resource{{LogicalID: "Parameter", Type: "AWS::SSM::Parameter"}}) {
		t.Errorf("worker: resources from the template %+v", s.Resources)
	}
	if s := p.Stack("queue"); s.Resources != nil {
		t.Errorf("queue has a change set, yet resources from the template %+v", s.Resources)
	}
	if s := p.Stack("app"); !s.InputsMayChange {
		t.Errorf("app consumes database's outputs, which the plan changes: want inputs may change")
	}
	for _, name := range []string{"database", "web", "queue"} {
		s := p.Stack(name)
		if s.ChangeSetID == "" || s.Status == "" || s.LastUpdated.IsZero() || s.TemplateHash == "" || s.ParametersHash == "" || len(s.Changes) == 0 {
			t.Errorf("plan stack %s lacks what an approval checks: %+v", name, s)
		}
	}
	if p.Stack("queue").Status != "REVIEW_IN_PROGRESS" || p.Stack("database").Changes[0].Action != "Modify" {
		t.Errorf("queue %+v, database %+v", p.Stack("queue"), p.Stack("database"))
	}
	if md := w.object("plans/shop/" + p.ID + ".md"); !strings.Contains(md, "| web | shop-web | update |") || !strings.Contains(md, "cairn approve shop "+p.ID) {
		t.Errorf("plans/shop/%s.md:\n%s", p.ID, md)
	}
	if p.Generation == 0 || p.Bundle.VersionID == "" || p.Bundle.SHA256 == "" || p.Bundle.GitRef == "" {
		t.Errorf("plan lacks generation or bundle: %d %+v", p.Generation, p.Bundle)
	}
	if n := len(w.executedIDs()); n != executedBefore {
		t.Fatalf("the plan executed %d change set(s)", n-executedBefore)
	}
	if g := w.graph("shop", "shop"); g.Generation != p.Generation {
		t.Errorf("the plan wrote the graph: generation %d, planned at %d", g.Generation, p.Generation)
	}

	callsBefore := w.cfnCalls()
	apply := w.approve("shop", p.ID)
	if apply.Run.Status != run.Succeeded {
		t.Fatalf("apply %s: %s (%s) refusals %v, stacks %v", apply.Run.ID, apply.Run.Status, apply.Run.Reason, apply.Refusals, phases(apply))
	}
	executed := w.executedIDs()[executedBefore:]
	if http := w.executedOverHTTP()[executedBefore:]; !slices.Equal(http, executed) {
		t.Errorf("GET executed-change-sets %v, ExecutedChangeSets %v", http, executed)
	}
	workerCS := apply.Run.Stacks["worker"].ChangeSetID
	var reviewed []string
	for _, id := range executed {
		if id != workerCS {
			reviewed = append(reviewed, id)
		}
	}
	sort.Strings(reviewed)
	if !slices.Equal(reviewed, plannedIDs(p)) || len(executed) != len(reviewed)+1 {
		t.Errorf("executed %v, want the planned %v and worker's %s", executed, plannedIDs(p), workerCS)
	}
	if n := w.cfnCalls()["CreateChangeSet"] - callsBefore["CreateChangeSet"]; n != 1 {
		t.Errorf("the apply created %d change sets, want 1 (worker, created at apply)", n)
	}
	live := w.stacks()
	for _, n := range []string{"shop-database", "shop-web", "shop-queue", "shop-worker"} {
		if st := live[n].StackStatus; st != cfntypes.StackStatusUpdateComplete && st != cfntypes.StackStatusCreateComplete {
			t.Errorf("%s: %s after apply", n, st)
		}
	}
	if after, err := plan.Decode([]byte(w.object(layout.PlanKey("shop", p.ID)))); err != nil || after.Status != plan.Applied || after.AppliedBy != apply.Run.ID {
		t.Errorf("plan after apply: %v %s by %s", err, after.Status, after.AppliedBy)
	}
	if g := w.graph("shop", "shop"); g.Bundle.VersionID != p.Bundle.VersionID || g.Stacks["worker"] == nil {
		t.Errorf("graph after apply: bundle %+v, worker %v", g.Bundle, g.Stacks["worker"])
	}

	// A plan applies at most once.
	executedBefore = len(w.executedIDs())
	again := w.approve("shop", p.ID)
	if again.Run.Status != run.RunFailed || len(again.Refusals) != 1 || !strings.Contains(again.Refusals[0], "plan "+p.ID+" was already applied by run "+apply.Run.ID) || !strings.HasSuffix(again.Refusals[0], "re-plan") {
		t.Errorf("second approval: %s, refusals %q", again.Run.Status, again.Refusals)
	}
	if n := len(w.executedIDs()); n != executedBefore {
		t.Errorf("the second approval executed %d change set(s)", n-executedBefore)
	}
}

// TestStalePlansExecuteNothing makes a plan stale in each way an approval must catch and
// checks each is refused with its reason, executing nothing.
func TestStalePlansExecuteNothing(t *testing.T) {
	w := newReviewWorld(t)
	dir, _ := deployChain(t, w)
	ctx := context.Background()
	size := "small"
	// planWeb plans a change of web's Size.
	planWeb := func(next string) *plan.Document {
		t.Helper()
		edit(t, dir, "cairn.yaml", "Value: ${output app::Name}\n      Size: "+size, "Value: ${output app::Name}\n      Size: "+next)
		size = next
		p := w.planOf("shop", w.uploadPlan("shop", dir))
		if p.Status != plan.Planned || p.Stack("web").ChangeSetID == "" {
			t.Fatalf("plan: %s (%s) %v; web %+v", p.Status, p.Reason, p.Refusals, p.Stack("web"))
		}
		return p
	}
	updateStack := func(stack, param, value string) {
		t.Helper()
		out, err := w.cfnc.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
		if err != nil {
			t.Fatal(err)
		}
		var params []cfntypes.Parameter
		for _, p := range out.Stacks[0].Parameters {
			if aws.ToString(p.ParameterKey) == param {
				params = append(params, cfntypes.Parameter{ParameterKey: p.ParameterKey, ParameterValue: aws.String(value)})
			} else {
				params = append(params, cfntypes.Parameter{ParameterKey: p.ParameterKey, UsePreviousValue: aws.Bool(true)})
			}
		}
		if _, err := w.cfnc.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String(stack), UsePreviousTemplate: aws.Bool(true), Parameters: params}); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, w, stack, cfntypes.StackStatusUpdateComplete)
	}
	tests := []struct {
		name     string
		planned  string // web's next Size
		database string // database's next Size, if it changes
		stale    func(p *plan.Document)
		want     func(p *plan.Document) string
	}{
		{name: "stack updated out of band", planned: "s1",
			stale: func(p *plan.Document) { updateStack("shop-web", "Size", "out-of-band") },
			want: func(p *plan.Document) string {
				return "stack web (shop-web): the plan of a checkout without git (" + p.ID + ") for stack web went stale: the stack was changed at "
			}},
		{name: "another run applied in between", planned: "s2",
			stale: func(p *plan.Document) {
				other := copyBundle(t, dir)
				// The bundle as applied, with one change to a stack the plan leaves alone.
				edit(t, other, "cairn.yaml", "Value: ${output app::Name}\n      Size: s2", "Value: ${output app::Name}\n      Size: small")
				edit(t, other, "cairn.yaml", "Value: ${output network::VpcId}\n      Size: small\n  - name: app", "Value: ${output network::VpcId}\n      Size: pushed\n  - name: app")
				if d := w.wait("shop", w.push("shop", other)); d.Run.Status != run.Succeeded {
					t.Fatalf("push in between: %s (%s) %v", d.Run.Status, d.Run.Reason, d.Refusals)
				}
			},
			want: func(p *plan.Document) string {
				return "stack cache (shop-cache): the plan of a checkout without git (" + p.ID + ") for stack cache went stale: the stack was changed by run "
			}},
		{name: "planned change set deleted", planned: "s3",
			stale: func(p *plan.Document) {
				if _, err := w.cfnc.DeleteChangeSet(ctx, &cloudformation.DeleteChangeSetInput{ChangeSetName: aws.String(p.Stack("web").ChangeSetID)}); err != nil {
					t.Fatal(err)
				}
			},
			want: func(p *plan.Document) string {
				return "for stack web went stale: its change set " + p.Stack("web").ChangeSetName + " no longer exists"
			}},
		{name: "the same checkout planned again", planned: "s4",
			stale: func(p *plan.Document) {
				newer := w.uploadPlan("shop", dir)
				w.wait("shop", newer)
			},
			want: func(p *plan.Document) string {
				return "plan " + p.ID + " is superseded (this checkout was planned again as plan "
			}},
		{name: "consumed output changed", planned: "s5", database: "large",
			// database reads network's VpcId; network is not in the plan. Replacing its
			// VPC out of band leaves database's stack as planned but changes its input.
			stale: func(p *plan.Document) { updateStack("shop-network", "CidrBlock", "10.99.0.0/16") },
			want: func(p *plan.Document) string {
				return "stack database (shop-database): the plan of a checkout without git (" + p.ID + ") for stack database went stale: the outputs it consumes changed since the plan: network::VpcId was \"vpc-"
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.database != "" {
				edit(t, dir, "cairn.yaml", "Size: small\n    termination_protection: true", "Size: "+tt.database+"\n    termination_protection: true")
			}
			p := planWeb(tt.planned)
			tt.stale(p)
			executed := len(w.executedIDs())
			apply := w.approve("shop", p.ID)
			reasons := strings.Join(apply.Refusals, "\n")
			t.Logf("refused:\n%s", reasons)
			if apply.Run.Status != run.RunFailed || !strings.Contains(reasons, tt.want(p)) || !strings.Contains(reasons, "re-plan") {
				t.Errorf("apply: %s (%s); refusals:\n%s\nwant one containing %q", apply.Run.Status, apply.Run.Reason, reasons, tt.want(p))
			}
			if n := len(w.executedIDs()); n != executed {
				t.Errorf("a stale plan executed %d change set(s)", n-executed)
			}
			report := w.object(layout.RunReportKey("shop", apply.Run.ID))
			if !strings.Contains(report, tt.want(p)) {
				t.Errorf("report does not name the reason:\n%s", report)
			}
		})
	}
}

// TestProtectedStackChangesOnlyThroughAPlan pushes a graph with a protected stack: the
// direct deployment fails before any CloudFormation change, naming the stack and the
// command to plan; the same bundle planned and approved creates everything, the stacks
// behind the new network's outputs "created at apply".
func TestProtectedStackChangesOnlyThroughAPlan(t *testing.T) {
	w := newReviewWorld(t)
	dir := copyBundle(t, chain)
	edit(t, dir, "cairn.yaml", "      Second: ${output cache::Name}\n", "      Second: ${output cache::Name}\n    protected: true\n")
	doc := w.wait("shop", w.push("shop", dir))
	refusals := strings.Join(doc.Refusals, "\n")
	if doc.Run.Status != run.RunFailed || !strings.Contains(refusals, "protected stack(s) app change only through an approved plan: run `cairn plan PATH --deployment shop`") {
		t.Fatalf("direct push: %s, refusals %q", doc.Run.Status, refusals)
	}
	if calls := w.cfnCalls(); calls["CreateChangeSet"] != 0 || calls["ExecuteChangeSet"] != 0 {
		t.Fatalf("a refused push called CloudFormation: %v", calls)
	}

	p := w.planOf("shop", w.uploadPlan("shop", dir))
	if p.Status != plan.Planned {
		t.Fatalf("plan: %s (%s) %v", p.Status, p.Reason, p.Refusals)
	}
	for _, n := range chainStacks {
		s := p.Stack(n)
		if s.Action != "create" || s.CreatedAtApply != (n != "network") {
			t.Errorf("plan stack %s: action %s, created at apply %v", n, s.Action, s.CreatedAtApply)
		}
	}
	apply := w.approve("shop", p.ID)
	if apply.Run.Status != run.Succeeded {
		t.Fatalf("apply: %s (%s) %v %v", apply.Run.Status, apply.Run.Reason, apply.Refusals, phases(apply))
	}
	if got := w.cfnCalls()["CreateChangeSet"]; got != 5 {
		t.Errorf("%d change sets created, want 5 (network at plan, four at apply)", got)
	}
	if w.executedIDs()[0] != p.Stack("network").ChangeSetID {
		t.Errorf("first executed %s, want the reviewed %s", w.executedIDs()[0], p.Stack("network").ChangeSetID)
	}
	live := w.stacks()
	for _, n := range chainStacks {
		if st := live["shop-"+n].StackStatus; st != cfntypes.StackStatusCreateComplete {
			t.Errorf("shop-%s: %s", n, st)
		}
	}
}
