// Package plan decides, per stack, what a run does: create, update, leave alone, adopt,
// re-create or delete. It is a pure function of the config, the persistent graph as last
// applied, and one observation of the live stacks, so every safety rule (nothing deleted
// unless cairn created it, dependents first, guarded) is tested without any AWS call.
// Every guard is judged by the stricter of the graph's last applied setting and the
// config's (see guards.go): a push never loosens one.
package plan

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/graph"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/seal"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

// Live is what one paginated DescribeStacks showed of a stack.
type Live struct {
	StackName             string
	StackID               string
	Status                string
	Tags                  map[string]string
	TerminationProtection bool
	Outputs               map[string]string
	// Exports maps output keys to their export names.
	Exports     map[string]string
	LastUpdated time.Time
	// Parameters are the stack's parameters as DescribeStacks shows them (NoEcho ones as
	// ****).
	Parameters map[string]string
}

// Input is everything a plan is made from.
type Input struct {
	RunID      string
	Deployment string
	Mode       run.Mode
	// Config is nil when the bundle could not be loaded: such a run changes nothing.
	Config *config.Config
	// Graph is the persistent graph as last applied; nil on the first run.
	Graph *state.Graph
	// Home is the deployer's own account (when it matters: "" otherwise) and region; a
	// stack's Location is relative to it.
	Home target.Target
	// Live holds every live stack seen in the accounts and regions of the run's stacks,
	// keyed by target.Key of its location and name (at home, its name).
	Live map[string]Live
	// Unreachable names, with the reason, the locations whose stacks could not be listed
	// (an AssumeRole refused, a region throttled): their stacks fail at once, and only
	// the stacks depending on them are blocked.
	Unreachable map[target.Target]string
	// Importers maps an export, keyed by target.Key of its location and name, to the real
	// names of the stacks there importing it (ListImports), for the exports of stacks the
	// plan would delete.
	Importers map[string][]string
	// Undeletable holds, for each live stack left ROLLBACK_FAILED or DELETE_FAILED (keyed
	// as Live), the resources CloudFormation failed to delete: such a stack can only be
	// deleted keeping them, and only through an approved plan that lists them.
	Undeletable map[string][]Resource
	// Bundle is the bundle being deployed; its git ref and sha256 become tags.
	Bundle state.BundleRef
	// Namespaces are the namespaces cairn may manage (empty: every one): a stack of the
	// graph named outside them is never deleted.
	Namespaces config.Namespaces
	// AllowDeletions lets an approved plan exceed deletion_policy.max_deletions.
	AllowDeletions bool
	// Destroy plans the deletion of every stack of the graph (cairn destroy); Config then
	// only names the namespace and graph key, its stacks are ignored.
	Destroy bool
	// SSM holds the SSM parameters the config's lookups read, as the deployer fetched
	// them (SecureStrings by hash only); a name missing fails the stacks reading it.
	SSM map[string]config.SSMValue
	// Key seals secrets (NoEcho values, SecureStrings) as the run stores them.
	Key seal.Key
	Now time.Time
}

// Action is the plan's decision for one stack, for reports.
type Action string

const (
	Create   Action = "create"
	Update   Action = "update"   // inputs changed, or tags, or the status requires it
	Check    Action = "check"    // unchanged so far; updated only if a dependency's outputs change
	Adopt    Action = "adopt"    // exists with matching cairn tags but not yet in the graph
	Recreate Action = "recreate" // ROLLBACK_COMPLETE after a failed create
	Delete   Action = "delete"
	Read     Action = "read"     // locked: outputs only
	Disabled Action = "disabled" // enabled: false
	Drop     Action = "drop"     // in the graph, gone from AWS, gone from the config
	Refuse   Action = "refuse"   // a deletion the guards refuse
	// Unreachable: the stack's account or region could not be reached; it fails, and
	// blocks the stacks depending on it.
	Unreachable Action = "unreachable"
	None        Action = "none" // a reviewed plan's stack that does not change
)

// Decision is one line of the plan.
type Decision struct {
	Stack     string `json:"stack"`
	StackName string `json:"stack_name"`
	Action    Action `json:"action"`
	Reason    string `json:"reason,omitempty"`
	// Capabilities are what the stack's change sets acknowledge; FromTemplate says cairn
	// granted them from what the template needs (the config names none).
	Capabilities []string `json:"capabilities,omitempty"`
	FromTemplate bool     `json:"capabilities_from_template,omitempty"`
}

// CapabilitiesText describes a decision's capabilities for people: "CAPABILITY_IAM
// (granted: the template needs it)", or "" when there are none.
func (d Decision) CapabilitiesText() string {
	if len(d.Capabilities) == 0 {
		return ""
	}
	s := strings.Join(d.Capabilities, ", ")
	if d.FromTemplate {
		s += " (granted: the template needs " + map[bool]string{true: "it", false: "them"}[len(d.Capabilities) == 1] + ")"
	}
	return s
}

// Result is a plan: the initial run, its decisions, and refusals that fail the whole run
// before it changes anything.
type Result struct {
	Run       *run.Run
	Decisions []Decision
	Refusals  []string
	// TakesOverFrom is the deployment that owned the graph, when this run's config takes
	// it over (take_over_graph_from): the run's first write makes its deployment the owner.
	TakesOverFrom string
	// Warnings do not stop the run: a SecureString given to a parameter that is not
	// NoEcho, say.
	Warnings []string
	// Inputs are, by stack, the content of each enabled stack of the config (InputsOf).
	Inputs map[string]Inputs
	// Busy holds the stacks (by key, with their status) that another hand is changing
	// now (an *_IN_PROGRESS status that no run of this graph started, since the run holds
	// its lock): nothing is decided until they settle (see Busy).
	Busy map[string]string
}

// informational tags say which bundle last changed a stack and what its inputs were (so
// the graph can be rebuilt from tags); they never cause an update on their own, or every
// push would update every stack.
var informational = []string{state.TagGitRef, state.TagGitRemote, state.TagBundleSHA256, state.TagBundleVersion,
	state.TagTemplateHash, state.TagParametersHash, state.TagRequires, state.TagStackOptions}

// Tags returns the tags a stack of cfg carries when deployed from bundle: own, the
// stack's tags with their lookups resolved (config.ResolveTags), and cairn's.
func Tags(cfg *config.Config, s *config.Stack, own map[string]string, bundle state.BundleRef) map[string]string {
	t := maps.Clone(own)
	if t == nil {
		t = map[string]string{}
	}
	t[state.TagNamespace] = cfg.Namespace
	t[state.TagGraphKey] = cfg.PersistentGraphKey
	t[state.TagName] = s.Name
	set := func(k, v string) {
		if v != "" {
			t[k] = v
		}
	}
	set(state.TagGitRef, bundle.GitRef)
	set(state.TagGitRemote, bundle.GitRemote)
	set(state.TagBundleSHA256, bundle.SHA256)
	set(state.TagStackOptions, s.Options.Hash())
	return t
}

// TemplateHash identifies a stack's template input: the body's sha256 (with the templates
// of its nested stacks that the bundle holds, when it has some), or the URL for a
// template_url stack (whose content cairn does not fetch).
func TemplateHash(s *config.Stack) string {
	if s.Tree != nil {
		return s.Tree.SHA256()
	}
	if s.Template != nil {
		return s.Template.SHA256
	}
	if s.TemplateURL != "" {
		return "url:" + s.TemplateURL
	}
	return ""
}

func tagsDiffer(want, have map[string]string) bool {
	for k, v := range want {
		if slices.Contains(informational, k) {
			continue
		}
		if have[k] != v {
			return true
		}
	}
	return false
}

// OwnedBy reports whether a live stack's cairn:* tags say the graph namespace/key created
// it as stack name: only such a stack is cairn's to adopt, re-create or clean up.
func (l Live) OwnedBy(namespace, key, name string) bool {
	return l.Tags[state.TagNamespace] == namespace && l.Tags[state.TagGraphKey] == key && l.Tags[state.TagName] == name
}

// Make computes the plan.
func Make(in Input) (*Result, error) {
	res := &Result{Run: &run.Run{
		ID: in.RunID, Deployment: in.Deployment, Mode: in.Mode, Status: run.Running,
		Stacks: map[string]*run.Stack{}, StartedAt: in.Now, UpdatedAt: in.Now, External: map[string]string{},
	}}
	if in.Mode == "" {
		res.Run.Mode = run.ModeDeploy
	}
	cfg := in.Config
	if cfg == nil {
		return nil, fmt.Errorf("no valid config: nothing is deployed and nothing is deleted")
	}
	if in.Destroy {
		if res.Run.Mode != run.ModePlan {
			return nil, fmt.Errorf("destroy is planned and approved, never deployed directly: run `cairn destroy %s`", in.Deployment)
		}
		// A config of no stacks (built afresh: Load's indexes would still name them).
		cfg = &config.Config{File: cfg.File, Namespace: cfg.Namespace, PersistentGraphKey: cfg.PersistentGraphKey, MaxConcurrency: cfg.MaxConcurrency,
			TakeOverGraphFrom: cfg.TakeOverGraphFrom, HandOverGraphTo: cfg.HandOverGraphTo, DeletionPolicy: cfg.DeletionPolicy}
	}
	res.Run.MaxConcurrency = cfg.MaxConcurrency
	g, err := cfg.Graph()
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", cfg.File, err)
	}
	prev := in.Graph
	if prev == nil {
		prev = &state.Graph{Stacks: map[string]*state.Stack{}}
	}
	ns, key := cfg.Namespace, cfg.PersistentGraphKey
	if owner := prev.Deployment; owner != "" && owner != in.Deployment {
		if cfg.TakeOverGraphFrom != owner {
			res.Refusals = append(res.Refusals, fmt.Sprintf("the persistent graph %s/%s belongs to deployment %s: deployment %s may not write it; if %s is %s renamed, set `take_over_graph_from: %s` in %s and have %s consent with `hand_over_graph_to: %s`, else choose another persistent_graph_key",
				ns, key, owner, in.Deployment, in.Deployment, owner, owner, cfg.File, owner, in.Deployment))
			return res, nil
		}
		if r := takeOverRefusal(prev, owner, in.Deployment); r != "" {
			res.Refusals = append(res.Refusals, r)
			return res, nil
		}
		res.TakesOverFrom = owner
	}
	res.Run.Guards = GuardsOf(cfg)
	res.Run.GuardChanges = GuardChanges(cfg, prev, in.Live, in.Home)
	secret := cfg.Secrecy(func(name string) bool { return in.SSM[name].Type == config.SecureString })
	m := &making{in: in, res: res, cfg: cfg, g: g, prev: prev, ns: ns, key: key, secret: secret, exported: Exports(cfg), byKey: byKeyOf(cfg, in.Home)}
	m.external()
	for _, s := range cfg.Stacks {
		m.stack(s)
	}

	res.importEdges(in, cfg, prev)
	res.resolved(in, cfg)
	res.deletions(in, cfg, prev)
	res.orderCycle(cfg.File)
	if res.Run.Mode == run.ModeDeploy {
		res.protect(in, cfg, g, prev)
		if r := relaxedRefusal(res.Run.GuardChanges, in.Deployment, cfg.File); r != "" {
			res.Refusals = append(res.Refusals, r)
		}
	}
	sort.SliceStable(res.Decisions, func(i, j int) bool { return res.Decisions[i].Stack < res.Decisions[j].Stack })
	return res, nil
}

// BusyReason is why a run that waited for the busy stacks (Result.Busy, keyed as Live,
// with their statuses) to settle gives up: a stack another hand is changing did not settle
// within the run's budget (waited). It names the command the run came from: plan, push,
// apply (of a bundle's content) or approve (of plan planID).
func BusyReason(busy map[string]string, command, deployment, planID string, waited time.Duration) string {
	var stacks []string
	for _, k := range slices.Sorted(maps.Keys(busy)) {
		stacks = append(stacks, fmt.Sprintf("%s (%s)", k, busy[k]))
	}
	again := fmt.Sprintf("%s again (`cairn %s PATH --deployment %s`)", command, command, deployment)
	if command == "approve" {
		again = fmt.Sprintf("approve again (`cairn approve %s %s`)", deployment, planID)
	}
	return fmt.Sprintf("stack(s) %s stayed busy for %s: an operation cairn did not start is under way on them; nothing was changed; wait until they settle, then %s",
		strings.Join(stacks, ", "), waited.Round(time.Second), again)
}

// disagreement says how the input hash tags of a live stack differ from what the graph
// records of it, or "" when they agree. They differ when the stack was changed by anyone
// but a run that recorded it: a run stopped by `cairn unlock --force` or a lease takeover
// while CloudFormation went on executing its change set, or an update outside cairn.
func disagreement(p *state.Stack, live Live) string {
	var diffs []string
	for _, c := range []struct{ tag, graph string }{
		{state.TagTemplateHash, p.TemplateHash}, {state.TagParametersHash, p.ParametersHash},
	} {
		if have := live.Tags[c.tag]; have != c.graph {
			diffs = append(diffs, fmt.Sprintf("tag %s is %s where the graph says %s", c.tag, shortHash(have), shortHash(c.graph)))
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	return "the live stack's " + strings.Join(diffs, ", and ") + " (it changed outside the runs that recorded the graph, e.g. by a run that was stopped): re-planned"
}

func shortHash(h string) string {
	switch {
	case h == "":
		return "(none)"
	case len(h) > 12:
		return h[:12]
	}
	return h
}

// AdoptCommand is the AWS CLI command that tags l, a stack cairn did not create, so that
// cairn adopts it (its cairn:namespace, cairn:graph-key and cairn:name tags name the
// config's stack, the rest as cairn tags what it deploys: want): an update of its tags
// alone, keeping its template and every parameter's value; its own tags are kept, since
// update-stack replaces them all. region is the stack's when it is not the caller's
// default ("": none given).
func AdoptCommand(l Live, region string, want map[string]string) string {
	tags := map[string]string{}
	for k, v := range l.Tags {
		if !strings.HasPrefix(k, "cairn:") {
			tags[k] = v
		}
	}
	for k, v := range want {
		if strings.HasPrefix(k, "cairn:") {
			tags[k] = v
		}
	}
	// cairn's identity tags first, as adopting reads them; then the others by name.
	first := []string{state.TagNamespace, state.TagGraphKey, state.TagName}
	keys := slices.DeleteFunc(slices.Sorted(maps.Keys(tags)), func(k string) bool { return slices.Contains(first, k) })
	var b strings.Builder
	b.WriteString("aws cloudformation update-stack --stack-name " + shellWord(l.StackName))
	if region != "" {
		b.WriteString(" --region " + shellWord(region))
	}
	b.WriteString(" --use-previous-template")
	if len(l.Parameters) > 0 {
		b.WriteString(" --parameters")
		for _, k := range slices.Sorted(maps.Keys(l.Parameters)) {
			b.WriteString(" " + shellWord("ParameterKey="+k+",UsePreviousValue=true"))
		}
	}
	b.WriteString(" --capabilities CAPABILITY_IAM CAPABILITY_NAMED_IAM CAPABILITY_AUTO_EXPAND --tags")
	for _, k := range append(first, keys...) {
		if v, ok := tags[k]; ok {
			b.WriteString(" " + shellWord("Key="+k+",Value="+v))
		}
	}
	return b.String()
}

// shellWord is s as one word of a POSIX shell: as it is when it holds only characters no
// shell reads specially, else in single quotes.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func hasCairnTags(l Live) bool {
	for k := range l.Tags {
		if strings.HasPrefix(k, "cairn:") {
			return true
		}
	}
	return false
}

// Moved reports whether config stack s names another stack than the graph's record p of
// it (another stack name, account or region), and describes both (from: the graph's, to:
// the config's). A run is refused then: a stack's identity is its account, region and
// name, and the old stack would be left behind, out of the graph.
func Moved(p *state.Stack, s *config.Stack, home target.Target) (from, to string, moved bool) {
	if p == nil {
		return "", "", false
	}
	was, at := p.Target.Location(home), s.Target.Location(home)
	if p.StackName == s.StackName && was == at {
		return "", "", false
	}
	return target.Describe(was, p.StackName), target.Describe(at, s.StackName), true
}

// MovedFix is what to do about a moved stack (Moved), whose config is in file.
func MovedFix(file string) string {
	return "cairn does not move or rename a live stack (the old one would be left behind); give the stack a new name in " + file +
		" (the next run creates the new stack and deletes the old one, with the deletion guards), or set stack_name, region and role_arn back"
}

// protect refuses a direct deployment that would touch a protected stack: one it creates,
// updates, re-creates or deletes, one whose inputs come (directly or not) from a stack the
// run changes, one the graph recorded as protected that left the config, and one whose
// protection the config drops (dropping it is reviewed like any change). Such stacks
// change only through an approved plan.
func (res *Result) protect(in Input, cfg *config.Config, g *graph.Graph, prev *state.Graph) {
	changing := map[string]bool{}
	for _, d := range res.Decisions {
		switch d.Action {
		case Create, Update, Adopt, Recreate, Delete:
			changing[d.Stack] = true
		}
	}
	// A stack may change when a stack it depends on changes, directly or through others
	// (as a failure would block it: the graph's walker finds them, Graph.BlockedBy); via
	// names the first of its dependencies that changes or may.
	follows := map[string]bool{}
	for _, s := range cfg.Stacks {
		follows[s.Name] = s.Enabled && !s.Locked && !changing[s.Name]
	}
	var seeds []string
	for name := range changing {
		seeds = append(seeds, name)
	}
	slices.Sort(seeds)
	via := map[string]string{}
	mayChange := g.BlockedBy(seeds, func(name string) bool { return follows[name] })
	for _, name := range mayChange {
		via[name] = "?"
	}
	for _, name := range mayChange {
		for _, dep := range g.Dependencies(name) {
			if changing[dep] || via[dep] != "" {
				via[name] = dep
				break
			}
		}
	}
	var touched []string
	for _, s := range cfg.Stacks {
		p := prev.Stacks[s.Name]
		if !s.Protected && p != nil && p.PlanOnly && s.Enabled {
			touched = append(touched, s.Name+" (its protection is removed)")
			continue
		}
		if !s.Protected || !s.Enabled || s.Locked {
			continue
		}
		switch {
		case changing[s.Name]:
			touched = append(touched, s.Name)
		case via[s.Name] != "":
			touched = append(touched, s.Name+" (its input "+via[s.Name]+" may change)")
		}
	}
	for _, d := range res.Decisions {
		if d.Action == Delete && cfg.Stack(d.Stack) == nil && prev.Stacks[d.Stack] != nil && prev.Stacks[d.Stack].PlanOnly {
			touched = append(touched, d.Stack+" (removed from the config: deleted)")
		}
	}
	if len(touched) > 0 {
		res.Refusals = append(res.Refusals, fmt.Sprintf("protected stack(s) %s change only through an approved plan: run `cairn plan PATH --deployment %s`, review it, then `cairn approve %s PLAN_ID`",
			strings.Join(touched, ", "), in.Deployment, in.Deployment))
	}
}

// resolved turns each stack the plan would only check (template unchanged, nothing
// forcing an update) into an update when its parameters, resolved now from the live
// outputs, the SSM values and the bundle, differ from those the graph says were applied:
// a parameter value, an SSM value or an output it reads changed. Such a stack is
// changing, for the guard of protected stacks above all; one whose parameters cannot be
// resolved yet (they read a stack the run creates) stays a check.
//
// A graph written before seals were keyed holds hashes of parameters sealed without a
// key: where the parameters, sealed that way, still hash to the graph's, they did not
// change. The run then compares with their keyed hash, and an unchanged stack keeps the
// graph's hash (KeptParametersHash), which its tags carry too.
func (res *Result) resolved(in Input, cfg *config.Config) {
	lookups := map[string][]config.Lookup{}
	for _, s := range cfg.Stacks {
		lookups[s.Name] = s.StoredLookups()
	}
	resolve := Resolver(res.Run, lookups, in.SSM)
	for i, d := range res.Decisions {
		rs := res.Run.Stacks[d.Stack]
		if d.Action != Check || rs == nil || rs.PrevParametersHash == "" {
			continue
		}
		params, err := resolve(rs.Name, rs.RawParameters, Outputs(res.Run))
		if err != nil {
			continue
		}
		now := run.HashParameters(Seal(in.Key)(rs, params))
		switch {
		case now == rs.PrevParametersHash:
		case legacyHash(in, cfg, res.Run, lookups, rs.Name) == rs.PrevParametersHash:
			rs.KeptParametersHash, rs.PrevParametersHash = rs.PrevParametersHash, now
		default:
			res.Decisions[i].Action, res.Decisions[i].Reason = Update, "its parameters resolve to other values than applied (its template is unchanged)"
		}
	}
}

// legacyHash is the hash of stack name's parameters as a cairn before keyed seals and
// sealed outputs stored them: its secrets sealed without a key, the outputs it reads in
// clear. "" when they do not resolve.
func legacyHash(in Input, cfg *config.Config, r *run.Run, lookups map[string][]config.Lookup, name string) string {
	rs, s := r.Stacks[name], cfg.Stack(name)
	ssm := map[string]config.SSMValue{}
	for n, v := range in.SSM {
		if v.Unkeyed != "" {
			v.Hash = v.Unkeyed
		}
		ssm[n] = v
	}
	outputs := func(stack, output string) (string, bool) {
		if d := r.Stacks[stack]; d != nil {
			v, ok := in.Live[d.Key()].Outputs[output]
			return v, ok
		}
		if cs := cfg.Stack(stack); cs != nil {
			v, ok := in.Live[target.Key(cs.Target.Location(in.Home), cs.StackName)].Outputs[output]
			return v, ok
		}
		v, ok := r.External[stack+"::"+output]
		return v, ok
	}
	params, err := Resolver(r, lookups, ssm)(name, s.StoredParameters(seal.Unkeyed), outputs)
	if err != nil {
		return ""
	}
	return run.HashParameters(Seal(seal.Unkeyed)(rs, params))
}

// exposedSecrets refuses each parameter of s that receives a secret but is not NoEcho: a
// SecureString (${ssm}), or a secret output (Secrecy) of a stack of the config read by
// ${output}, ${xref}, ${rxref} or ${cfn}. CloudFormation would show its value to anyone
// who can describe the stack, and keep it in every change set made with it, so nothing is
// made (byKey maps a stack's place and name to its config name).
func exposedSecrets(s *config.Stack, ssm map[string]config.SSMValue, secret config.Secrecy, byKey map[string]string, home target.Target) []string {
	if s.Template == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range s.Lookups {
		if l.Param == "" || seen[l.Param] {
			continue
		}
		var what string
		switch {
		case l.Kind == config.KindSSM && ssm[l.Name].Type == config.SecureString:
			what = "SecureString " + l.Name
		case l.Kind == config.KindOutput && slices.Contains(secret[l.Stack].Outputs, l.Output):
			what = "the secret output " + l.Output + " of stack " + l.Stack
		case l.Kind.ByStackName():
			if from := byKey[target.Key(s.Target.Location(home), l.StackName)]; from != "" && slices.Contains(secret[from].Outputs, l.Output) {
				what = "the secret output " + l.Output + " of stack " + from
			}
		}
		if what == "" {
			continue
		}
		seen[l.Param] = true
		if p, ok := s.Template.Parameters[l.Param]; ok && !p.NoEcho {
			out = append(out, fmt.Sprintf("stack %s: parameter %s receives %s but is not NoEcho: CloudFormation would show the value to anyone who can describe the stack and keep it in the change set; add NoEcho: true to the parameter", s.Name, l.Param, what))
		}
	}
	return out
}
