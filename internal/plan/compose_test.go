package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/run"
)

// The world of the composition tests: four stacks applied (network; api and jobs reading
// network's VpcId; worker reading api's Url), and two pull requests planned against it:
// #21 changes api (so worker's inputs are known only after apply), #22 changes jobs.
var (
	at21 = time.Date(2026, 11, 30, 11, 50, 0, 0, time.UTC)
	at22 = time.Date(2026, 11, 30, 11, 55, 0, 0, time.UTC)
	past = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	// content of each stack as applied, and as the pull requests change them
	appliedIn = map[string]Inputs{
		"network": {Template: "t-net", Parameters: "p-net", Settings: "s"},
		"api":     {Template: "t-api", Parameters: "p-api", Settings: "s"},
		"jobs":    {Template: "t-jobs", Parameters: "p-jobs", Settings: "s"},
		"worker":  {Template: "t-worker", Parameters: "p-worker", Settings: "s"},
	}
	api21  = Inputs{Template: "t-api-21", Parameters: "p-api", Settings: "s"}
	jobs22 = Inputs{Template: "t-jobs", Parameters: "p-jobs-22", Settings: "s"}
	// worker as pull request #23 changed it, applied before #21 merged
	worker23 = Inputs{Template: "t-worker-23", Parameters: "p-worker", Settings: "s"}
)

func liveNow() map[string]Live {
	return map[string]Live{
		"shop-network": {StackName: "shop-network", StackID: "id-net", Status: "UPDATE_COMPLETE", LastUpdated: past, Outputs: map[string]string{"VpcId": "vpc-1"}},
		"shop-api":     {StackName: "shop-api", StackID: "id-api", Status: "UPDATE_COMPLETE", LastUpdated: past, Outputs: map[string]string{"Url": "https://api"}},
		"shop-jobs":    {StackName: "shop-jobs", StackID: "id-jobs", Status: "UPDATE_COMPLETE", LastUpdated: past},
		"shop-worker":  {StackName: "shop-worker", StackID: "id-worker", Status: "UPDATE_COMPLETE", LastUpdated: past},
		"shop-old":     {StackName: "shop-old", StackID: "id-old", Status: "CREATE_COMPLETE", LastUpdated: past},
	}
}

var reads = map[string]map[string]string{
	"api": {"network::VpcId": "vpc-1"}, "jobs": {"network::VpcId": "vpc-1"}, "worker": {"api::Url": "https://api"},
}

// entry is a plan's entry for stack name of action a, made for content in, from the base
// liveNow shows.
func entry(id, name string, a Action, in Inputs) Stack {
	l := liveNow()["shop-"+name]
	e := Stack{Name: name, StackName: "shop-" + name, StackID: l.StackID, Action: a, Status: l.Status, LastUpdated: l.LastUpdated,
		Inputs: in, Consumed: reads[name], ParametersHash: "h-" + name}
	if a != None && a != Delete {
		e.ChangeSetName, e.ChangeSetID = "cairn-"+id+"-1", "cs-"+id+"-"+name
	}
	return e
}

// planOf is plan id of pull request pr made at made, with entries.
func planOf(id string, pr int, made time.Time, entries ...Stack) *Document {
	r := &run.Run{ID: id, Deployment: "shop", Mode: run.ModePlan, Status: run.Succeeded, Stacks: map[string]*run.Stack{}}
	for _, e := range entries {
		rs := &run.Stack{Name: e.Name, StackName: e.StackName, StackID: e.StackID, Intent: run.IntentDeploy, Phase: run.Unchanged, Exists: true,
			Parameters: map[string]string{"P": "v-" + id}, ParametersHash: e.ParametersHash}
		if e.ChangeSetID != "" {
			rs.Phase, rs.ChangeSetName, rs.ChangeSetID, rs.ChangeSetType = run.Ready, e.ChangeSetName, e.ChangeSetID, "UPDATE"
		}
		if e.Action == Delete {
			rs.Intent, rs.Phase = run.IntentDelete, run.Ready
		}
		r.Stacks[e.Name] = rs
	}
	return &Document{ID: id, Deployment: "shop", Namespace: "shop", GraphKey: "shop", Status: Planned, CreatedAt: made, Run: r, Stacks: entries,
		Bundle: BundleVersion{Bucket: "b", Key: "plans/shop.zip", SHA256: "sha-" + id, Source: provenance.Source{PullRequest: pr}}}
}

// plan21 shows worker known after apply: it reads api's Url, and #21 changes api.
func plan21() *Document {
	worker := entry("P21", "worker", None, appliedIn["worker"])
	worker.InputsMayChange = true
	return planOf("P21", 21, at21, entry("P21", "api", Update, api21), entry("P21", "jobs", None, appliedIn["jobs"]),
		entry("P21", "network", None, appliedIn["network"]), worker)
}

func plan22() *Document {
	return planOf("P22", 22, at22, entry("P22", "api", None, appliedIn["api"]), entry("P22", "jobs", Update, jobs22),
		entry("P22", "network", None, appliedIn["network"]), entry("P22", "worker", None, appliedIn["worker"]))
}

// contentOf is content whose stacks are as contents says (each changing one decided
// update, the others checked), as plan.Make would decide it now.
func contentOf(contents map[string]Inputs) Content {
	r := &run.Run{ID: "R1", Deployment: "shop", Mode: run.ModePlan, Stacks: map[string]*run.Stack{
		"network": {Name: "network", StackName: "shop-network", Intent: run.IntentDeploy, Phase: run.Pending, Exists: true, PrevParametersHash: "h-network"},
		"api":     {Name: "api", StackName: "shop-api", Intent: run.IntentDeploy, Phase: run.Pending, Exists: true, Requires: []string{"network"}, PrevParametersHash: "h-api"},
		"jobs":    {Name: "jobs", StackName: "shop-jobs", Intent: run.IntentDeploy, Phase: run.Pending, Exists: true, Requires: []string{"network"}, PrevParametersHash: "h-jobs"},
		"worker":  {Name: "worker", StackName: "shop-worker", Intent: run.IntentDeploy, Phase: run.Pending, Exists: true, Requires: []string{"api"}, PrevParametersHash: "h-worker"},
	}}
	c := Content{Run: r, Inputs: map[string]Inputs{}, Consumed: map[string]map[string]string{}}
	for _, name := range r.Names() {
		in := appliedIn[name]
		if x, ok := contents[name]; ok {
			in = x
		}
		c.Inputs[name] = in
		a := Check
		if in != appliedIn[name] {
			a = Update
		}
		c.Decisions = append(c.Decisions, Decision{Stack: name, StackName: "shop-" + name, Action: a})
		c.Consumed[name] = reads[name]
	}
	return c
}

func changeSetsOf(plans ...*Document) map[string]ChangeSet {
	out := map[string]ChangeSet{}
	for _, p := range plans {
		for _, e := range p.Stacks {
			if e.ChangeSetID != "" {
				out[e.ChangeSetID] = ChangeSet{Found: true, Status: "CREATE_COMPLETE", ExecutionStatus: "AVAILABLE"}
			}
		}
	}
	return out
}

// TestCompose decides applies of content against the two pull requests' plans: which
// entry covers each changing stack, which plans are applied whole, and why a stack is not
// covered (then nothing runs).
func TestCompose(t *testing.T) {
	merged := map[string]Inputs{"api": api21, "jobs": jobs22}
	for _, tc := range []struct {
		name    string
		content map[string]Inputs
		only    string
		change  func(in *ComposeInput)
		picks   map[string]string // stack -> plan id
		ripple  []string
		rebased []string
		whole   []string
		refused []string // substrings of the refusals, in stack order
	}{
		{name: "both pull requests merged: each stack from its own plan", content: merged,
			picks: map[string]string{"api": "P21", "jobs": "P22", "worker": "P21"}, ripple: []string{"worker"}, whole: []string{"P21", "P22"}},
		{name: "only #21 merged", content: map[string]Inputs{"api": api21},
			picks: map[string]string{"api": "P21", "worker": "P21"}, ripple: []string{"worker"}, whole: []string{"P21"}},
		// #22's entry for worker, made for the same content, did not show it known after
		// apply (#22 leaves its inputs alone): it does not cover a ripple.
		{name: "only #21 merged, its plan silent on worker", content: map[string]Inputs{"api": api21}, change: func(in *ComposeInput) {
			in.Plans[0].Stacks[3].InputsMayChange = false
		}, picks: map[string]string{"api": "P21"}, whole: []string{"P21"}},
		{name: "nothing changes: nothing to cover", content: nil, picks: map[string]string{}},
		{name: "approve #22 of its own content", content: map[string]Inputs{"jobs": jobs22}, only: "P22",
			picks: map[string]string{"jobs": "P22"}, whole: []string{"P22"}},
		{name: "approve #22 with content it did not plan", content: merged, only: "P22",
			refused: []string{"stack api (shop-api): no plan was made for this content of stack api (the plan of pull request #22 (P22) was made for other content of it (its template differ)): re-plan"}},
		{name: "#21 changed jobs after #22 planned it", content: merged, change: func(in *ComposeInput) {
			l := in.Live["shop-jobs"]
			l.LastUpdated = at22.Add(8 * time.Minute)
			in.Live["shop-jobs"] = l
			in.Changed = map[string]LastChange{"jobs": {By: "pull request #21 (run R9)", At: at22.Add(8 * time.Minute)}}
		}, refused: []string{"stack jobs (shop-jobs): the plan of pull request #22 (P22) for stack jobs went stale: the stack was changed by pull request #21 (run R9) at 12:03:00, after the plan (11:55:00; now UPDATE_COMPLETE, was UPDATE_COMPLETE): plan this content"}},
		{name: "jobs changed outside cairn after #22 planned it", content: merged, change: func(in *ComposeInput) {
			l := in.Live["shop-jobs"]
			l.LastUpdated = at22.Add(8 * time.Minute)
			in.Live["shop-jobs"] = l
			in.Changed = map[string]LastChange{"jobs": {By: "pull request #9 (run R1)", At: past}}
		}, refused: []string{"stack jobs (shop-jobs): the plan of pull request #22 (P22) for stack jobs went stale: the stack was changed at 12:03:00, after the plan (11:55:00;"}},
		{name: "content no plan was made for", content: map[string]Inputs{"api": api21, "jobs": {Template: "t-jobs-other", Parameters: "p-jobs", Settings: "s"}},
			refused: []string{"stack jobs (shop-jobs): no plan was made for this content of stack jobs (the plan of pull request #22 (P22) was made for other content of it (its template, its parameter values differ))"}},
		{name: "a change set deleted since", content: merged, change: func(in *ComposeInput) { delete(in.ChangeSets, "cs-P22-jobs") },
			refused: []string{"stack jobs (shop-jobs): the plan of pull request #22 (P22) for stack jobs went stale: its change set cairn-P22-1 no longer exists"}},
		{name: "an output it consumes changed", content: merged, change: func(in *ComposeInput) {
			in.Content.Consumed["jobs"] = map[string]string{"network::VpcId": "vpc-2"}
			in.Content.Consumed["api"] = map[string]string{"network::VpcId": "vpc-2"}
		}, refused: []string{`stack api (shop-api): the plan of pull request #21 (P21) for stack api went stale: the outputs it consumes changed since the plan: network::VpcId was "vpc-1", now "vpc-2"`,
			`stack jobs (shop-jobs): the plan of pull request #22 (P22) for stack jobs went stale: the outputs it consumes changed since the plan: network::VpcId was "vpc-1", now "vpc-2"`}},
		{name: "a secret it consumes changed: shown as ****", content: map[string]Inputs{"jobs": jobs22}, change: func(in *ComposeInput) {
			in.Plans[1].Stacks[1].Consumed = map[string]string{"db::SecretArn": "{{cairn:output:db.SecretArn@" + strings.Repeat("a", 64) + "}}"}
			in.Content.Consumed["jobs"] = map[string]string{"db::SecretArn": "{{cairn:output:db.SecretArn@" + strings.Repeat("b", 64) + "}}"}
		}, refused: []string{"went stale: the outputs it consumes changed since the plan: db::SecretArn was ****, now ****"}},
		{name: "a plan document that fails its checks covers nothing", content: merged, change: func(in *ComposeInput) {
			in.Unsound = map[string][]string{"P21": {"plan P21 of deployment shop: its seal is not the deployer's"}}
		}, refused: []string{"stack api (shop-api): the plan of pull request #21 (P21) for stack api went stale: plan P21 of deployment shop: its seal is not the deployer's"}},
		// Merge order: #23 changed worker and applied first; #21, upstream of it, merges
		// after. #21's plan showed worker as known after apply for worker's older
		// content: with worker's own content what is applied, that entry covers it,
		// judged at apply time against the stack as applied.
		{name: "an upstream pull request merged after its consumer's", content: map[string]Inputs{"api": api21}, change: func(in *ComposeInput) {
			in.Content.Inputs["worker"] = worker23
			in.Plans[0].Stacks[3].InputsMayChange = true
		}, picks: map[string]string{"api": "P21", "worker": "P21"}, ripple: []string{"worker"}, rebased: []string{"worker"}, whole: []string{"P21"}},
		{name: "an upstream merged after its consumer's, whose plan showed the consumer stale", content: map[string]Inputs{"api": api21}, change: func(in *ComposeInput) {
			in.Content.Inputs["worker"] = worker23
			in.Plans[0].Stacks[3].InputsMayChange = true
			in.Plans[0].Stacks[3].Inputs = worker23
			l := in.Live["shop-worker"]
			l.LastUpdated = at22.Add(time.Minute)
			in.Live["shop-worker"] = l
		}, picks: map[string]string{"api": "P21", "worker": "P21"}, ripple: []string{"worker"}, rebased: []string{"worker"}, whole: []string{"P21"}},
		// A dependent no plan shows as known after apply needs no cover: it is re-checked
		// once what it reads is applied.
		{name: "a ripple no plan shows needs no cover", content: map[string]Inputs{"api": api21}, change: func(in *ComposeInput) {
			in.Content.Inputs["worker"] = worker23
			in.Plans[0].Stacks[3].InputsMayChange = false
		}, picks: map[string]string{"api": "P21"}, whole: []string{"P21"}},
		{name: "an applied plan covers nothing", content: merged, change: func(in *ComposeInput) { in.Plans[0].Status, in.Plans[0].AppliedBy = Applied, "R5" },
			refused: []string{"stack api (shop-api): the plan of pull request #21 (P21) for stack api went stale: plan P21 was already applied by run R5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p21, p22 := plan21(), plan22()
			in := ComposeInput{Deployment: "shop", Content: contentOf(tc.content), Plans: []*Document{p21, p22}, Only: tc.only, Live: liveNow(),
				ChangeSets: changeSetsOf(p21, p22), Now: at22.Add(10 * time.Minute)}
			if tc.change != nil {
				tc.change(&in)
			}
			c := Compose(in)
			var refused []string
			for _, u := range c.Uncovered {
				refused = append(refused, u.String())
			}
			if len(refused) != len(tc.refused) {
				t.Fatalf("refusals\n%s\nwant %d containing %q", strings.Join(refused, "\n"), len(tc.refused), tc.refused)
			}
			for i := range refused {
				if !strings.Contains(refused[i], tc.refused[i]) {
					t.Errorf("refusal\n%s\nwant it to contain\n%s", refused[i], tc.refused[i])
				}
			}
			if len(tc.refused) > 0 {
				if c.Covered() {
					t.Error("Covered with refusals")
				}
				return
			}
			got := map[string]string{}
			var ripple, rebased []string
			for name, pk := range c.Picks {
				got[name] = pk.Plan.ID
				if pk.Ripple {
					ripple = append(ripple, name)
				}
				if pk.Rebased {
					rebased = append(rebased, name)
				}
			}
			slices.Sort(ripple)
			slices.Sort(rebased)
			if !equalMaps(got, tc.picks) || !slices.Equal(ripple, tc.ripple) || !slices.Equal(rebased, tc.rebased) || !slices.Equal(c.Whole, tc.whole) {
				t.Errorf("picks %v ripple %v rebased %v whole %v; want %v %v %v %v", got, ripple, rebased, c.Whole, tc.picks, tc.ripple, tc.rebased, tc.whole)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCompositionRun: the apply run executes each reviewed change set as it is (its
// parameters must resolve as planned), re-checks a ripple once what it reads is applied,
// and only re-checks the stacks nothing covers, never changing them.
func TestCompositionRun(t *testing.T) {
	p21, p22 := plan21(), plan22()
	content := contentOf(map[string]Inputs{"api": api21, "jobs": jobs22})
	c := Compose(ComposeInput{Deployment: "shop", Content: content, Plans: []*Document{p21, p22}, Live: liveNow(), ChangeSets: changeSetsOf(p21, p22), Now: at22})
	now := at22.Add(time.Hour)
	r := c.Run(content, "R2", liveNow(), now)
	if r.ID != "R2" || r.Mode != run.ModeDeploy || r.Status != run.Running || r.Plan != "P21+P22" || !r.StartedAt.Equal(now) {
		t.Fatalf("run %+v", r)
	}
	if content.Run.Mode != run.ModePlan {
		t.Fatal("Run changed the content's run")
	}
	api, jobs, worker, network := r.Stacks["api"], r.Stacks["jobs"], r.Stacks["worker"], r.Stacks["network"]
	if api.ChangeSetID != "cs-P21-api" || api.PlannedParametersHash != "h-api" || api.Phase != run.Pending || api.Ripple {
		t.Errorf("api %+v: its reviewed change set waits", api)
	}
	if jobs.ChangeSetID != "cs-P22-jobs" || jobs.PlannedParametersHash != "h-jobs" || jobs.Parameters["P"] != "v-P22" {
		t.Errorf("jobs %+v", jobs)
	}
	if worker.ChangeSetID != "" || !worker.Ripple || worker.PlannedParametersHash != "h-worker" {
		t.Errorf("worker %+v: a ripple, re-checked once api is applied", worker)
	}
	if network.ChangeSetID != "" || network.PlannedParametersHash != "h-network" || network.Ripple {
		t.Errorf("network %+v: uncovered, only re-checked against what was applied", network)
	}

	// #23 changed worker and applied before #21 merged: #21's known-after-apply entry
	// for worker's older content is rebased on worker as applied.
	content = contentOf(map[string]Inputs{"api": api21})
	content.Inputs["worker"] = worker23
	p21 = plan21()
	p21.Stacks[3].InputsMayChange = true
	applied := map[string]map[string]string{"worker": {"Url": "https://api"}, "network": {"Cidr": "10.0.0.0/16"}}
	c = Compose(ComposeInput{Deployment: "shop", Content: content, Plans: []*Document{p21}, Live: liveNow(), ChangeSets: changeSetsOf(p21), Applied: applied, Now: at22})
	r = c.Run(content, "R3", liveNow(), now)
	worker, network = r.Stacks["worker"], r.Stacks["network"]
	if !c.Picks["worker"].Rebased || worker.ChangeSetID != "" || worker.ChangeSetName != "" || !worker.Ripple || worker.PlannedParametersHash != "h-worker" || worker.Parameters["Url"] != "https://api" {
		t.Errorf("worker %+v: rebased on the stack as applied, a ripple with its applied parameters", worker)
	}
	if network.Parameters["Cidr"] != "10.0.0.0/16" || network.Ripple {
		t.Errorf("network %+v: re-checked against its applied parameters", network)
	}
}

// TestSupersedes: a newer plan replaces the earlier plans of the same change only.
func TestSupersedes(t *testing.T) {
	src := func(pr int, ref, head string) provenance.Source {
		return provenance.Source{PullRequest: pr, Ref: ref, HeadRef: head}
	}
	merged := func(pr int) provenance.Source {
		return provenance.Source{PullRequest: pr, Ref: "refs/heads/main", Merged: true}
	}
	for _, tc := range []struct {
		name         string
		newer, older provenance.Source
		want         bool
	}{
		{"same pull request", src(21, "refs/pull/21/merge", "a"), src(21, "refs/pull/21/merge", "a"), true},
		{"another pull request", src(22, "refs/pull/22/merge", "b"), src(21, "refs/pull/21/merge", "a"), false},
		{"same branch, no pull request", src(0, "refs/heads/feature", ""), src(0, "refs/heads/feature", ""), true},
		{"another branch", src(0, "refs/heads/other", ""), src(0, "refs/heads/feature", ""), false},
		{"a pull request and a branch", src(21, "refs/pull/21/merge", "feature"), src(0, "refs/heads/feature", ""), false},
		{"no git at all, both", src(0, "", ""), src(0, "", ""), true},
		// Another job's --pr 21 from its own branch: PR 21's reviewed plan stays open.
		{"the same pull request number from another branch", src(21, "refs/pull/21/merge", "other"), src(21, "refs/pull/21/merge", "a"), false},
		{"the same pull request, one without a head branch", src(21, "refs/pull/21/merge", ""), src(21, "refs/pull/21/merge", "a"), true},
		// The plan of #21's merged content, at the gate, outlives a late plan of its checkout.
		{"the pull request's checkout after its merged content", src(21, "refs/pull/21/merge", "a"), merged(21), false},
		{"the merged content after the pull request's checkout", merged(21), src(21, "refs/pull/21/merge", "a"), true},
		{"the merged content again", merged(21), merged(21), true},
	} {
		newer := &Document{ID: "P2", Deployment: "shop", Bundle: BundleVersion{Source: tc.newer}}
		older := &Document{ID: "P1", Deployment: "shop", Bundle: BundleVersion{Source: tc.older}}
		if got := newer.Supersedes(older); got != tc.want {
			t.Errorf("%s: Supersedes = %v, want %v", tc.name, got, tc.want)
		}
		if older.Supersedes(newer) {
			t.Errorf("%s: an older plan supersedes a newer one", tc.name)
		}
	}
}

// TestComposeRelaxedGuards: an apply of content that loosens a guard runs only when an open,
// trusted plan (the approved one, for an approval) showed exactly that loosening; a
// tightened guard needs none.
func TestComposeRelaxedGuards(t *testing.T) {
	relaxed := run.GuardChange{Setting: GuardMaxDeletions, From: "2", Relaxed: true}
	tightened := run.GuardChange{Setting: GuardMaxDeletions, From: "2", To: "1"}
	shows := func(p *Document, c ...run.GuardChange) *Document {
		p.Run.GuardChanges = c
		return p
	}
	tests := []struct {
		name      string
		change    run.GuardChange
		plans     []*Document
		only      string
		unsound   map[string][]string
		wantWhole []string
		wantWhy   string
	}{
		{name: "no plan shows it", change: relaxed, plans: []*Document{planOf("P1", 21, at21)},
			wantWhy: "guard relaxed: deletion_policy.max_deletions 2 → (none): no reviewed plan shows this relaxation, and a guard is loosened only through one: plan this content"},
		{name: "a plan shows it", change: relaxed, plans: []*Document{shows(planOf("P1", 21, at21), relaxed)}, wantWhole: []string{"P1"}},
		{name: "the approved plan shows it", change: relaxed, only: "P1", plans: []*Document{shows(planOf("P1", 21, at21), relaxed)}, wantWhole: []string{"P1"}},
		{name: "another plan than the approved one shows it", change: relaxed, only: "P1",
			plans: []*Document{planOf("P1", 21, at21), shows(planOf("P2", 22, at22), relaxed)}, wantWhy: "no reviewed plan shows this relaxation"},
		{name: "a plan shows another change", change: relaxed, plans: []*Document{shows(planOf("P1", 21, at21), run.GuardChange{Setting: GuardMaxDeletions, From: "2", To: "9", Relaxed: true})},
			wantWhy: "no reviewed plan shows this relaxation"},
		{name: "the plan that shows it is unsound", change: relaxed, plans: []*Document{shows(planOf("P1", 21, at21), relaxed)}, unsound: map[string][]string{"P1": {"its seal is not the deployer's"}},
			wantWhy: "the plan P1 that shows it cannot be trusted now: its seal is not the deployer's"},
		{name: "tightened needs no plan", change: tightened},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := contentOf(nil)
			c.Run.GuardChanges = []run.GuardChange{tt.change}
			comp := Compose(ComposeInput{Deployment: "shop", Content: c, Plans: tt.plans, Only: tt.only, Live: liveNow(),
				ChangeSets: changeSetsOf(tt.plans...), Unsound: tt.unsound, Now: at22.Add(time.Minute)})
			var why []string
			for _, u := range comp.Uncovered {
				why = append(why, u.String())
			}
			if got := strings.Join(why, "\n"); tt.wantWhy == "" && got != "" || !strings.Contains(got, tt.wantWhy) {
				t.Fatalf("uncovered %q, want %q", got, tt.wantWhy)
			}
			if tt.wantWhy == "" && !slices.Equal(comp.Whole, tt.wantWhole) {
				t.Errorf("whole %v, want %v", comp.Whole, tt.wantWhole)
			}
			if rel := c.Relevant(tt.plans); tt.wantWhy == "" && len(tt.wantWhole) > 0 && len(rel) == 0 {
				t.Errorf("the plan that shows the relaxation is not relevant")
			}
		})
	}
}

// TestLateFor: a plan of a pull request's own checkout uploaded after that pull request's
// merge went to an apply is late; merged content, other pull requests, and plans made
// before the merge are not.
func TestLateFor(t *testing.T) {
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	merges := []Merge{{PullRequest: 7, Run: "R1", At: at}}
	for _, tc := range []struct {
		name string
		src  provenance.Source
		now  time.Time
		late bool
	}{
		{"the pull request's checkout after its merge", provenance.Source{PullRequest: 7, Ref: "refs/pull/7/merge", HeadRef: "topic"}, at.Add(time.Minute), true},
		{"its merged content, planned by the apply job", provenance.Source{PullRequest: 7, Ref: "refs/heads/main", Merged: true}, at.Add(time.Minute), false},
		{"another pull request", provenance.Source{PullRequest: 8, Ref: "refs/pull/8/merge", HeadRef: "other"}, at.Add(time.Minute), false},
		{"made before the merge", provenance.Source{PullRequest: 7, Ref: "refs/pull/7/merge", HeadRef: "topic"}, at.Add(-time.Minute), false},
		{"no pull request", provenance.Source{Ref: "refs/heads/feature"}, at.Add(time.Minute), false},
	} {
		why := LateFor(tc.src, merges, tc.now)
		if (why != "") != tc.late {
			t.Errorf("%s: LateFor = %q, want late %v", tc.name, why, tc.late)
		}
		if tc.late && !strings.Contains(why, "pull request #7 was merged before this plan was made (its merged content went to apply run R1 at 10:00:00)") {
			t.Errorf("%s: %q", tc.name, why)
		}
	}
}
