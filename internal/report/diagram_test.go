package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
)

// chain builds a plan of stacks given as "name:action:requires,requires".
func chain(specs ...string) *plan.Document {
	p := &plan.Document{ID: "20261130-115800-1a2b3c4d", Deployment: "shop", Namespace: "shop", GraphKey: "shop", Status: plan.Planned,
		Bundle: plan.BundleVersion{Bucket: "cairn-state", Key: "plans/shop.zip"}, Run: &run.Run{Stacks: map[string]*run.Stack{}}}
	for _, spec := range specs {
		f := strings.Split(spec, ":")
		s := plan.Stack{Name: f[0], StackName: "shop-" + f[0], Action: plan.Action(f[1])}
		rs := &run.Stack{Name: f[0], Intent: run.IntentDeploy}
		if s.Action == plan.Delete {
			rs.Intent = run.IntentDelete
		}
		if len(f) > 2 && f[2] != "" {
			rs.Requires = strings.Split(f[2], ",")
		}
		p.Stacks = append(p.Stacks, s)
		p.Run.Stacks[f[0]] = rs
	}
	return p
}

func names(stacks []plan.Stack) string {
	var n []string
	for _, s := range stacks {
		n = append(n, s.Name)
	}
	return strings.Join(n, " ")
}

func TestOrder(t *testing.T) {
	tests := []struct {
		name string
		plan *plan.Document
		want string
	}{
		{"dependencies first, ties by name", chain("app:update:db,net", "db:update:net", "net:update", "zoo:create"), "net db app zoo"},
		{"deletions after deploys, dependents first", chain("old-db:delete", "old-app:delete", "web:update", "z:create:web"), "web z old-app old-db"},
		{"deleted stacks wait for their dependents", chain("base:delete:mid", "mid:delete:top", "top:delete"), "top mid base"},
		{"a requirement outside the plan is ignored", chain("app:update:gone"), "app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "deletions after deploys, dependents first" {
				tt.plan.Run.Stacks["old-db"].Requires = []string{"old-app"}
			}
			if got := names(Order(tt.plan)); got != tt.want {
				t.Errorf("Order = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestPlanDiagram: the diagram draws the stacks the plan touches and what they depend
// on, each node classed by its action, every arrow from a stack to a dependent.
func TestPlanDiagram(t *testing.T) {
	p := chain("net:update", "db:update:net", "app:none:db", "web:create:app", "old:delete", "older:delete:old", "idle:none")
	p.Stack("db").Changes = []plan.Change{{LogicalID: "Db", Type: "AWS::RDS::DBInstance", Action: "Modify", Replacement: "True"}}
	got := PlanDiagram(p)
	for _, want := range []string{
		"## Stacks touched and their dependencies\n\n```mermaid\nflowchart LR\n",
		`  s0["<b>net</b><br/>update"]:::update` + "\n",
		`  s1["<b>db</b><br/>update, 1 replacement"]:::replace` + "\n",
		`  s2["<b>app</b><br/>unchanged"]:::unchanged` + "\n",
		`  s3["<b>web</b><br/>create"]:::create` + "\n",
		`  s4["<b>old</b><br/>delete"]:::delete` + "\n",
		`  s5["<b>older</b><br/>delete"]:::delete` + "\n",
		"  s0 --> s1\n", "  s1 --> s2\n", "  s2 --> s3\n", "  s5 --> s4\n",
		"  classDef delete ",
		"```\n\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diagram lacks %q:\n%s", want, got)
		}
	}
	// app is unchanged but web depends on it; idle is untouched and nothing touched needs it.
	if strings.Contains(got, "idle") || strings.Count(got, " --> ") != 4 {
		t.Errorf("diagram draws too much:\n%s", got)
	}
	if got := PlanDiagram(chain("a:none", "b:none:a")); got != "" {
		t.Errorf("a plan touching nothing has a diagram:\n%s", got)
	}
	// A stack's dependency deleted by a deletion's dependents: the arrow still goes from
	// what is depended on to what depends on it.
	d := chain("base:delete:top", "top:delete")
	if got := PlanDiagram(d); !strings.Contains(got, "  s1 --> s0\n") || !strings.Contains(got, `s0["<b>top</b>`) {
		t.Errorf("deletion diagram:\n%s", got)
	}
	var many []string
	for i := range maxDiagramStacks + 1 {
		many = append(many, fmt.Sprintf("s%03d:create", i))
	}
	if got := PlanDiagram(chain(many...)); strings.Contains(got, "```mermaid") || !strings.Contains(got, "151 stacks: too many to draw") {
		t.Errorf("a huge plan's diagram:\n%.300s", got)
	}
}

// bigPlan is a plan of n stacks, each updating 40 resources with details: its Markdown is
// far longer than a comment can be.
func bigPlan(n int) *plan.Document {
	var specs []string
	for i := range n {
		req := ""
		if i > 0 {
			req = fmt.Sprintf("stack-%03d", i-1)
		}
		specs = append(specs, fmt.Sprintf("stack-%03d:update:%s", i, req))
	}
	p := chain(specs...)
	for i := range p.Stacks {
		s := &p.Stacks[i]
		s.ChangeSetName = fmt.Sprintf("cairn-20261130-115800-1a2b3c4d-%d", i+1)
		for j := range 40 {
			s.Changes = append(s.Changes, plan.Change{LogicalID: fmt.Sprintf("Parameter%02d", j), Type: "AWS::SSM::Parameter", Action: "Modify", Replacement: "False",
				Details: []string{"Properties Value (recreation: Never, Static, from DirectModification)"}})
		}
	}
	p.Stacks[3].Changes[0].Replacement = "True"
	return p
}

// TestPlanCommentFitsGitHub: a comment stays under GitHub's 65,536 characters, keeps
// the marker, the dangers, the diagram and the stack table, and points to the whole plan
// in S3; a plan that fits is the whole plan.
func TestPlanCommentFitsGitHub(t *testing.T) {
	uri := "s3://cairn-state/plans/shop/20261130-115800-1a2b3c4d.md"
	tests := []struct {
		name     string
		plan     *plan.Document
		cut      bool
		contains []string
	}{
		{"a plan that fits", loadPlan(t), false, nil},
		{"120 stacks of 40 changes", bigPlan(120), true, []string{"**replace** Parameter00 (AWS::SSM::Parameter) in shop-stack-003", "```mermaid", "| stack-119 | shop-stack-119 | update | 40 | 0 |  |",
			"### stack-000 (shop-stack-000): update", "stacks are left out. The whole plan is at `" + uri + "` (`cairn plans shop 20261130-115800-1a2b3c4d --format md`)"}},
		{"3,000 stacks: even the summary is cut", bigPlan(3000), true, []string{"**replace** Parameter00", "the rest of the summary and the sections of all 3000 stacks are left out. The whole plan is at `" + uri + "`"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var whole, comment bytes.Buffer
			if err := PlanMarkdown(&whole, tt.plan); err != nil {
				t.Fatal(err)
			}
			if err := PlanComment(&comment, tt.plan, 0); err != nil {
				t.Fatal(err)
			}
			c := comment.String()
			t.Logf("whole plan %d characters, comment %d", whole.Len(), comment.Len())
			if !tt.cut {
				if c != whole.String() {
					t.Error("a plan that fits is not commented whole")
				}
				return
			}
			if whole.Len() <= CommentLimit || len([]rune(c)) > CommentLimit || len(c) > CommentLimit {
				t.Errorf("whole %d, comment %d characters: want a plan over the limit cut under it", whole.Len(), len(c))
			}
			if !strings.HasPrefix(c, CommentMarker("shop")+"\n") || strings.Count(c, "```")%2 != 0 {
				t.Errorf("comment lacks the marker or leaves a code block open:\n%.500s", c)
			}
			for _, want := range tt.contains {
				if !strings.Contains(c, want) {
					t.Errorf("comment lacks %q", want)
				}
			}
			if m := regexp.MustCompile(`\((\d+) characters; GitHub takes 65536\)`).FindStringSubmatch(c); m == nil || m[1] != fmt.Sprint(whole.Len()) {
				t.Errorf("comment does not say how long the whole plan is (%d): %v", whole.Len(), m)
			}
		})
	}
}

// TestRunTimeline: the run report's gantt chart shows, per stack in the order they
// started, the making of its change set, its execution (or deletion) and its end.
func TestRunTimeline(t *testing.T) {
	r := sampleRun()
	r.Stacks["network"].ExecutedAt = t0.Add(10 * time.Second)
	r.Stacks["cache"].StartedAt = t0.Add(90 * time.Second)
	r.Stacks["old"].StartedAt = t0.Add(150 * time.Second)
	r.Stacks["old"].FinishedAt = t0.Add(170 * time.Second)
	got := RunTimeline(r)
	want := "## Timeline\n\n```mermaid\ngantt\n" +
		"    title run 20261130-080000-abcd of deployment shop (UTC)\n" +
		"    dateFormat YYYY-MM-DD HH:mm:ss\n    axisFormat %H:%M:%S\n" +
		"    section network\n" +
		"    change set :done, t0c, 2026-11-30 08:00:00, 2026-11-30 08:00:10\n" +
		"    execute :done, t0x, 2026-11-30 08:00:10, 2026-11-30 08:01:30\n" +
		"    done :milestone, t0e, 2026-11-30 08:01:30, 0s\n" +
		"    section cache\n" +
		"    change set :crit, t1c, 2026-11-30 08:01:30, 2026-11-30 08:02:00\n" +
		"    failed :milestone, t1e, 2026-11-30 08:02:00, 0s\n" +
		"    section old\n" +
		"    delete :crit, t2d, 2026-11-30 08:02:30, 2026-11-30 08:02:50\n" +
		"    blocked :milestone, t2e, 2026-11-30 08:02:50, 0s\n" +
		"```\n\n"
	if got != want {
		t.Errorf("timeline:\n%s\nwant:\n%s", got, want)
	}
	var b strings.Builder
	if err := Markdown(&b, Input{Run: r}); err != nil || !strings.Contains(b.String(), want) {
		t.Errorf("the run report lacks its timeline: %v\n%s", err, b.String())
	}
	idle := &run.Run{ID: "r", Deployment: "shop", Stacks: map[string]*run.Stack{"a": {Name: "a", Phase: run.Unchanged}}}
	if got := RunTimeline(idle); got != "" {
		t.Errorf("a run in which nothing started has a timeline:\n%s", got)
	}
}

// TestRenderedSamples keeps rendered samples reviewers can open in testdata/: the whole
// plan and its comment, a plan too long for a comment, and a run report with its
// timeline. Run with -update to accept a deliberate change.
func TestRenderedSamples(t *testing.T) {
	r := sampleRun()
	r.Stacks["network"].ExecutedAt = t0.Add(10 * time.Second)
	r.Stacks["cache"].StartedAt = t0.Add(90 * time.Second)
	// Stacks outside cairn's account and region are named with where they live.
	r.Stacks["cache"].At = target.Target{Account: "111111111111", Region: "eu-west-1"}
	r.Stacks["old"].At = target.Target{Region: "us-west-2"}
	long := bigPlan(120)
	long.Run.Stacks["stack-003"].At = target.Target{Account: "111111111111", Region: "eu-west-1"}
	long.Run.Stacks["stack-001"].At = target.Target{Region: "us-west-2"}
	samples := map[string]func(*bytes.Buffer) error{
		"plan-comment-long.md": func(b *bytes.Buffer) error { return PlanComment(b, long, 0) },
		"run.md": func(b *bytes.Buffer) error {
			return Markdown(b, Input{Run: r, Bundle: "s3://cairn-state/deployments/shop.zip version 3",
				Decisions: []plan.Decision{{Stack: "cache", StackName: "shop-cache", Action: plan.Create, Capabilities: []string{"CAPABILITY_IAM"}, FromTemplate: true}}})
		},
	}
	for name, render := range samples {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := render(&b); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name)
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if b.String() != string(want) {
				t.Errorf("%s differs (go test -update accepts it)", golden)
			}
		})
	}
}
