package cfnlocal

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

const (
	childURL = "https://templates.s3.us-east-1.amazonaws.com/network.yaml"
	child    = `Parameters:
  Cidr: {Type: String}
Resources:
  Vpc:
    Type: AWS::EC2::VPC
    Properties: {CidrBlock: !Ref Cidr}
Outputs:
  VpcId: {Value: !Ref Vpc}
  Cidr: {Value: !GetAtt Vpc.CidrBlock}
`
	parent = `Parameters:
  Cidr: {Type: String, Default: 10.0.0.0/16}
  Fail: {Type: String, Default: "no"}
Conditions:
  Failing: !Equals [!Ref Fail, "yes"]
Resources:
  Network:
    Type: AWS::CloudFormation::Stack
    Properties:
      TemplateURL: ` + childURL + `
      Parameters: {Cidr: !Ref Cidr}
  Subnet:
    Type: AWS::EC2::Subnet
    Properties: {VpcId: !GetAtt Network.Outputs.VpcId, CidrBlock: !Select [0, !Cidr [!GetAtt Network.Outputs.Cidr, 2, 8]]}
  Broken:
    Type: AWS::SQS::Queue
    Condition: Failing
    DependsOn: Network
    Properties: {VisibilityTimeout: [not, a, number]}
Outputs:
  VpcId: {Value: !GetAtt Network.Outputs.VpcId}
  Child: {Value: !Ref Network}
`
)

// nestedChild returns the parent's child stack (DescribeStacks lists nested stacks, with
// their ParentId).
func (e *env) nestedChild(parentID string) types.Stack {
	e.t.Helper()
	out, err := e.cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, st := range out.Stacks {
		if aws.ToString(st.ParentId) == parentID {
			return st
		}
	}
	e.t.Fatalf("no stack has parent %s", parentID)
	return types.Stack{}
}

func TestNestedStacksAreRealStacks(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	e.s3["templates/network.yaml"] = child
	id := e.create("shop", parent, nil)
	st := e.settle("shop")
	if st.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("status %s (%s)\n%s", st.StackStatus, aws.ToString(st.StackStatusReason), strings.Join(eventLines(e.allEvents("shop")), "\n"))
	}
	kid := e.nestedChild(id)
	out := outputs(st)
	if out["Child"] != aws.ToString(kid.StackId) || !strings.HasPrefix(aws.ToString(kid.StackName), "shop-Network-") || aws.ToString(kid.RootId) != id {
		t.Errorf("the nested stack's ARN is the resource's physical id: output %q, child %s (%s, root %s)", out["Child"], aws.ToString(kid.StackId), aws.ToString(kid.StackName), aws.ToString(kid.RootId))
	}
	if kidOut := outputs(kid); out["VpcId"] != kidOut["VpcId"] || !strings.HasPrefix(out["VpcId"], "vpc-") {
		t.Errorf("GetAtt Network.Outputs.VpcId = %q, the child's output %q", out["VpcId"], kidOut["VpcId"])
	}
	mustContainInOrder(t, eventLines(e.allEvents(aws.ToString(kid.StackId))), aws.ToString(kid.StackName)+" CREATE_IN_PROGRESS", "Vpc CREATE_COMPLETE", aws.ToString(kid.StackName)+" CREATE_COMPLETE")

	// an update of a parameter updates the child
	update := func(params map[string]string) types.Stack {
		t.Helper()
		if _, err := e.cfn.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("shop"), UsePreviousTemplate: aws.Bool(true), Parameters: sdkParams(params)}); err != nil {
			t.Fatal(err)
		}
		return e.settle("shop")
	}
	if st := update(map[string]string{"Cidr": "10.1.0.0/16"}); st.StackStatus != types.StackStatusUpdateComplete {
		t.Fatalf("update: %s (%s)\n%s", st.StackStatus, aws.ToString(st.StackStatusReason), strings.Join(eventLines(e.allEvents("shop")), "\n"))
	}
	if kid := e.stack(aws.ToString(kid.StackId)); kid.StackStatus != types.StackStatusUpdateComplete || outputs(kid)["Cidr"] != "10.1.0.0/16" {
		t.Fatalf("child after update: %s %v", kid.StackStatus, outputs(kid))
	}
	// what reads the child's outputs follows them
	if lines := strings.Join(eventLines(e.allEvents("shop")), "\n"); !strings.Contains(lines, "Subnet UPDATE_IN_PROGRESS") {
		t.Errorf("the subnet reading the child's Cidr output was not updated:\n%s", lines)
	}
	// a new template at the same URL updates the child too
	e.s3["templates/network.yaml"] = child + "  Extra: {Value: x}\n"
	if st := update(map[string]string{"Cidr": "10.1.0.0/16"}); st.StackStatus != types.StackStatusUpdateComplete || outputs(e.stack(aws.ToString(kid.StackId)))["Extra"] != "x" {
		t.Fatalf("update of the child's template: %s (%s); child outputs %v", st.StackStatus, aws.ToString(st.StackStatusReason), outputs(e.stack(aws.ToString(kid.StackId))))
	}
	// a failing update rolls the child back to its parameters
	if st := update(map[string]string{"Cidr": "10.2.0.0/16", "Fail": "yes"}); st.StackStatus != types.StackStatusUpdateRollbackComplete {
		t.Fatalf("failing update: %s (%s)", st.StackStatus, aws.ToString(st.StackStatusReason))
	}
	kid = e.stack(aws.ToString(kid.StackId))
	if kid.StackStatus != types.StackStatusUpdateRollbackComplete || outputs(kid)["Cidr"] != "10.1.0.0/16" {
		t.Fatalf("child after the parent's rollback: %s %v\n%s", kid.StackStatus, outputs(kid), strings.Join(eventLines(e.allEvents(aws.ToString(kid.StackId))), "\n"))
	}
	// deleting the parent deletes the child
	if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("shop")}); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Hour)
	if st, kid := e.stack(id), e.stack(aws.ToString(kid.StackId)); st.StackStatus != types.StackStatusDeleteComplete || kid.StackStatus != types.StackStatusDeleteComplete {
		t.Fatalf("after delete: parent %s, child %s", st.StackStatus, kid.StackStatus)
	}
}

func TestNestedStackFailuresFailTheParent(t *testing.T) {
	tests := []struct {
		name, childBody, want string
	}{
		{"missing template", "", "Network CREATE_FAILED (S3 error: Access Denied\nFor more information check http://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html)"},
		{"failing child", strings.Replace(child, "{CidrBlock: !Ref Cidr}", "{CidrBlock: [!Ref Cidr]}", 1), "was not successfully created: The following resource(s) failed to create: [Vpc]. "},
		{"child parameter missing", strings.Replace(child, "Cidr: {Type: String}", "Cidr: {Type: String}\n  Other: {Type: String}", 1), "Network CREATE_FAILED (Parameters: [Other] must have values)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			if tc.childBody != "" {
				e.s3["templates/network.yaml"] = tc.childBody
			}
			id := e.create("shop", parent, nil)
			st := e.settle("shop")
			lines := strings.Join(eventLines(e.allEvents("shop")), "\n")
			if st.StackStatus != types.StackStatusRollbackComplete || !strings.Contains(lines, tc.want) {
				t.Fatalf("status %s, want ROLLBACK_COMPLETE with %q:\n%s", st.StackStatus, tc.want, lines)
			}
			out, err := e.cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range out.Stacks {
				if aws.ToString(s.ParentId) == id {
					t.Errorf("child %s of the rolled back parent is %s", aws.ToString(s.StackName), s.StackStatus)
				}
			}
		})
	}
}

// settledChangeSet creates a change set and returns it once it settled.
func (e *env) settledChangeSet(in *cloudformation.CreateChangeSetInput) *cloudformation.DescribeChangeSetOutput {
	e.t.Helper()
	out, err := e.cfn.CreateChangeSet(context.Background(), in)
	if err != nil {
		e.t.Fatal(err)
	}
	e.clk.Advance(time.Minute)
	return e.describeChangeSet(aws.ToString(out.Id))
}

func (e *env) describeChangeSet(id string) *cloudformation.DescribeChangeSetOutput {
	e.t.Helper()
	cs, err := e.cfn.DescribeChangeSet(context.Background(), &cloudformation.DescribeChangeSetInput{ChangeSetName: aws.String(id)})
	if err != nil {
		e.t.Fatal(err)
	}
	return cs
}

// changeLines renders a change set's changes as "Action LogicalId [nested]".
func changeLines(cs *cloudformation.DescribeChangeSetOutput) []string {
	var out []string
	for _, c := range cs.Changes {
		rc := c.ResourceChange
		l := string(rc.Action) + " " + aws.ToString(rc.LogicalResourceId)
		if aws.ToString(rc.ChangeSetId) != "" {
			l += " [nested]"
		}
		out = append(out, l)
	}
	return out
}

func nestedOf(t *testing.T, cs *cloudformation.DescribeChangeSetOutput, logicalID string) string {
	t.Helper()
	for _, c := range cs.Changes {
		if aws.ToString(c.ResourceChange.LogicalResourceId) == logicalID && aws.ToString(c.ResourceChange.ChangeSetId) != "" {
			return aws.ToString(c.ResourceChange.ChangeSetId)
		}
	}
	t.Fatalf("no nested change set for %s in %v", logicalID, changeLines(cs))
	return ""
}

func TestNestedChangeSets(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	e.s3["templates/network.yaml"] = child
	root := e.settledChangeSet(&cloudformation.CreateChangeSetInput{StackName: aws.String("shop"), ChangeSetName: aws.String("c1"),
		ChangeSetType: types.ChangeSetTypeCreate, TemplateBody: aws.String(parent), IncludeNestedStacks: aws.Bool(true)})
	if root.Status != types.ChangeSetStatusCreateComplete || !aws.ToBool(root.IncludeNestedStacks) || !slices.Contains(changeLines(root), "Add Network [nested]") {
		t.Fatalf("root change set %s (%s): %v", root.Status, aws.ToString(root.StatusReason), changeLines(root))
	}
	nested := e.describeChangeSet(nestedOf(t, root, "Network"))
	if aws.ToString(nested.ParentChangeSetId) != aws.ToString(root.ChangeSetId) || aws.ToString(nested.RootChangeSetId) != aws.ToString(root.ChangeSetId) ||
		!slices.Equal(changeLines(nested), []string{"Add Vpc"}) {
		t.Fatalf("nested change set parent %s root %s changes %v", aws.ToString(nested.ParentChangeSetId), aws.ToString(nested.RootChangeSetId), changeLines(nested))
	}
	if kid := e.stack(aws.ToString(nested.StackId)); kid.StackStatus != types.StackStatusReviewInProgress || aws.ToString(kid.ParentId) != aws.ToString(root.StackId) {
		t.Fatalf("the nested change set's stack is %s, parent %s", kid.StackStatus, aws.ToString(kid.ParentId))
	}
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{ChangeSetName: nested.ChangeSetId}); err == nil {
		t.Error("a nested change set executed on its own")
	}
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{ChangeSetName: root.ChangeSetId}); err != nil {
		t.Fatal(err)
	}
	if st := e.settle("shop"); st.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("status %s (%s)\n%s", st.StackStatus, aws.ToString(st.StackStatusReason), strings.Join(eventLines(e.allEvents("shop")), "\n"))
	}
	if kid := e.stack(aws.ToString(nested.StackId)); kid.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("the reviewed child is %s: the root's execution did not adopt it", kid.StackStatus)
	}
	if n := e.describeChangeSet(aws.ToString(nested.ChangeSetId)); n.ExecutionStatus != types.ExecutionStatusExecuteComplete {
		t.Errorf("nested change set after execution: %s", n.ExecutionStatus)
	}

	// an update: the child's change is in its nested change set
	upd := e.settledChangeSet(&cloudformation.CreateChangeSetInput{StackName: aws.String("shop"), ChangeSetName: aws.String("c2"), UsePreviousTemplate: aws.Bool(true),
		Parameters: sdkParams(map[string]string{"Cidr": "10.5.0.0/16"}), IncludeNestedStacks: aws.Bool(true)})
	n := e.describeChangeSet(nestedOf(t, upd, "Network"))
	if !slices.Contains(changeLines(upd), "Modify Subnet") || !slices.Equal(changeLines(n), []string{"Modify Vpc"}) || n.ChangeSetId == nil {
		t.Fatalf("update: root %v, nested %v", changeLines(upd), changeLines(n))
	}
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{ChangeSetName: upd.ChangeSetId}); err != nil {
		t.Fatal(err)
	}
	if st := e.settle("shop"); st.StackStatus != types.StackStatusUpdateComplete || outputs(e.stack(aws.ToString(n.StackId)))["Cidr"] != "10.5.0.0/16" {
		t.Fatalf("after update: %s (%s)", st.StackStatus, aws.ToString(st.StackStatusReason))
	}

	// a nested change set that cannot be made fails its root; deleting a root deletes the
	// stacks made for its nested change sets
	e.s3["templates/network.yaml"] = "Resources: {}\n"
	bad := e.settledChangeSet(&cloudformation.CreateChangeSetInput{StackName: aws.String("shop"), ChangeSetName: aws.String("c3"), UsePreviousTemplate: aws.Bool(true),
		Parameters: sdkParams(map[string]string{"Cidr": "10.6.0.0/16"}), IncludeNestedStacks: aws.Bool(true)})
	if bad.Status != types.ChangeSetStatusFailed || !strings.Contains(aws.ToString(bad.StatusReason), "was not successfully created") {
		t.Errorf("root of a failing nested change set: %s (%s)", bad.Status, aws.ToString(bad.StatusReason))
	}
	e.s3["templates/network.yaml"] = child
	fresh := e.settledChangeSet(&cloudformation.CreateChangeSetInput{StackName: aws.String("other"), ChangeSetName: aws.String("c1"),
		ChangeSetType: types.ChangeSetTypeCreate, TemplateBody: aws.String(parent), IncludeNestedStacks: aws.Bool(true)})
	kidID := aws.ToString(e.describeChangeSet(nestedOf(t, fresh, "Network")).StackId)
	if _, err := e.cfn.DeleteChangeSet(ctx, &cloudformation.DeleteChangeSetInput{ChangeSetName: fresh.ChangeSetId}); err != nil {
		t.Fatal(err)
	}
	if kid := e.stack(kidID); kid.StackStatus != types.StackStatusDeleteComplete {
		t.Errorf("the stack of a deleted nested change set is %s", kid.StackStatus)
	}
}
