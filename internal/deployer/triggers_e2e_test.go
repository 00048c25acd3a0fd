package deployer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
)

const (
	triggersBundle = "testdata/triggers"
	appAlarmARN    = "arn:aws:cloudwatch:us-east-1:000000000000:alarm:shop-app-5xx"
)

func (w *world) cloudWatch() *cloudwatch.Client {
	w.t.Helper()
	cfg, err := w.em.AWSConfig(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	return cloudwatch.NewFromConfig(cfg)
}

// TestRollbackTriggerRollsTheUpdateBack: a stack's rollback_configuration names an alarm
// another stack of the config makes; an update during which the alarm goes to ALARM
// (SetAlarmState through the SDK) is rolled back by CloudFormation, and the run fails the
// stack with the reason, which names the alarm. Once the alarm is OK the update goes
// through, and dropping rollback_configuration removes the stack's triggers.
func TestRollbackTriggerRollsTheUpdateBack(t *testing.T) {
	w := newWorld(t, worldOptions{})
	ctx := context.Background()
	cw := w.cloudWatch()
	dir := copyBundle(t, triggersBundle)
	first := w.wait("shop", w.push("shop", dir))
	if first.Run.Status != run.Succeeded {
		t.Fatalf("first run: %s (%s); stacks %v", first.Run.Status, first.Run.Reason, phases(first))
	}
	if arn := first.Run.Stacks["alarms"].Outputs["Arn"]; arn != appAlarmARN {
		t.Fatalf("the alarms stack made %q, want %s", arn, appAlarmARN)
	}
	app := w.stacks()["shop-app"]
	if rc := app.RollbackConfiguration; rc == nil || len(rc.RollbackTriggers) != 1 || aws.ToString(rc.RollbackTriggers[0].Arn) != appAlarmARN ||
		aws.ToInt32(rc.MonitoringTimeInMinutes) != 10 {
		t.Fatalf("shop-app rollback configuration %+v", rc)
	}
	setAlarm := func(state cwtypes.StateValue) {
		t.Helper()
		if _, err := cw.SetAlarmState(ctx, &cloudwatch.SetAlarmStateInput{AlarmName: aws.String("shop-app-5xx"), StateValue: state,
			StateReason: aws.String("5xx after the deploy")}); err != nil {
			t.Fatal(err)
		}
	}
	setAlarm(cwtypes.StateValueOk)

	edit(t, dir, "cairn.yaml", "Value: one", "Value: two")
	version := w.push("shop", dir)
	for deadline := time.Now().Add(30 * time.Second); w.stacks()["shop-app"].StackStatus != cfntypes.StackStatusUpdateInProgress; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("shop-app never began its update: %s", w.stacks()["shop-app"].StackStatus)
		}
	}
	setAlarm(cwtypes.StateValueAlarm)
	doc := w.wait("shop", version)
	s := doc.Run.Stacks["app"]
	why := "The following rollback trigger(s) went into ALARM state: [" + appAlarmARN + "]."
	if doc.Run.Status != run.RunFailed || s.Phase != run.Failed || !strings.Contains(s.Reason, why) {
		t.Fatalf("run %s, stack app %s %q; want failed with %q", doc.Run.Status, s.Phase, s.Reason, why)
	}
	if st := w.stacks()["shop-app"].StackStatus; st != cfntypes.StackStatusUpdateRollbackComplete {
		t.Errorf("shop-app is %s, want UPDATE_ROLLBACK_COMPLETE", st)
	}
	if got := w.parameterValue(doc, "app"); got != "one" {
		t.Errorf("the app's setting is %q after the rollback, want one", got)
	}
	if md := w.object("runs/shop/" + doc.Run.ID + ".md"); !strings.Contains(md, report.Text(why)) {
		t.Errorf("the run report does not give the reason %q:\n%s", why, md)
	}

	setAlarm(cwtypes.StateValueOk)
	again := w.wait("shop", w.push("shop", dir))
	if s := again.Run.Stacks["app"]; again.Run.Status != run.Succeeded || s.Phase != run.Done {
		t.Fatalf("with the alarm OK: run %s (%s), stack app %s %q", again.Run.Status, again.Run.Reason, s.Phase, s.Reason)
	}
	if got := w.parameterValue(again, "app"); got != "two" {
		t.Errorf("the app's setting is %q, want two", got)
	}

	edit(t, dir, "cairn.yaml", "    rollback_configuration:\n      monitoring_time_in_minutes: 10\n      rollback_triggers: ["+appAlarmARN+"]\n", "")
	cleared := w.wait("shop", w.push("shop", dir))
	if s := cleared.Run.Stacks["app"]; cleared.Run.Status != run.Succeeded || s.Phase != run.Done {
		t.Fatalf("rollback_configuration removed: run %s (%s), stack app %s %q, want it updated", cleared.Run.Status, cleared.Run.Reason, s.Phase, s.Reason)
	}
	if rc := w.stacks()["shop-app"].RollbackConfiguration; rc != nil && len(rc.RollbackTriggers) != 0 {
		t.Errorf("shop-app keeps the triggers %+v the config no longer names", rc.RollbackTriggers)
	}
}
