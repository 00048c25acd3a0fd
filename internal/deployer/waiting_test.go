package deployer_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
)

// updateOutside starts an update of stack the way someone outside cairn would: a
// parameter of it set to value, the template as it is. It does not wait.
func (w *world) updateOutside(stack, param, value string) {
	w.t.Helper()
	ctx := context.Background()
	out, err := w.cfnc.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil {
		w.t.Fatal(err)
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
		w.t.Fatal(err)
	}
}

// TestBusyStacksDelayTheRun: a stack another hand is updating (UPDATE_IN_PROGRESS, then
// the cleanup after its replacement) no longer refuses a plan: the run holds the lock,
// waits, woken by the stack's status events, and decides once it settled.
func TestBusyStacksDelayTheRun(t *testing.T) {
	// NoSkip: the test sees the network mid-update on the wall clock, which a clock that
	// skips idle stretches would carry past in one leap; and the update takes two virtual
	// minutes (a quarter second of wall time) so that a loaded machine still plans while
	// it runs.
	w := newReviewWorldWith(t, worldOptions{ResourceDelay: 2 * time.Minute, NoSkip: true})
	dir, _ := deployChain(t, w)
	// The network's VPC is replaced outside cairn: a long update, then its cleanup.
	w.updateOutside("shop-network", "CidrBlock", "10.77.0.0/16")
	waitStatus(t, w, "shop-network", cfntypes.StackStatusUpdateInProgress)
	edit(t, dir, "cairn.yaml", "Value: ${output app::Name}\n      Size: small", "Value: ${output app::Name}\n      Size: large")
	p := w.planOf("shop", w.uploadPlan("shop", dir))
	doc := w.runs("shop")[len(w.runs("shop"))-1]
	if p.Status != plan.Planned || p.Stack("web").ChangeSetID == "" || doc.WaitingSince.IsZero() || doc.Steps == 0 {
		t.Fatalf("plan made while the network was busy: %s (%s) %v; waited since %v", p.Status, p.Reason, p.Refusals, doc.WaitingSince)
	}
	if !strings.Contains(w.logs.String(), "stacks another hand is changing are busy: the run waits for them to settle") {
		t.Error("the run did not say it waited")
	}
	if n := w.stacks()["shop-network"].StackStatus; strings.HasSuffix(string(n), "_IN_PROGRESS") {
		t.Errorf("the plan was made while shop-network was %s", n)
	}

}

// TestBusyStacksRefusedPastTheBudget: a stack that never settles within the settle
// budget: the plan and the push are refused, naming the command used, and change nothing.
func TestBusyStacksRefusedPastTheBudget(t *testing.T) {
	w2 := newReviewWorldWith(t, worldOptions{ResourceDelay: 10 * time.Minute, SettleBudget: 30 * time.Second, NoSkip: true})
	dir2, _ := deployChain(t, w2)
	w2.updateOutside("shop-network", "CidrBlock", "10.78.0.0/16")
	waitStatus(t, w2, "shop-network", cfntypes.StackStatusUpdateInProgress)
	executed := len(w2.executedIDs())
	for _, tc := range []struct {
		name, want string
		start      func() *docRun
	}{
		{"plan", "then plan again (`cairn plan PATH --deployment shop`)", func() *docRun { return &docRun{w2.uploadPlan("shop", dir2)} }},
		{"push", "then push again (`cairn push PATH --deployment shop`)", func() *docRun { return &docRun{w2.push("shop", dir2)} }},
	} {
		d := w2.wait("shop", tc.start().version)
		reasons := strings.Join(d.Refusals, "\n")
		if d.Run.Status != run.RunFailed || !strings.Contains(reasons, "stack(s) shop-network (UPDATE_IN_PROGRESS) stayed busy for ") || !strings.HasSuffix(reasons, tc.want) {
			t.Errorf("%s while shop-network stays busy: %s, refusals %q", tc.name, d.Run.Status, reasons)
		}
	}
	if len(w2.executedIDs()) != executed {
		t.Error("a run refused for a busy stack executed a change set")
	}
}

type docRun struct{ version string }

// applyContent uploads a bundle directory to approvals/NAME.zip (cairn apply) and returns
// the apply run it starts, once it ended.
func (w *world) applyContent(name, dir string) *rundoc.Document {
	w.t.Helper()
	data, err := bundle.Zip(dir)
	if err != nil {
		w.t.Fatal(err)
	}
	out, err := w.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(layout.ApplyKey(name)), Body: bytes.NewReader(data)})
	if err != nil {
		w.t.Fatal(err)
	}
	return w.wait(name, aws.ToString(out.VersionId))
}

// TestComposedApplyChecksEachPlan: the content of two merged pull requests is applied from
// the entries of both plans, each plan's document checked before any entry of it is
// trusted. A document edited so that its entry names the other plan's change set (every
// field made to agree) fails its seal and its checks: nothing runs, and the refusal says
// which checks failed. Planned again, the same content applies exactly the two reviewed
// change sets, creating none: retiring the edited document deleted none of the change
// sets it names (#21's among them).
func TestComposedApplyChecksEachPlan(t *testing.T) {
	w := newReviewWorld(t)
	dir, _ := deployChain(t, w)
	webDir, dbDir, merged := copyBundle(t, dir), copyBundle(t, dir), copyBundle(t, dir)
	web := [2]string{"Value: ${output app::Name}\n      Size: small", "Value: ${output app::Name}\n      Size: large"}
	db := [2]string{"Size: small\n    termination_protection: true", "Size: large\n    termination_protection: true"}
	edit(t, webDir, "cairn.yaml", web[0], web[1])
	edit(t, dbDir, "cairn.yaml", db[0], db[1])
	edit(t, merged, "cairn.yaml", web[0], web[1])
	edit(t, merged, "cairn.yaml", db[0], db[1])
	p21 := w.planOf("shop", w.uploadPlanMeta("shop", webDir, map[string]string{"pull-request": "21"}))
	p22 := w.planOf("shop", w.uploadPlanMeta("shop", dbDir, map[string]string{"pull-request": "22"}))
	if p21.Status != plan.Planned || p22.Status != plan.Planned || p21.Stack("web").ChangeSetID == "" || p22.Stack("database").ChangeSetID == "" {
		t.Fatalf("plans: %s %s", p21.Status, p22.Status)
	}
	if after, _ := plan.Decode([]byte(w.object(layout.PlanKey("shop", p21.ID)))); after.Status != plan.Planned {
		t.Fatalf("#21's plan after #22 planned: %s (%s)", after.Status, after.Reason)
	}

	// #22's document now names #21's change set of web for its database entry.
	w.editPlan("shop", p22.ID, func(p *plan.Document) {
		other := p21.Stack("web")
		setChangeSet(p, "database", other.ChangeSetID, other.ChangeSetName, "", "")
	})
	executed, created := len(w.executedIDs()), w.cfnCalls()["CreateChangeSet"]
	apply := w.applyContent("shop", merged)
	reasons := strings.Join(apply.Refusals, "\n")
	t.Logf("refused:\n%s", reasons)
	for _, want := range []string{
		"stack database (shop-database): the plan of pull request #22 (" + p22.ID + ") for stack database went stale: plan " + p22.ID + " of deployment shop: its seal is not the deployer's of the document as it is now",
		"change set " + p21.Stack("web").ChangeSetName + " is not one of this plan's (they are named cairn-" + p22.ID + "-N)",
	} {
		if apply.Run.Status != run.RunFailed || !strings.Contains(reasons, want) {
			t.Errorf("apply of the merged content: %s, refusals:\n%s\nwant one containing %q", apply.Run.Status, reasons, want)
		}
	}
	if strings.Contains(reasons, "stack web") {
		t.Errorf("web, covered by #21's sound plan, is refused too:\n%s", reasons)
	}
	if n := len(w.executedIDs()); n != executed || w.cfnCalls()["CreateChangeSet"] != created {
		t.Fatalf("a refused apply executed %d and created %d change set(s)", n-executed, w.cfnCalls()["CreateChangeSet"]-created)
	}

	// #22 planned again: the merged content applies exactly the two reviewed change sets.
	again := w.planOf("shop", w.uploadPlanMeta("shop", dbDir, map[string]string{"pull-request": "22"}))
	created = w.cfnCalls()["CreateChangeSet"]
	apply = w.applyContent("shop", merged)
	ran := w.executedIDs()[executed:]
	slices.Sort(ran)
	want := []string{p21.Stack("web").ChangeSetID, again.Stack("database").ChangeSetID}
	slices.Sort(want)
	if apply.Run.Status != run.Succeeded || !slices.Equal(ran, want) || w.cfnCalls()["CreateChangeSet"] != created {
		t.Fatalf("apply: %s (%s) %v; executed %v, want %v; created %d", apply.Run.Status, apply.Run.Reason, apply.Refusals, ran, want, w.cfnCalls()["CreateChangeSet"]-created)
	}
	if !slices.Equal(apply.Plans, []string{p21.ID, again.ID}) || !slices.Equal(apply.Applies, []string{p21.ID, again.ID}) {
		t.Errorf("apply composed plans %v, applied %v", apply.Plans, apply.Applies)
	}
	for _, id := range []string{p21.ID, again.ID} {
		if p, _ := plan.Decode([]byte(w.object(layout.PlanKey("shop", id)))); p.Status != plan.Applied || p.AppliedBy != apply.Run.ID {
			t.Errorf("plan %s after the apply: %s by %s", id, p.Status, p.AppliedBy)
		}
	}
}
