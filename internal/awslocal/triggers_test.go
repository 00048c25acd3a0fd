package awslocal_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

const alarmARN = "arn:aws:cloudwatch:us-east-1:000000000000:alarm:app-5xx"

// settingTemplate is one real resource: a parameter whose value the stack's parameter sets.
const settingTemplate = `Parameters:
  Value: {Type: String}
Resources:
  Setting:
    Type: AWS::SSM::Parameter
    Properties: {Name: /app/setting, Type: String, Value: !Ref Value}
`

// triggered is an emulator on a virtual clock (every resource operation takes a minute)
// with the Go SDK's CloudFormation, CloudWatch and SSM clients.
type triggered struct {
	e   *awslocal.Emulator
	clk *clock.Fake
	cf  *cloudformation.Client
	cw  *cloudwatch.Client
	ssm *ssm.Client
}

func newTriggered(t *testing.T) *triggered {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	v := start(t, awslocal.Options{Logger: quiet(), Clock: clk, CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: time.Minute, ChangeSetDelay: time.Second}})
	cfg, err := v.e.AWSConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &triggered{e: v.e, clk: clk, cf: cloudformation.NewFromConfig(cfg), cw: cloudwatch.NewFromConfig(cfg), ssm: ssm.NewFromConfig(cfg)}
}

func (tr *triggered) putAlarm(t *testing.T, name string) {
	t.Helper()
	_, err := tr.cw.PutMetricAlarm(context.Background(), &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String(name),
		MetricName: aws.String("5XXError"), Namespace: aws.String("AWS/ApiGateway"), Statistic: cwtypes.StatisticSum,
		Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(5),
		ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold})
	if err != nil {
		t.Fatal(err)
	}
}

func (tr *triggered) setAlarm(t *testing.T, name, state string) {
	t.Helper()
	_, err := tr.cw.SetAlarmState(context.Background(), &cloudwatch.SetAlarmStateInput{AlarmName: aws.String(name),
		StateValue: cwtypes.StateValue(state), StateReason: aws.String("test: " + state)})
	if err != nil {
		t.Fatal(err)
	}
}

// stack returns the stack as DescribeStacks answers now (which brings the simulation to
// the virtual clock's time).
func (tr *triggered) stack(t *testing.T, name string) cfntypes.Stack {
	t.Helper()
	out, err := tr.cf.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Stacks[0]
}

// after advances the virtual clock by d and returns the stack's status then.
func (tr *triggered) after(t *testing.T, d time.Duration, name string) cfntypes.StackStatus {
	t.Helper()
	tr.clk.Advance(d)
	return tr.stack(t, name).StackStatus
}

// events lists the stack's events, oldest first, as "LOGICAL_ID STATUS: reason".
func (tr *triggered) events(t *testing.T, name string) []string {
	t.Helper()
	out, err := tr.cf.DescribeStackEvents(context.Background(), &cloudformation.DescribeStackEventsInput{StackName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	var l []string
	for i := len(out.StackEvents) - 1; i >= 0; i-- {
		ev := out.StackEvents[i]
		l = append(l, aws.ToString(ev.LogicalResourceId)+" "+string(ev.ResourceStatus)+": "+aws.ToString(ev.ResourceStatusReason))
	}
	return l
}

func (tr *triggered) setting(t *testing.T) string {
	t.Helper()
	out, err := tr.ssm.GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String("/app/setting")})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.Parameter.Value)
}

func rollbackConfig(minutes int32, arns ...string) *cfntypes.RollbackConfiguration {
	rc := &cfntypes.RollbackConfiguration{MonitoringTimeInMinutes: aws.Int32(minutes), RollbackTriggers: []cfntypes.RollbackTrigger{}}
	for _, a := range arns {
		rc.RollbackTriggers = append(rc.RollbackTriggers, cfntypes.RollbackTrigger{Arn: aws.String(a), Type: aws.String("AWS::CloudWatch::Alarm")})
	}
	return rc
}

func value(v string) []cfntypes.Parameter {
	return []cfntypes.Parameter{{ParameterKey: aws.String("Value"), ParameterValue: aws.String(v)}}
}

func hasEvent(events []string, want string) bool {
	for _, e := range events {
		if strings.Contains(e, want) {
			return true
		}
	}
	return false
}

// TestRollbackTriggersRollUpdatesBack: an update whose rollback trigger's alarm goes to
// ALARM while it runs, or during its monitoring time after the last resource, is rolled
// back, and the stack's event names the alarm; other states, and an ALARM after the
// monitoring time, change nothing. The monitoring time keeps the stack UPDATE_IN_PROGRESS.
func TestRollbackTriggersRollUpdatesBack(t *testing.T) {
	rolledBack := "app UPDATE_ROLLBACK_IN_PROGRESS: The following rollback trigger(s) went into ALARM state: [" + alarmARN + "]. "
	for _, tc := range []struct {
		name string
		// before prepares the alarm once the stack exists, before the update.
		before func(t *testing.T, tr *triggered)
		// at is when, after the update began, the alarm is set to state ("": never);
		// statusThen is the stack's status right before.
		at         time.Duration
		state      string
		statusThen cfntypes.StackStatus
		want       cfntypes.StackStatus
		event      string
	}{
		{name: "ALARM while the resource updates", at: 30 * time.Second, state: "ALARM", statusThen: cfntypes.StackStatusUpdateInProgress,
			want: cfntypes.StackStatusUpdateRollbackComplete, event: rolledBack},
		{name: "ALARM during the monitoring time", at: 6 * time.Minute, state: "ALARM", statusThen: cfntypes.StackStatusUpdateInProgress,
			want: cfntypes.StackStatusUpdateRollbackComplete, event: rolledBack},
		{name: "ALARM after the monitoring time", at: 12 * time.Minute, state: "ALARM", statusThen: cfntypes.StackStatusUpdateComplete,
			want: cfntypes.StackStatusUpdateComplete},
		{name: "INSUFFICIENT_DATA is no alarm", at: 30 * time.Second, state: "INSUFFICIENT_DATA", statusThen: cfntypes.StackStatusUpdateInProgress,
			want: cfntypes.StackStatusUpdateComplete},
		{name: "no alarm: the monitoring time passes", at: 10*time.Minute + 59*time.Second, state: "OK", statusThen: cfntypes.StackStatusUpdateInProgress,
			want: cfntypes.StackStatusUpdateComplete},
		{name: "already in ALARM", before: func(t *testing.T, tr *triggered) { tr.setAlarm(t, "app-5xx", "ALARM") },
			want: cfntypes.StackStatusUpdateRollbackComplete, event: rolledBack},
		{name: "the alarm is gone", before: func(t *testing.T, tr *triggered) {
			if _, err := tr.cw.DeleteAlarms(context.Background(), &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{"app-5xx"}}); err != nil {
				t.Fatal(err)
			}
		}, want: cfntypes.StackStatusUpdateRollbackComplete, event: "app UPDATE_ROLLBACK_IN_PROGRESS: The following rollback trigger(s) could not be found: [" + alarmARN + "]. "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTriggered(t)
			ctx := context.Background()
			tr.putAlarm(t, "app-5xx")
			tr.setAlarm(t, "app-5xx", "OK")
			if _, err := tr.cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("app"), TemplateBody: aws.String(settingTemplate),
				Parameters: value("one"), RollbackConfiguration: rollbackConfig(10, alarmARN)}); err != nil {
				t.Fatal(err)
			}
			if st := tr.after(t, time.Hour, "app"); st != cfntypes.StackStatusCreateComplete {
				t.Fatalf("create: %s", st)
			}
			if tc.before != nil {
				tc.before(t, tr)
			}
			// The update gives no RollbackConfiguration: the stack keeps its triggers.
			if _, err := tr.cf.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("app"), TemplateBody: aws.String(settingTemplate),
				Parameters: value("two")}); err != nil {
				t.Fatal(err)
			}
			if tc.state != "" {
				if st := tr.after(t, tc.at, "app"); st != tc.statusThen {
					t.Fatalf("%v after the update began: %s, want %s", tc.at, st, tc.statusThen)
				}
				tr.setAlarm(t, "app-5xx", tc.state)
			}
			if st := tr.after(t, time.Hour, "app"); st != tc.want {
				t.Fatalf("stack: %s, want %s; events:\n%s", st, tc.want, strings.Join(tr.events(t, "app"), "\n"))
			}
			wantValue := "two"
			if tc.want == cfntypes.StackStatusUpdateRollbackComplete {
				wantValue = "one"
			}
			if got := tr.setting(t); got != wantValue {
				t.Errorf("the stack's parameter holds %q, want %q", got, wantValue)
			}
			evs := tr.events(t, "app")
			if tc.event != "" && !hasEvent(evs, tc.event) {
				t.Errorf("no event %q among:\n%s", tc.event, strings.Join(evs, "\n"))
			}
			if tc.event == "" && hasEvent(evs, "rollback trigger") {
				t.Errorf("a rollback trigger fired:\n%s", strings.Join(evs, "\n"))
			}
			if tc.at == 30*time.Second && tc.state == "ALARM" && !hasEvent(evs, "Setting UPDATE_FAILED: Resource update cancelled") {
				t.Errorf("the resource in flight was not cancelled:\n%s", strings.Join(evs, "\n"))
			}
		})
	}
}

// TestRollbackTriggersRollCreatesBack: a create watched by an alarm in ALARM rolls back
// (or, with DisableRollback, stops CREATE_FAILED with its resources).
func TestRollbackTriggersRollCreatesBack(t *testing.T) {
	for _, tc := range []struct {
		disable bool
		want    cfntypes.StackStatus
		event   string
	}{
		{false, cfntypes.StackStatusRollbackComplete, "app ROLLBACK_IN_PROGRESS: The following rollback trigger(s) went into ALARM state: [" + alarmARN + "]. "},
		{true, cfntypes.StackStatusCreateFailed, "app CREATE_FAILED: The following rollback trigger(s) went into ALARM state: [" + alarmARN + "]. "},
	} {
		t.Run(string(tc.want), func(t *testing.T) {
			t.Parallel()
			tr := newTriggered(t)
			tr.putAlarm(t, "app-5xx")
			if _, err := tr.cf.CreateStack(context.Background(), &cloudformation.CreateStackInput{StackName: aws.String("app"), TemplateBody: aws.String(settingTemplate),
				Parameters: value("one"), RollbackConfiguration: rollbackConfig(5, alarmARN), DisableRollback: aws.Bool(tc.disable)}); err != nil {
				t.Fatal(err)
			}
			if st := tr.after(t, 90*time.Second, "app"); st != cfntypes.StackStatusCreateInProgress {
				t.Fatalf("in the monitoring time: %s", st)
			}
			tr.setAlarm(t, "app-5xx", "ALARM")
			if st := tr.after(t, time.Hour, "app"); st != tc.want {
				t.Fatalf("stack %s, want %s:\n%s", st, tc.want, strings.Join(tr.events(t, "app"), "\n"))
			}
			if evs := tr.events(t, "app"); !hasEvent(evs, tc.event) {
				t.Errorf("no event %q among:\n%s", tc.event, strings.Join(evs, "\n"))
			}
		})
	}
}

// TestRollbackConfigurationIsKept: change sets keep the stack's triggers unless they name
// others, an empty list removes them, and DescribeStacks shows them.
func TestRollbackConfigurationIsKept(t *testing.T) {
	t.Parallel()
	tr := newTriggered(t)
	ctx := context.Background()
	tr.putAlarm(t, "app-5xx")
	tr.putAlarm(t, "app-latency")
	latency := strings.Replace(alarmARN, "app-5xx", "app-latency", 1)
	for i, step := range []struct {
		rc   *cfntypes.RollbackConfiguration
		want []string
	}{
		{rollbackConfig(10, alarmARN), []string{alarmARN}},
		{nil, []string{alarmARN}},
		{&cfntypes.RollbackConfiguration{MonitoringTimeInMinutes: aws.Int32(3)}, []string{alarmARN}},
		{rollbackConfig(0, latency, alarmARN), []string{latency, alarmARN}},
		{rollbackConfig(0), nil},
	} {
		typ := cfntypes.ChangeSetTypeUpdate
		if i == 0 {
			typ = cfntypes.ChangeSetTypeCreate
		}
		name := "cs-" + string(rune('a'+i))
		if _, err := tr.cf.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("app"), ChangeSetName: aws.String(name),
			ChangeSetType: typ, TemplateBody: aws.String(settingTemplate), Parameters: value(name), RollbackConfiguration: step.rc}); err != nil {
			t.Fatal(err)
		}
		tr.clk.Advance(time.Minute)
		if _, err := tr.cf.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String("app"), ChangeSetName: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
		tr.clk.Advance(time.Hour)
		st := tr.stack(t, "app")
		var got []string
		for _, trig := range st.RollbackConfiguration.RollbackTriggers {
			got = append(got, aws.ToString(trig.Arn))
		}
		if strings.Join(got, " ") != strings.Join(step.want, " ") || !strings.HasSuffix(string(st.StackStatus), "_COMPLETE") {
			t.Errorf("change set %d: stack %s with triggers %v, want %v", i, st.StackStatus, got, step.want)
		}
	}
}

// TestRollbackConfigurationLimits: what CloudFormation refuses in a RollbackConfiguration.
func TestRollbackConfigurationLimits(t *testing.T) {
	t.Parallel()
	tr := newTriggered(t)
	six := rollbackConfig(1, alarmARN, alarmARN, alarmARN, alarmARN, alarmARN, alarmARN)
	for _, tc := range []struct {
		name string
		rc   *cfntypes.RollbackConfiguration
		want string
	}{
		{"six triggers", six, "Member must have length less than or equal to 5"},
		{"181 minutes", rollbackConfig(181, alarmARN), "Value '181' at 'rollbackConfiguration.monitoringTimeInMinutes' failed to satisfy constraint: Member must have value less than or equal to 180"},
		{"a topic", &cfntypes.RollbackConfiguration{RollbackTriggers: []cfntypes.RollbackTrigger{{Arn: aws.String(alarmARN), Type: aws.String("AWS::SNS::Topic")}}},
			"has the type AWS::SNS::Topic: the supported types are AWS::CloudWatch::Alarm and AWS::CloudWatch::CompositeAlarm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tr.cf.CreateStack(context.Background(), &cloudformation.CreateStackInput{StackName: aws.String("refused"),
				TemplateBody: aws.String(settingTemplate), Parameters: value("x"), RollbackConfiguration: tc.rc})
			var api smithy.APIError
			if !errors.As(err, &api) || api.ErrorCode() != "ValidationError" || !strings.Contains(api.ErrorMessage(), tc.want) {
				t.Fatalf("err = %v, want ValidationError %q", err, tc.want)
			}
		})
	}
}

// alarmTemplate makes a real alarm; its ARN is exported for the stacks it guards.
const alarmTemplate = `Resources:
  Errors:
    Type: AWS::CloudWatch::Alarm
    Properties:
      AlarmName: app-5xx
      AlarmDescription: 5xx of the app
      Namespace: AWS/ApiGateway
      MetricName: 5XXError
      Dimensions: [{Name: ApiName, Value: app}]
      Statistic: Sum
      Period: 60
      EvaluationPeriods: "2"
      Threshold: 5
      ComparisonOperator: GreaterThanThreshold
      TreatMissingData: notBreaching
Outputs:
  Name: {Value: !Ref Errors}
  Arn: {Value: !GetAtt Errors.Arn}
`

// TestStackAlarmsAreReal: an AWS::CloudWatch::Alarm of a stack is an alarm of the
// emulator's CloudWatch, whose ARN guards another stack; changing it out of band is drift,
// and deleting the stack deletes it.
func TestStackAlarmsAreReal(t *testing.T) {
	t.Parallel()
	tr := newTriggered(t)
	ctx := context.Background()
	if _, err := tr.cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("alarms"), TemplateBody: aws.String(alarmTemplate)}); err != nil {
		t.Fatal(err)
	}
	tr.clk.Advance(time.Hour)
	st := tr.stack(t, "alarms")
	outs := map[string]string{}
	for _, o := range st.Outputs {
		outs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	if st.StackStatus != cfntypes.StackStatusCreateComplete || outs["Name"] != "app-5xx" || outs["Arn"] != alarmARN {
		t.Fatalf("stack alarms: %s, outputs %v", st.StackStatus, outs)
	}
	got, err := tr.cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{"app-5xx"}})
	if err != nil || len(got.MetricAlarms) != 1 {
		t.Fatalf("DescribeAlarms: %v, %v", got, err)
	}
	if a := got.MetricAlarms[0]; aws.ToString(a.AlarmArn) != alarmARN || aws.ToInt32(a.EvaluationPeriods) != 2 || aws.ToFloat64(a.Threshold) != 5 ||
		len(a.Dimensions) != 1 || a.StateValue != cwtypes.StateValueInsufficientData {
		t.Errorf("the stack's alarm: %+v", a)
	}

	if _, err := tr.cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("app"), TemplateBody: aws.String(settingTemplate),
		Parameters: value("one"), RollbackConfiguration: rollbackConfig(0, outs["Arn"])}); err != nil {
		t.Fatal(err)
	}
	tr.after(t, time.Hour, "app")
	if _, err := tr.cf.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("app"), TemplateBody: aws.String(settingTemplate), Parameters: value("two")}); err != nil {
		t.Fatal(err)
	}
	tr.clk.Advance(10 * time.Second)
	tr.setAlarm(t, "app-5xx", "ALARM")
	if s := tr.after(t, time.Hour, "app"); s != cfntypes.StackStatusUpdateRollbackComplete {
		t.Errorf("app guarded by the stack's alarm: %s, want UPDATE_ROLLBACK_COMPLETE", s)
	}

	in := &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String("app-5xx"), Namespace: aws.String("AWS/ApiGateway"), MetricName: aws.String("5XXError"),
		Dimensions: []cwtypes.Dimension{{Name: aws.String("ApiName"), Value: aws.String("app")}}, Statistic: cwtypes.StatisticSum,
		Period: aws.Int32(60), EvaluationPeriods: aws.Int32(2), Threshold: aws.Float64(50), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold,
		TreatMissingData: aws.String("notBreaching"), AlarmDescription: aws.String("5xx of the app")}
	if _, err := tr.cw.PutMetricAlarm(ctx, in); err != nil {
		t.Fatal(err)
	}
	d, err := tr.cf.DetectStackDrift(ctx, &cloudformation.DetectStackDriftInput{StackName: aws.String("alarms")})
	if err != nil {
		t.Fatal(err)
	}
	tr.clk.Advance(time.Hour)
	if s, err := tr.cf.DescribeStackDriftDetectionStatus(ctx, &cloudformation.DescribeStackDriftDetectionStatusInput{StackDriftDetectionId: d.StackDriftDetectionId}); err != nil || s.StackDriftStatus != cfntypes.StackDriftStatusDrifted {
		t.Fatalf("drift: %+v, %v", s, err)
	}
	drifts, err := tr.cf.DescribeStackResourceDrifts(ctx, &cloudformation.DescribeStackResourceDriftsInput{StackName: aws.String("alarms"),
		StackResourceDriftStatusFilters: []cfntypes.StackResourceDriftStatus{cfntypes.StackResourceDriftStatusModified}})
	if err != nil || len(drifts.StackResourceDrifts) != 1 {
		t.Fatalf("drifts %+v, %v", drifts, err)
	}
	if diff := drifts.StackResourceDrifts[0].PropertyDifferences; len(diff) != 1 || aws.ToString(diff[0].PropertyPath) != "/Threshold" || aws.ToString(diff[0].ActualValue) != "50" {
		t.Errorf("differences %+v", diff)
	}

	if _, err := tr.cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("alarms")}); err != nil {
		t.Fatal(err)
	}
	tr.clk.Advance(time.Hour)
	if got, err := tr.cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{}); err != nil || len(got.MetricAlarms) != 0 {
		t.Errorf("after the stack's deletion: %v, %v", got, err)
	}
}
