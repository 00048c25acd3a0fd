package cfnlocal

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// The drift-aware change set tests are judged against the CloudFormation API reference
// (CreateChangeSet's DeploymentMode; DescribeChangeSet's DeploymentMode; ResourceChange's
// Action SyncWithActual, ResourceDriftStatus, PreviousDeploymentContext,
// ResourceDriftIgnoredAttributes; ResourceTargetDefinition's AttributeChangeType,
// BeforeValue, BeforeValueFrom, AfterValue, AfterValueFrom, Drift; LiveResourceDrift's
// ActualValue, PreviousValue, DriftDetectionTimestamp) and the user guide's "Using
// drift-aware change sets".

const driftSecret = "hunter2-very-secret"

const driftV1 = `Parameters:
  Secret: {Type: String, NoEcho: true}
Resources:
  Web:
    Type: AWS::EC2::SecurityGroup
    Properties:
      GroupDescription: web
      SecurityGroupIngress:
        - {IpProtocol: tcp, FromPort: 443, ToPort: 443, CidrIp: 10.0.0.0/8}
  Queue:
    Type: AWS::SQS::Queue
    Properties: {VisibilityTimeout: 30}
  Topic:
    Type: AWS::SNS::Topic
    Properties: {DisplayName: !Ref Secret}
`

// driftV2 changes the stack elsewhere (adds Log) and takes the queue's drifted value.
var driftV2 = strings.Replace(driftV1, "VisibilityTimeout: 30", "VisibilityTimeout: 90", 1) + `  Log:
    Type: AWS::Logs::LogGroup
`

const incidentRule = `[{"IpProtocol":"tcp","FromPort":443,"ToPort":443,"CidrIp":"10.0.0.0/8"},{"IpProtocol":"tcp","FromPort":22,"ToPort":22,"CidrIp":"0.0.0.0/0"}]`

func driftedStack(t *testing.T) *env {
	e := newEnv(t, nil)
	e.create("app", driftV1, map[string]string{"Secret": driftSecret})
	e.settle("app")
	for _, tm := range [][3]string{{"Web", "SecurityGroupIngress", incidentRule}, {"Queue", "VisibilityTimeout", "90"}, {"Topic", "DisplayName", "renamed"}} {
		if err := e.svc.Tamper("app", tm[0], tm[1], tm[2]); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func driftAwareChangeSet(e *env, name, body string) *cloudformation.DescribeChangeSetOutput {
	return e.settledChangeSet(&cloudformation.CreateChangeSetInput{StackName: aws.String("app"), ChangeSetName: aws.String(name),
		TemplateBody: aws.String(body), DeploymentMode: types.DeploymentModeRevertDrift,
		Parameters: []types.Parameter{{ParameterKey: aws.String("Secret"), UsePreviousValue: aws.Bool(true)}}})
}

func resourceChanges(cs *cloudformation.DescribeChangeSetOutput) map[string]*types.ResourceChange {
	out := map[string]*types.ResourceChange{}
	for _, c := range cs.Changes {
		out[aws.ToString(c.ResourceChange.LogicalResourceId)] = c.ResourceChange
	}
	return out
}

func onlyTarget(t *testing.T, rc *types.ResourceChange) *types.ResourceTargetDefinition {
	t.Helper()
	if rc == nil || len(rc.Details) != 1 {
		t.Fatalf("want one detail, got %+v", rc)
	}
	return rc.Details[0].Target
}

// TestDriftAwareChangeSetShowsThreeStates: a REVERT_DRIFT change set shows each drifted
// property's actual value (BeforeValueFrom ACTUAL_STATE, Drift with ActualValue and
// PreviousValue) and what the template wants; a property the template now sets to its
// actual value is SyncWithActual, and so is the resource; a new resource carries no
// drift; NoEcho values are masked everywhere.
func TestDriftAwareChangeSetShowsThreeStates(t *testing.T) {
	e := driftedStack(t)
	cs := driftAwareChangeSet(e, "revert", driftV2)
	if cs.Status != types.ChangeSetStatusCreateComplete || cs.DeploymentMode != types.DeploymentModeRevertDrift {
		t.Fatalf("change set %s %s (%s)", cs.Status, cs.DeploymentMode, aws.ToString(cs.StatusReason))
	}
	rcs := resourceChanges(cs)
	web := rcs["Web"]
	if web == nil || web.Action != types.ChangeActionModify || web.ResourceDriftStatus != types.StackResourceDriftStatusModified || web.Replacement != types.ReplacementFalse {
		t.Fatalf("Web: %+v", web)
	}
	tg := onlyTarget(t, web)
	if aws.ToString(tg.Name) != "SecurityGroupIngress" || aws.ToString(tg.Path) != "/Properties/SecurityGroupIngress" ||
		tg.AttributeChangeType != types.AttributeChangeTypeModify || tg.BeforeValueFrom != types.BeforeValueFromActualState ||
		tg.AfterValueFrom != types.AfterValueFromTemplate || tg.Drift == nil || tg.Drift.DriftDetectionTimestamp == nil {
		t.Fatalf("Web target: %+v", tg)
	}
	if !strings.Contains(aws.ToString(tg.BeforeValue), `"FromPort":22`) || aws.ToString(tg.Drift.ActualValue) != aws.ToString(tg.BeforeValue) ||
		strings.Contains(aws.ToString(tg.Drift.PreviousValue), `"FromPort":22`) || strings.Contains(aws.ToString(tg.AfterValue), `"FromPort":22`) {
		t.Errorf("Web values: before %s actual %s previous %s after %s", aws.ToString(tg.BeforeValue), aws.ToString(tg.Drift.ActualValue),
			aws.ToString(tg.Drift.PreviousValue), aws.ToString(tg.AfterValue))
	}
	if !strings.Contains(aws.ToString(web.PreviousDeploymentContext), `"GroupDescription":"web"`) || strings.Contains(aws.ToString(web.PreviousDeploymentContext), `"FromPort":22`) {
		t.Errorf("Web previous deployment context: %s", aws.ToString(web.PreviousDeploymentContext))
	}
	queue := rcs["Queue"]
	if queue == nil || queue.Action != types.ChangeActionSyncWithActual || queue.ResourceDriftStatus != types.StackResourceDriftStatusModified {
		t.Fatalf("Queue: %+v", queue)
	}
	if qt := onlyTarget(t, queue); qt.AttributeChangeType != types.AttributeChangeTypeSyncWithActual || aws.ToString(qt.Drift.PreviousValue) != "30" ||
		aws.ToString(qt.Drift.ActualValue) != "90" || aws.ToString(qt.AfterValue) != "90" {
		t.Errorf("Queue target: %+v", qt)
	}
	topic := onlyTarget(t, rcs["Topic"])
	if aws.ToString(topic.Drift.ActualValue) != "renamed" || aws.ToString(topic.Drift.PreviousValue) != mask || aws.ToString(topic.AfterValue) != mask {
		t.Errorf("Topic target: actual %s previous %s after %s", aws.ToString(topic.Drift.ActualValue), aws.ToString(topic.Drift.PreviousValue), aws.ToString(topic.AfterValue))
	}
	if log := rcs["Log"]; log == nil || log.Action != types.ChangeActionAdd || log.ResourceDriftStatus != "" {
		t.Errorf("Log: %+v", log)
	}
	if b, _ := json.Marshal(cs); strings.Contains(string(b), driftSecret) {
		t.Errorf("the NoEcho value is in the change set: %s", b)
	}
	plain := e.settledChangeSet(&cloudformation.CreateChangeSetInput{StackName: aws.String("app"), ChangeSetName: aws.String("plain"),
		TemplateBody: aws.String(driftV2), Parameters: []types.Parameter{{ParameterKey: aws.String("Secret"), UsePreviousValue: aws.Bool(true)}}})
	if p := resourceChanges(plain); plain.DeploymentMode != "" || p["Web"] != nil || p["Queue"] == nil || p["Queue"].ResourceDriftStatus != "" ||
		p["Queue"].Details[0].Target.BeforeValueFrom != "" {
		t.Errorf("a change set without DeploymentMode is drift-aware: %+v", p)
	}
}

// TestExecutingDriftAwareChangeSetRevertsDrift: executing the change set brings the drifted
// properties back to the template's values and takes the synced value: drift detection
// then finds the stack IN_SYNC.
func TestExecutingDriftAwareChangeSetRevertsDrift(t *testing.T) {
	ctx := context.Background()
	e := driftedStack(t)
	cs := driftAwareChangeSet(e, "revert", driftV2)
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{ChangeSetName: cs.ChangeSetId}); err != nil {
		t.Fatal(err)
	}
	if st := e.settle("app"); st.StackStatus != types.StackStatusUpdateComplete {
		t.Fatalf("status %s", st.StackStatus)
	}
	if got := e.stackDrift("app"); got != types.StackDriftStatusInSync {
		t.Errorf("drift after a drift-aware update = %s, want IN_SYNC", got)
	}
	again := driftAwareChangeSet(e, "again", driftV2)
	if again.Status != types.ChangeSetStatusFailed || !strings.Contains(aws.ToString(again.StatusReason), "didn't contain changes") {
		t.Errorf("a second drift-aware change set: %s %s %v", again.Status, aws.ToString(again.StatusReason), changeLines(again))
	}
}

// TestDriftAwareChangeSetWithTheSameTemplate: with the template unchanged, the change set
// holds only the drift it reverts, and a stack without drift has no changes.
func TestDriftAwareChangeSetWithTheSameTemplate(t *testing.T) {
	e := driftedStack(t)
	cs := driftAwareChangeSet(e, "same", driftV1)
	got := changeSummary(cs)
	if len(got) != 3 || got["Web"] != "Modify/False" || got["Queue"] != "Modify/False" || got["Topic"] != "Modify/False" {
		t.Fatalf("changes %v", got)
	}
	clean := newEnv(t, nil)
	clean.create("app", driftV1, map[string]string{"Secret": driftSecret})
	clean.settle("app")
	if cs := driftAwareChangeSet(clean, "same", driftV1); cs.Status != types.ChangeSetStatusFailed {
		t.Errorf("a stack without drift: %s %v", cs.Status, changeLines(cs))
	}
}

// TestDriftAwareRollbackRestoresActualState: a drift-aware update that fails rolls back to
// the resources' actual state from before it, out-of-band changes included.
func TestDriftAwareRollbackRestoresActualState(t *testing.T) {
	ctx := context.Background()
	e := driftedStack(t)
	postControl(t, e, "faults", Fault{Stack: "app", LogicalID: "Log", Operation: "CREATE", Reason: "Log group limit exceeded"})
	cs := driftAwareChangeSet(e, "revert", driftV2)
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{ChangeSetName: cs.ChangeSetId}); err != nil {
		t.Fatal(err)
	}
	if st := e.settle("app"); st.StackStatus != types.StackStatusUpdateRollbackComplete {
		t.Fatalf("status %s: %v", st.StackStatus, eventLines(e.allEvents("app")))
	}
	if got := e.stackDrift("app"); got != types.StackDriftStatusDrifted {
		t.Errorf("drift after the rollback = %s, want DRIFTED (the actual state restored)", got)
	}
}

// TestDeploymentModeIsValidated: a DeploymentMode other than REVERT_DRIFT is refused as
// the API's enum constraint refuses it.
func TestDeploymentModeIsValidated(t *testing.T) {
	e := driftedStack(t)
	_, err := e.cfn.CreateChangeSet(context.Background(), &cloudformation.CreateChangeSetInput{StackName: aws.String("app"),
		ChangeSetName: aws.String("x"), TemplateBody: aws.String(driftV1), DeploymentMode: "KEEP_DRIFT"})
	if apiErrorCode(err) != "ValidationError" || !strings.Contains(err.Error(), "Member must satisfy enum value set: [REVERT_DRIFT]") {
		t.Fatalf("DeploymentMode KEEP_DRIFT: %v", err)
	}
}

// stackDrift detects the stack's drift and returns its status once detection completes.
func (e *env) stackDrift(name string) types.StackDriftStatus {
	e.t.Helper()
	ctx := context.Background()
	det, err := e.cfn.DetectStackDrift(ctx, &cloudformation.DetectStackDriftInput{StackName: aws.String(name)})
	if err != nil {
		e.t.Fatal(err)
	}
	e.settle(name)
	st, err := e.cfn.DescribeStackDriftDetectionStatus(ctx, &cloudformation.DescribeStackDriftDetectionStatusInput{StackDriftDetectionId: det.StackDriftDetectionId})
	if err != nil {
		e.t.Fatal(err)
	}
	return st.StackDriftStatus
}

// TestDriftAwareChangeSetIgnoresSecretReferences: a property holding a dynamic reference
// is not compared with its actual value (its value is a secret's): the change set lists it
// in ResourceDriftIgnoredAttributes with reason SENSITIVE_PROPERTY and shows no drift of it.
func TestDriftAwareChangeSetIgnoresSecretReferences(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.DynamicReference = func(service, key string) (string, error) { return "s3cr3t-value", nil }
	})
	const body = `Resources:
  Param:
    Type: AWS::SSM::Parameter
    Properties:
      Type: String
      Description: a
      Value: '{{resolve:secretsmanager:db:SecretString:password}}'
`
	e.create("app", body, nil)
	e.settle("app")
	if err := e.svc.Tamper("app", "Param", "Value", "changed-by-hand"); err != nil {
		t.Fatal(err)
	}
	cs := e.settledChangeSet(&cloudformation.CreateChangeSetInput{StackName: aws.String("app"), ChangeSetName: aws.String("d"),
		TemplateBody: aws.String(strings.Replace(body, "Description: a", "Description: b", 1)), DeploymentMode: types.DeploymentModeRevertDrift})
	rc := resourceChanges(cs)["Param"]
	if rc == nil || rc.ResourceDriftStatus != types.StackResourceDriftStatusInSync || len(rc.ResourceDriftIgnoredAttributes) != 1 ||
		aws.ToString(rc.ResourceDriftIgnoredAttributes[0].Path) != "/Properties/Value" || rc.ResourceDriftIgnoredAttributes[0].Reason != types.DriftIgnoredReasonSensitiveProperty {
		t.Fatalf("Param: %+v", rc)
	}
	tg := onlyTarget(t, rc)
	if aws.ToString(tg.Name) != "Description" || tg.BeforeValueFrom != types.BeforeValueFromPreviousDeploymentState || tg.Drift != nil {
		t.Errorf("Param target: %+v", tg)
	}
	if b, _ := json.Marshal(cs); strings.Contains(string(b), "s3cr3t-value") || strings.Contains(string(b), "changed-by-hand") {
		t.Errorf("a secret's value is in the change set: %s", b)
	}
}

// TestOrdinaryUpdateOverwritesWhatItChanges: an ordinary (not drift-aware) update sets a
// drifted property the template changes to the template's value, and leaves the drifted
// properties it does not change as they are: drift detection then finds only those.
func TestOrdinaryUpdateOverwritesWhatItChanges(t *testing.T) {
	ctx := context.Background()
	e := driftedStack(t)
	body := strings.Replace(driftV1, "VisibilityTimeout: 30", "VisibilityTimeout: 60", 1)
	cs := e.settledChangeSet(&cloudformation.CreateChangeSetInput{StackName: aws.String("app"), ChangeSetName: aws.String("plain"),
		TemplateBody: aws.String(body), Parameters: []types.Parameter{{ParameterKey: aws.String("Secret"), UsePreviousValue: aws.Bool(true)}}})
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{ChangeSetName: cs.ChangeSetId}); err != nil {
		t.Fatal(err)
	}
	if st := e.settle("app"); st.StackStatus != types.StackStatusUpdateComplete {
		t.Fatalf("status %s", st.StackStatus)
	}
	if got := e.stackDrift("app"); got != types.StackDriftStatusDrifted {
		t.Fatalf("drift %s, want DRIFTED (the rule and the topic's name stay)", got)
	}
	out, err := e.cfn.DescribeStackResourceDrifts(ctx, &cloudformation.DescribeStackResourceDriftsInput{StackName: aws.String("app"),
		StackResourceDriftStatusFilters: []types.StackResourceDriftStatus{types.StackResourceDriftStatusModified}})
	if err != nil {
		t.Fatal(err)
	}
	var drifted []string
	for _, d := range out.StackResourceDrifts {
		drifted = append(drifted, aws.ToString(d.LogicalResourceId))
	}
	if strings.Join(drifted, ",") != "Topic,Web" && strings.Join(drifted, ",") != "Web,Topic" {
		t.Errorf("drifted after the update: %v, want Web and Topic (Queue's timeout overwritten)", drifted)
	}
}
