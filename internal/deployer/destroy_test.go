package deployer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
)

// TestDestroyFiveStacksOnlyAfterApproval plans the destruction of the 5-stack chain: with
// the database's termination protection on, the plan fails naming it as the blocker; with
// it off, the plan deletes nothing until approved, and the approval deletes every stack,
// dependents first, and removes the emptied graph, saying so in the report.
func TestDestroyFiveStacksOnlyAfterApproval(t *testing.T) {
	w := newReviewWorld(t)
	dir, _ := deployChain(t, w)
	destroy := map[string]string{rundoc.DestroyMetadata: "true"}

	blocked := w.planOf("shop", w.uploadPlanMeta("shop", dir, destroy))
	if blocked.Status != plan.PlanFailed || !strings.Contains(strings.Join(blocked.Refusals, "\n"), "stack database (shop-database): deletion refused: termination protection is on") {
		t.Fatalf("destroy of a protected stack: %s, refusals %q", blocked.Status, blocked.Refusals)
	}
	// Turning termination protection off loosens a guard: through an approved plan.
	edit(t, dir, "cairn.yaml", "    termination_protection: true\n", "")
	if d := w.wait("shop", w.push("shop", dir)); d.Run.Status != run.RunFailed || !strings.Contains(strings.Join(d.Refusals, "\n"), "stack database: termination_protection on → off (guard relaxed)") {
		t.Fatalf("push turning termination protection off: %s (%s) %q", d.Run.Status, d.Run.Reason, d.Refusals)
	}
	w.planAndApprove(dir)

	p := w.planOf("shop", w.uploadPlanMeta("shop", dir, destroy))
	if p.Status != plan.Planned || !p.Destroy || strings.Join(p.Deletions, ",") != "app,cache,database,network,web" {
		t.Fatalf("destroy plan: %s (%s) destroy %v deletions %v refusals %v", p.Status, p.Reason, p.Destroy, p.Deletions, p.Refusals)
	}
	if calls := w.cfnCalls(); calls["DeleteStack"] != 0 {
		t.Fatalf("the destroy plan deleted %d stack(s)", calls["DeleteStack"])
	}
	if n := len(w.stacks()); n != 5 {
		t.Fatalf("%d stacks before approval, want 5", n)
	}
	apply := w.approve("shop", p.ID)
	if apply.Run.Status != run.Succeeded {
		t.Fatalf("apply: %s (%s) %v %v", apply.Run.Status, apply.Run.Reason, apply.Refusals, phases(apply))
	}
	for _, st := range w.stacks() {
		if st.StackStatus != cfntypes.StackStatusDeleteComplete {
			t.Errorf("%s is %s after destroy", aws.ToString(st.StackName), st.StackStatus)
		}
	}
	s := apply.Run.Stacks
	for _, e := range [][2]string{{"web", "app"}, {"app", "database"}, {"app", "cache"}, {"database", "network"}, {"cache", "network"}} {
		if s[e[1]].StartedAt.Before(s[e[0]].FinishedAt) {
			t.Errorf("%s deletion started before its dependent %s was gone", e[1], e[0])
		}
	}
	if _, err := w.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("state/shop/shop.json")}); err == nil {
		t.Errorf("the emptied graph's state object still exists")
	}
	if r := w.object(layout.RunReportKey("shop", apply.Run.ID)); !strings.Contains(r, "the emptied graph's state object s3://cairn-state/state/shop/shop.json was removed") {
		t.Errorf("report does not say the graph was removed:\n%s", r)
	}
}
