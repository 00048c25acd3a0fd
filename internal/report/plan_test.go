package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/plan"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func loadPlan(t *testing.T) *plan.Document {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlanMarkdownGolden renders a representative plan (an update with a replacement, a
// deletion, a new stack and one created at apply, an input that may change) as the
// pull-request comment reviewers see. Run with -update to accept a deliberate change.
func TestPlanMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	if err := PlanMarkdown(&b, loadPlan(t)); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "plan.md")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("Markdown differs from %s (go test -update accepts it):\n%s", golden, got)
	}
}

func TestPlanViewsPutDangerFirst(t *testing.T) {
	p := loadPlan(t)
	render := map[string]func(*bytes.Buffer) error{
		"markdown": func(b *bytes.Buffer) error { return PlanMarkdown(b, p) },
		"text":     func(b *bytes.Buffer) error { return PlanText(b, p) },
	}
	for name, r := range render {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := r(&b); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			del := strings.Index(out, "delete stack shop-legacy")
			if del < 0 {
				del = strings.Index(out, "delete stack** shop-legacy")
			}
			repl := strings.Index(out, "Vpc (AWS::EC2::VPC) in shop-network")
			first := strings.Index(out, "shop-app")
			if del < 0 || repl < 0 || first < 0 || del > first || repl > first {
				t.Errorf("deletion at %d, replacement at %d, first stack at %d; want both before any stack:\n%s", del, repl, first, out)
			}
			for _, want := range []string{"known after apply", "created at apply", "cairn approve shop 20261130-115800-1a2b3c4d", "nginx:1.27", "nginx:1.28"} {
				if !strings.Contains(out, want) {
					t.Errorf("missing %q:\n%s", want, out)
				}
			}
		})
	}
	var b bytes.Buffer
	if err := PlanJSON(&b, p); err != nil {
		t.Fatal(err)
	}
	back, err := plan.Decode(b.Bytes())
	if err != nil || back.Stack("network").Changes[0].Replacement != "True" || back.Stack("worker").CreatedAtApply != true {
		t.Errorf("JSON round trip: %v %+v", err, back)
	}
}

// TestPlanTextIsShortForATerminal: the text view shortens the bundle's version id and
// sha256 (the JSON keeps them whole) and ends no line in spaces.
func TestPlanTextIsShortForATerminal(t *testing.T) {
	p := loadPlan(t)
	p.Bundle.VersionID = "3/60O30C1G60O30C1G60O30C1G60O30C1G60O30C9H00MU4SS8K6T5AFO="
	p.Bundle.SHA256 = "4d7905d78601fb82f45d0786e86faab6587feac0e72c32aabeecef231dbe3f55"
	var b bytes.Buffer
	if err := PlanText(&b, p); err != nil {
		t.Fatal(err)
	}
	if want := "bundle: s3://cairn-state/plans/shop.zip version …K6T5AFO=, sha256 4d7905d78601"; !strings.Contains(b.String(), want) {
		t.Errorf("text plan lacks %q:\n%s", want, b.String())
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasSuffix(line, " ") {
			t.Errorf("line ends in spaces: %q", line)
		}
	}
	b.Reset()
	if err := PlanJSON(&b, p); err != nil || !strings.Contains(b.String(), p.Bundle.VersionID) || !strings.Contains(b.String(), p.Bundle.SHA256) {
		t.Errorf("JSON does not keep the whole ids: %v", err)
	}
}

// TestPlanViewsShowCapabilities: a reviewer sees what each changing stack acknowledges,
// and whether cairn granted it from the template.
func TestPlanViewsShowCapabilities(t *testing.T) {
	p := loadPlan(t)
	p.Decisions = []plan.Decision{
		{Stack: "app", StackName: "shop-app", Action: plan.Update, Capabilities: []string{"CAPABILITY_IAM"}, FromTemplate: true},
		{Stack: "queue", StackName: "shop-queue", Action: plan.Create, Capabilities: []string{"CAPABILITY_NAMED_IAM"}}}
	var md, text bytes.Buffer
	if err := PlanMarkdown(&md, p); err != nil {
		t.Fatal(err)
	}
	if err := PlanText(&text, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Capabilities: CAPABILITY_IAM (granted: the template needs it).\n", "Capabilities: CAPABILITY_NAMED_IAM.\n",
		"## Capabilities granted\n\n- app (shop-app): CAPABILITY_IAM (granted: the template needs it)\n- queue (shop-queue): CAPABILITY_NAMED_IAM\n\n"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	for _, want := range []string{"capabilities: CAPABILITY_IAM (granted: the template needs it)\n", "capabilities: CAPABILITY_NAMED_IAM\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

// TestPlanWithoutChanges: a plan that changes nothing says so in the comment, the terminal
// view and the comment CI posts, and suggests no approval.
func TestPlanWithoutChanges(t *testing.T) {
	p := loadPlan(t)
	for i := range p.Stacks {
		p.Stacks[i].Action, p.Stacks[i].Changes, p.Stacks[i].ChangeSetID = plan.None, nil, ""
	}
	p.Decisions, p.Errors, p.Refusals = nil, nil, nil
	for _, tc := range []struct {
		name, want string
		render     func(*bytes.Buffer) error
	}{
		{"markdown", "No changes: every stack is up to date, and there is nothing to approve.\n", func(b *bytes.Buffer) error { return PlanMarkdown(b, p) }},
		{"comment", "No changes: every stack is up to date, and there is nothing to approve.\n", func(b *bytes.Buffer) error { return PlanComment(b, p, 0) }},
		{"text", "no changes: every stack is up to date; nothing to approve\n", func(b *bytes.Buffer) error { return PlanText(b, p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.render(&b); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); !strings.Contains(got, tc.want) || strings.Contains(got, "approve "+p.Deployment) || strings.Contains(got, "Next:") {
				t.Errorf("a plan without changes, want %q and no approval hint:\n%s", tc.want, got)
			}
		})
	}
}

// TestNextStepOfAStalePlanSaysUpdateTheBranch: a stale, expired or failed plan's comment
// says to update the pull request's branch, never to re-run its plan job: GitHub re-runs a
// job on the commit it first ran on, and a re-run after another merge planned a revert of it.
func TestNextStepOfAStalePlanSaysUpdateTheBranch(t *testing.T) {
	for _, status := range []plan.Status{"stale", plan.Expired, plan.PlanFailed} {
		got := nextStep(&plan.Document{Deployment: "shop", Status: status})
		if !strings.Contains(got, "update the pull request's branch") || strings.Contains(got, "re-run the") {
			t.Errorf("%s: %q", status, got)
		}
	}
}
