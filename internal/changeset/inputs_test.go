package changeset

import (
	"context"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
)

// TestCreateInputs: what a change set sends of a stack's options and roles, for a create
// and for an update.
func TestCreateInputs(t *testing.T) {
	const cairnRole = "arn:aws:iam::000000000000:role/cairn-cfn"
	options := config.Options{NotificationARNs: []string{"arn:aws:sns:eu-west-1:123456789012:events"},
		Rollback: &config.Rollback{MonitoringTimeInMinutes: 10, Triggers: []config.Trigger{{ARN: "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:a", Type: "AWS::CloudWatch::Alarm"}}}}
	triggers := &cfntypes.RollbackConfiguration{MonitoringTimeInMinutes: aws.Int32(10),
		RollbackTriggers: []cfntypes.RollbackTrigger{{Arn: aws.String("arn:aws:cloudwatch:eu-west-1:123456789012:alarm:a"), Type: aws.String("AWS::CloudWatch::Alarm")}}}
	cleared := &cfntypes.RollbackConfiguration{RollbackTriggers: []cfntypes.RollbackTrigger{}}
	for _, tc := range []struct {
		name          string
		options       config.Options
		target        target.Spec
		changeSetType string
		topics        []string
		rollback      *cfntypes.RollbackConfiguration
		role          string
	}{
		{name: "create without options, at home: cairn's service role", changeSetType: "CREATE", role: cairnRole},
		{name: "update without options clears topics and triggers", changeSetType: "UPDATE", topics: []string{}, rollback: cleared, role: cairnRole},
		{name: "create with options", options: options, changeSetType: "CREATE", topics: options.NotificationARNs, rollback: triggers, role: cairnRole},
		{name: "update with options", options: options, changeSetType: "UPDATE", topics: options.NotificationARNs, rollback: triggers, role: cairnRole},
		{name: "the stack's own service role", target: target.Spec{ServiceRole: "arn:aws:iam::000000000000:role/own"}, changeSetType: "CREATE",
			role: "arn:aws:iam::000000000000:role/own"},
		{name: "another account's stack: its role's rights, not cairn's service role", changeSetType: "CREATE",
			target: target.Spec{RoleARN: "arn:aws:iam::111111111111:role/cairn-deploy-eu-west-1"}},
		{name: "another account's stack with a service role of its own", changeSetType: "CREATE",
			target: target.Spec{RoleARN: "arn:aws:iam::111111111111:role/cairn-deploy-eu-west-1", ServiceRole: "arn:aws:iam::111111111111:role/cfn"},
			role:   "arn:aws:iam::111111111111:role/cfn"},
	} {
		s := &config.Stack{Name: "app", TemplateBody: []byte("Resources: {}"), Capabilities: []string{"CAPABILITY_IAM"}, Options: tc.options, Target: tc.target}
		tags := map[string]string{"team": "web"}
		in := CreateInputs(s, run.Action{Kind: run.CreateChangeSet, Stack: "app", ChangeSetType: tc.changeSetType}, tags, cairnRole)
		if string(in.TemplateBody) != "Resources: {}" || !reflect.DeepEqual(in.Capabilities, s.Capabilities) || !reflect.DeepEqual(in.Tags, tags) {
			t.Errorf("%s: template, capabilities or tags not sent: %+v", tc.name, in)
		}
		if !reflect.DeepEqual(in.NotificationARNs, tc.topics) || !reflect.DeepEqual(in.Rollback, tc.rollback) || in.ServiceRole != tc.role {
			t.Errorf("%s: topics %#v, rollback %+v, role %q; want %#v, %+v, %q", tc.name, in.NotificationARNs, in.Rollback, in.ServiceRole, tc.topics, tc.rollback, tc.role)
		}
		if in.StackPolicy != "" || in.DisableRollback {
			t.Errorf("%s: CreateChangeSet's inputs carry ExecuteChangeSet's", tc.name)
		}
	}
}

// TestCreateInputsDriftAware: an update of a stack whose on_drift is revert or refuse makes
// a drift-aware change set; keep, and every create, an ordinary one.
func TestCreateInputsDriftAware(t *testing.T) {
	for _, tc := range []struct {
		mode          config.DriftMode
		changeSetType string
		want          string
	}{
		{config.DriftRevert, "UPDATE", "REVERT_DRIFT"}, {config.DriftRefuse, "UPDATE", "REVERT_DRIFT"},
		{config.DriftKeep, "UPDATE", ""}, {config.DriftRevert, "CREATE", ""},
	} {
		s := &config.Stack{Name: "app", TemplateBody: []byte("Resources: {}"), Options: config.Options{OnDrift: tc.mode}}
		in := CreateInputs(s, run.Action{Kind: run.CreateChangeSet, Stack: "app", ChangeSetType: tc.changeSetType}, nil, "")
		if in.DeploymentMode != tc.want {
			t.Errorf("on_drift %q, %s: DeploymentMode %q, want %q", tc.mode, tc.changeSetType, in.DeploymentMode, tc.want)
		}
		cfn := &fakeCFN{t: t}
		(&Client{CFN: cfn, Region: "eu-west-1"}).Perform(context.Background(), run.Action{Kind: run.CreateChangeSet, Stack: "app", StackName: "shop-app",
			ChangeSetName: "cairn-r1-1", ChangeSetType: tc.changeSetType, Token: "cairn-r1-1"}, in)
		if len(cfn.created) != 1 || string(cfn.created[0].DeploymentMode) != tc.want {
			t.Errorf("on_drift %q, %s: CreateChangeSet sent %+v", tc.mode, tc.changeSetType, cfn.created)
		}
	}
}

func TestExecuteInputs(t *testing.T) {
	s := &config.Stack{Options: config.Options{StackPolicy: []byte(`{"Statement":[]}`), DisableRollback: true}}
	if in := ExecuteInputs(s, true); in.StackPolicy != `{"Statement":[]}` || !in.DisableRollback {
		t.Errorf("create: %+v", in)
	}
	if in := ExecuteInputs(s, false); in.StackPolicy != `{"Statement":[]}` || in.DisableRollback {
		t.Errorf("update: %+v, want the policy and no DisableRollback", in)
	}
	if in := ExecuteInputs(&config.Stack{}, true); in.StackPolicy != "" || in.DisableRollback {
		t.Errorf("no options: %+v", in)
	}
}
