package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
)

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func sampleRun() *run.Run {
	return &run.Run{ID: "20261130-080000-abcd", Deployment: "shop", Status: run.RunFailed, Reason: "1 stack(s) failed or blocked",
		StartedAt: t0, FinishedAt: t0.Add(3 * time.Minute),
		Stacks: map[string]*run.Stack{
			"network": {Name: "network", StackName: "shop-network", Intent: run.IntentDeploy, Phase: run.Done, ChangeSetName: "cairn-x-1", ChangeSetType: "UPDATE", Changes: 4,
				StartedAt: t0, FinishedAt: t0.Add(90 * time.Second)},
			"cache": {Name: "cache", StackName: "shop-cache", Intent: run.IntentDeploy, Phase: run.Failed, ChangeSetName: "cairn-x-2", ChangeSetType: "CREATE",
				Reason: "stack shop-cache is ROLLBACK_COMPLETE: Parameter (AWS::SSM::Parameter): a|b", StartedAt: t0, FinishedAt: t0.Add(2 * time.Minute)},
			"app": {Name: "app", StackName: "shop-app", Intent: run.IntentDeploy, Phase: run.Unchanged, Exists: true, Reason: "inputs unchanged"},
			"old": {Name: "old", StackName: "shop-old", Intent: run.IntentDelete, Phase: run.Blocked, Reason: "not deleted: stack cache failed, so the run stopped before deletions"},
		}}
}

func TestMarkdown(t *testing.T) {
	var b strings.Builder
	in := Input{Run: sampleRun(), Bundle: "s3://cairn-state/deployments/shop.zip version 3", Warnings: []string{"WARNING: bucket versioning is off"},
		Decisions: []plan.Decision{{Stack: "old", StackName: "shop-old", Action: plan.Delete, Reason: "removed from the config"},
			{Stack: "cache", StackName: "shop-cache", Action: plan.Create, Capabilities: []string{"CAPABILITY_IAM"}, FromTemplate: true},
			{Stack: "network", StackName: "shop-network", Action: plan.Update, Capabilities: []string{"CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"}}}}
	if err := Markdown(&b, in); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"# cairn run 20261130-080000-abcd of deployment shop: failed",
		"- Finished: 2026-11-30T08:03:00Z (3m0s)",
		"> **Warning:** WARNING: bucket versioning is off",
		"| network | shop-network | update | done | 1m30s | 4 |  |",
		`| cache | shop-cache | create | failed | 2m0s | 0 | stack shop-cache is ROLLBACK_COMPLETE: Parameter (AWS::SSM::Parameter): a\|b |`,
		"| app | shop-app | none | unchanged |  |  | inputs unchanged |",
		"| old | shop-old | delete | blocked |",
		"- old (shop-old): delete — removed from the config",
		"- cache (shop-cache): create; capabilities: CAPABILITY_IAM (granted: the template needs it)",
		"- network (shop-network): update; capabilities: CAPABILITY_NAMED_IAM, CAPABILITY_AUTO_EXPAND\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}

func TestMarkdownOfRefusedRun(t *testing.T) {
	var b strings.Builder
	r := &run.Run{ID: "r", Deployment: "shop", Status: run.RunFailed, StartedAt: t0, FinishedAt: t0, Stacks: map[string]*run.Stack{}}
	Markdown(&b, Input{Run: r, Errors: []string{"cairn.yaml:3:1: colour: unknown key"}, Refusals: []string{"the run would delete 4 stacks"}})
	for _, want := range []string{"## Errors (nothing was changed)", "- `cairn.yaml:3:1: colour: unknown key`", "## Refused", "- the run would delete 4 stacks"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestSummary(t *testing.T) {
	in := Input{Run: sampleRun()}
	got := Summary(in, "s3://cairn-state/runs/shop/r.md")
	for _, want := range []string{
		"Deployment shop, run 20261130-080000-abcd: failed (1 stack(s) failed or blocked)",
		"- cache: create failed: stack shop-cache is ROLLBACK_COMPLETE",
		"- network: update done",
		"- 1 stack(s) unchanged",
		"Report: s3://cairn-state/runs/shop/r.md",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "- app:") {
		t.Errorf("summary lists the unchanged stack:\n%s", got)
	}
	if s := Subject(Input{Run: &run.Run{ID: strings.Repeat("x", 120), Deployment: "shop", Status: run.Succeeded}}); len(s) > 100 {
		t.Errorf("subject has %d characters, SNS allows 100", len(s))
	}
}

// TestActionOfAdoptedStack: the update that adopts a stack into the graph shows as adopt
// when the plan's decisions are given; other decisions do not change the action.
func TestActionOfAdoptedStack(t *testing.T) {
	adopt := []plan.Decision{{Stack: "other", Action: plan.Update}, {Stack: "extra", StackName: "shop-extra", Action: plan.Adopt}}
	tests := []struct {
		name      string
		stack     run.Stack
		decisions []plan.Decision
		want      plan.Action
	}{
		{"adopted", run.Stack{Name: "extra", Intent: run.IntentDeploy, Phase: run.Done, Exists: true, ChangeSetType: "UPDATE"}, adopt, "adopt"},
		{"adopted, no decisions given", run.Stack{Name: "extra", Intent: run.IntentDeploy, Phase: run.Done, Exists: true, ChangeSetType: "UPDATE"}, nil, "update"},
		{"adopted but unchanged", run.Stack{Name: "extra", Intent: run.IntentDeploy, Phase: run.Unchanged, Exists: true}, adopt, "none"},
		{"another stack updated", run.Stack{Name: "other", Intent: run.IntentDeploy, Phase: run.Done, Exists: true, ChangeSetType: "UPDATE"}, adopt, "update"},
		{"created", run.Stack{Name: "new", Intent: run.IntentDeploy, Phase: run.Done, ChangeSetType: "CREATE"}, adopt, "create"},
		{"deleted", run.Stack{Name: "extra", Intent: run.IntentDelete, Phase: run.Done}, adopt, "delete"},
	}
	for _, tt := range tests {
		if got := Action(&tt.stack, tt.decisions...); got != tt.want {
			t.Errorf("%s: Action = %q, want %q", tt.name, got, tt.want)
		}
	}
	r := sampleRun()
	r.Stacks["extra"] = &run.Stack{Name: "extra", StackName: "shop-extra", Intent: run.IntentDeploy, Phase: run.Done, Exists: true, ChangeSetType: "UPDATE"}
	var b strings.Builder
	if err := Markdown(&b, Input{Run: r, Decisions: adopt}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| extra | shop-extra | adopt | done |") || !strings.Contains(Summary(Input{Run: r, Decisions: adopt}, ""), "- extra: adopt done") {
		t.Errorf("report or summary does not show extra as adopted:\n%s", b.String())
	}
}

// TestOneActionPerStack: a report names each stack's action once, the same in the stacks
// table, the plan section and the summary, however the run got there (a re-created stack
// is created again once its failed stack is gone).
func TestOneActionPerStack(t *testing.T) {
	r := &run.Run{ID: "r", Deployment: "shop", Status: run.Succeeded, StartedAt: t0, FinishedAt: t0.Add(time.Minute), Stacks: map[string]*run.Stack{
		// After DeletingOld the run deploys the stack afresh: Intent deploy, a CREATE change set.
		"db": {Name: "db", StackName: "shop-db", Intent: run.IntentDeploy, Phase: run.Done, ChangeSetType: "CREATE", Force: true},
		// Checked, and updated because its inputs resolved differently.
		"app": {Name: "app", StackName: "shop-app", Intent: run.IntentDeploy, Phase: run.Done, Exists: true, ChangeSetType: "UPDATE"},
		// Checked, and nothing changed.
		"web": {Name: "web", StackName: "shop-web", Intent: run.IntentDeploy, Phase: run.Unchanged, Exists: true},
	}}
	decisions := []plan.Decision{
		{Stack: "app", StackName: "shop-app", Action: plan.Check, Reason: "template unchanged; updated only if its parameters resolve differently"},
		{Stack: "db", StackName: "shop-db", Action: plan.Recreate, Reason: "ROLLBACK_COMPLETE after a failed create: deleted and created again"},
		{Stack: "legacy", StackName: "shop-legacy", Action: plan.Disabled, Reason: "enabled: false"},
		{Stack: "web", StackName: "shop-web", Action: plan.Check, Reason: "template unchanged"},
	}
	var b strings.Builder
	if err := Markdown(&b, Input{Run: r, Decisions: decisions}); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"| db | shop-db | recreate | done |", "- db (shop-db): recreate — ROLLBACK_COMPLETE",
		"| app | shop-app | update | done |", "- app (shop-app): update — template unchanged; updated only",
		"| web | shop-web | none | unchanged |", "- web (shop-web): none — template unchanged",
		"- legacy (shop-legacy): disabled — enabled: false",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if sum := Summary(Input{Run: r, Decisions: decisions}, ""); !strings.Contains(sum, "- db: recreate done") {
		t.Errorf("summary does not name db's action as the report does:\n%s", sum)
	}
}

// TestStacksElsewhereNamed: the terminal plan and the notification name a stack outside
// cairn's account and region with where it lives, and a stack at home as before.
func TestStacksElsewhereNamed(t *testing.T) {
	var text bytes.Buffer
	if err := PlanText(&text, loadPlan(t)); err != nil {
		t.Fatal(err)
	}
	r := sampleRun()
	r.Stacks["cache"].At = target.Target{Account: "111111111111", Region: "eu-west-1"}
	summary := Summary(Input{Run: r}, "")
	for _, tc := range []struct{ name, out, want string }{
		{"plan text", text.String(), "\nworker    shop-worker (111111111111, eu-west-1)     create               created at apply"},
		{"plan text", text.String(), "! delete stack shop-legacy (cairn's account, us-west-2) (legacy)"},
		{"plan text", text.String(), "\napp       shop-app                                  update"},
		{"summary", summary, "- cache (111111111111, eu-west-1): create failed: stack shop-cache is ROLLBACK_COMPLETE"},
		{"summary", summary, "- network: update done\n"},
	} {
		if !strings.Contains(tc.out, tc.want) {
			t.Errorf("%s lacks %q:\n%s", tc.name, tc.want, tc.out)
		}
	}
}

// TestMarkdownFailedResources: the report lists the resources that failed, stack by
// stack, the first failure first, each with its reason escaped for a table cell; none
// when no resource failed.
func TestMarkdownFailedResources(t *testing.T) {
	ev := func(id, status string, sec int, reason string) run.ResourceEvent {
		return run.ResourceEvent{LogicalID: id, Type: "AWS::SSM::Parameter", Status: status, Reason: reason, Time: t0.Add(time.Duration(sec) * time.Second)}
	}
	for _, tc := range []struct {
		name   string
		events []run.ResourceEvent
		want   []string
	}{
		{"failed resources", []run.ResourceEvent{
			ev("Other", "CREATE_IN_PROGRESS", 1, ""),
			ev("Parameter", "CREATE_FAILED", 2, "limit | <b>reached</b>\n# heading"),
			ev("Other", "CREATE_FAILED", 3, "Resource creation cancelled"),
		}, []string{
			"## Failed resources\n\n| Stack | Resource | Type | Status | Reason |\n|---|---|---|---|---|\n" +
				`| cache | Parameter | AWS::SSM::Parameter | CREATE_FAILED | limit \| &lt;b&gt;reached&lt;/b&gt; # heading |` + "\n" +
				"| cache | Other | AWS::SSM::Parameter | CREATE_FAILED | Resource creation cancelled |\n\n",
		}},
		{"none failed", []run.ResourceEvent{ev("Parameter", "CREATE_COMPLETE", 2, "")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sampleRun()
			r.Stacks["cache"].Events = tc.events
			var b bytes.Buffer
			if err := Markdown(&b, Input{Run: r}); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			if tc.want == nil && strings.Contains(got, "Failed resources") {
				t.Errorf("the report lists failed resources when none failed:\n%s", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("report lacks %q:\n%s", w, got)
				}
			}
		})
	}
}
