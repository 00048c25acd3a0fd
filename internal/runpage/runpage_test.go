package runpage

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
)

var t0 = time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// fixture is a finished run of five stacks: network, then db and queue, then api (db and
// queue), then web (api); api failed, web blocked.
func fixture() *run.Run {
	st := func(name string, phase run.Phase, start, exec, end int, requires ...string) *run.Stack {
		s := &run.Stack{Name: name, StackName: "shop-" + name, Intent: run.IntentDeploy, Phase: phase, Requires: requires, ChangeSetName: "cairn-R1-1", Exists: true}
		if start >= 0 {
			s.StartedAt = at(start)
		}
		if exec >= 0 {
			s.ExecutedAt = at(exec)
		}
		if end >= 0 {
			s.FinishedAt = at(end)
		}
		return s
	}
	r := &run.Run{ID: "R1", Deployment: "shop", Mode: run.ModeDeploy, Status: run.RunFailed, StartedAt: at(0), UpdatedAt: at(100), FinishedAt: at(100),
		Stacks: map[string]*run.Stack{
			"network": st("network", run.Done, 0, 5, 20),
			"db":      st("db", run.Done, 21, 25, 70, "network"),
			"queue":   st("queue", run.Done, 22, 24, 40, "network"),
			"api":     st("api", run.Failed, 71, 75, 100, "db", "queue"),
			"web":     st("web", run.Blocked, -1, -1, -1, "api"),
		}}
	r.Stacks["api"].Reason = "Resource handler returned message: bucket exists"
	r.Stacks["api"].Class = run.Fix
	ev := func(id, typ, status string, sec int, reason string) run.ResourceEvent {
		return run.ResourceEvent{LogicalID: id, Type: typ, PhysicalID: "shop-api-" + strings.ToLower(id), Status: status, Reason: reason, Time: at(sec)}
	}
	r.Stacks["api"].Events = []run.ResourceEvent{
		ev("Queue", "AWS::SQS::Queue", "UPDATE_IN_PROGRESS", 76, ""),
		ev("Bucket", "AWS::S3::Bucket", "UPDATE_IN_PROGRESS", 77, ""),
		ev("Bucket", "AWS::S3::Bucket", "UPDATE_FAILED", 80, "Resource handler returned message: bucket exists"),
		ev("Queue", "AWS::SQS::Queue", "UPDATE_COMPLETE", 81, ""),
		ev("Bucket", "AWS::S3::Bucket", "UPDATE_COMPLETE", 95, ""),
	}
	r.Stacks["db"].Events = []run.ResourceEvent{
		ev("Table", "AWS::DynamoDB::Table", "UPDATE_IN_PROGRESS", 26, ""),
		ev("Table", "AWS::DynamoDB::Table", "UPDATE_COMPLETE", 69, ""),
	}
	return r
}

// hostile is a value a template, a parameter or AWS controls, made to break HTML: a tag,
// a script, quotes leaving an attribute, an entity, a line break and a right-to-left
// override; the token after all that must still be seen, as text.
const hostile = "x\"'><script>alert(1)</script><img src=x onerror=alert(2)>&amp;\n# \u202eTOKEND"

func render(t *testing.T, r *run.Run, statuses map[string]string) string {
	t.Helper()
	b, err := RenderRun(Run{Report: report.Input{Run: r}, Statuses: statuses, Refresh: 5})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRunPageEscapesHostileValues: whatever a stack's name, reason, parameter or output
// holds, the page shows it as text: no tag, attribute or script of it reaches the page.
func TestRunPageEscapesHostileValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(r *run.Run)
	}{
		{"stack name", func(r *run.Run) {
			s := r.Stacks["api"]
			delete(r.Stacks, "api")
			s.Name = hostile
			r.Stacks[hostile] = s
			r.Stacks["web"].Requires = []string{hostile}
		}},
		{"reason", func(r *run.Run) { r.Stacks["api"].Reason = hostile }},
		{"run reason", func(r *run.Run) { r.Reason = hostile }},
		{"parameter", func(r *run.Run) { r.Stacks["db"].Parameters = map[string]string{"Name": hostile} }},
		{"parameter name", func(r *run.Run) { r.Stacks["db"].Parameters = map[string]string{hostile: "v"} }},
		{"output", func(r *run.Run) { r.Stacks["db"].Outputs = map[string]string{"Url": hostile} }},
		{"change set", func(r *run.Run) { r.Stacks["db"].ChangeSetName = hostile }},
		{"run id", func(r *run.Run) { r.ID = hostile }},
		{"resource reason", func(r *run.Run) { r.Stacks["api"].Events[2].Reason = hostile }},
		{"resource", func(r *run.Run) {
			for i := range r.Stacks["api"].Events {
				if r.Stacks["api"].Events[i].LogicalID == "Bucket" {
					r.Stacks["api"].Events[i].LogicalID = hostile
				}
			}
		}},
		{"resource type and physical id", func(r *run.Run) {
			r.Stacks["db"].Events[1].Type, r.Stacks["db"].Events[1].PhysicalID = hostile, hostile
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fixture()
			tc.set(r)
			page := render(t, r, map[string]string{"db": hostile})
			for _, bad := range []string{"<script>alert", "<img", "\u202e", "'><"} {
				if strings.Contains(page, bad) {
					t.Errorf("the page holds %q of a hostile value", bad)
				}
			}
			if !strings.Contains(page, "TOKEND") {
				t.Error("the hostile value's text is not shown")
			}
			if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
				t.Error("the hostile value's tags are not shown as text")
			}
			if n := strings.Count(page, "<script"); n != 0 {
				t.Errorf("the page has %d scripts; it needs none", n)
			}
		})
	}
}

// TestRunPageMasksSecrets: a NoEcho parameter's value, a secret output's, and any value
// holding a sealed reference show as ****.
func TestRunPageMasksSecrets(t *testing.T) {
	sealed := "{{cairn:noecho@" + strings.Repeat("ab", 32) + "}}"
	for _, tc := range []struct {
		name, secret string
		set          func(s *run.Stack, v string)
	}{
		{"NoEcho parameter", "hunter2-param", func(s *run.Stack, v string) {
			s.Parameters, s.NoEcho = map[string]string{"Password": v, "Plain": "shown-value"}, []string{"Password"}
		}},
		{"sealed parameter", sealed, func(s *run.Stack, v string) { s.Parameters = map[string]string{"Token": v, "Plain": "shown-value"} }},
		{"secret output", "hunter2-output", func(s *run.Stack, v string) {
			s.Outputs, s.SecretOutputs = map[string]string{"Key": v, "Plain": "shown-value"}, []string{"Key"}
		}},
		{"sealed output", sealed, func(s *run.Stack, v string) { s.Outputs = map[string]string{"Key": v, "Plain": "shown-value"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fixture()
			tc.set(r.Stacks["db"], tc.secret)
			page := render(t, r, nil)
			if strings.Contains(page, tc.secret) || strings.Contains(page, strings.Repeat("ab", 32)) {
				t.Errorf("the page shows the secret %q", tc.secret)
			}
			if !strings.Contains(page, "<td>****</td>") || !strings.Contains(page, "shown-value") {
				t.Error("the page does not show the secret as **** beside the plain value")
			}
		})
	}
}

var timelineRE = regexp.MustCompile(`<li data-stack="([^"]*)"`)

// timelineOf is the stacks of the page's timeline, in the order shown.
func timelineOf(page string) []string {
	var out []string
	for _, m := range timelineRE.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestTimelineOrder: the timeline shows the stacks that started in the order they
// started (ties by name), and none that did not.
func TestTimelineOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		starts map[string]int
		want   []string
	}{
		{"as run", nil, []string{"network", "db", "queue", "api"}},
		{"ties by name", map[string]int{"db": 22, "queue": 22}, []string{"network", "db", "queue", "api"}},
		{"queue first", map[string]int{"queue": 21, "db": 23}, []string{"network", "queue", "db", "api"}},
		{"none started", map[string]int{"network": -1, "db": -1, "queue": -1, "api": -1}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fixture()
			for n, s := range tc.starts {
				r.Stacks[n].StartedAt = time.Time{}
				if s >= 0 {
					r.Stacks[n].StartedAt = at(s)
				}
			}
			if got := timelineOf(render(t, r, nil)); !slices.Equal(got, tc.want) {
				t.Errorf("timeline %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCriticalPath: the chain that held the run up, from the stack that ended last back
// through the stack each waited for that ended last.
func TestCriticalPath(t *testing.T) {
	sp := func(name string, start, end int, deps ...string) span {
		return span{Name: name, Start: at(start), End: at(end), Deps: deps}
	}
	for _, tc := range []struct {
		name  string
		spans []span
		want  []string
	}{
		{"empty", nil, nil},
		{"one", []span{sp("a", 0, 5)}, []string{"a"}},
		{"diamond, slow left", []span{sp("a", 0, 5), sp("b", 5, 50, "a"), sp("c", 5, 10, "a"), sp("d", 50, 60, "b", "c")}, []string{"a", "b", "d"}},
		{"diamond, slow right", []span{sp("a", 0, 5), sp("b", 5, 10, "a"), sp("c", 5, 50, "a"), sp("d", 50, 60, "b", "c")}, []string{"a", "c", "d"}},
		{"ties by name", []span{sp("a", 0, 5), sp("b", 0, 5), sp("c", 5, 9, "b", "a")}, []string{"a", "c"}},
		{"independent, last ends", []span{sp("a", 0, 50), sp("b", 0, 70)}, []string{"b"}},
		{"dependency not started", []span{sp("b", 0, 7, "a")}, []string{"b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := criticalPath(tc.spans); !slices.Equal(got, tc.want) {
				t.Errorf("critical path %v, want %v", got, tc.want)
			}
		})
	}
	r := fixture()
	r.Stacks["api"].Requires = append(r.Stacks["api"].Requires, "network")
	page := render(t, r, nil)
	if !strings.Contains(page, `<span id="critical-path">network → db → api</span>`) {
		t.Error("the run page does not name its critical path network → db → api")
	}
	// Its arrows are marked: network → db and db → api, not network → api (a dependency
	// of api that is on the path but not the one api waited for) nor queue → api.
	if n := strings.Count(page, `class="crit"/>`); n != 2 {
		t.Errorf("%d arrows marked critical, want 2", n)
	}
}

// TestRunPageShows: every stack with its status, the failure with its reason and the
// next command, and a refresh only while the run runs.
func TestRunPageShows(t *testing.T) {
	page := render(t, fixture(), map[string]string{"api": "UPDATE_ROLLBACK_COMPLETE"})
	for _, want := range []string{
		`data-stack="web" open`, // not open: blocked, not failed
	} {
		if strings.Contains(page, want) {
			t.Errorf("the page holds %q", want)
		}
	}
	for _, n := range []string{"network", "db", "queue", "api", "web"} {
		if !regexp.MustCompile(`<details id="stack-\d" class="stack" data-stack="` + n + `"( open)?>\s*<summary><span class="name">` + n + `</span> <span class="badge \w+ phase">\w+</span>`).MatchString(page) {
			t.Errorf("stack %s is not shown with its status", n)
		}
	}
	for _, want := range []string{
		`<span class="reason">Resource handler returned message: bucket exists</span>`,
		`<p id="next-step">Next: `, "<code>cairn push PATH --deployment shop</code>",
		`aria-labelledby="graph-title graph-desc"`, "Dependency graph of 5 stacks (1 blocked, 3 done, 1 failed)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, `http-equiv="refresh"`) {
		t.Error("a finished run's page refreshes")
	}
	r := fixture()
	r.Status, r.FinishedAt = run.Running, time.Time{}
	if page := render(t, r, nil); !strings.Contains(page, `<meta http-equiv="refresh" content="5">`) || strings.Contains(page, "next-step") {
		t.Error("a running run's page does not refresh, or names a next step")
	}
}

var (
	resourceRowRE = regexp.MustCompile(`<tr( class="danger")?><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td><td>[^<]*</td><td>(?:<mark class="reason">)?([^<]*)`)
	eventRowRE    = regexp.MustCompile(`<tr( class="danger")?><td>(\d\d:\d\d:\d\d)</td><td>([^<]*)</td><td>([^<]*)</td><td>(?:<mark class="reason">)?([^<]*)`)
)

// section is stack name's section of a page.
func section(page, name string) string {
	i := strings.Index(page, `class="stack" data-stack="`+name+`"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(page[i:], "</details>\n<details id=")
	if j < 0 {
		j = strings.Index(page[i:], "</section>")
	}
	return page[i : i+j]
}

// TestRunPageShowsResources: a stack's section lists its resources, the failed first
// (its failure's reason marked), with their latest status, then their events in time
// order (a failure's row marked), open when one failed; a stack whose run kept no events
// shows no such tables; the events the run left out are counted.
func TestRunPageShowsResources(t *testing.T) {
	r := fixture()
	r.Stacks["db"].EventsDropped = 7
	page := render(t, r, nil)
	rows := func(re *regexp.Regexp, sec string) []string {
		var out []string
		for _, m := range re.FindAllStringSubmatch(sec, -1) {
			cells := slices.DeleteFunc(m[2:], func(c string) bool { return c == "" })
			row := strings.Join(cells, " | ")
			if m[1] != "" {
				row = "! " + row
			}
			out = append(out, row)
		}
		return out
	}
	for _, tc := range []struct {
		stack             string
		resources         []string
		events            []string
		open, noneDropped bool
	}{
		{"api",
			[]string{
				"! Bucket | AWS::S3::Bucket | UPDATE_FAILED, then UPDATE_COMPLETE | Resource handler returned message: bucket exists",
				"Queue | AWS::SQS::Queue | UPDATE_COMPLETE",
			},
			[]string{
				"06:01:16 | Queue | UPDATE_IN_PROGRESS", "06:01:17 | Bucket | UPDATE_IN_PROGRESS",
				"! 06:01:20 | Bucket | UPDATE_FAILED | Resource handler returned message: bucket exists",
				"06:01:21 | Queue | UPDATE_COMPLETE", "06:01:35 | Bucket | UPDATE_COMPLETE",
			}, true, true},
		{"db", []string{"Table | AWS::DynamoDB::Table | UPDATE_COMPLETE"}, []string{"06:00:26 | Table | UPDATE_IN_PROGRESS", "06:01:09 | Table | UPDATE_COMPLETE"}, false, false},
		{"queue", nil, nil, false, true},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			sec := section(page, tc.stack)
			if sec == "" {
				t.Fatalf("no section of %s", tc.stack)
			}
			res, evs := sec, ""
			if i := strings.Index(sec, `<details class="events"`); i >= 0 {
				res, evs = sec[:i], sec[i:]
			}
			if got := rows(resourceRowRE, res); !slices.Equal(got, tc.resources) {
				t.Errorf("resources\n got %q\nwant %q", got, tc.resources)
			}
			if got := rows(eventRowRE, evs); !slices.Equal(got, tc.events) {
				t.Errorf("events\n got %q\nwant %q", got, tc.events)
			}
			if open := strings.Contains(sec, `<details class="events" open>`); open != tc.open {
				t.Errorf("events open: %v, want %v", open, tc.open)
			}
			if dropped := strings.Contains(sec, "7 more not kept"); dropped == tc.noneDropped {
				t.Errorf("the section says 7 events were not kept: %v", dropped)
			}
		})
	}
}

// TestRenderRunWithoutRun: an input without a run is an error that says what to pass.
func TestRenderRunWithoutRun(t *testing.T) {
	if _, err := RenderRun(Run{}); err == nil || !strings.Contains(err.Error(), "pass the run document") {
		t.Errorf("err = %v", err)
	}
}

// TestPlanPageOrder: deletions and replacements come first, in the list of what cannot
// be undone and in the change sets, whose dangerous changes lead; secrets are ****.
func TestPlanPageOrder(t *testing.T) {
	p := &plan.Document{ID: "P1", Deployment: "shop", Status: plan.Planned, CreatedAt: t0,
		Stacks: []plan.Stack{
			{Name: "api", StackName: "shop-api", Action: plan.Update, ChangeSetName: "cs1", Changes: []plan.Change{
				{LogicalID: "Fn", Type: "AWS::Lambda::Function", Action: "Modify", Replacement: "False"},
				{LogicalID: "Table", Type: "AWS::DynamoDB::Table", Action: "Modify", Replacement: "True"},
			}, ParameterChanges: []plan.ParameterChange{{Name: "Secret", Old: "****", New: "****", Secret: true}, {Name: "Size", Old: "1", New: hostile}}},
			{Name: "db", StackName: "shop-db", Action: plan.None},
			{Name: "old", StackName: "shop-old", Action: plan.Delete},
			{Name: "web", StackName: "shop-web", Action: plan.Create, Changes: []plan.Change{{LogicalID: "Site", Type: "AWS::S3::Bucket", Action: "Add"}}},
		}}
	b, err := RenderPlan(Plan{Plan: p})
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	var order []string
	for _, m := range regexp.MustCompile(`<details id="[^"]+" class="stack" data-stack="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		order = append(order, m[1])
	}
	if want := []string{"old", "api", "web"}; !slices.Equal(order, want) {
		t.Errorf("change sets in order %v, want %v", order, want)
	}
	if i, j := strings.Index(page, "<td>Table</td>"), strings.Index(page, "<td>Fn</td>"); i < 0 || j < i {
		t.Error("the replacement does not lead its change set")
	}
	for _, want := range []string{"<strong>delete stack</strong> shop-old", "<strong>replace</strong> Table (AWS::DynamoDB::Table)", "Unchanged: db.", "<code>cairn approve shop P1</code>", "<td>Secret</td><td>****</td><td>****</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the plan page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "<img") {
		t.Error("a hostile parameter value reached the plan page as HTML")
	}
}

// TestRenderIndex lists deployments with their runs and plans, linked.
func TestRenderIndex(t *testing.T) {
	b, err := RenderIndex(Index{Title: "cairn local", Deployments: []Deployment{{Name: "shop",
		Runs:  []Entry{{ID: "R1", Status: "failed", Href: "/runs/shop/R1.html", When: t0}},
		Plans: []Entry{{ID: "P1", Status: "planned", Href: "/plans/shop/P1.html"}, {ID: "bad", Href: "javascript:alert(1)"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{`<a href="/runs/shop/R1.html">R1</a>`, `<a href="/plans/shop/P1.html">P1</a>`, "<h2>shop</h2>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the index lacks %q", want)
		}
	}
	if strings.Contains(page, "javascript:") {
		t.Error("the index links a javascript: address")
	}
}

// TestLayoutDepth: a stack stands one column right of the deepest stack it waits for; a
// cycle (never in a validated run) is cut, not followed forever.
func TestLayoutDepth(t *testing.T) {
	g := layout([]node{{Name: "c", Deps: []string{"a", "b"}}, {Name: "b", Deps: []string{"a"}}, {Name: "a"}, {Name: "loop", Deps: []string{"loop"}}})
	x := map[string]int{}
	for _, n := range g.Nodes {
		x[n.Name] = n.X
	}
	if _, drawn := x["loop"]; !(x["a"] < x["b"] && x["b"] < x["c"]) || !drawn {
		t.Errorf("columns %v", x)
	}
	if len(g.Edges) != 4 {
		t.Errorf("%d edges, want 4 (a→b, a→c, b→c, and the loop's own)", len(g.Edges))
	}
}
