package changeset

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/run"
)

// TestObserveDrift: a drift-aware change set's drift is observed per property, whether
// executing it brings the property back or only syncs it, without values; a resource
// deleted out of band is one entry; IN_SYNC and template-only changes are none.
func TestObserveDrift(t *testing.T) {
	target := func(name string, ct cfntypes.AttributeChangeType, drift bool) cfntypes.ResourceChangeDetail {
		tg := &cfntypes.ResourceTargetDefinition{Attribute: cfntypes.ResourceAttributeProperties, Name: aws.String(name), AttributeChangeType: ct,
			BeforeValue: aws.String("before"), BeforeValueFrom: cfntypes.BeforeValueFromPreviousDeploymentState}
		if drift {
			tg.BeforeValueFrom, tg.Drift = cfntypes.BeforeValueFromActualState, &cfntypes.LiveResourceDrift{ActualValue: aws.String("a"), PreviousValue: aws.String("p")}
		}
		return cfntypes.ResourceChangeDetail{Target: tg}
	}
	change := func(id string, action cfntypes.ChangeAction, status cfntypes.StackResourceDriftStatus, details ...cfntypes.ResourceChangeDetail) cfntypes.Change {
		return cfntypes.Change{Type: cfntypes.ChangeTypeResource, ResourceChange: &cfntypes.ResourceChange{LogicalResourceId: aws.String(id), Action: action,
			ResourceDriftStatus: status, Details: details}}
	}
	cfn := &fakeCFN{t: t, changeSets: []*cloudformation.DescribeChangeSetOutput{{ChangeSetId: aws.String("arn:cs/1"), Status: cfntypes.ChangeSetStatusCreateComplete,
		DeploymentMode: cfntypes.DeploymentModeRevertDrift, Changes: []cfntypes.Change{
			change("Web", cfntypes.ChangeActionModify, cfntypes.StackResourceDriftStatusModified,
				target("SecurityGroupIngress", cfntypes.AttributeChangeTypeModify, true), target("Tags", cfntypes.AttributeChangeTypeModify, false)),
			change("Queue", cfntypes.ChangeActionSyncWithActual, cfntypes.StackResourceDriftStatusModified,
				target("VisibilityTimeout", cfntypes.AttributeChangeTypeSyncWithActual, true)),
			change("Gone", cfntypes.ChangeActionModify, cfntypes.StackResourceDriftStatusDeleted),
			change("Calm", cfntypes.ChangeActionModify, cfntypes.StackResourceDriftStatusInSync, target("DisplayName", cfntypes.AttributeChangeTypeModify, false)),
		}}}}
	r := &run.Run{Stacks: map[string]*run.Stack{"app": {Name: "app", StackName: "shop-app", Phase: run.CreatingChangeSet, ChangeSetName: "cairn-r1-1"}}}
	seen := (&Client{CFN: cfn}).Observe(context.Background(), r, nil, time.Now())
	want := []run.DriftedProperty{{LogicalID: "Web", Property: "SecurityGroupIngress", Revert: true}, {LogicalID: "Queue", Property: "VisibilityTimeout"}, {LogicalID: "Gone", Revert: true}}
	if len(seen) != 1 || !reflect.DeepEqual(seen[0].Drift, want) {
		t.Fatalf("drift %+v, want %+v", seen, want)
	}
}
