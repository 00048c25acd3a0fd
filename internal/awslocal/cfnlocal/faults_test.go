package cfnlocal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

const threeQueues = `Resources:
  A:
    Type: AWS::SQS::Queue
  B:
    Type: AWS::SQS::Queue
    Properties:
      RedrivePolicy: {deadLetterTargetArn: !GetAtt A.Arn, maxReceiveCount: 3}
  C:
    Type: AWS::SQS::Queue
    DependsOn: B
    Properties:
      DelaySeconds: 0
`

func postControl(t *testing.T, e *env, what string, body any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(e.srv.URL+"/_local/cloudformation/"+what, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("control %s: %s", what, resp.Status)
	}
}

func TestInjectedFailuresRollBackWithTheReason(t *testing.T) {
	tests := []struct {
		name      string
		fault     Fault
		update    bool
		disable   bool
		want      types.StackStatus
		wantLines []string
	}{
		{name: "create fails and rolls back", fault: Fault{Stack: "s", LogicalID: "B", Operation: "CREATE", Reason: "Queue limit exceeded"},
			want: types.StackStatusRollbackComplete,
			wantLines: []string{"A CREATE_COMPLETE", "B CREATE_IN_PROGRESS", "B CREATE_FAILED (Queue limit exceeded)",
				"s ROLLBACK_IN_PROGRESS (The following resource(s) failed to create: [B]. Rollback requested by user.)",
				"B DELETE_COMPLETE", "A DELETE_COMPLETE", "s ROLLBACK_COMPLETE"}},
		{name: "create fails without rollback", fault: Fault{Stack: "s", LogicalID: "C", Reason: "boom"}, disable: true,
			want:      types.StackStatusCreateFailed,
			wantLines: []string{"C CREATE_FAILED (boom)", "s CREATE_FAILED (The following resource(s) failed to create: [C]. )"}},
		{name: "update fails and rolls back", update: true, fault: Fault{Stack: "s", LogicalID: "C", Operation: "UPDATE", Reason: "Update denied by fault"},
			want: types.StackStatusUpdateRollbackComplete,
			wantLines: []string{"s UPDATE_IN_PROGRESS", "C UPDATE_FAILED (Update denied by fault)",
				"s UPDATE_ROLLBACK_IN_PROGRESS (The following resource(s) failed to update: [C]. )", "C UPDATE_COMPLETE",
				"s UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS", "s UPDATE_ROLLBACK_COMPLETE"}},
		{name: "rollback itself fails", update: true, fault: Fault{Stack: "s", LogicalID: "C", Operation: "UPDATE", Reason: "stuck", DuringRollback: true},
			want:      types.StackStatusUpdateRollbackFailed,
			wantLines: []string{"C UPDATE_FAILED (stuck)", "s UPDATE_ROLLBACK_IN_PROGRESS (The following resource(s) failed to update: [C]. )", "C UPDATE_FAILED (stuck)", "s UPDATE_ROLLBACK_FAILED (The following resource(s) failed to update: [C]. )"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, nil)
			if tc.update {
				e.create("s", threeQueues, nil)
				e.settle("s")
			}
			postControl(t, e, "faults", tc.fault)
			if tc.update {
				if _, err := e.cfn.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("s"),
					TemplateBody: aws.String(strings.Replace(threeQueues, "DelaySeconds: 0", "DelaySeconds: 5", 1))}); err != nil {
					t.Fatal(err)
				}
			} else if _, err := e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("s"),
				TemplateBody: aws.String(threeQueues), DisableRollback: aws.Bool(tc.disable)}); err != nil {
				t.Fatal(err)
			}
			st := e.settle("s")
			lines := eventLines(e.allEvents("s"))
			if st.StackStatus != tc.want {
				t.Fatalf("status = %s, want %s; events:\n%s", st.StackStatus, tc.want, strings.Join(lines, "\n"))
			}
			mustContainInOrder(t, lines, tc.wantLines...)
			if tc.want == types.StackStatusUpdateRollbackFailed {
				e.svc.ClearFaults()
				if _, err := e.cfn.ContinueUpdateRollback(ctx, &cloudformation.ContinueUpdateRollbackInput{StackName: aws.String("s"),
					ResourcesToSkip: []string{"C"}}); err != nil {
					t.Fatal(err)
				}
				if st := e.settle("s"); st.StackStatus != types.StackStatusUpdateRollbackComplete {
					t.Fatalf("after ContinueUpdateRollback = %s", st.StackStatus)
				}
			}
		})
	}
}

func TestDeleteFaultAndDelay(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	e.create("d", threeQueues, nil)
	e.settle("d")
	if err := e.svc.InjectFault(Fault{Stack: "d", LogicalID: "A", Operation: "DELETE", Reason: "resource is in use", Count: 1}); err != nil {
		t.Fatal(err)
	}
	postControl(t, e, "faults", map[string]string{"stack": "d", "logicalId": "C", "delay": "10m"})
	if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("d")}); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(5 * time.Minute)
	if st := e.stack("d"); st.StackStatus != types.StackStatusDeleteInProgress {
		t.Fatalf("during the delayed delete = %s", st.StackStatus)
	}
	st := e.settle("d")
	if st.StackStatus != types.StackStatusDeleteFailed || aws.ToString(st.StackStatusReason) != "The following resource(s) failed to delete: [A]. " {
		t.Fatalf("after delete = %s %q", st.StackStatus, aws.ToString(st.StackStatusReason))
	}
	mustContainInOrder(t, eventLines(e.allEvents("d")), "C DELETE_COMPLETE", "B DELETE_COMPLETE", "A DELETE_FAILED (resource is in use)")
	// the fault applied once: a retried delete succeeds
	if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("d")}); err != nil {
		t.Fatal(err)
	}
	if st := e.settle(aws.ToString(st.StackId)); st.StackStatus != types.StackStatusDeleteComplete {
		t.Fatalf("retried delete = %s", st.StackStatus)
	}
}

func TestThrottlingFault(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	postControl(t, e, "faults", Fault{ThrottleRate: 0.5})
	throttled := 0
	for range 10 {
		_, err := e.cfn.ListExports(ctx, &cloudformation.ListExportsInput{})
		if err != nil {
			if apiCode(err) != "Throttling" || !strings.Contains(err.Error(), "Rate exceeded") {
				t.Fatalf("unexpected error %v", err)
			}
			throttled++
		}
	}
	if throttled != 5 {
		t.Errorf("throttled %d of 10 calls at rate 0.5", throttled)
	}
	resp, err := http.Get(e.srv.URL + "/_local/cloudformation/calls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var calls map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&calls); err != nil {
		t.Fatal(err)
	}
	if calls["ListExports"] != 10 {
		t.Errorf("calls = %v", calls)
	}
	if err := e.svc.InjectFault(Fault{Operation: "EXPLODE", Reason: "x"}); err == nil {
		t.Error("a fault with a bad operation was accepted")
	}
	var ve error = e.svc.InjectFault(Fault{})
	if ve == nil || errors.Is(ve, context.Canceled) {
		t.Error("an empty fault was accepted")
	}
}
