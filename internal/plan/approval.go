package plan

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/seal"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

// ChangeSet is what an approval checks of a reviewed change set.
type ChangeSet struct {
	Found           bool
	Status          string // CREATE_COMPLETE, FAILED, ...
	ExecutionStatus string // AVAILABLE, EXECUTE_COMPLETE, OBSOLETE, ...
	Changes         []Change
	// ID, Name, StackID and StackName are the change set's and its stack's, as
	// CloudFormation describes them, and Tags the tags it was created with (cairn's say
	// which graph, stack and bundle it was made for): what an approval checks before it
	// trusts a plan document's word about which change set to execute.
	ID, Name           string
	StackID, StackName string
	Tags               map[string]string
}

// Observed is what an approval saw of the world its plan was made against.
type Observed struct {
	// Generation of the persistent graph now (0: there is none), and the run that wrote it.
	Generation int64
	GraphRunID string
	// LatestVersion is the newest version of the planned upload ("" when there is none);
	// it is looked at only for a plan of a versioned upload.
	LatestVersion string
	Live          map[string]Live
	// ChangeSets are the reviewed change sets as described now, by id (see ChangeSetsToCheck
	// and Executed).
	ChangeSets map[string]ChangeSet
	// Graph is the persistent graph now (nil: none): who owns it, and the stacks it
	// records, which a plan may delete or re-create.
	Graph *state.Graph
}

// DefaultTTL is how long an unapplied plan stays approvable; after it, the plan expires
// and its change sets are deleted.
const DefaultTTL = 7 * 24 * time.Hour

// Lapsed lists why p cannot be applied whatever the stacks are like now, each reason
// ending in "re-plan": applied already, failed, superseded, expired. final says no
// observation can add to them, so none needs to be made.
func (p *Document) Lapsed(now time.Time, ttl time.Duration) (reasons []string, final bool) {
	switch p.Status {
	case Planned:
	case Applying, Applied:
		return []string{fmt.Sprintf("plan %s was already applied by run %s at %s: a plan applies at most once; re-plan", p.ID, p.AppliedBy, p.AppliedAt.UTC().Format(time.RFC3339))}, true
	case PlanFailed:
		return []string{fmt.Sprintf("plan %s failed (%s): nothing to apply; re-plan", p.ID, p.Reason)}, true
	default:
		// Superseded or expired: say so, and what else changed since.
		reasons = append(reasons, fmt.Sprintf("plan %s is %s (%s): re-plan", p.ID, p.Status, p.Reason))
	}
	if age := now.Sub(p.CreatedAt); age > ttl {
		return append(reasons, fmt.Sprintf("plan %s expired: made %s ago, plans stay approvable for %s; re-plan", p.ID, age.Round(time.Minute), ttl)), true
	}
	return reasons, false
}

// Outside lists why the namespaces allowed now refuse p: its namespace, or the stacks
// it would change, are outside them (the allow-list changed since the plan was made).
// Each reason ends in "re-plan".
func (p *Document) Outside(allowed config.Namespaces) []string {
	var reasons []string
	if r := allowed.Refusal(p.Namespace, ""); r != "" {
		return []string{fmt.Sprintf("plan %s: %s; re-plan", p.ID, r)}
	}
	for _, s := range p.Stacks {
		if r := allowed.Refusal("", s.StackName); r != "" {
			reasons = append(reasons, fmt.Sprintf("plan %s: stack %s: %s; re-plan", p.ID, s.Name, r))
		}
	}
	return reasons
}

// Versioned reports whether the plan was made of a versioned upload, whose newest version
// an approval compares.
func (p *Document) Versioned() bool { return p.Bundle.VersionID != "" && p.Bundle.VersionID != "null" }

// checked lists the stacks whose freshness an approval checks: every one that changes, or
// whose inputs may.
func (p *Document) checked() []Stack {
	var out []Stack
	for _, s := range p.Stacks {
		if s.Action != None || s.InputsMayChange {
			out = append(out, s)
		}
	}
	return out
}

// ChangeSetsToCheck lists the ids of the reviewed change sets an approval describes: those
// of stacks still as they were planned in live.
func (p *Document) ChangeSetsToCheck(live map[string]Live) []string {
	var ids []string
	for _, s := range p.checked() {
		if s.ChangeSetID != "" && stackStale(s, p.Key(s), live, "", "") == "" {
			ids = append(ids, s.ChangeSetID)
		}
	}
	return ids
}

// StaleReasons lists why p cannot be applied against what o saw, each reason naming the
// stack and ending in "re-plan": the graph changed, a newer bundle was uploaded, a stack
// changed since the plan, a reviewed change set is gone or no longer available, or the
// outputs a stack consumes now resolve differently.
func (p *Document) StaleReasons(o Observed) []string {
	var reasons []string
	if o.Generation != p.Generation {
		by := ""
		if o.GraphRunID != "" {
			by = " by run " + o.GraphRunID
		}
		reasons = append(reasons, fmt.Sprintf("the persistent graph %s/%s changed since the plan (generation %d, planned at %d): another run applied%s in between: re-plan", p.Namespace, p.GraphKey, o.Generation, p.Generation, by))
	}
	if p.Versioned() && o.LatestVersion != p.Bundle.VersionID {
		reasons = append(reasons, fmt.Sprintf("a newer bundle was uploaded to s3://%s/%s (version %s; the plan is of version %s): re-plan", p.Bundle.Bucket, p.Bundle.Key, cmp.Or(o.LatestVersion, "none"), p.Bundle.VersionID))
	}
	planAt := p.CreatedAt.UTC().Format("15:04:05")
	resolve := Resolver(p.Run, p.Lookups, p.SSM)
	for _, s := range p.checked() {
		what := "the plan"
		if s.ChangeSetName != "" {
			what = "change set " + s.ChangeSetName
		}
		if why := stackStale(s, p.Key(s), o.Live, what, planAt); why != "" {
			reasons = append(reasons, why)
			continue
		}
		if s.ChangeSetID != "" {
			switch cs := o.ChangeSets[s.ChangeSetID]; {
			case !cs.Found:
				reasons = append(reasons, fmt.Sprintf("stack %s: change set %s no longer exists (deleted after plan %s): re-plan", s.StackName, s.ChangeSetName, planAt))
				continue
			case cs.Status != "CREATE_COMPLETE" || cs.ExecutionStatus != "AVAILABLE":
				reasons = append(reasons, fmt.Sprintf("stack %s: change set %s is %s/%s, not CREATE_COMPLETE/AVAILABLE: re-plan", s.StackName, s.ChangeSetName, cs.Status, cs.ExecutionStatus))
				continue
			}
		}
		if s.InputsMayChange || s.CreatedAtApply || s.ParametersHash == "" {
			continue // re-checked by the apply run once the stacks it consumes are applied
		}
		if diff := p.consumedChanged(s, o.Live, resolve); diff != "" {
			reasons = append(reasons, fmt.Sprintf("stack %s: %s is stale (the outputs it consumes changed since the plan: %s): re-plan", s.StackName, what, diff))
		}
	}
	return reasons
}

// stackStale says how the live stack differs from s as planned ("" when it does not).
func stackStale(s Stack, key string, live map[string]Live, what, planAt string) string {
	l, exists := live[key]
	switch {
	case s.Status == "" && exists:
		return fmt.Sprintf("stack %s: %s is stale (stack created at %s after plan %s): re-plan", s.StackName, what, l.LastUpdated.UTC().Format("15:04:05"), planAt)
	case s.Status != "" && !exists:
		return fmt.Sprintf("stack %s: %s is stale (stack deleted after plan %s): re-plan", s.StackName, what, planAt)
	case exists && (l.Status != s.Status || !l.LastUpdated.Equal(s.LastUpdated)):
		return fmt.Sprintf("stack %s: %s is stale (stack updated %s after plan %s; now %s, was %s): re-plan", s.StackName, what, l.LastUpdated.UTC().Format("15:04:05"), planAt, l.Status, s.Status)
	}
	return ""
}

// consumedChanged resolves the parameters of a planned stack against the outputs live
// now, and describes how they differ from the planned ones ("" when they do not).
func (p *Document) consumedChanged(s Stack, live map[string]Live, resolve run.Resolver) string {
	rs := p.Run.Stacks[s.Name]
	if rs == nil {
		return ""
	}
	params, err := resolve(s.Name, rs.RawParameters, func(stack, output string) (string, bool) {
		if other := p.Run.Stacks[stack]; other != nil {
			v, ok := live[other.Key()].Outputs[output]
			return v, ok
		}
		if l, ok := live[stack]; ok {
			v, ok := l.Outputs[output]
			return v, ok
		}
		v, ok := p.Run.External[stack+"::"+output]
		return v, ok
	})
	if err != nil {
		return "its parameters no longer resolve: " + err.Error()
	}
	if run.HashParameters(params) == s.ParametersHash {
		return ""
	}
	return run.DescribeParameters(s.Parameters, params)
}

// Key is s's key in the live view: by the account and region of its stack in the run.
func (p *Document) Key(s Stack) string {
	if p.Run != nil {
		if rs := p.Run.Stacks[s.Name]; rs != nil {
			return rs.Key()
		}
	}
	return s.StackName
}

// ChangeSetTarget is the target of the stack whose reviewed change set is id: where to
// describe it.
func (p *Document) ChangeSetTarget(id string) target.Spec {
	for _, s := range p.Stacks {
		if s.ChangeSetID == id && p.Run != nil && p.Run.Stacks[s.Name] != nil {
			return p.Run.Stacks[s.Name].Target
		}
	}
	return target.Spec{}
}

// SealedWithoutKey says why p cannot be applied by a deployer sealing with k: a plan made
// before seals were keyed holds secrets sealed without a key, which its apply run would
// find changed (nil when k is Unkeyed, or p holds none). The reason ends in "re-plan".
func (p *Document) SealedWithoutKey(k seal.Key) []string {
	if !k.Keyed() || p.Run == nil {
		return nil
	}
	for _, name := range p.Run.Names() {
		s := p.Run.Stacks[name]
		for _, v := range slices.Concat(slices.Collect(maps.Values(s.Parameters)), slices.Collect(maps.Values(s.RawParameters))) {
			if config.HoldsUnkeyedSeal(v) {
				return []string{fmt.Sprintf("plan %s holds secrets sealed without a key (it was made by a cairn before keyed seals): re-plan", p.ID)}
			}
		}
	}
	return nil
}
