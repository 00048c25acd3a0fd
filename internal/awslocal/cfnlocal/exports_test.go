package cfnlocal

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

func TestExportImportChainRefusesDeleteInTheMiddle(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	e.create("net", readFixture(t, "network.yaml"), nil)
	net := e.settle("net")
	e.create("app", readFixture(t, "app.yaml"), map[string]string{"Network": "net"})
	app := e.settle("app")
	e.create("edge", readFixture(t, "edge.yaml"), nil)
	edge := e.settle("edge")
	for _, st := range []types.Stack{net, app, edge} {
		if st.StackStatus != types.StackStatusCreateComplete {
			t.Fatalf("%s: %s (%s)", aws.ToString(st.StackName), st.StackStatus, aws.ToString(st.StackStatusReason))
		}
	}

	ex, err := e.cfn.ListExports(ctx, &cloudformation.ListExportsInput{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, x := range ex.Exports {
		got[aws.ToString(x.Name)] = aws.ToString(x.ExportingStackId)
	}
	if got["net-VpcId"] != aws.ToString(net.StackId) || got["app-QueueArn"] != aws.ToString(app.StackId) || len(got) != 2 {
		t.Fatalf("exports = %v", got)
	}
	im, err := e.cfn.ListImports(ctx, &cloudformation.ListImportsInput{ExportName: aws.String("app-QueueArn")})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Imports) != 1 || im.Imports[0] != "edge" {
		t.Fatalf("imports of app-QueueArn = %v, want [edge]", im.Imports)
	}

	// The middle stack cannot go while edge imports its export: it returns to its status.
	if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("app")}); err != nil {
		t.Fatal(err)
	}
	app = e.settle("app")
	if app.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("app after refused delete = %s, want CREATE_COMPLETE", app.StackStatus)
	}
	want := "Export app-QueueArn cannot be deleted as it is in use by edge"
	if aws.ToString(app.StackStatusReason) != want {
		t.Errorf("reason = %q, want %q", aws.ToString(app.StackStatusReason), want)
	}
	lines := eventLines(e.allEvents("app"))
	mustContainInOrder(t, lines, "app DELETE_IN_PROGRESS", "app CREATE_COMPLETE ("+want+")")

	// Changing an export in use is refused too, and the update rolls back.
	if _, err := e.cfn.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("app"),
		TemplateBody: aws.String(strings.Replace(readFixture(t, "app.yaml"), "Export: {Name: app-QueueArn}", "", 1)),
		Parameters:   sdkParams(map[string]string{"Network": "net"})}); err != nil {
		t.Fatal(err)
	}
	app = e.settle("app")
	if app.StackStatus != types.StackStatusUpdateRollbackComplete {
		t.Fatalf("app after removing an export in use = %s", app.StackStatus)
	}
	mustContainInOrder(t, eventLines(e.allEvents("app")), "app UPDATE_ROLLBACK_IN_PROGRESS ("+want+")", "app UPDATE_ROLLBACK_COMPLETE")
	if outputs(app)["QueueArn"] == "" {
		t.Error("rolled back stack lost its outputs")
	}

	// Importing a missing export fails.
	_, err = e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("orphan"),
		TemplateBody: aws.String(strings.ReplaceAll(readFixture(t, "edge.yaml"), "app-QueueArn", "gone-QueueArn"))})
	if err == nil || !strings.Contains(err.Error(), "No export named gone-QueueArn found") {
		t.Fatalf("import of a missing export: %v", err)
	}

	// Exports are unique per account and region.
	if _, err := e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("dup"),
		TemplateBody: aws.String("Resources:\n  T:\n    Type: AWS::SNS::Topic\nOutputs:\n  O:\n    Value: x\n    Export: {Name: app-QueueArn}\n")}); err != nil {
		t.Fatal(err)
	}
	dup := e.settle("dup")
	if dup.StackStatus != types.StackStatusRollbackComplete || !strings.Contains(aws.ToString(dup.StackStatusReason), "") {
		t.Fatalf("duplicate export stack = %s", dup.StackStatus)
	}
	mustContainInOrder(t, eventLines(e.allEvents("dup")), "dup ROLLBACK_IN_PROGRESS (Export with name app-QueueArn is already exported by stack app)")

	// Deleting from the leaves works; deleted stacks are found by id only.
	for _, name := range []string{"edge", "app", "net"} {
		id := aws.ToString(e.stack(name).StackId)
		if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
		if st := e.settle(id); st.StackStatus != types.StackStatusDeleteComplete {
			t.Fatalf("%s after delete = %s (%s)", name, st.StackStatus, aws.ToString(st.StackStatusReason))
		}
		if _, err := e.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)}); err == nil ||
			!strings.Contains(err.Error(), "Stack with id "+name+" does not exist") {
			t.Fatalf("describe deleted %s by name: %v", name, err)
		}
	}
	ls, err := e.cfn.ListStacks(ctx, &cloudformation.ListStacksInput{StackStatusFilter: []types.StackStatus{types.StackStatusDeleteComplete}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls.StackSummaries) != 3 {
		t.Errorf("ListStacks DELETE_COMPLETE = %d, want 3", len(ls.StackSummaries))
	}
}

func TestTerminationProtectionBlocksDelete(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	e.create("prot", readFixture(t, "edge.yaml")[0:0]+"Resources:\n  T:\n    Type: AWS::SNS::Topic\n", nil)
	e.settle("prot")
	if _, err := e.cfn.UpdateTerminationProtection(ctx, &cloudformation.UpdateTerminationProtectionInput{
		StackName: aws.String("prot"), EnableTerminationProtection: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	_, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("prot")})
	if err == nil || !strings.Contains(err.Error(), "cannot be deleted while TerminationProtection is enabled") {
		t.Fatalf("delete of a protected stack: %v", err)
	}
	if st := e.settle("prot"); st.StackStatus != types.StackStatusCreateComplete || !aws.ToBool(st.EnableTerminationProtection) {
		t.Fatalf("protected stack = %s protection %v", st.StackStatus, aws.ToBool(st.EnableTerminationProtection))
	}
}

func TestStackPolicyDeniesNamedUpdates(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	body := "Resources:\n  Db:\n    Type: AWS::SQS::Queue\n    Properties: {VisibilityTimeout: 30}\n  Other:\n    Type: AWS::SQS::Queue\n    Properties: {VisibilityTimeout: 30}\n"
	e.create("pol", body, nil)
	e.settle("pol")
	policy := `{"Statement":[{"Effect":"Deny","Action":"Update:*","Principal":"*","Resource":"LogicalResourceId/Db"},{"Effect":"Allow","Action":"Update:*","Principal":"*","Resource":"*"}]}`
	if _, err := e.cfn.SetStackPolicy(ctx, &cloudformation.SetStackPolicyInput{StackName: aws.String("pol"), StackPolicyBody: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, body string
		want       types.StackStatus
	}{
		{"allowed resource", strings.Replace(body, "Other:\n    Type: AWS::SQS::Queue\n    Properties: {VisibilityTimeout: 30}", "Other:\n    Type: AWS::SQS::Queue\n    Properties: {VisibilityTimeout: 60}", 1), types.StackStatusUpdateComplete},
		{"denied resource", strings.Replace(body, "Db:\n    Type: AWS::SQS::Queue\n    Properties: {VisibilityTimeout: 30}", "Db:\n    Type: AWS::SQS::Queue\n    Properties: {VisibilityTimeout: 90}", 1), types.StackStatusUpdateRollbackComplete},
	}
	for _, tc := range tests {
		if _, err := e.cfn.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("pol"), TemplateBody: aws.String(tc.body)}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if st := e.settle("pol"); st.StackStatus != tc.want {
			t.Fatalf("%s: status %s, want %s", tc.name, st.StackStatus, tc.want)
		}
	}
	mustContainInOrder(t, eventLines(e.allEvents("pol")), "Db UPDATE_FAILED (Action denied by stack policy: Statement [#1] does not allow [Update:Modify] for resource [LogicalResourceId/Db])")
}
