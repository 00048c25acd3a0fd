package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

// onlyDeletable refuses a direct change of a stack CloudFormation can only delete
// (ROLLBACK_FAILED, DELETE_FAILED) and says the way out: an approved plan, which lists the
// resources the deletion keeps and then does what (creates it again, or deletes it).
func onlyDeletable(stackName, status string, keep []Resource, deployment, then string) string {
	return fmt.Sprintf("stack %s is %s: CloudFormation can only delete it%s: plan it (`cairn plan PATH --deployment %s`) and approve that plan (`cairn approve %s PLAN_ID`), which lists what the deletion keeps, deletes the stack and %s",
		stackName, status, keeping(keep), deployment, deployment, then)
}

// keeping says which resources a deletion keeps: " keeping Bucket (AWS::S3::Bucket: The
// bucket you tried to delete is not empty), which CloudFormation failed to delete".
func keeping(keep []Resource) string {
	if len(keep) == 0 {
		return ""
	}
	var rs []string
	for _, r := range keep {
		what := r.Type
		if r.Reason != "" {
			what += ": " + r.Reason
		}
		rs = append(rs, fmt.Sprintf("%s (%s)", r.LogicalID, what))
	}
	return " keeping " + strings.Join(rs, ", ") + ", which CloudFormation failed to delete"
}

func logicalIDs(rs []Resource) []string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.LogicalID)
	}
	return ids
}

// deletions plans the stacks that left the config, dependents first, and applies the guards.
func (res *Result) deletions(in Input, cfg *config.Config, prev *state.Graph) {
	var gone []string
	for _, name := range prev.Names() {
		if cfg.Stack(name) == nil {
			gone = append(gone, name)
		}
	}
	if len(gone) == 0 {
		return
	}
	if len(cfg.Stacks) == 0 && !in.Destroy {
		res.Refusals = append(res.Refusals, fmt.Sprintf("the config has no stacks: refusing to delete the %d stack(s) of the graph; use `cairn destroy %s` to delete everything", len(gone), in.Deployment))
		return
	}
	deleting := map[string]bool{}
	for _, name := range gone {
		ps := prev.Stacks[name]
		at := ps.Target.Location(in.Home)
		live, exists := in.Live[target.Key(at, ps.StackName)]
		decide := func(a Action, reason string) {
			res.Decisions = append(res.Decisions, Decision{Stack: name, StackName: ps.StackName, Action: a, Reason: reason})
		}
		if reason, ok := in.Unreachable[at]; ok {
			// Nothing is known of it: it is neither deleted nor dropped.
			rs := &run.Stack{Name: name, StackName: ps.StackName, StackID: ps.StackID, Intent: run.IntentDelete, Phase: run.Failed,
				Reason: "deletion waits: " + reason, FinishedAt: in.Now, Exists: true, Target: ps.Target, At: at}
			res.Run.Stacks[name] = rs
			decide(Unreachable, reason)
			continue
		}
		if !exists {
			decide(Drop, "removed from the config and already gone from AWS: dropped from the graph")
			continue
		}
		if st := live.Status; strings.HasSuffix(st, "_IN_PROGRESS") && st != "REVIEW_IN_PROGRESS" {
			if res.Busy == nil {
				res.Busy = map[string]string{}
			}
			res.Busy[target.Key(at, ps.StackName)] = st
			continue
		}
		rs := &run.Stack{Name: name, StackName: ps.StackName, StackID: live.StackID, Intent: run.IntentDelete, Phase: run.Pending, Exists: true,
			Target: ps.Target, At: at, PlanOnly: ps.PlanOnly}
		res.Run.Stacks[name] = rs
		refuse := func(reason string) {
			rs.Phase, rs.Reason = run.Failed, "deletion refused: "+reason
			decide(Refuse, reason)
		}
		switch {
		case !in.Namespaces.AllowsStack(ps.StackName):
			refuse(in.Namespaces.Refusal("", ps.StackName))
		case !live.OwnedBy(prev.Namespace, prev.Key, name):
			refuse(fmt.Sprintf("its tags do not say cairn created it for graph %s/%s (%s=%q, %s=%q, %s=%q)", prev.Namespace, prev.Key,
				state.TagNamespace, live.Tags[state.TagNamespace], state.TagGraphKey, live.Tags[state.TagGraphKey], state.TagName, live.Tags[state.TagName]))
		case live.TerminationProtection:
			refuse("termination protection is on: turn it off (`aws cloudformation update-termination-protection --no-enable-termination-protection --stack-name " + ps.StackName + "`) and push again")
		case live.Status == "ROLLBACK_FAILED" || live.Status == "DELETE_FAILED":
			keep := in.Undeletable[target.Key(at, ps.StackName)]
			if res.Run.Mode != run.ModePlan {
				refuse(onlyDeletable(ps.StackName, live.Status, keep, in.Deployment, "deletes it"))
				continue
			}
			deleting[name] = true
			rs.Retain, rs.Retaining = logicalIDs(keep), live.Status == "DELETE_FAILED"
			decide(Delete, fmt.Sprintf("removed from the config; %s: deleted%s", live.Status, keeping(keep)))
		default:
			deleting[name] = true
			decide(Delete, "removed from the config")
		}
	}
	res.importsBlock(in, prev, deleting)
	// Dependents first: a deletion waits for the deletions of the stacks that depended on it
	// in the graph as it was applied.
	for _, name := range gone {
		rs := res.Run.Stacks[name]
		if rs == nil {
			continue
		}
		for _, other := range gone {
			if o := prev.Stacks[other]; o != nil && slices.Contains(o.Requires, name) && res.Run.Stacks[other] != nil {
				rs.Requires = append(rs.Requires, other)
			}
		}
	}
	res.importerDeletions(in, prev, deleting)
	applied := 0
	if prev.Guards != nil {
		applied = prev.Guards.MaxDeletions
	}
	// The stricter of the limit applied and the one pushed (a loosened one is refused as
	// such, see relaxedRefusal).
	if max := StricterMaxDeletions(applied, cfg.DeletionPolicy.MaxDeletions); max > 0 && len(deleting) > max && !in.AllowDeletions && res.Run.Mode != run.ModePlan {
		res.Refusals = append(res.Refusals, fmt.Sprintf("the run would delete %d stacks (%s), more than deletion_policy.max_deletions %d: plan and approve it (`cairn plan PATH --deployment %s`)",
			len(deleting), strings.Join(sortedKeys(deleting), ", "), max, in.Deployment))
	}
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedValues(m map[string]string) []string {
	vals := make([]string, 0, len(m))
	for _, v := range m {
		vals = append(vals, v)
	}
	sort.Strings(vals)
	return vals
}

// importsBlock refuses the deletions (and takes them out of deleting) of the stacks whose
// exports are still imported by a stack that stays (imports are of the exporting stack's
// account and region; an importer nested in a stack the run deletes goes with it).
func (res *Result) importsBlock(in Input, prev *state.Graph, deleting map[string]bool) {
	for _, name := range sortedKeys(deleting) {
		rs := res.Run.Stacks[name]
		live := in.Live[rs.Key()]
		var blockers []string
		for _, exp := range sortedValues(live.Exports) {
			for _, imp := range in.Importers[target.Key(rs.At, exp)] {
				if h := res.holder(prev, rs.At, imp, exp); h == "" || !deleting[h] {
					blockers = append(blockers, fmt.Sprintf("export %s is imported by %s", exp, imp))
				}
			}
			for _, other := range res.Run.Names() {
				o := res.Run.Stacks[other]
				if o.Intent != run.IntentDelete && o.At == rs.At && slices.Contains(o.Imports, exp) && !slices.Contains(in.Importers[target.Key(rs.At, exp)], o.StackName) {
					blockers = append(blockers, fmt.Sprintf("export %s is imported by %s in the config", exp, o.StackName))
				}
			}
		}
		if len(blockers) > 0 {
			delete(deleting, name)
			rs.Phase, rs.Reason = run.Failed, "deletion refused: "+strings.Join(blockers, "; ")+": remove the imports first"
			for i := range res.Decisions {
				if res.Decisions[i].Stack == name {
					res.Decisions[i].Action, res.Decisions[i].Reason = Refuse, strings.Join(blockers, "; ")
				}
			}
		}
	}
}
