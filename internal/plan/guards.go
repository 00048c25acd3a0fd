package plan

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

// A guard (protected, termination protection, the roles of a protected stack,
// deletion_policy.max_deletions, hand_over_graph_to) is judged by the stricter of what the
// persistent graph last applied and what the config now says: a push never loosens one.
// Loosening one is a change of its own, shown by the plan and made only through an approved
// plan, like a change of a protected stack.

// Guard settings, as GuardChange.Setting names them.
const (
	GuardMaxDeletions          = "deletion_policy.max_deletions"
	GuardHandOver              = "hand_over_graph_to"
	GuardProtected             = "protected"
	GuardTerminationProtection = "termination_protection"
	GuardServiceRole           = "service_role"
	GuardRoleARN               = "role_arn"
)

// GuardsOf is the graph-wide guards cfg sets.
func GuardsOf(cfg *config.Config) *run.Guards {
	return &run.Guards{MaxDeletions: cfg.DeletionPolicy.MaxDeletions, HandOverTo: cfg.HandOverGraphTo}
}

// StricterMaxDeletions is the stricter of two deletion_policy.max_deletions (0: no limit):
// the lower limit, or the one limit there is.
func StricterMaxDeletions(a, b int) int {
	switch {
	case a <= 0:
		return max(b, 0)
	case b <= 0:
		return a
	}
	return min(a, b)
}

// GuardChanges compares the guards of cfg with those prev (the persistent graph) applied,
// for the stacks of both, the live stacks seen (keyed as Input.Live) counting for
// termination protection where the graph has no record of it. Graph-wide changes come
// first, then by stack in config order. A graph that records no graph-wide guards (written
// before they were) takes cfg's as they are.
func GuardChanges(cfg *config.Config, prev *state.Graph, live map[string]Live, home target.Target) []run.GuardChange {
	var out []run.GuardChange
	if prev == nil {
		return nil
	}
	var was run.Guards
	if prev.Guards != nil {
		was = *prev.Guards
	}
	now := GuardsOf(cfg)
	if a, b := was.MaxDeletions, now.MaxDeletions; a != b && (prev.Guards != nil || b > 0) {
		out = append(out, run.GuardChange{Setting: GuardMaxDeletions, From: limit(a), To: limit(b), Relaxed: StricterMaxDeletions(a, b) != b})
	}
	if a, b := was.HandOverTo, now.HandOverTo; a != b {
		// Consent given (or given to another deployment) loosens; withdrawn tightens.
		out = append(out, run.GuardChange{Setting: GuardHandOver, From: a, To: b, Relaxed: b != ""})
	}
	for _, s := range cfg.Stacks {
		p := prev.Stacks[s.Name]
		if p == nil || !s.Enabled || s.Locked {
			continue // a new stack has no applied guards; a disabled or locked one is not changed
		}
		protected := p.PlanOnly || s.Protected
		if p.PlanOnly != s.Protected {
			out = append(out, run.GuardChange{Stack: s.Name, Setting: GuardProtected, From: strconv.FormatBool(p.PlanOnly), To: strconv.FormatBool(s.Protected), Relaxed: p.PlanOnly})
		}
		l, exists := live[target.Key(s.Target.Location(home), s.StackName)]
		if was := p.TerminationProtection || exists && l.TerminationProtection; was != s.TerminationProtection {
			out = append(out, run.GuardChange{Stack: s.Name, Setting: GuardTerminationProtection, From: onOff(was), To: onOff(s.TerminationProtection), Relaxed: was})
		}
		// A role has no order: another one is a change of who acts on the stack, which a
		// protected stack makes only through an approved plan.
		if a, b := p.Target.ServiceRole, s.Target.ServiceRole; a != b {
			out = append(out, run.GuardChange{Stack: s.Name, Setting: GuardServiceRole, From: a, To: b, Relaxed: protected})
		}
		if a, b := p.Target.RoleARN, s.Target.RoleARN; a != b {
			out = append(out, run.GuardChange{Stack: s.Name, Setting: GuardRoleARN, From: a, To: b, Relaxed: protected})
		}
	}
	return out
}

// Relaxed keeps the changes that loosen a guard.
func Relaxed(changes []run.GuardChange) []run.GuardChange {
	var out []run.GuardChange
	for _, c := range changes {
		if c.Relaxed {
			out = append(out, c)
		}
	}
	return out
}

// relaxedRefusal is why a push that loosens guards is refused, and what to do; "" when it
// loosens none. A protected stack's protection dropped is left to protect, which names it.
func relaxedRefusal(changes []run.GuardChange, deployment, file string) string {
	var lines []string
	for _, c := range Relaxed(changes) {
		if c.Setting != GuardProtected {
			lines = append(lines, c.String())
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: the persistent graph applied the stricter setting, and a push never loosens a guard; nothing was changed: plan it (`cairn plan PATH --deployment %s`), review the plan, which shows the relaxation, then approve it (`cairn approve %s PLAN_ID`); or set it back in %s and push again",
		strings.Join(lines, "; "), deployment, deployment, cmp.Or(file, "cairn.yaml"))
}

// takeOverRefusal is why deployment may not take over the graph owned by owner although
// its config names owner in take_over_graph_from: the owner has not consented (its graph
// records no hand_over_graph_to naming deployment). "" when it has.
func takeOverRefusal(prev *state.Graph, owner, deployment string) string {
	if prev.Guards != nil && prev.Guards.HandOverTo == deployment {
		return ""
	}
	had := "records no consent"
	if prev.Guards != nil && prev.Guards.HandOverTo != "" {
		had = "hands it over to deployment " + prev.Guards.HandOverTo + " only"
	}
	return fmt.Sprintf("deployment %s may not take over the persistent graph %s/%s of deployment %s (take_over_graph_from): the graph %s; nothing was changed: the owner consents by setting `hand_over_graph_to: %s` in deployment %s's config and applying it through an approved plan (`cairn plan %s_PATH --deployment %s`, then `cairn approve %s PLAN_ID`); then push %s again",
		deployment, prev.Namespace, prev.Key, owner, had, deployment, owner, strings.ToUpper(owner), owner, owner, deployment)
}

func limit(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
