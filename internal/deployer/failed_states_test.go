package deployer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/recovery"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// TestFailedFirstCreateWritesTheGraph fails the first create of the chain's first stack:
// the run touched CloudFormation (the stack exists, ROLLBACK_COMPLETE, tagged), so it
// writes the persistent graph, holding that stack; the next push finds the graph rather
// than warning that it "was missing and was rebuilt", re-creates the stack and succeeds.
func TestFailedFirstCreateWritesTheGraph(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.fault(cfnlocal.Fault{Stack: "shop-network", LogicalID: "Vpc", Operation: "CREATE", Reason: "VPC limit exceeded", Count: 1})
	dir := copyBundle(t, chain)
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.RunFailed || doc.Run.Stacks["network"].Phase != run.Failed {
		t.Fatalf("first run: %s; stacks %v", doc.Run.Status, phases(doc))
	}
	g := w.graph("shop", "shop")
	if n := g.Stacks["network"]; n == nil || n.Status != "ROLLBACK_COMPLETE" || len(g.Stacks) != 1 {
		t.Fatalf("graph after the failed first create: %v (network %+v), want network ROLLBACK_COMPLETE", g.Names(), g.Stacks["network"])
	}
	doc2 := w.wait("shop", w.push("shop", dir))
	if doc2.Run.Status != run.Succeeded {
		t.Fatalf("second run: %s (%s); stacks %v", doc2.Run.Status, doc2.Run.Reason, phases(doc2))
	}
	for _, warning := range doc2.Warnings {
		if strings.Contains(warning, "was missing and was rebuilt") {
			t.Errorf("the second push warns: %s", warning)
		}
	}
}

// TestEveryFailedStateHasAWayOut leaves a stack in each state CloudFormation cannot roll
// forward from, pushes, and follows exactly the advice cairn gives: the stack gets out,
// and the next push deploys. ROLLBACK_FAILED and DELETE_FAILED are deleted only through an
// approved plan, which lists the resources the deletion keeps because they fail to delete;
// `cairn recover` says so too instead of making a call that cannot work.
func TestEveryFailedStateHasAWayOut(t *testing.T) {
	t.Run("ROLLBACK_FAILED", func(t *testing.T) {
		w := newReviewWorld(t)
		dir, _ := deployChain(t, w)
		// A new stack whose create fails, and whose rollback cannot delete its resource.
		edit(t, dir, "cairn.yaml", appAndWeb, appAndWeb+"  - name: queue\n    template_path: templates/parameter.yaml\n    parameters:\n      Value: ${output network::VpcId}\n      Size: small\n")
		w.fault(cfnlocal.Fault{Stack: "shop-queue", LogicalID: "Parameter", Operation: "CREATE", Reason: "Rate exceeded", Count: 1})
		w.fault(cfnlocal.Fault{Stack: "shop-queue", LogicalID: "Parameter", Operation: "DELETE", Reason: "Parameter is in use", DuringRollback: true})
		w.wait("shop", w.push("shop", dir))
		if s := w.stacks()["shop-queue"]; s.StackStatus != cfntypes.StackStatusRollbackFailed {
			t.Fatalf("shop-queue is %s, want ROLLBACK_FAILED", s.StackStatus)
		}
		wayOut(t, w, dir, "shop-queue", "ROLLBACK_FAILED", "queue", run.IntentRecreate, 2)
		if s := w.stacks()["shop-queue"]; s.StackStatus != cfntypes.StackStatusCreateComplete {
			t.Errorf("shop-queue is %s after the approved plan, want re-created", s.StackStatus)
		}
	})
	t.Run("DELETE_FAILED", func(t *testing.T) {
		w := newReviewWorld(t)
		dir, _ := deployChain(t, w)
		w.fault(cfnlocal.Fault{Stack: "shop-web", LogicalID: "Parameter", Operation: "DELETE", Reason: "Parameter is in use by an EventBridge rule"})
		edit(t, dir, "cairn.yaml", "  - name: web\n    template_path: templates/parameter.yaml\n    parameters:\n      Value: ${output app::Name}\n      Size: small\n", "")
		w.wait("shop", w.push("shop", dir))
		if s := w.stacks()["shop-web"]; s.StackStatus != cfntypes.StackStatusDeleteFailed {
			t.Fatalf("shop-web is %s, want DELETE_FAILED", s.StackStatus)
		}
		wayOut(t, w, dir, "shop-web", "DELETE_FAILED", "web", run.IntentDelete, 1)
		if _, ok := w.stacks()["shop-web"]; ok {
			t.Error("shop-web still exists after the approved plan deleted it")
		}
		if g := w.graph("shop", "shop"); g.Stacks["web"] != nil {
			t.Errorf("the graph still holds web: %v", g.Names())
		}
	})
	t.Run("UPDATE_ROLLBACK_FAILED", func(t *testing.T) {
		w := newReviewWorld(t)
		dir, _ := deployChain(t, w)
		w.fault(cfnlocal.Fault{Stack: "shop-web", LogicalID: "Parameter", Operation: "UPDATE", Reason: "Rate exceeded", Count: 1})
		w.fault(cfnlocal.Fault{Stack: "shop-web", LogicalID: "Parameter", Operation: "UPDATE", Reason: "Rate exceeded while reverting", DuringRollback: true, Count: 2})
		edit(t, dir, "cairn.yaml", "      Value: ${output app::Name}\n      Size: small", "      Value: ${output app::Name}\n      Size: large")
		w.wait("shop", w.push("shop", dir))
		if s := w.stacks()["shop-web"]; s.StackStatus != cfntypes.StackStatusUpdateRollbackFailed {
			t.Fatalf("shop-web is %s, want UPDATE_ROLLBACK_FAILED", s.StackStatus)
		}
		doc := w.wait("shop", w.push("shop", dir))
		want := "stack shop-web is UPDATE_ROLLBACK_FAILED: recover it with `cairn recover shop web`, then push again"
		if !strings.Contains(strings.Join(doc.Refusals, "\n"), want) {
			t.Fatalf("refusals %q, want %q", doc.Refusals, want)
		}
		// `cairn recover shop web`, as cmd/cairn runs it.
		r := &recovery.Recoverer{CFN: w.cfnc, State: w.store(), Clock: w.clk, Poll: time.Second, Timeout: time.Hour}
		res, err := r.Recover(context.Background(), recovery.Request{Namespace: "shop", Key: "shop", Stack: "web"}, nil)
		if err != nil || res.Failed || res.Status != "UPDATE_ROLLBACK_COMPLETE" {
			t.Fatalf("cairn recover: %+v, %v", res, err)
		}
		if doc := w.wait("shop", w.push("shop", dir)); doc.Run.Status != run.Succeeded {
			t.Fatalf("push after the recovery: %s (%s); refusals %q", doc.Run.Status, doc.Run.Reason, doc.Refusals)
		}
	})
}

// wayOut pushes the bundle in dir with stack stackName in status: the push is refused with
// the advice to plan and approve; `cairn recover` refuses with the same advice and makes
// no call; the plan lists what the deletion keeps; its approval gets the stack out; and a
// push of the same bundle then succeeds.
func wayOut(t *testing.T, w *world, dir, stackName, status, name string, intent run.Intent, deletes int) {
	t.Helper()
	doc := w.wait("shop", w.push("shop", dir))
	advice := "stack " + stackName + " is " + status + ": CloudFormation can only delete it keeping Parameter (AWS::SSM::Parameter: "
	refusals := strings.Join(doc.Refusals, "\n")
	if s := doc.Run.Stacks[name]; s != nil && s.Phase == run.Failed {
		refusals += "\n" + s.Reason
	}
	if doc.Run.Status == run.Succeeded || !strings.Contains(refusals, advice) || !strings.Contains(refusals, "plan it (`cairn plan PATH --deployment shop`) and approve that plan (`cairn approve shop PLAN_ID`)") {
		t.Fatalf("push of a %s stack: %s; refusals %q; want the advice %q...", status, doc.Run.Status, refusals, advice)
	}
	// The run is seen ended when its document is saved; it releases the lock just after.
	w.waitFor("the run to release the lock", func() bool {
		_, err := w.store().CurrentLock(context.Background(), "shop", "shop")
		return errors.Is(err, statestore.ErrNotLocked)
	})
	before := w.cfnCalls()
	r := &recovery.Recoverer{CFN: w.cfnc, State: w.store(), Clock: w.clk, Poll: time.Second, Timeout: time.Minute}
	if _, err := r.Recover(context.Background(), recovery.Request{Namespace: "shop", Key: "shop", Stack: name}, nil); err == nil ||
		!strings.Contains(err.Error(), "CloudFormation can only delete it") || !strings.Contains(err.Error(), "plan it (`cairn plan PATH --deployment NAME`) and approve that plan") {
		t.Errorf("cairn recover of a %s stack: %v, want the advice to plan and approve", status, err)
	}
	if n := w.cfnCalls()["ContinueUpdateRollback"] + w.cfnCalls()["RollbackStack"] - before["ContinueUpdateRollback"] - before["RollbackStack"]; n > 0 {
		t.Errorf("cairn recover made %d call(s) that cannot work on %s", n, status)
	}

	p := w.planOf("shop", w.uploadPlan("shop", dir))
	if p.Status != plan.Planned {
		t.Fatalf("plan: %s (%s); refusals %q", p.Status, p.Reason, p.Refusals)
	}
	var decision string
	for _, d := range p.Decisions {
		if d.Stack == name {
			decision = string(d.Action) + ": " + d.Reason
		}
	}
	if !strings.Contains(decision, status+": ") || !strings.Contains(decision, "keeping Parameter (AWS::SSM::Parameter: ") {
		t.Errorf("plan decision for %s: %q, want it to list the resource kept", name, decision)
	}
	if s := p.Run.Stacks[name]; s.Intent != intent || strings.Join(s.Retain, ",") != "Parameter" {
		t.Errorf("planned %s: intent %s, retain %v", name, s.Intent, s.Retain)
	}
	before = w.cfnCalls()
	applied := w.approve("shop", p.ID)
	if applied.Run.Status != run.Succeeded {
		t.Fatalf("apply of the plan: %s (%s); stacks %v: %s", applied.Run.Status, applied.Run.Reason, phases(applied), applied.Run.Stacks[name].Reason)
	}
	// A DELETE_FAILED stack keeps the resources at once; a ROLLBACK_FAILED one is deleted,
	// becomes DELETE_FAILED, and is deleted again keeping them.
	if n := w.cfnCalls()["DeleteStack"] - before["DeleteStack"]; n != deletes {
		t.Errorf("the apply made %d DeleteStack call(s), want %d", n, deletes)
	}
	if doc := w.wait("shop", w.push("shop", dir)); doc.Run.Status != run.Succeeded {
		t.Fatalf("push after the way out: %s (%s); refusals %q", doc.Run.Status, doc.Run.Reason, doc.Refusals)
	}
}
