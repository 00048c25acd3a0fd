package plan

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/graph"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

// making is what Make decides with for every stack of the config.
type making struct {
	in       Input
	res      *Result
	cfg      *config.Config
	g        *graph.Graph
	prev     *state.Graph
	ns, key  string
	secret   config.Secrecy
	exported Exported
	// byKey names the config's stacks by their target key.
	byKey map[string]string
}

// byKeyOf names the config's stacks by their target key (target.Key).
func byKeyOf(cfg *config.Config, home target.Target) map[string]string {
	byKey := map[string]string{}
	for _, s := range cfg.Stacks {
		byKey[target.Key(s.Target.Location(home), s.StackName)] = s.Name
	}
	return byKey
}

// external records the outputs of live stacks that xref, rxref and cfn lookups read.
func (m *making) external() {
	in, cfg, res, secret, byKey := m.in, m.cfg, m.res, m.secret, m.byKey
	// xref, rxref and cfn lookups read any live stack's outputs by its real name, in the
	// account and region of the stack reading it; a stack of the config read so has its
	// secret outputs sealed as ${output} reads them.
	for _, s := range cfg.Stacks {
		at := s.Target.Location(in.Home)
		for _, l := range s.Lookups {
			if !l.Kind.ByStackName() {
				continue
			}
			k := target.Key(at, l.StackName)
			if live, ok := in.Live[k]; ok {
				if v, ok := live.Outputs[l.Output]; ok {
					if name, ok := byKey[k]; ok {
						v = sealOutputs(in.Key, name, secret[name].Outputs, map[string]string{l.Output: v})[l.Output]
					}
					res.Run.External[k+"::"+l.Output] = v
				}
			}
		}
	}
}

// stack decides what the run does to stack s of the config.
func (m *making) stack(s *config.Stack) {
	in, cfg, res, g, prev, secret, exported, byKey := m.in, m.cfg, m.res, m.g, m.prev, m.secret, m.exported, m.byKey
	at := s.Target.Location(in.Home)
	live, exists := in.Live[target.Key(at, s.StackName)]
	liveValues := config.Values{SSM: in.SSM,
		Output: func(stack, output string) (string, bool) {
			cs := cfg.Stack(stack)
			if cs == nil {
				return "", false
			}
			v, ok := sealOutputs(in.Key, stack, secret[stack].Outputs, in.Live[target.Key(cs.Target.Location(in.Home), cs.StackName)].Outputs)[output]
			return v, ok
		},
		Outputs: func(stackName, output string) (string, bool) {
			v, ok := in.Live[target.Key(at, stackName)].Outputs[output]
			return v, ok
		}}
	p := prev.Stacks[s.Name]
	if from, to, moved := Moved(p, s, in.Home); moved {
		res.Refusals = append(res.Refusals, fmt.Sprintf("stack %s: it now names %s, but the graph's is %s: %s", s.Name, to, from, MovedFix(cfg.File)))
		return
	}
	decide := func(a Action, reason string) {
		res.Decisions = append(res.Decisions, Decision{Stack: s.Name, StackName: s.StackName, Action: a, Reason: reason,
			Capabilities: s.Capabilities, FromTemplate: s.CapabilitiesFromTemplate && len(s.Capabilities) > 0})
	}
	if !s.Enabled {
		// Outside the run, but its outputs still feed lookups.
		for k, v := range sealOutputs(in.Key, s.Name, secret[s.Name].Outputs, live.Outputs) {
			res.Run.External[s.Name+"::"+k] = v
		}
		decide(Disabled, "enabled: false")
		return
	}
	rs := &run.Stack{
		Name: s.Name, StackName: s.StackName, Intent: run.IntentDeploy, Phase: run.Pending, Target: s.Target, At: at,
		Requires: g.Dependencies(s.Name), TemplateHash: TemplateHash(s),
		RawParameters: s.StoredParameters(in.Key), NoEcho: s.NoEcho(), Exists: exists, StackID: live.StackID,
		SecretOutputs: secret[s.Name].Outputs, Outputs: sealOutputs(in.Key, s.Name, secret[s.Name].Outputs, live.Outputs),
		Protect: s.TerminationProtection, Protected: exists && live.TerminationProtection,
		CreateTimeout: time.Duration(s.Options.TimeoutInMinutes) * time.Minute, PlanOnly: s.Protected,
		RefuseDrift: s.Options.OnDrift == config.DriftRefuse,
		Early:       Early(s, exported),
	}
	rs.OutputParameters = s.Template.OutputParameters()
	rs.Code = Code(s)
	rs.Imports, rs.ImportsKnown = ImportsOf(s)
	res.Run.Stacks[s.Name] = rs
	if res.Inputs == nil {
		res.Inputs = map[string]Inputs{}
	}
	res.Inputs[s.Name] = InputsOf(s, in.SSM, in.Key, in.Home)
	res.Refusals = append(res.Refusals, exposedSecrets(s, in.SSM, secret, byKey, in.Home)...)
	if reason, ok := in.Unreachable[at]; ok {
		rs.Phase, rs.Reason, rs.FinishedAt = run.Failed, reason, in.Now
		decide(Unreachable, reason)
		return
	}
	if s.Locked {
		rs.Intent = run.IntentRead
		if !exists {
			res.Refusals = append(res.Refusals, fmt.Sprintf("stack %s (%s) is locked but does not exist: unlock it to create it", s.Name, s.StackName))
		}
		decide(Read, "locked: outputs are read, the stack is never changed")
		return
	}
	if !exists {
		if p != nil {
			decide(Create, "in the graph but gone from AWS: re-created")
		} else {
			decide(Create, "new stack")
		}
		return
	}
	tagged := live.OwnedBy(m.ns, m.key, s.Name)
	own, tagsErr := config.ResolveTags(s, liveValues)
	wantTags := Tags(cfg, s, own, in.Bundle)
	if m.settled(s, rs, live, at, tagged, decide) {
		return
	}
	if p == nil {
		m.adopt(s, rs, live, at, tagged, wantTags, decide)
		return
	}
	rs.PrevTemplateHash, rs.PrevParametersHash = p.TemplateHash, p.ParametersHash
	why := updateReasons(s, p, live, wantTags, tagsErr)
	if len(why) > 0 {
		rs.Force = true
		decide(Update, strings.Join(why, ", "))
		return
	}
	if rs.TemplateHash != p.TemplateHash {
		decide(Update, templateChanged(p, rs))
		return
	}
	decide(Check, "template unchanged; updated only if its parameters resolve differently")
}

// settled decides a stack whose status leaves it no update (created again, busy, failed),
// and reports whether it did.
func (m *making) settled(s *config.Stack, rs *run.Stack, live Live, at target.Target, tagged bool, decide func(Action, string)) bool {
	in, res, ns, key := m.in, m.res, m.ns, m.key
	switch st := live.Status; {
	case st == "ROLLBACK_COMPLETE" || st == "REVIEW_IN_PROGRESS":
		if !tagged {
			res.Refusals = append(res.Refusals, fmt.Sprintf("stack %s is %s but its cairn tags do not name namespace %s, graph %s, stack %s: delete it by hand or tag it", s.StackName, st, ns, key, s.Name))
			return true
		}
		if st == "REVIEW_IN_PROGRESS" {
			rs.Exists = false // a CREATE change set on the empty stack
			decide(Create, "REVIEW_IN_PROGRESS after a create that never ran")
			return true
		}
		rs.Intent = run.IntentRecreate
		decide(Recreate, "ROLLBACK_COMPLETE after a failed create: deleted and created again")
		return true
	case strings.HasSuffix(st, "_IN_PROGRESS"):
		if res.Busy == nil {
			res.Busy = map[string]string{}
		}
		res.Busy[target.Key(at, s.StackName)] = st
		return true
	case st == "CREATE_FAILED":
		res.Refusals = append(res.Refusals, fmt.Sprintf("stack %s is CREATE_FAILED (disable_rollback kept its resources): roll it back with `cairn recover %s %s --rollback`, then push again", s.StackName, in.Deployment, s.Name))
		return true
	case st == "UPDATE_ROLLBACK_FAILED":
		res.Refusals = append(res.Refusals, fmt.Sprintf("stack %s is %s: recover it with `cairn recover %s %s`, then push again", s.StackName, st, in.Deployment, s.Name))
		return true
	case st == "ROLLBACK_FAILED" || st == "DELETE_FAILED":
		if !tagged {
			res.Refusals = append(res.Refusals, fmt.Sprintf("stack %s is %s but its cairn tags do not name namespace %s, graph %s, stack %s: delete it by hand or tag it", s.StackName, st, ns, key, s.Name))
			return true
		}
		keep := in.Undeletable[target.Key(at, s.StackName)]
		if res.Run.Mode != run.ModePlan {
			res.Refusals = append(res.Refusals, onlyDeletable(s.StackName, st, keep, in.Deployment, "creates it again"))
			return true
		}
		rs.Intent = run.IntentRecreate
		rs.Retain, rs.Retaining = logicalIDs(keep), st == "DELETE_FAILED"
		decide(Recreate, fmt.Sprintf("%s: CloudFormation can only delete it: deleted%s, then created again", st, keeping(keep)))
		return true
	}
	return false
}

// adopt decides a live stack the graph does not have: adopted when its cairn tags name it,
// refused otherwise.
func (m *making) adopt(s *config.Stack, rs *run.Stack, live Live, at target.Target, tagged bool, wantTags map[string]string, decide func(Action, string)) {
	res, ns, key := m.res, m.ns, m.key
	if !tagged && !hasCairnTags(live) {
		var dropped []string
		for _, k := range slices.Sorted(maps.Keys(live.Tags)) {
			if _, ok := wantTags[k]; !ok {
				dropped = append(dropped, k)
			}
		}
		also := ""
		if len(dropped) > 0 {
			also = fmt.Sprintf("; the push that adopts it gives it the tags of cairn.yaml, which lacks %s: add %s under tags to keep %s", strings.Join(dropped, ", "), map[bool]string{true: "it", false: "them"}[len(dropped) == 1], map[bool]string{true: "it", false: "them"}[len(dropped) == 1])
		}
		res.Refusals = append(res.Refusals, fmt.Sprintf("stack %s exists but cairn did not create it (no cairn:* tags): rename the stack in the config, or adopt it: tag it with %s=%s, %s=%s, %s=%s (the command keeps its template, parameters and tags, and adds cairn's), then push again: `%s`%s",
			s.StackName, state.TagNamespace, ns, state.TagGraphKey, key, state.TagName, s.Name, AdoptCommand(live, at.Region, wantTags), also))
		return
	}
	if !tagged {
		res.Refusals = append(res.Refusals, fmt.Sprintf("stack %s belongs to another cairn graph (%s=%s, %s=%s, %s=%s): rename the stack in the config", s.StackName, state.TagNamespace, live.Tags[state.TagNamespace], state.TagGraphKey, live.Tags[state.TagGraphKey], state.TagName, live.Tags[state.TagName]))
		return
	}
	rs.Force = true
	decide(Adopt, "exists with matching cairn tags: adopted into the graph")
}

// updateReasons are why stack s, whatever its template, is updated (forced).
func updateReasons(s *config.Stack, p *state.Stack, live Live, wantTags map[string]string, tagsErr error) []string {
	var why []string
	if d := disagreement(p, live); d != "" {
		// The graph's hashes say what cairn last applied; the stack's own tags say what
		// its last executed change set carried. Only where both agree may the graph's
		// hashes spare the stack a change set.
		why = append(why, d)
	}
	switch {
	case tagsErr != nil:
		why = append(why, "its tags read values known only when it deploys")
	case tagsDiffer(wantTags, live.Tags):
		why = append(why, "tags changed")
	}
	if live.Tags[state.TagStackOptions] != s.Options.Hash() {
		why = append(why, "stack options changed")
	}
	if s.TerminationProtection != live.TerminationProtection {
		why = append(why, "termination protection changed")
	}
	if was, now := p.Target.ServiceRole, s.Target.ServiceRole; was != now {
		// The change set carries the role CloudFormation acts with from now on.
		why = append(why, fmt.Sprintf("service role changed (%s → %s)", cmp.Or(was, "(none)"), cmp.Or(now, "(none)")))
	}
	return why
}
