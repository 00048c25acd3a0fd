package cfnlocal

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

const queueV1 = `Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: orders
      VisibilityTimeout: 30
  Topic:
    Type: AWS::SNS::Topic
    Properties:
      DisplayName: !GetAtt Queue.Arn
  Old:
    Type: AWS::SNS::Topic
Outputs:
  Url:
    Value: !Ref Queue
`

// queueV2 modifies Queue in place, replaces it through its create-only QueueName in v3,
// adds Log and removes Old.
var (
	queueV2 = strings.Replace(strings.Replace(queueV1, "VisibilityTimeout: 30", "VisibilityTimeout: 60", 1),
		"  Old:\n    Type: AWS::SNS::Topic\n", "  Log:\n    Type: AWS::Logs::LogGroup\n", 1)
	queueV3 = strings.Replace(queueV2, "QueueName: orders", "QueueName: orders-v3", 1)
)

func (e *env) changeSet(stack, name, body string, typ types.ChangeSetType) *cloudformation.DescribeChangeSetOutput {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String(stack),
		ChangeSetName: aws.String(name), TemplateBody: aws.String(body), ChangeSetType: typ}); err != nil {
		e.t.Fatalf("create change set %s: %v", name, err)
	}
	e.clk.Advance(e.svc.o.ChangeSetDelay)
	out, err := e.cfn.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String(stack), ChangeSetName: aws.String(name)})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func changeSummary(cs *cloudformation.DescribeChangeSetOutput) map[string]string {
	m := map[string]string{}
	for _, c := range cs.Changes {
		rc := c.ResourceChange
		s := string(rc.Action)
		if rc.Replacement != "" {
			s += "/" + string(rc.Replacement)
		}
		m[aws.ToString(rc.LogicalResourceId)] = s
	}
	return m
}

func TestChangeSetLifeCycle(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)

	// A CREATE change set puts a new stack in REVIEW_IN_PROGRESS.
	if _, err := e.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("q"),
		ChangeSetName: aws.String("c1"), TemplateBody: aws.String(queueV1), ChangeSetType: types.ChangeSetTypeCreate}); err != nil {
		t.Fatal(err)
	}
	if st := e.stack("q"); st.StackStatus != types.StackStatusReviewInProgress {
		t.Fatalf("status after CREATE change set = %s", st.StackStatus)
	}
	cs, err := e.cfn.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String("q"), ChangeSetName: aws.String("c1")})
	if err != nil {
		t.Fatal(err)
	}
	if cs.Status != types.ChangeSetStatusCreateInProgress {
		t.Fatalf("change set status before its time = %s", cs.Status)
	}
	// executing an unfinished change set is refused
	_, err = e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String("q"), ChangeSetName: aws.String("c1")})
	if apiCode(err) != "InvalidChangeSetStatus" {
		t.Fatalf("execute unfinished: %v", err)
	}
	e.clk.Advance(e.svc.o.ChangeSetDelay)
	cs, err = e.cfn.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String("q"), ChangeSetName: aws.String("c1")})
	if err != nil {
		t.Fatal(err)
	}
	if cs.Status != types.ChangeSetStatusCreateComplete || cs.ExecutionStatus != types.ExecutionStatusAvailable {
		t.Fatalf("change set = %s/%s (%s)", cs.Status, cs.ExecutionStatus, aws.ToString(cs.StatusReason))
	}
	if got := changeSummary(cs); got["Queue"] != "Add" || got["Topic"] != "Add" || got["Old"] != "Add" || len(got) != 3 {
		t.Fatalf("changes = %v", got)
	}
	for i := 0; i < 2; i++ { // the second call is an idempotent retry
		if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String("q"),
			ChangeSetName: aws.String("c1"), ClientRequestToken: aws.String("tok-1")}); err != nil {
			t.Fatalf("execute %d: %v", i, err)
		}
	}
	if st := e.settle("q"); st.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("after execute = %s", st.StackStatus)
	}
	firstURL := outputs(e.stack("q"))["Url"]

	// An UPDATE change set shows Modify, Add and Remove.
	cs = e.changeSet("q", "c2", queueV2, types.ChangeSetTypeUpdate)
	want := map[string]string{"Queue": "Modify/False", "Log": "Add", "Old": "Remove"}
	if got := changeSummary(cs); !equalJSON(got, want) {
		t.Fatalf("c2 changes = %v, want %v", got, want)
	}
	for _, c := range cs.Changes {
		if aws.ToString(c.ResourceChange.LogicalResourceId) == "Queue" {
			d := c.ResourceChange.Details
			if len(d) != 1 || aws.ToString(d[0].Target.Name) != "VisibilityTimeout" || d[0].Target.RequiresRecreation != types.RequiresRecreationNever {
				t.Fatalf("Queue details = %+v", d)
			}
		}
	}
	// A second change set is planned, then another one runs: c3 goes away.
	e.changeSet("q", "c3", queueV3, types.ChangeSetTypeUpdate)
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String("q"), ChangeSetName: aws.String("c2")}); err != nil {
		t.Fatal(err)
	}
	if st := e.settle("q"); st.StackStatus != types.StackStatusUpdateComplete {
		t.Fatalf("after c2 = %s", st.StackStatus)
	}
	_, err = e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String("q"), ChangeSetName: aws.String("c3")})
	if apiCode(err) != "ChangeSetNotFound" {
		t.Fatalf("execute of a change set deleted by another execution: %v", err)
	}
	mustContainInOrder(t, eventLines(e.allEvents("q")), "q UPDATE_IN_PROGRESS", "Log CREATE_COMPLETE", "Queue UPDATE_IN_PROGRESS", "Queue UPDATE_COMPLETE",
		"q UPDATE_COMPLETE_CLEANUP_IN_PROGRESS", "Old DELETE_IN_PROGRESS", "Old DELETE_COMPLETE", "q UPDATE_COMPLETE")
	if got := outputs(e.stack("q"))["Url"]; got != firstURL {
		t.Errorf("in-place update changed the queue url %s -> %s", firstURL, got)
	}

	// Replacement: the create-only QueueName changes; Topic references the queue.
	cs = e.changeSet("q", "c4", queueV3, types.ChangeSetTypeUpdate)
	if got := changeSummary(cs); got["Queue"] != "Modify/True" || got["Topic"] != "Modify/Conditional" {
		t.Fatalf("c4 changes = %v", got)
	}
	// A direct update makes the remaining change set OBSOLETE: it is stale and refused.
	e.changeSet("q", "stale", queueV3, types.ChangeSetTypeUpdate)
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String("q"), ChangeSetName: aws.String("c4")}); err != nil {
		t.Fatal(err)
	}
	e.settle("q")
	_, err = e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String("q"), ChangeSetName: aws.String("stale")})
	if apiCode(err) != "ChangeSetNotFound" {
		t.Fatalf("execute after another execution: %v", err)
	}
	e.changeSet("q", "stale2", queueV2, types.ChangeSetTypeUpdate)
	if _, err := e.cfn.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("q"), TemplateBody: aws.String(queueV1)}); err != nil {
		t.Fatal(err)
	}
	e.settle("q")
	cs2, err := e.cfn.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String("q"), ChangeSetName: aws.String("stale2")})
	if err != nil || cs2.ExecutionStatus != types.ExecutionStatusObsolete {
		t.Fatalf("stale2 after a direct update: %v %v", cs2.ExecutionStatus, err)
	}
	_, err = e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String("q"), ChangeSetName: aws.String("stale2")})
	if apiCode(err) != "InvalidChangeSetStatus" || !strings.Contains(err.Error(), "OBSOLETE") {
		t.Fatalf("execute OBSOLETE: %v", err)
	}
	evs := eventLines(e.allEvents("q"))
	mustContainInOrder(t, evs, "Queue UPDATE_IN_PROGRESS (Requested update requires the creation of a new physical resource; hence creating one.)",
		"Queue UPDATE_COMPLETE", "Topic UPDATE_COMPLETE", "q UPDATE_COMPLETE_CLEANUP_IN_PROGRESS", "Queue DELETE_COMPLETE", "q UPDATE_COMPLETE")

	// No changes: FAILED with AWS's exact reason, and UpdateStack says so too.
	cs = e.changeSet("q", "same", queueV1, types.ChangeSetTypeUpdate)
	if cs.Status != types.ChangeSetStatusFailed || aws.ToString(cs.StatusReason) != noChangesReason {
		t.Fatalf("no-change change set = %s %q", cs.Status, aws.ToString(cs.StatusReason))
	}
	_, err = e.cfn.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("q"), TemplateBody: aws.String(queueV1)})
	if err == nil || !strings.Contains(err.Error(), "No updates are to be performed.") {
		t.Fatalf("no-op update: %v", err)
	}
	_, err = e.cfn.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String("q"), ChangeSetName: aws.String("never")})
	if apiCode(err) != "ChangeSetNotFound" {
		t.Fatalf("missing change set: %v", err)
	}

	// Exactly the executed change sets are recorded.
	var names []string
	for _, x := range e.svc.ExecutedChangeSets() {
		names = append(names, x.ChangeSetName)
	}
	if strings.Join(names, ",") != "c1,c2,c4" {
		t.Errorf("executed change sets = %v, want c1,c2,c4", names)
	}
}

func TestChangeSetParametersUsePreviousValueAndTemplateURL(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	e.s3["templates/net.yaml"] = readFixture(t, "network.yaml")
	if _, err := e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("n"),
		TemplateURL: aws.String(e.srv.URL + "/templates/net.yaml"), Parameters: sdkParams(map[string]string{"Env": "prod"})}); err != nil {
		t.Fatal(err)
	}
	e.settle("n")
	if _, err := e.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("n"), ChangeSetName: aws.String("p"),
		TemplateURL: aws.String("https://templates.s3.amazonaws.com/net.yaml"),
		Parameters: []types.Parameter{{ParameterKey: aws.String("Env"), UsePreviousValue: aws.Bool(true)},
			{ParameterKey: aws.String("CidrBlock"), ParameterValue: aws.String("10.1.0.0/16")}}}); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(e.svc.o.ChangeSetDelay)
	cs, err := e.cfn.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String("n"), ChangeSetName: aws.String("p")})
	if err != nil {
		t.Fatal(err)
	}
	got := changeSummary(cs)
	if got["Vpc"] != "Modify/True" || got["SubnetA"] != "Modify/Conditional" || got["ProdOnly"] != "" {
		t.Fatalf("changes = %v", got)
	}
	for _, p := range cs.Parameters {
		if aws.ToString(p.ParameterKey) == "Env" && aws.ToString(p.ParameterValue) != "prod" {
			t.Errorf("UsePreviousValue gave Env=%s", aws.ToString(p.ParameterValue))
		}
	}
}

// TestDeleteChangeSetOfAMissingName: CloudFormation deletes a change set by name as long as
// the stack exists, even when the stack has no change set of that name (the CDK CLI deletes
// "cdk-deploy-change-set" before every deploy of an existing stack and stops on any error);
// a stack that does not exist, or was deleted, is a ValidationError, as AWS answers
// ("Stack [NAME] does not exist"), and a change set ARN that names nothing is not found.
func TestDeleteChangeSetOfAMissingName(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	e.create("live", threeQueues, nil)
	e.settle("live")
	e.changeSet("live", "kept", threeQueues+"  D:\n    Type: AWS::SQS::Queue\n", types.ChangeSetTypeUpdate)
	gone := e.changeSet("live", "gone", threeQueues+"  E:\n    Type: AWS::SQS::Queue\n", types.ChangeSetTypeUpdate)
	if _, err := e.cfn.DeleteChangeSet(ctx, &cloudformation.DeleteChangeSetInput{ChangeSetName: gone.ChangeSetId}); err != nil {
		t.Fatal(err)
	}
	e.create("dead", threeQueues, nil)
	e.settle("dead")
	if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("dead")}); err != nil {
		t.Fatal(err)
	}
	e.settle(aws.ToString(e.stack("dead").StackId))

	tests := []struct {
		name, stack, changeSet string
		wantCode, wantMsg      string
	}{
		{"a name the stack does not have", "live", "cdk-deploy-change-set", "", ""},
		{"a name already deleted", "live", "gone", "", ""},
		{"a name the stack has", "live", "kept", "", ""},
		{"a stack that does not exist", "nope", "cdk-deploy-change-set", "ValidationError", "Stack [nope] does not exist"},
		{"a stack that was deleted", "dead", "cdk-deploy-change-set", "ValidationError", "Stack [dead] does not exist"},
		{"an ARN that names nothing", "live", "arn:aws:cloudformation:us-east-1:123456789012:changeSet/x/00000000-0000-0000-0000-000000000000", "ChangeSetNotFound", "does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.cfn.DeleteChangeSet(ctx, &cloudformation.DeleteChangeSetInput{StackName: aws.String(tc.stack), ChangeSetName: aws.String(tc.changeSet)})
			if apiCode(err) != tc.wantCode || (err != nil && !strings.Contains(err.Error(), tc.wantMsg)) {
				t.Fatalf("DeleteChangeSet(%s, %s) = %v, want code %q with %q", tc.stack, tc.changeSet, err, tc.wantCode, tc.wantMsg)
			}
		})
	}
	ls, err := e.cfn.ListChangeSets(ctx, &cloudformation.ListChangeSetsInput{StackName: aws.String("live")})
	if err != nil || len(ls.Summaries) != 0 {
		t.Fatalf("change sets left on live: %+v %v", ls, err)
	}
	// Only DeleteChangeSet forgives a missing name: describing or executing it is an error.
	if _, err := e.cfn.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String("live"), ChangeSetName: aws.String("kept")}); apiCode(err) != "ChangeSetNotFound" {
		t.Errorf("DescribeChangeSet of a deleted name = %v, want ChangeSetNotFound", err)
	}
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String("live"), ChangeSetName: aws.String("kept")}); apiCode(err) != "ChangeSetNotFound" {
		t.Errorf("ExecuteChangeSet of a deleted name = %v, want ChangeSetNotFound", err)
	}
}
