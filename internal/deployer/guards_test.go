package deployer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
)

// The attacks of issue 38 item 4, through the path an attacker takes: a push (an upload
// to deployments/NAME.zip) of a config that loosens a guard in the same breath as it uses
// the loosening. A guard is judged by the stricter of the graph's last applied setting and
// the pushed one; loosening it takes an approved plan, whose comment shows it.

// planComment is the plan's pull-request comment (Markdown).
func planComment(t *testing.T, p *plan.Document) string {
	t.Helper()
	var b strings.Builder
	if err := report.PlanMarkdown(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// cutConfig removes from dir's cairn.yaml everything from the line that starts with from.
func cutConfig(t *testing.T, dir, from string) {
	t.Helper()
	p := filepath.Join(dir, "cairn.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), from)
	if i < 0 {
		t.Fatalf("cairn.yaml has no %q", from)
	}
	if err := os.WriteFile(p, b[:i], 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDroppedMaxDeletionsNeedsPlan deploys the chain (deletion_policy.max_deletions: 2),
// then pushes a config that drops deletion_policy and removes cache, app and web. The push
// is refused before anything is deleted, saying the guard was relaxed and how to get it
// approved; a plan of the same content shows the relaxation in its comment, and its
// approval deletes the three stacks and records the new setting.
func TestDroppedMaxDeletionsNeedsPlan(t *testing.T) {
	w := newReviewWorld(t)
	_, first := deployChain(t, w)
	if g := w.graph("shop", "shop"); g.Guards == nil || g.Guards.MaxDeletions != 2 {
		t.Errorf("graph guards %+v, want max_deletions 2 recorded", g.Guards)
	}
	relaxed := copyBundle(t, chain)
	edit(t, relaxed, "cairn.yaml", "deletion_policy:\n  max_deletions: 2\n", "")
	cutConfig(t, relaxed, "  - name: cache\n")

	executed := len(w.executedIDs())
	doc := w.wait("shop", w.push("shop", relaxed))
	refusals := strings.Join(doc.Refusals, "\n")
	for _, want := range []string{"guard relaxed: deletion_policy.max_deletions 2 → (none)", "plan it (`cairn plan PATH --deployment shop`)", "`cairn approve shop PLAN_ID`"} {
		if doc.Run.Status != run.RunFailed || !strings.Contains(refusals, want) {
			t.Fatalf("push: %s (%s), refusals %q, want %q", doc.Run.Status, doc.Run.Reason, refusals, want)
		}
	}
	for _, name := range []string{"shop-cache", "shop-app", "shop-web"} {
		if _, ok := w.stacks()[name]; !ok {
			t.Errorf("the refused push deleted %s", name)
		}
	}
	if n := len(w.executedIDs()); n != executed {
		t.Errorf("the refused push executed %d change set(s)", n-executed)
	}

	p, apply := w.planAndApprove(relaxed)
	if comment := planComment(t, p); !strings.Contains(comment, "guard relaxed: deletion_policy.max_deletions 2 → (none)") {
		t.Errorf("the plan comment does not show the relaxation:\n%s", comment)
	}
	if len(p.Deletions) != 3 {
		t.Errorf("plan deletions %v, want cache, app and web", p.Deletions)
	}
	for _, name := range []string{"cache", "app", "web"} {
		if s := apply.Run.Stacks[name]; s == nil || s.Phase != run.Done {
			t.Errorf("apply: %s %+v", name, s)
		}
		if _, ok := w.stacks()[first.Run.Stacks[name].StackName]; ok {
			t.Errorf("the approved plan did not delete %s", name)
		}
	}
	if g := w.graph("shop", "shop"); g.Guards == nil || g.Guards.MaxDeletions != 0 {
		t.Errorf("graph guards after the apply %+v, want no limit", g.Guards)
	}
}

// TestProtectedStackServiceRoleSwitchNeedsPlan deploys the chain with database protected
// and acting through service role old, through a plan; then a push switching it to role
// new, nothing else changed, is refused naming the switch; a plan shows database updated
// with the new role in its comment, and its approval makes database's change set carry it.
func TestProtectedStackServiceRoleSwitchNeedsPlan(t *testing.T) {
	const (
		oldRole = "arn:aws:iam::123456789012:role/db-deployer-old"
		newRole = "arn:aws:iam::123456789012:role/db-deployer-new"
	)
	w := newReviewWorld(t)
	dir := copyBundle(t, chain)
	edit(t, dir, "cairn.yaml", "    termination_protection: true\n", "    termination_protection: true\n    protected: true\n    service_role: "+oldRole+"\n")
	w.planAndApprove(dir)
	if g := w.graph("shop", "shop"); g.Stacks["database"].Target.ServiceRole != oldRole {
		t.Fatalf("graph: database's service role %q", g.Stacks["database"].Target.ServiceRole)
	}

	edit(t, dir, "cairn.yaml", oldRole, newRole)
	executed := len(w.executedIDs())
	doc := w.wait("shop", w.push("shop", dir))
	refusals := strings.Join(doc.Refusals, "\n")
	want := "stack database: service_role " + oldRole + " → " + newRole + " (guard relaxed)"
	if doc.Run.Status != run.RunFailed || !strings.Contains(refusals, want) || !strings.Contains(refusals, "protected stack(s) database change only through an approved plan") {
		t.Fatalf("push: %s (%s), refusals %q, want %q", doc.Run.Status, doc.Run.Reason, refusals, want)
	}
	if n := len(w.executedIDs()); n != executed {
		t.Errorf("the refused push executed %d change set(s)", n-executed)
	}
	if g := w.graph("shop", "shop"); g.Stacks["database"].Target.ServiceRole != oldRole {
		t.Errorf("the refused push recorded service role %q", g.Stacks["database"].Target.ServiceRole)
	}

	p, _ := w.planAndApprove(dir)
	if s := p.Stack("database"); s == nil || s.Action != plan.Update {
		t.Fatalf("plan: database %+v, want an update", s)
	}
	comment := planComment(t, p)
	for _, want := range []string{want, "Service role: `" + newRole + "`"} {
		if !strings.Contains(comment, want) {
			t.Errorf("the plan comment lacks %q:\n%s", want, comment)
		}
	}
	if g := w.graph("shop", "shop"); g.Stacks["database"].Target.ServiceRole != newRole {
		t.Errorf("graph after the apply: database's service role %q", g.Stacks["database"].Target.ServiceRole)
	}
}

// TestTakeOverGraphNeedsOwnersConsent: deployment shop2 naming shop's graph
// (persistent_graph_key: shop, take_over_graph_from: shop) is refused while shop's graph
// records no consent, and nothing changes; shop's push giving consent
// (hand_over_graph_to: shop2) is itself a relaxed guard, refused, then applied through a
// plan; shop2's push then takes the graph over.
func TestTakeOverGraphNeedsOwnersConsent(t *testing.T) {
	w := newReviewWorld(t)
	owner, _ := deployChain(t, w)
	taker := copyBundle(t, chain)
	edit(t, taker, "cairn.yaml", "namespace: shop\n", "namespace: shop\npersistent_graph_key: shop\ntake_over_graph_from: shop\n")

	gen := w.graph("shop", "shop").Generation
	doc := w.wait("shop2", w.push("shop2", taker))
	want := "deployment shop2 may not take over the persistent graph shop/shop of deployment shop (take_over_graph_from): the graph records no consent; nothing was changed: the owner consents by setting `hand_over_graph_to: shop2` in deployment shop's config"
	if refusals := strings.Join(doc.Refusals, "\n"); doc.Run.Status != run.RunFailed || !strings.Contains(refusals, want) {
		t.Fatalf("takeover without consent: %s (%s), refusals %q, want %q", doc.Run.Status, doc.Run.Reason, refusals, want)
	}
	if g := w.graph("shop", "shop"); g.Deployment != "shop" || g.Generation != gen {
		t.Fatalf("the refused takeover wrote the graph: owner %s, generation %d (was %d)", g.Deployment, g.Generation, gen)
	}

	edit(t, owner, "cairn.yaml", "namespace: shop\n", "namespace: shop\nhand_over_graph_to: shop2\n")
	doc = w.wait("shop", w.push("shop", owner))
	if refusals := strings.Join(doc.Refusals, "\n"); doc.Run.Status != run.RunFailed || !strings.Contains(refusals, "guard relaxed: hand_over_graph_to (none) → shop2") {
		t.Fatalf("consent pushed: %s (%s), refusals %q", doc.Run.Status, doc.Run.Reason, refusals)
	}
	p, _ := w.planAndApprove(owner)
	if comment := planComment(t, p); !strings.Contains(comment, "guard relaxed: hand_over_graph_to (none) → shop2") {
		t.Errorf("the plan comment does not show the consent:\n%s", comment)
	}
	if g := w.graph("shop", "shop"); g.Guards == nil || g.Guards.HandOverTo != "shop2" {
		t.Fatalf("graph guards after the approved consent: %+v", g.Guards)
	}

	doc = w.wait("shop2", w.push("shop2", taker))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("takeover with consent: %s (%s) %q", doc.Run.Status, doc.Run.Reason, doc.Refusals)
	}
	if g := w.graph("shop", "shop"); g.Deployment != "shop2" || g.Guards == nil || g.Guards.HandOverTo != "" {
		t.Errorf("graph after the takeover: owner %s, guards %+v, want shop2 and the consent spent", g.Deployment, g.Guards)
	}
	if notes := strings.Join(doc.Notes, "\n"); !strings.Contains(notes, "guard tightened: hand_over_graph_to shop2 → (none)") {
		t.Errorf("the takeover's notes do not say the consent is spent:\n%s", notes)
	}
}
