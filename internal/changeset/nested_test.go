package changeset

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
	"github.com/cairn-dev/cairn/internal/template"
)

// A template naming bundle templates as nested stacks: the children are uploaded to
// templates/SHA256.json and the parent is sent naming them by their URL, with the
// nested stacks' change sets asked for.
func TestCreateChangeSetUploadsNestedTemplates(t *testing.T) {
	child, err := template.Parse([]byte("Resources:\n  Q: {Type: AWS::SQS::Queue}\n"))
	if err != nil {
		t.Fatal(err)
	}
	parent, err := template.Parse([]byte("Resources:\n  Net:\n    Type: AWS::CloudFormation::Stack\n    Properties:\n      TemplateURL: ./net.yaml\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfn := &fakeCFN{t: t}
	up := &fakeS3{puts: map[string]string{}}
	c := &Client{CFN: cfn, S3: up, Bucket: "cairn-state", Region: "eu-west-1"}
	in := &Inputs{TemplateBody: parent.Body, Tree: &template.Tree{Template: parent, Children: map[string]*template.Tree{"Net": {Template: child, Path: "net.yaml"}}}, IncludeNested: true}
	o := c.Perform(context.Background(), run.Action{Kind: run.CreateChangeSet, Stack: "app", StackName: "shop-app", ChangeSetName: "cairn-r1-1", ChangeSetType: "CREATE"}, in)
	if o.Err != "" {
		t.Fatal(o.Err)
	}
	key := "cairn-state/templates/" + child.SHA256 + ".json"
	if up.puts[key] != string(child.Body) || len(up.puts) != 1 {
		t.Fatalf("uploads %v, want the child at %s", slices.Collect(maps.Keys(up.puts)), key)
	}
	req := cfn.created[0]
	want := "TemplateURL: https://cairn-state.s3.eu-west-1.amazonaws.com/templates/" + child.SHA256 + ".json\n"
	if !strings.HasSuffix(aws.ToString(req.TemplateBody), want) || !aws.ToBool(req.IncludeNestedStacks) {
		t.Errorf("sent %q (IncludeNestedStacks %v), want it to end with %q", aws.ToString(req.TemplateBody), aws.ToBool(req.IncludeNestedStacks), want)
	}
}

// The plan's changes of a stack include its nested stacks' changes, named Stack/Resource.
func TestDescribeFollowsNestedChangeSets(t *testing.T) {
	cfn := &fakeCFN{t: t}
	pages := map[string]*cloudformation.DescribeChangeSetOutput{
		"root": {Status: cfntypes.ChangeSetStatusCreateComplete, Changes: []cfntypes.Change{
			{ResourceChange: &cfntypes.ResourceChange{LogicalResourceId: aws.String("Net"), ResourceType: aws.String("AWS::CloudFormation::Stack"), Action: "Modify", ChangeSetId: aws.String("net")}},
			{ResourceChange: &cfntypes.ResourceChange{LogicalResourceId: aws.String("Queue"), ResourceType: aws.String("AWS::SQS::Queue"), Action: "Add"}}}},
		"net": {Status: cfntypes.ChangeSetStatusCreateComplete, Changes: []cfntypes.Change{
			{ResourceChange: &cfntypes.ResourceChange{LogicalResourceId: aws.String("Vpc"), ResourceType: aws.String("AWS::EC2::VPC"), Action: "Modify"}}}},
	}
	c := &Client{CFN: describer{cfn, pages}}
	cs, err := c.Describe(context.Background(), target.Spec{}, "root")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range cs.Changes {
		got = append(got, ch.Action+" "+ch.LogicalID)
	}
	if want := []string{"Modify Net", "Modify Net/Vpc", "Add Queue"}; !slices.Equal(got, want) {
		t.Errorf("changes %v, want %v", got, want)
	}
}

type describer struct {
	*fakeCFN
	pages map[string]*cloudformation.DescribeChangeSetOutput
}

func (d describer) DescribeChangeSet(_ context.Context, in *cloudformation.DescribeChangeSetInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeChangeSetOutput, error) {
	return d.pages[aws.ToString(in.ChangeSetName)], nil
}

// Nested stacks belong to their parents (and carry their tags): the view of AWS leaves
// them out.
func TestLiveLeavesOutNestedStacks(t *testing.T) {
	cfn := &fakeCFN{t: t, stacks: map[string]*cloudformation.DescribeStacksOutput{
		"": {Stacks: []cfntypes.Stack{
			{StackName: aws.String("shop-app"), StackId: aws.String("arn:app"), StackStatus: cfntypes.StackStatusCreateComplete},
			{StackName: aws.String("shop-app-Net-1ABC"), StackId: aws.String("arn:net"), ParentId: aws.String("arn:app"), StackStatus: cfntypes.StackStatusCreateComplete},
		}},
	}}
	live, err := (&Client{CFN: cfn}).Live(context.Background(), target.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live["shop-app"].StackID != "arn:app" {
		t.Errorf("live %v", live)
	}
}
