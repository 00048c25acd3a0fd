package plan

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cairn-dev/cairn/internal/config"
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

// Observed is what an apply saw of the world a plan was made against: the stacks, the
// reviewed change sets, and the persistent graph.
type Observed struct {
	Live map[string]Live
	// ChangeSets are the reviewed change sets as described now, by id (see
	// ChangeSetsToDescribe).
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
	case Applying, Applied, ApplyFailed:
		return []string{fmt.Sprintf("plan %s was already applied by run %s at %s: a plan applies at most once; re-plan", p.ID, p.AppliedBy, p.AppliedAt.UTC().Format(time.RFC3339))}, true
	case PlanFailed, Late:
		return []string{fmt.Sprintf("plan %s %s (%s): nothing to apply; re-plan", p.ID, map[Status]string{PlanFailed: "failed", Late: "is late"}[p.Status], p.Reason)}, true
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
