package deployer_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
)

// refusedTemplate is a template the emulator refuses a change set for, as CloudFormation
// does: its parameter's default breaks the parameter's own MaxLength.
const refusedTemplate = `AWSTemplateFormatVersion: "2010-09-09"
Description: A topic whose name parameter cannot hold the output it is given.
Parameters:
  TopicName:
    Type: String
    MaxLength: 3
Resources:
  Topic:
    Type: AWS::SNS::Topic
    Properties:
      TopicName: !Ref TopicName
`

const brokenStack = `  - name: broken
    template_path: templates/refused.yaml
    parameters: {TopicName: "${output network::VpcId}"}
`

func queueStack(name string) string {
	return "  - name: " + name + "\n    template_path: templates/topic.yaml\n"
}

// TestFailedPlanIsCleanedUp makes plan runs that fail partway: stack broken's parameter
// is refused before its change set is made (the output it reads is too long), after the CREATE change sets of new stacks made their REVIEW_IN_PROGRESS
// stacks. A newer plan supersedes the first: its REVIEW_IN_PROGRESS stack is deleted, but
// not one holding a change set someone else made (only the plan's change set goes). A
// second failed plan expires on the virtual clock and is cleaned up the same way. A
// REVIEW_IN_PROGRESS stack cairn did not create is never touched.
func TestFailedPlanIsCleanedUp(t *testing.T) {
	w := newReviewWorldWith(t, worldOptions{PlanTTL: 30 * time.Minute})
	dir, _ := deployChain(t, w)
	ctx := context.Background()
	topic, err := os.ReadFile(filepath.Join(dir, "templates", "topic.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "templates", "refused.yaml"), []byte(refusedTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	createChangeSet := func(stack, name string) string {
		t.Helper()
		out, err := w.cfnc.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String(stack), ChangeSetName: aws.String(name),
			ChangeSetType: cfntypes.ChangeSetTypeCreate, TemplateBody: aws.String(string(topic))})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.Id)
	}
	changeSets := func(stack string) []string {
		t.Helper()
		out, err := w.cfnc.ListChangeSets(ctx, &cloudformation.ListChangeSetsInput{StackName: aws.String(stack)})
		if err != nil {
			t.Fatalf("list change sets of %s: %v", stack, err)
		}
		var ids []string
		for _, c := range out.Summaries {
			ids = append(ids, aws.ToString(c.ChangeSetId))
		}
		return ids
	}
	status := func(stackID string) cfntypes.StackStatus {
		t.Helper()
		out, err := w.cfnc.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stackID)})
		if err != nil || len(out.Stacks) != 1 {
			t.Fatalf("describe %s: %v %+v", stackID, err, out)
		}
		return out.Stacks[0].StackStatus
	}
	retired := func(p *plan.Document, want plan.Status) {
		t.Helper()
		after, err := plan.Decode([]byte(w.object(layout.PlanKey("shop", p.ID))))
		if err != nil || after.Status != want || !strings.Contains(after.Reason, "the plan had failed: "+p.Reason) {
			t.Errorf("failed plan %s after cleanup: %v, status %s (%s), want %s saying it had failed", p.ID, err, after.Status, after.Reason, want)
		}
	}
	// Someone else's review: a change set that made its own REVIEW_IN_PROGRESS stack.
	foreignCS := createChangeSet("scratch-review", "their-review")
	foreignID := w.stacks()["scratch-review"].StackId

	const tail = "Value: ${output app::Name}\n      Size: small\n"
	added := queueStack("queue") + queueStack("extra") + brokenStack
	edit(t, dir, "cairn.yaml", tail, tail+added)
	failed := w.planOf("shop", w.uploadPlan("shop", dir))
	if failed.Status != plan.PlanFailed || failed.Run.Stacks["broken"].Phase != run.Failed ||
		!strings.Contains(failed.Run.Stacks["broken"].Reason, `stack broken: parameter TopicName: value "vpc-`) {
		t.Fatalf("plan with a refused change set: %s (%s), broken %+v", failed.Status, failed.Reason, failed.Run.Stacks["broken"])
	}
	for _, name := range []string{"queue", "extra"} {
		if s := failed.Stack(name); s.ChangeSetID == "" || s.Status != "REVIEW_IN_PROGRESS" || status(s.StackID) != cfntypes.StackStatusReviewInProgress {
			t.Fatalf("failed plan's stack %s: %+v, want a REVIEW_IN_PROGRESS stack with its change set", name, s)
		}
	}
	// A reviewer's own change set on extra's REVIEW_IN_PROGRESS stack keeps that stack.
	manualCS := createChangeSet("shop-extra", "manual-review")

	edit(t, dir, "cairn.yaml", added, "")
	next := w.planOf("shop", w.uploadPlan("shop", dir))
	if next.Status != plan.Planned {
		t.Fatalf("next plan: %s (%s) %v", next.Status, next.Reason, next.Refusals)
	}
	retired(failed, plan.Superseded)
	if st := status(failed.Stack("queue").StackID); st != cfntypes.StackStatusDeleteComplete {
		t.Errorf("the failed plan's REVIEW_IN_PROGRESS stack shop-queue is %s, want DELETE_COMPLETE", st)
	}
	extra := failed.Stack("extra")
	if st, cs := status(extra.StackID), changeSets("shop-extra"); st != cfntypes.StackStatusReviewInProgress || !slices.Equal(cs, []string{manualCS}) {
		t.Errorf("shop-extra holds another change set: %s with change sets %v, want REVIEW_IN_PROGRESS with only %s", st, cs, manualCS)
	}
	foreignIntact := func() {
		t.Helper()
		if st, cs := status(aws.ToString(foreignID)), changeSets("scratch-review"); st != cfntypes.StackStatusReviewInProgress || !slices.Equal(cs, []string{foreignCS}) {
			t.Errorf("the REVIEW_IN_PROGRESS stack cairn did not create was touched: %s, change sets %v", st, cs)
		}
	}
	foreignIntact()

	// Expiry: a second failed plan, never superseded, is cleaned up once it expires.
	added = queueStack("queue") + brokenStack
	edit(t, dir, "cairn.yaml", tail, tail+added)
	second := w.planOf("shop", w.uploadPlan("shop", dir))
	queue := second.Stack("queue")
	if second.Status != plan.PlanFailed || queue.ChangeSetID == "" || status(queue.StackID) != cfntypes.StackStatusReviewInProgress {
		t.Fatalf("second failed plan: %s (%s), queue %+v", second.Status, second.Reason, queue)
	}
	w.clk.Advance(31 * time.Minute)
	apply := w.approve("shop", second.ID)
	if r := strings.Join(apply.Refusals, "\n"); apply.Run.Status != run.RunFailed || !strings.Contains(r, "plan "+second.ID+" failed") {
		t.Errorf("approval of the failed plan: %s, refusals %q", apply.Run.Status, r)
	}
	retired(second, plan.Expired)
	if st := status(queue.StackID); st != cfntypes.StackStatusDeleteComplete {
		t.Errorf("the expired plan's REVIEW_IN_PROGRESS stack shop-queue is %s, want DELETE_COMPLETE", st)
	}
	foreignIntact()
}

// TestSupersededAndExpiredPlansAreCleanedUp plans a change with a new stack (its change
// set makes a REVIEW_IN_PROGRESS stack), then plans again without it: the first plan is
// superseded, its change sets and its REVIEW_IN_PROGRESS stack are deleted. The second
// plan, approved after the plan TTL, is refused as expired and cleaned up the same way.
func TestSupersededAndExpiredPlansAreCleanedUp(t *testing.T) {
	w := newReviewWorldWith(t, worldOptions{PlanTTL: 30 * time.Minute})
	dir, _ := deployChain(t, w)
	ctx := context.Background()
	edit(t, dir, "cairn.yaml", "Value: ${output app::Name}\n      Size: small\n", "Value: ${output app::Name}\n      Size: medium\n"+workerStacks)
	first := w.planOf("shop", w.uploadPlan("shop", dir))
	if first.Status != plan.Planned || first.Stack("queue").Status != "REVIEW_IN_PROGRESS" {
		t.Fatalf("first plan: %s %v, queue %+v", first.Status, first.Refusals, first.Stack("queue"))
	}
	queueID := first.Stack("queue").StackID
	edit(t, dir, "cairn.yaml", workerStacks, "")
	second := w.planOf("shop", w.uploadPlan("shop", dir))
	if second.Status != plan.Planned {
		t.Fatalf("second plan: %s %v", second.Status, second.Refusals)
	}
	gone := func(p *plan.Document, status plan.Status) {
		t.Helper()
		after, err := plan.Decode([]byte(w.object(layout.PlanKey("shop", p.ID))))
		if err != nil || after.Status != status {
			t.Errorf("plan %s: %v, status %s, want %s", p.ID, err, after.Status, status)
		}
		for _, s := range p.Stacks {
			if s.ChangeSetID == "" || s.Action == "create" {
				continue
			}
			if _, err := w.cfnc.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{ChangeSetName: aws.String(s.ChangeSetID)}); err == nil {
				t.Errorf("plan %s (%s): change set %s of %s still exists", p.ID, status, s.ChangeSetName, s.StackName)
			}
		}
	}
	gone(first, plan.Superseded)
	out, err := w.cfnc.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(queueID)})
	if err != nil || len(out.Stacks) != 1 || out.Stacks[0].StackStatus != cfntypes.StackStatusDeleteComplete {
		t.Errorf("the REVIEW_IN_PROGRESS stack of the superseded plan: %v %+v, want DELETE_COMPLETE", err, out)
	}
	if _, err := w.cfnc.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{ChangeSetName: aws.String(second.Stack("web").ChangeSetID)}); err != nil {
		t.Errorf("the newest plan's change set was deleted: %v", err)
	}

	w.clk.Advance(31 * time.Minute)
	executed := len(w.executedIDs())
	apply := w.approve("shop", second.ID)
	if r := strings.Join(apply.Refusals, "\n"); apply.Run.Status != run.RunFailed || !strings.Contains(r, "plan "+second.ID+" expired: made ") || !strings.HasSuffix(r, "re-plan") {
		t.Errorf("approval after the TTL: %s, refusals %q", apply.Run.Status, r)
	}
	if len(w.executedIDs()) != executed {
		t.Errorf("an expired plan executed change sets")
	}
	gone(second, plan.Expired)
}

// TestAnotherJobsPullRequestNumberSupersedesNothing: a plan uploaded as pull request 7 from
// another head branch (another job's --pr 7) leaves pull request 7's reviewed plan open
// (before: it was superseded, its change sets deleted); a plan of pull request 7 from its
// own branch still supersedes it.
func TestAnotherJobsPullRequestNumberSupersedesNothing(t *testing.T) {
	w := newReviewWorld(t)
	dir, _ := deployChain(t, w)
	pr := func(head string) map[string]string {
		return map[string]string{"pull-request": "7", "pull-request-head": head}
	}
	edit(t, dir, "cairn.yaml", "Size: small\n", "Size: medium\n")
	reviewed := w.planOf("shop", w.uploadPlanMeta("shop", dir, pr("fix-size")))
	if reviewed.Status != plan.Planned {
		t.Fatalf("the reviewed plan: %s %v", reviewed.Status, reviewed.Refusals)
	}
	other := w.planOf("shop", w.uploadPlanMeta("shop", dir, pr("someone-else")))
	if other.Status != plan.Planned {
		t.Fatalf("the other job's plan: %s %v", other.Status, other.Refusals)
	}
	status := func(p *plan.Document) plan.Status {
		t.Helper()
		after, err := plan.Decode([]byte(w.object(layout.PlanKey("shop", p.ID))))
		if err != nil {
			t.Fatal(err)
		}
		return after.Status
	}
	if s := status(reviewed); s != plan.Planned {
		t.Fatalf("pull request 7's reviewed plan is %s after another branch's plan named #7, want still planned", s)
	}
	again := w.planOf("shop", w.uploadPlanMeta("shop", dir, pr("fix-size")))
	if again.Status != plan.Planned || status(reviewed) != plan.Superseded {
		t.Fatalf("a new plan of pull request 7's own branch: %s; the reviewed one %s, want superseded", again.Status, status(reviewed))
	}
}
