package drift

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

var swept = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// twoGraphs is a sweep of graph shop (app detecting, cache and web pending) and graph
// bank (vpc pending).
func twoGraphs() *Sweep {
	return &Sweep{ID: "S1", StartedAt: swept, Graphs: []*Graph{
		{Name: "shop", Namespace: "shop", Key: "shop", Ignore: []string{"Dlq"}, Stacks: []*Stack{
			{Name: "app", StackName: "shop-app", Status: Detecting, DetectionID: "det-app"},
			{Name: "cache", StackName: "shop-cache", Status: Pending},
			{Name: "web", StackName: "shop-web", Status: Pending},
		}},
		{Name: "bank", Namespace: "bank", Key: "bank", Stacks: []*Stack{{Name: "vpc", StackName: "bank-vpc", Status: Pending}}},
	}}
}

func statuses(sw *Sweep) string {
	var out []string
	for _, g := range sw.Graphs {
		for _, s := range g.Stacks {
			out = append(out, g.Name+"/"+s.Name+"="+string(s.Status))
		}
	}
	return strings.Join(out, " ")
}

func TestObserveAppliesDetections(t *testing.T) {
	drifted := []Resource{{LogicalID: "Queue", Type: "AWS::SQS::Queue", Status: "MODIFIED"}, {LogicalID: "Dlq", Type: "AWS::SQS::Queue", Status: "MODIFIED"}}
	for _, tc := range []struct {
		name   string
		seen   Detection
		now    time.Time
		want   string
		reason string
	}{
		{"in progress", Detection{Status: "DETECTION_IN_PROGRESS"}, swept, "shop/app=DETECTING", ""},
		{"in sync", Detection{Status: "DETECTION_COMPLETE", DriftStatus: "IN_SYNC"}, swept, "shop/app=IN_SYNC", ""},
		{"drifted, one resource ignored", Detection{Status: "DETECTION_COMPLETE", DriftStatus: "DRIFTED", Resources: drifted}, swept, "shop/app=DRIFTED", ""},
		{"drifted only where ignored", Detection{Status: "DETECTION_COMPLETE", DriftStatus: "DRIFTED", Resources: drifted[1:]}, swept, "shop/app=IN_SYNC", ""},
		{"status throttled", Detection{StatusErr: "Throttling: Rate exceeded", Throttled: true}, swept, "shop/app=DETECTING", ""},
		{"status unreadable", Detection{StatusErr: "ValidationError: no such detection"}, swept, "shop/app=UNKNOWN", "detection det-app: status unreadable: ValidationError: no such detection"},
		{"resources throttled", Detection{Status: "DETECTION_COMPLETE", DriftStatus: "DRIFTED", ResourcesErr: "Throttling: x", Throttled: true}, swept, "shop/app=DETECTING", ""},
		{"resources unreadable", Detection{Status: "DETECTION_COMPLETE", DriftStatus: "DRIFTED", ResourcesErr: "AccessDenied: no"}, swept, "shop/app=UNKNOWN", "drifted, but its resource drifts are unreadable: AccessDenied: no"},
		{"failed", Detection{Status: "DETECTION_FAILED", Reason: "access denied"}, swept, "shop/app=UNKNOWN", "detection failed: access denied"},
		{"failed for some resources", Detection{Status: "DETECTION_FAILED", DriftStatus: "DRIFTED", Reason: "[Fn]", Resources: drifted}, swept, "shop/app=DRIFTED", "detection failed for some resources: [Fn]"},
		{"odd drift status", Detection{Status: "DETECTION_COMPLETE", DriftStatus: "NOT_CHECKED"}, swept, "shop/app=UNKNOWN", `detection finished with stack drift status "NOT_CHECKED"`},
		{"past the sweep's age", Detection{Status: "DETECTION_IN_PROGRESS"}, swept.Add(7 * time.Hour), "shop/app=UNKNOWN", "detection did not finish within 6h0m0s of the sweep's start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sw := twoGraphs()
			before, _ := json.Marshal(sw)
			got := Observe(sw, []Detection{tc.seen}, tc.now, DefaultMaxAge)
			if after, _ := json.Marshal(sw); string(after) != string(before) {
				t.Fatal("Observe changed its input")
			}
			app := got.Graphs[0].Stacks[0]
			if !strings.HasPrefix(statuses(got), tc.want) || app.Reason != tc.reason {
				t.Errorf("%s (%q), want %s (%q)", statuses(got), app.Reason, tc.want, tc.reason)
			}
			if tc.now.After(swept) && got.Graphs[1].Stacks[0].Status != Unknown {
				t.Error("a pending stack outlived the sweep's age")
			}
		})
	}
}

func TestScheduleSkipsLockedGraphsWithinTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  int
		locked map[int]string
		locks  []int
		start  []Ref
		want   string
	}{
		{"one slot left", 2, nil, []int{0}, []Ref{{0, 1}}, "shop/app=DETECTING shop/cache=PENDING shop/web=PENDING bank/vpc=PENDING"},
		{"every slot", 5, nil, []int{0, 1}, []Ref{{0, 1}, {0, 2}, {1, 0}}, "shop/app=DETECTING shop/cache=PENDING shop/web=PENDING bank/vpc=PENDING"},
		{"shop locked", 5, map[int]string{0: "deploy in progress"}, []int{0, 1}, []Ref{{1, 0}}, "shop/app=DETECTING shop/cache=NOT_CHECKED shop/web=NOT_CHECKED bank/vpc=PENDING"},
		{"full", 1, map[int]string{1: "deploy in progress"}, nil, nil, "shop/app=DETECTING shop/cache=PENDING shop/web=PENDING bank/vpc=NOT_CHECKED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sw := twoGraphs()
			if got := sw.Locks(tc.limit); !slices.Equal(got, tc.locks) {
				t.Errorf("locks read of graphs %v, want %v", got, tc.locks)
			}
			next, start := Schedule(sw, tc.limit, tc.locked)
			if !slices.Equal(start, tc.start) || statuses(next) != tc.want {
				t.Errorf("start %v, %s; want %v, %s", start, statuses(next), tc.start, tc.want)
			}
			if statuses(sw) != "shop/app=DETECTING shop/cache=PENDING shop/web=PENDING bank/vpc=PENDING" {
				t.Error("Schedule changed its input")
			}
		})
	}
}

func TestStartAppliesTheAnswers(t *testing.T) {
	at := swept.Add(time.Minute)
	got := Start(twoGraphs(), []Started{
		{Ref: Ref{0, 1}, DetectionID: "det-cache"},
		{Ref: Ref{0, 2}, Throttled: true},
		{Ref: Ref{1, 0}, Missing: true},
		{Ref: Ref{0, 0}, DetectionID: "det-other"}, // not pending: a late answer changes nothing
		{Ref: Ref{7, 0}, DetectionID: "nowhere"},
	}, at)
	if want := "shop/app=DETECTING shop/cache=DETECTING shop/web=PENDING bank/vpc=NOT_CHECKED"; statuses(got) != want {
		t.Fatalf("%s, want %s", statuses(got), want)
	}
	if c := got.Graphs[0].Stacks[1]; c.DetectionID != "det-cache" || !c.StartedAt.Equal(at) {
		t.Errorf("cache %+v", c)
	}
	if a := got.Graphs[0].Stacks[0]; a.DetectionID != "det-app" {
		t.Errorf("app's detection replaced: %+v", a)
	}
	if v := got.Graphs[1].Stacks[0]; v.Reason != "stack does not exist in AWS" {
		t.Errorf("vpc %+v", v)
	}
	refused := Start(twoGraphs(), []Started{{Ref: Ref{1, 0}, Err: "ValidationError: not supported in ROLLBACK_COMPLETE"}}, at)
	if v := refused.Graphs[1].Stacks[0]; v.Status != Unknown || v.Reason != "detection could not start: ValidationError: not supported in ROLLBACK_COMPLETE" {
		t.Errorf("refused %+v", v)
	}
	if got := refused.Unreported(); !slices.Equal(got, []int{1}) {
		t.Errorf("unreported graphs %v, want [1]: bank settled", got)
	}
	if got := twoGraphs().Watch(); !slices.Equal(got, []Ref{{0, 0}}) {
		t.Errorf("watched %v", got)
	}
}

func TestNewGraph(t *testing.T) {
	pg := &state.Graph{Namespace: "shop", Key: "shop", Bundle: state.BundleRef{VersionID: "v1", GitRef: "abc"}, Stacks: map[string]*state.Stack{
		"app":    {Name: "app", StackName: "shop-app"},
		"cache":  {Name: "cache", StackName: "shop-cache"},
		"gone":   {Name: "gone", StackName: "shop-gone"},
		"legacy": {Name: "legacy", StackName: "shop-legacy"},
	}}
	tags := map[string]string{state.TagNamespace: "shop", state.TagGraphKey: "shop"}
	live := map[string]plan.Live{
		"shop-app":    {StackID: "id-app", Status: "UPDATE_COMPLETE"},
		"shop-cache":  {StackID: "id-cache", Status: "UPDATE_IN_PROGRESS"},
		"shop-legacy": {StackID: "id-legacy", Status: "CREATE_COMPLETE"},
		"shop-extra":  {StackID: "id-extra", Status: "CREATE_COMPLETE", Tags: tags},
		"bank-vpc":    {StackID: "id-vpc", Status: "CREATE_COMPLETE", Tags: map[string]string{state.TagNamespace: "bank", state.TagGraphKey: "shop"}},
	}
	cfg := &config.Config{Drift: config.Drift{Enabled: true, Ignore: []string{"legacy"}}}
	g := NewGraph(pg, "shop", cfg, "", Places{Live: live})
	want := map[string]string{"app": "PENDING", "cache": "NOT_CHECKED stack operation in progress (UPDATE_IN_PROGRESS)",
		"gone": "NOT_CHECKED stack does not exist in AWS", "legacy": `NOT_CHECKED ignored by drift.ignore pattern "legacy"`}
	for _, s := range g.Stacks {
		if got := strings.TrimSpace(string(s.Status) + " " + s.Reason); got != want[s.Name] {
			t.Errorf("%s: %s, want %s", s.Name, got, want[s.Name])
		}
	}
	if g.Stacks[0].StackID != "id-app" || !slices.Equal(g.Missing, []string{"shop-gone"}) || !slices.Equal(g.Untracked, []string{"shop-extra"}) ||
		g.Bundle != "version v1, git abc" || g.Skipped != "" {
		t.Errorf("graph %+v", g)
	}
	off := NewGraph(pg, "shop", &config.Config{Drift: config.Drift{Enabled: false}}, "", Places{Live: live})
	for _, s := range off.Stacks {
		if s.Status != NotChecked || !strings.Contains(s.Reason, "drift.enabled: false") {
			t.Errorf("disabled: %s %s (%s)", s.Name, s.Status, s.Reason)
		}
	}
	unread := NewGraph(pg, "shop", nil, "applied config not readable (x)", Places{Live: live})
	if unread.Stacks[3].Status != Pending || len(unread.Notes) != 1 {
		t.Errorf("without a config nothing is ignored, and the note says why: %+v", unread)
	}
}

func TestReportName(t *testing.T) {
	pg := &state.Graph{Namespace: "shop", Key: "main"}
	for _, tc := range []struct {
		deployment string
		taken      map[string]bool
		want       string
	}{
		{"web", nil, "web"},
		{"", nil, "main"},
		{"web", map[string]bool{"web": true}, "shop.main"},
		{"sweeps", nil, "shop.main"}, // drift/sweeps/ holds the open sweeps
		{"", map[string]bool{"main": true}, "shop.main"},
	} {
		if got := ReportName(pg, tc.deployment, tc.taken); got != tc.want {
			t.Errorf("%q %v: %q, want %q", tc.deployment, tc.taken, got, tc.want)
		}
	}
}

// TestReportNamesStacksElsewhere: the drift report and its summary name a stack outside
// cairn's account and region with where it lives, and a stack at home by its name.
func TestReportNamesStacksElsewhere(t *testing.T) {
	drifted := []Resource{{LogicalID: "Link", Type: "AWS::SSM::Parameter", Status: "MODIFIED",
		Differences: []Difference{{Path: "/Value", Expected: "a", Actual: "tampered", Type: "NOT_EQUAL"}}}}
	r := &Report{Sweep: "s1", Trigger: "schedule", Graph: &Graph{Name: "shop", Namespace: "shop", Key: "shop", Stacks: []*Stack{
		{Name: "network", StackName: "shop-network", Status: InSync},
		{Name: "remote", StackName: "shop-remote", Status: Drifted, Resources: drifted, At: target.Target{Account: "111111111111", Region: "eu-west-1"}},
	}}}
	var md strings.Builder
	Markdown(&md, r)
	summary := Summary(r, "s3://b/r.md")
	for _, tc := range []struct{ name, out, want string }{
		{"markdown", md.String(), "| network | shop-network | IN_SYNC |"},
		{"markdown", md.String(), "| remote | shop-remote (111111111111, eu-west-1) | DRIFTED |"},
		{"markdown", md.String(), "## shop-remote (111111111111, eu-west-1)\n"},
		{"summary", summary, "- shop-remote (111111111111, eu-west-1) Link (AWS::SSM::Parameter) /Value: expected a, actual tampered (NOT_EQUAL)"},
	} {
		if !strings.Contains(tc.out, tc.want) {
			t.Errorf("%s lacks %q:\n%s", tc.name, tc.want, tc.out)
		}
	}
}

// TestReportsSayHowToReconcile: each drifted stack's report, summary and CLI line name the
// plan command that reconciles it: the next plan of a stack with on_drift revert reverts
// it; for another, setting on_drift: revert (then the plan) or adopting the values in its
// template (then the plan).
func TestReportsSayHowToReconcile(t *testing.T) {
	drifted := []Resource{{LogicalID: "Web", Type: "AWS::EC2::SecurityGroup", Status: "MODIFIED",
		Differences: []Difference{{Path: "/SecurityGroupIngress/1", Actual: "0.0.0.0/0", Type: "ADD"}}}}
	r := &Report{Sweep: "s1", Trigger: "schedule", Graph: &Graph{Name: "shop", Namespace: "shop", Key: "shop", Stacks: []*Stack{
		{Name: "network", StackName: "shop-network", Status: InSync, OnDrift: "revert"},
		{Name: "web", StackName: "shop-web", Status: Drifted, Resources: drifted, OnDrift: "revert"},
		{Name: "db", StackName: "shop-db", Status: Drifted, Resources: drifted},
	}}}
	var md strings.Builder
	Markdown(&md, r)
	summary := Summary(r, "s3://b/r.md")
	for _, tc := range []struct{ name, out, want string }{
		{"markdown", md.String(), "## shop-web\n\nReconcile: `cairn plan PATH --deployment shop` reverts it (on_drift: revert): its comment lists what it brings back under \"Changed outside cairn\"; approve it to apply.\n"},
		{"markdown", md.String(), "## shop-db\n\nReconcile: to revert it through review, set `on_drift: revert` on stack db, then `cairn plan PATH --deployment shop` (its comment lists what it brings back); to adopt it, set its template to the actual values, then `cairn plan PATH --deployment shop`.\n"},
		{"summary", summary, "- reconcile shop-web: `cairn plan PATH --deployment shop` reverts it"},
		{"summary", summary, "- reconcile shop-db: to revert it through review, set `on_drift: revert` on stack db"},
	} {
		if !strings.Contains(tc.out, tc.want) {
			t.Errorf("%s lacks %q:\n%s", tc.name, tc.want, tc.out)
		}
	}
	if strings.Contains(summary, "reconcile shop-network") || strings.Contains(md.String(), "## shop-network") {
		t.Errorf("a stack in sync gets a reconcile line:\n%s\n%s", summary, md.String())
	}
}
