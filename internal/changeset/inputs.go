package changeset

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
)

// CreateInputs is what CreateChangeSet sends for action a on stack s of the config: its
// template (with its nested templates), capabilities and tags; what its options send
// (config.Options.Create: an update clears the topics and rollback triggers the config no
// longer names); and the CloudFormation service role: the stack's own service_role, else
// cairnRole (cairn's, for a stack of its account: one without a role_arn), else none (the
// role_arn's rights). An update of a stack whose on_drift is revert or refuse is
// drift-aware (DeploymentMode REVERT_DRIFT).
func CreateInputs(s *config.Stack, a run.Action, tags map[string]string, cairnRole string) *Inputs {
	in := &Inputs{TemplateBody: s.TemplateBody, TemplateURL: s.TemplateURL, Tree: s.Tree,
		IncludeNested: s.Template != nil && s.Template.HasNestedStacks(), Capabilities: s.Capabilities, Tags: tags,
		ServiceRole: s.Target.ServiceRole}
	if in.ServiceRole == "" && s.Target.RoleARN == "" {
		in.ServiceRole = cairnRole
	}
	o := s.Options.Create(a.ChangeSetType == string(cfntypes.ChangeSetTypeUpdate))
	in.NotificationARNs = o.NotificationARNs
	in.DeploymentMode = o.DeploymentMode
	if o.Rollback {
		in.Rollback = &cfntypes.RollbackConfiguration{RollbackTriggers: []cfntypes.RollbackTrigger{}}
		if o.MonitoringTimeInMinutes != nil {
			in.Rollback.MonitoringTimeInMinutes = aws.Int32(int32(*o.MonitoringTimeInMinutes))
		}
		for _, t := range o.RollbackTriggers {
			in.Rollback.RollbackTriggers = append(in.Rollback.RollbackTriggers, cfntypes.RollbackTrigger{Arn: aws.String(t.ARN), Type: aws.String(t.Type)})
		}
	}
	return in
}

// ExecuteInputs is what ExecuteChangeSet sends for stack s (config.Options.Execute): the
// stack policy, set just before, and DisableRollback when the change set creates the stack
// (create).
func ExecuteInputs(s *config.Stack, create bool) *Inputs {
	o := s.Options.Execute(create)
	return &Inputs{StackPolicy: o.StackPolicy, DisableRollback: o.DisableRollback}
}
