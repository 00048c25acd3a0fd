package changeset

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/target"
)

// notFoundCFN answers DescribeChangeSet with ChangeSetNotFound, as CloudFormation does for
// a deleted change set.
type notFoundCFN struct{ fakeCFN }

func (f *notFoundCFN) DescribeChangeSet(context.Context, *cloudformation.DescribeChangeSetInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeChangeSetOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "ChangeSetNotFound", Message: "ChangeSet [x] does not exist"}
}

func TestDescribeReadsEveryPageOfChanges(t *testing.T) {
	change := func(id, action, repl string, details ...cfntypes.ResourceChangeDetail) cfntypes.Change {
		return cfntypes.Change{Type: cfntypes.ChangeTypeResource, ResourceChange: &cfntypes.ResourceChange{
			LogicalResourceId: aws.String(id), ResourceType: aws.String("AWS::SSM::Parameter"),
			Action: cfntypes.ChangeAction(action), Replacement: cfntypes.Replacement(repl), Details: details}}
	}
	detail := cfntypes.ResourceChangeDetail{Target: &cfntypes.ResourceTargetDefinition{Attribute: "Properties", Name: aws.String("Value"), RequiresRecreation: "Never"},
		Evaluation: "Static", ChangeSource: "ParameterReference", CausingEntity: aws.String("Value")}
	f := &fakeCFN{t: t, changeSets: []*cloudformation.DescribeChangeSetOutput{
		{Status: "CREATE_COMPLETE", ExecutionStatus: "AVAILABLE", Changes: []cfntypes.Change{change("A", "Modify", "False", detail)}, NextToken: aws.String("1")},
		{Changes: []cfntypes.Change{change("B", "Add", "")}},
	}}
	c := &Client{CFN: f}
	st, err := c.Describe(context.Background(), target.Spec{}, "arn:cs/1")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Found || st.Status != "CREATE_COMPLETE" || st.ExecutionStatus != "AVAILABLE" || len(st.Changes) != 2 {
		t.Fatalf("state %+v", st)
	}
	if a := st.Changes[0]; a.LogicalID != "A" || a.Action != "Modify" || a.Replacement != "False" || len(a.Details) != 1 ||
		a.Details[0] != "Properties Value (recreation: Never, Static, from ParameterReference Value)" {
		t.Errorf("first change %+v", a)
	}
	if b := st.Changes[1]; b.LogicalID != "B" || b.Action != "Add" || b.Replacement != "" {
		t.Errorf("second change %+v", b)
	}
	if len(f.csCalls) != 2 || aws.ToString(f.csCalls[0].ChangeSetName) != "arn:cs/1" || aws.ToString(f.csCalls[1].NextToken) != "1" {
		t.Errorf("calls %+v", f.csCalls)
	}

	gone, err := (&Client{CFN: &notFoundCFN{fakeCFN{t: t}}}).Describe(context.Background(), target.Spec{}, "arn:cs/2")
	if err != nil || gone.Found {
		t.Errorf("a deleted change set: %+v, %v; want not found and no error", gone, err)
	}
	failing := &Client{CFN: errCFN{}}
	if _, err := failing.Describe(context.Background(), target.Spec{}, "arn:cs/3"); err == nil || !errors.Is(err, errThrottled) {
		t.Errorf("a failing call: %v, want the error", err)
	}
}

var errThrottled = errors.New("Rate exceeded")

type errCFN struct{ API }

func (errCFN) DescribeChangeSet(context.Context, *cloudformation.DescribeChangeSetInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeChangeSetOutput, error) {
	return nil, errThrottled
}
