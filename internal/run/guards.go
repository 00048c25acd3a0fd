package run

import (
	"cmp"
	"fmt"
)

// Guards are the graph-wide guard settings a run applies, recorded in the persistent graph
// once the run writes it: what the next run's config is judged against (the stricter of the
// two holds, and relaxing one is reviewed). Stack-wide guards (protected, termination
// protection, roles) are recorded with each stack.
type Guards struct {
	// MaxDeletions is deletion_policy.max_deletions (0: no limit).
	MaxDeletions int `json:"max_deletions,omitempty"`
	// HandOverTo is hand_over_graph_to: the deployment the owner consents may take the
	// graph over (take_over_graph_from). "": none may.
	HandOverTo string `json:"hand_over_graph_to,omitempty"`
}

// GuardChange is one guard setting a run changes from what the graph last applied:
// graph-wide (Stack "") or of one stack. Relaxed says it loosens the guard (or, for a role,
// changes who acts): such a change is made only through an approved plan.
type GuardChange struct {
	Stack   string `json:"stack,omitempty"`
	Setting string `json:"setting"`
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
	Relaxed bool   `json:"relaxed,omitempty"`
}

// String reads "guard relaxed: deletion_policy.max_deletions 3 → (none)" or "stack db:
// service_role arn:…/old → arn:…/new (guard relaxed)". A role changed on a stack that is
// not protected is neither relaxed nor tightened: "stack web: service_role A → B".
func (c GuardChange) String() string {
	how := "guard tightened"
	switch {
	case c.Relaxed:
		how = "guard relaxed"
	case c.Setting == "service_role" || c.Setting == "role_arn":
		how = ""
	}
	change := fmt.Sprintf("%s %s → %s", c.Setting, cmp.Or(c.From, "(none)"), cmp.Or(c.To, "(none)"))
	switch {
	case c.Stack == "":
		return how + ": " + change
	case how == "":
		return "stack " + c.Stack + ": " + change
	}
	return fmt.Sprintf("stack %s: %s (%s)", c.Stack, change, how)
}

// Same reports whether c and o are the same change of the same setting.
func (c GuardChange) Same(o GuardChange) bool {
	return c.Stack == o.Stack && c.Setting == o.Setting && c.From == o.From && c.To == o.To
}
