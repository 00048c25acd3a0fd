package cfnlocal

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

const signalled = `Resources:
  Web:
    Type: AWS::EC2::Instance
    CreationPolicy:
      ResourceSignal: {Count: 2, Timeout: PT10M}
    Properties: {ImageId: ami-0123456789abcdef0, InstanceType: t3.micro}
  After:
    Type: AWS::SNS::Topic
    DependsOn: Web
`

// CreationPolicy signals, as AWS counts them: the resource completes once Count SUCCESS
// signals arrived (a repeated UniqueId counts once), a FAILURE signal fails it, and so
// does the timeout; by default the emulator's stand-in sends the signals nothing local
// would (no instance boots to run cfn-signal).
func TestCreationPolicyWaitsForSignals(t *testing.T) {
	ctx := context.Background()
	signal := func(e *env, stack, id, status string) error {
		_, err := e.cfn.SignalResource(ctx, &cloudformation.SignalResourceInput{StackName: aws.String(stack), LogicalResourceId: aws.String("Web"),
			UniqueId: aws.String(id), Status: types.ResourceSignalStatus(status)})
		return err
	}
	t.Run("stand-in signals by default", func(t *testing.T) {
		e := newEnv(t, nil)
		e.create("auto", signalled, nil)
		st := e.settle("auto")
		evs := strings.Join(eventLines(e.allEvents("auto")), "\n")
		if st.StackStatus != types.StackStatusCreateComplete || strings.Count(evs, "Received SUCCESS signal with UniqueId i-") != 2 {
			t.Fatalf("%s\n%s", st.StackStatus, evs)
		}
	})
	t.Run("SignalResource completes it", func(t *testing.T) {
		e := newEnv(t, nil)
		if err := e.svc.SetSignalStandIn(SignalStandIn{LogicalID: "Web", Signal: "none"}); err != nil {
			t.Fatal(err)
		}
		e.create("sig", signalled, nil)
		e.clk.Advance(2 * time.Second) // Web made, waiting
		if err := signal(e, "sig", "i-1", "SUCCESS"); err != nil {
			t.Fatal(err)
		}
		if err := signal(e, "sig", "i-1", "SUCCESS"); err != nil { // counted once
			t.Fatal(err)
		}
		if st := e.stack("sig"); st.StackStatus != types.StackStatusCreateInProgress {
			t.Fatalf("one distinct signal of two: %s", st.StackStatus)
		}
		if err := signal(e, "sig", "i-2", "SUCCESS"); err != nil {
			t.Fatal(err)
		}
		st := e.settle("sig")
		if st.StackStatus != types.StackStatusCreateComplete {
			t.Fatalf("%s\n%s", st.StackStatus, strings.Join(eventLines(e.allEvents("sig")), "\n"))
		}
		err := signal(e, "sig", "i-3", "SUCCESS")
		if err == nil || !strings.Contains(err.Error(), "is in CREATE_COMPLETE state and cannot be signaled") {
			t.Errorf("signal after completion: %v", err)
		}
	})
	t.Run("FAILURE signal fails it", func(t *testing.T) {
		e := newEnv(t, nil)
		if err := e.svc.SetSignalStandIn(SignalStandIn{Stack: "bad", LogicalID: "Web", Signal: "FAILURE"}); err != nil {
			t.Fatal(err)
		}
		e.create("bad", signalled, nil)
		st := e.settle("bad")
		evs := strings.Join(eventLines(e.allEvents("bad")), "\n")
		if st.StackStatus != types.StackStatusRollbackComplete || !strings.Contains(evs, "Web CREATE_FAILED (Received FAILURE signal with UniqueId i-") {
			t.Errorf("%s\n%s", st.StackStatus, evs)
		}
	})
	t.Run("timeout fails it", func(t *testing.T) {
		e := newEnv(t, nil)
		if err := e.svc.SetSignalStandIn(SignalStandIn{LogicalID: "Web", Signal: "NONE"}); err != nil {
			t.Fatal(err)
		}
		e.create("late", signalled, nil)
		e.clk.Advance(2 * time.Second)
		if err := signal(e, "late", "i-1", "SUCCESS"); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(9 * time.Minute)
		if st := e.stack("late"); st.StackStatus != types.StackStatusCreateInProgress {
			t.Fatalf("before the timeout: %s", st.StackStatus)
		}
		st := e.settle("late")
		if st.StackStatus != types.StackStatusRollbackComplete ||
			!strings.Contains(strings.Join(reasons(e.allEvents("late")), "\n"), "Failed to receive 2 resource signal(s) within the specified duration") {
			t.Errorf("%s: %v", st.StackStatus, reasons(e.allEvents("late")))
		}
	})
}

func reasons(evs []types.StackEvent) []string {
	var out []string
	for _, ev := range evs {
		if r := aws.ToString(ev.ResourceStatusReason); r != "" {
			out = append(out, aws.ToString(ev.LogicalResourceId)+": "+r)
		}
	}
	return out
}
