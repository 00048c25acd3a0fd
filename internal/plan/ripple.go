package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/template"
)

// A ripple is a stack whose inputs come from a stack the same plan changes: its parameters
// are known only after apply. The plan lists those parameters (KnownAfterApply) and the
// resources of its template they feed (Feeds); the apply, once what it reads is applied,
// executes the reviewed change set when its parameters came out as planned, and otherwise
// a new change set only when every change in it is explained by the parameters that
// changed (Explained). Anything else stops the stack for a new review.

// Feeds lists, for each of params, the resources of tpl whose properties read it (by Ref
// or a Fn::Sub variable, anywhere within them), sorted; a parameter no resource reads is
// left out. nil for a template cairn did not read (a template_url).
func Feeds(tpl *template.Template, params []string) map[string][]string {
	if tpl == nil || len(params) == 0 {
		return nil
	}
	out := tpl.Reads(params)
	if len(out) == 0 {
		return nil
	}
	return out
}

// Explained says which changes of a change set made for a ripple the parameters that
// changed (inputs) do not explain, or "" when they explain every one. A change is
// explained when it modifies a resource only because of them: every detail CloudFormation
// gives names a parameter reference to one of inputs, or a reference to (or an attribute
// of) a resource whose change is itself explained; so the replacement of a resource they
// feed, and what that replacement changes in turn, are explained. A resource added or
// removed, a direct modification of the template, or a change CloudFormation gives no
// cause for, is not.
func Explained(changes []run.ResourceChange, inputs []string) string {
	explained := map[string]bool{}
	for again := true; again; {
		again = false
		for _, c := range changes {
			if explained[c.LogicalID] || c.Action != "Modify" || len(c.Causes) == 0 {
				continue
			}
			ok := true
			for _, cause := range c.Causes {
				if !causeExplained(c.LogicalID, cause, inputs, explained) {
					ok = false
					break
				}
			}
			if ok {
				explained[c.LogicalID], again = true, true
			}
		}
	}
	var not []string
	for _, c := range changes {
		if explained[c.LogicalID] {
			continue
		}
		why := c.Action
		if len(c.Causes) > 0 {
			var other []string
			for _, cause := range c.Causes {
				if !causeExplained(c.LogicalID, cause, inputs, explained) {
					other = append(other, cause)
				}
			}
			why += " from " + strings.Join(other, ", ")
		}
		not = append(not, fmt.Sprintf("%s (%s): %s", c.LogicalID, c.Type, why))
	}
	return strings.Join(not, "; ")
}

// RippleStops says why the change set made at apply for ripple s (its inputs came out of
// the apply with other values than planned) is not executed but stopped for a new review,
// or "" when it runs: a change its inputs do not explain (Explained), or, in a protected
// stack, any resource it would replace (Replacement True or Conditional), explained or
// not: a protected stack's resources are replaced only through a plan that showed it.
func RippleStops(s *run.Stack, changes []run.ResourceChange) string {
	if why := Explained(changes, s.Rippled); why != "" {
		return why
	}
	if !s.PlanOnly {
		return ""
	}
	var replaced []string
	for _, c := range changes {
		if c.Replacement == "True" || c.Replacement == "Conditional" {
			replaced = append(replaced, fmt.Sprintf("%s (%s): Replacement %s", c.LogicalID, c.Type, c.Replacement))
		}
	}
	if len(replaced) == 0 {
		return ""
	}
	return "the protected stack would have resources replaced, which no reviewed plan showed: " + strings.Join(replaced, "; ")
}

// causeExplained reports whether one cause of a change of resource id is explained: a
// reference to a parameter of inputs, or to a resource (of the same template: a nested
// stack's resources are named Stack/Resource) whose change is explained.
func causeExplained(id, cause string, inputs []string, explained map[string]bool) bool {
	source, entity, _ := strings.Cut(cause, " ")
	prefix := ""
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		prefix = id[:i+1]
	}
	switch source {
	case "ParameterReference":
		return prefix == "" && slices.Contains(inputs, entity)
	case "ResourceReference", "ResourceAttribute":
		res, _, _ := strings.Cut(entity, ".")
		return res != "" && explained[prefix+res]
	}
	return false
}

// KnownAfterApply names, sorted, the parameters whose output lookups (lookups, a stack's)
// read one of the stacks in changing: those whose values a plan changing them knows only
// after apply.
func KnownAfterApply(lookups []config.Lookup, changing map[string]bool) []string {
	var params []string
	for _, l := range lookups {
		if l.Kind == config.KindOutput && l.Param != "" && changing[l.Stack] && !slices.Contains(params, l.Param) {
			params = append(params, l.Param)
		}
	}
	slices.Sort(params)
	return params
}
