package cfnlocal

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

const retained = `Parameters:
  Secret: {Type: String, NoEcho: true}
Resources:
  Keep:
    Type: AWS::S3::Bucket
    DeletionPolicy: Retain
  Gone:
    Type: AWS::SQS::Queue
`

func TestDeletionPolicyNoEchoAndReadOperations(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	e.create("r", retained, map[string]string{"Secret": "hunter2"})
	st := e.settle("r")
	if len(st.Parameters) != 1 || aws.ToString(st.Parameters[0].ParameterValue) != "****" {
		t.Fatalf("NoEcho parameter shown as %+v", st.Parameters)
	}
	tpl, err := e.cfn.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String("r")})
	if err != nil || aws.ToString(tpl.TemplateBody) != retained {
		t.Fatalf("GetTemplate = %q, %v", aws.ToString(tpl.TemplateBody), err)
	}
	lr, err := e.cfn.ListStackResources(ctx, &cloudformation.ListStackResourcesInput{StackName: aws.String("r")})
	if err != nil || len(lr.StackResourceSummaries) != 2 {
		t.Fatalf("ListStackResources = %+v, %v", lr, err)
	}
	for _, r := range lr.StackResourceSummaries {
		if aws.ToString(r.LogicalResourceId) == "Gone" && !strings.HasPrefix(aws.ToString(r.PhysicalResourceId), "https://sqs.us-east-1.amazonaws.com/000000000000/r-Gone-") {
			t.Errorf("queue physical id = %s", aws.ToString(r.PhysicalResourceId))
		}
	}
	one, err := e.cfn.DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{StackName: aws.String("r"), LogicalResourceId: aws.String("Keep")})
	if err != nil || one.StackResourceDetail.ResourceStatus != types.ResourceStatusCreateComplete || one.StackResourceDetail.LastUpdatedTimestamp == nil ||
		!strings.HasPrefix(aws.ToString(one.StackResourceDetail.PhysicalResourceId), "r-keep-") {
		t.Fatalf("DescribeStackResource = %+v, %v", one.StackResourceDetail, err)
	}
	sum, err := e.cfn.GetTemplateSummary(ctx, &cloudformation.GetTemplateSummaryInput{StackName: aws.String("r")})
	if err != nil || len(sum.ResourceTypes) != 2 {
		t.Fatalf("GetTemplateSummary = %+v, %v", sum, err)
	}
	v, err := e.cfn.ValidateTemplate(ctx, &cloudformation.ValidateTemplateInput{TemplateBody: aws.String(retained)})
	if err != nil || len(v.Parameters) != 1 || !aws.ToBool(v.Parameters[0].NoEcho) {
		t.Fatalf("ValidateTemplate = %+v, %v", v, err)
	}
	if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("r")}); err != nil {
		t.Fatal(err)
	}
	e.settle(aws.ToString(st.StackId))
	mustContainInOrder(t, eventLines(e.allEvents(aws.ToString(st.StackId))), "Keep DELETE_SKIPPED", "Gone DELETE_COMPLETE", "r DELETE_COMPLETE")
}

func TestRollbackStackCancelUpdateAndReviewDeletion(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	if err := e.svc.InjectFault(Fault{Stack: "f", LogicalID: "C", Operation: "CREATE", Reason: "nope", Count: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("f"), TemplateBody: aws.String(threeQueues),
		OnFailure: types.OnFailureDoNothing}); err != nil {
		t.Fatal(err)
	}
	if st := e.settle("f"); st.StackStatus != types.StackStatusCreateFailed {
		t.Fatalf("create = %s", st.StackStatus)
	}
	if _, err := e.cfn.RollbackStack(ctx, &cloudformation.RollbackStackInput{StackName: aws.String("f")}); err != nil {
		t.Fatal(err)
	}
	if st := e.settle("f"); st.StackStatus != types.StackStatusRollbackComplete {
		t.Fatalf("after RollbackStack = %s", st.StackStatus)
	}
	res, _ := e.cfn.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String("f")})
	if len(res.StackResources) != 0 {
		t.Errorf("%d resources left after rollback", len(res.StackResources))
	}

	e.create("u", threeQueues, nil)
	e.settle("u")
	if err := e.svc.InjectFault(Fault{Stack: "u", LogicalID: "C", Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cfn.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("u"),
		TemplateBody: aws.String(strings.Replace(threeQueues, "DelaySeconds: 0", "DelaySeconds: 3", 1))}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cfn.CancelUpdateStack(ctx, &cloudformation.CancelUpdateStackInput{StackName: aws.String("u")}); err != nil {
		t.Fatal(err)
	}
	e.svc.ClearFaults()
	if st := e.settle("u"); st.StackStatus != types.StackStatusUpdateRollbackComplete {
		t.Fatalf("after CancelUpdateStack = %s", st.StackStatus)
	}
	if _, err := e.cfn.CancelUpdateStack(ctx, &cloudformation.CancelUpdateStackInput{StackName: aws.String("u")}); err == nil {
		t.Error("cancel of a stack not updating succeeded")
	}

	// a stack in review can be deleted, and a deleted change set is gone
	if _, err := e.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("rev"), ChangeSetName: aws.String("c"),
		TemplateBody: aws.String(threeQueues), ChangeSetType: types.ChangeSetTypeCreate}); err != nil {
		t.Fatal(err)
	}
	ls, err := e.cfn.ListChangeSets(ctx, &cloudformation.ListChangeSetsInput{StackName: aws.String("rev")})
	if err != nil || len(ls.Summaries) != 1 {
		t.Fatalf("ListChangeSets = %+v %v", ls, err)
	}
	if _, err := e.cfn.DeleteChangeSet(ctx, &cloudformation.DeleteChangeSetInput{StackName: aws.String("rev"), ChangeSetName: aws.String("c")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String("rev"), ChangeSetName: aws.String("c")}); apiCode(err) != "ChangeSetNotFound" {
		t.Fatalf("execute deleted change set: %v", err)
	}
	id := aws.ToString(e.stack("rev").StackId)
	if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("rev")}); err != nil {
		t.Fatal(err)
	}
	if st := e.stack(id); st.StackStatus != types.StackStatusDeleteComplete {
		t.Fatalf("deleted review stack = %s", st.StackStatus)
	}
}
