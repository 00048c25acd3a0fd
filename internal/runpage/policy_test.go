package runpage

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/verdict"
)

// policyVerdict is a verdict whose every value is hostile in turn: a rule, a stack, a
// resource, a message, an override's author and reason all come from policies and
// templates a pull request writes.
func policyVerdict(hostileField string) *verdict.Verdict {
	r := verdict.Result{Level: verdict.Deny, Rule: "cairn.s3_public", Origin: "team", Stack: "web", Resource: "Site", Msg: "bucket Site is public"}
	o := verdict.Override{Rule: "shop.tags", Reason: "tags later", By: "arn:aws:sts::1:assumed-role/policy/alice", At: t0}
	switch hostileField {
	case "rule":
		r.Rule = hostile
	case "stack":
		r.Stack = hostile
	case "resource":
		r.Resource = hostile
	case "message":
		r.Msg = hostile
	case "override reason":
		o.Reason = hostile
	case "override author":
		o.By = hostile
	}
	tags := verdict.Result{Level: verdict.Deny, Rule: "shop.tags", Origin: "bundle", Stack: "web", Resource: "Site", Msg: "no tags"}
	return verdict.Judged(verdict.Plan, verdict.Answer{Results: []verdict.Result{r, tags}}, t0, []verdict.Override{o})
}

// TestPagesShowThePolicyVerdict: the plan's and the run's pages show the policies' verdict
// (outcome, each result, the standing denial marked, the override with its author and
// reason), every value escaped.
func TestPagesShowThePolicyVerdict(t *testing.T) {
	for _, field := range []string{"", "rule", "stack", "resource", "message", "override reason", "override author"} {
		t.Run("hostile "+field, func(t *testing.T) {
			v := policyVerdict(field)
			runPage, err := RenderRun(Run{Report: report.Input{Run: fixture(), Policy: v}})
			if err != nil {
				t.Fatal(err)
			}
			planPage, err := RenderPlan(Plan{Plan: &plan.Document{ID: "P1", Deployment: "shop", Status: plan.Planned, Run: fixture(), Policy: v}})
			if err != nil {
				t.Fatal(err)
			}
			for name, page := range map[string]string{"run": string(runPage), "plan": string(planPage)} {
				if !strings.Contains(page, `<h2 id="policy-h">Policy: denied (1 denied, 1 overridden, 0 warnings)</h2>`) ||
					!strings.Contains(page, "<td>deny (overridden)</td><td>shop.tags</td><td>bundle</td>") {
					t.Errorf("%s page: no policy section, or not as judged:\n%s", name, page)
				}
				if field == "" && !strings.Contains(page, `<tr class="danger"><td>deny</td><td>cairn.s3_public</td><td>team</td><td>web</td><td>Site</td><td>bucket Site is public</td></tr>`) {
					t.Errorf("%s page: the standing denial is not marked", name)
				}
				if field != "" && (strings.Contains(page, "<script>alert") || strings.Contains(page, "<img") || !strings.Contains(page, "TOKEND")) {
					t.Errorf("%s page: the hostile %s is not shown as text", name, field)
				}
			}
		})
	}
}
