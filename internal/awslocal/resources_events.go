package awslocal

import (
	"context"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
)

// ruleProvider makes AWS::Events::Rule on the default bus or the bus EventBusName names.
func (p *Place) ruleProvider() cfnlocal.Provider {
	install := func(r cfnlocal.Resource) error {
		rl := &rule{schedule: text(r.Props["ScheduleExpression"]), enabled: text(r.Props["State"]) != "DISABLED", description: text(r.Props["Description"])}
		if p, ok := r.Props["EventPattern"]; ok {
			doc := text(p)
			pat, err := patternParse(doc)
			if err != nil {
				return fmt.Errorf("Event pattern is not valid. Reason: %v", err)
			}
			rl.pattern, rl.patternText = pat, doc
		}
		if rl.pattern == nil && rl.schedule == "" {
			return fmt.Errorf("Parameter(s) EventPattern or ScheduleExpression must be specified.")
		}
		targets := list(r.Props["Targets"])
		if len(targets) > maxTargetsPerRule {
			return fmt.Errorf("Rule %s has %d targets; a rule can have at most %d: split them among rules", r.PhysicalID, len(targets), maxTargetsPerRule)
		}
		for _, t := range targets {
			nt, err := parseTarget(object(t))
			if err != nil {
				return err
			}
			rl.targets = append(rl.targets, nt)
		}
		return p.putRuleOn(busName(text(r.Props["EventBusName"])), r.PhysicalID, rl)
	}
	bus := func(r cfnlocal.Resource) string { return busName(text(r.Props["EventBusName"])) }
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			return r.PhysicalID, map[string]any{"Arn": p.ruleARN(bus(r), r.PhysicalID)}, install(r)
		},
		Update: func(_ context.Context, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			if from := busName(text(old["EventBusName"])); from != bus(r) {
				p.deleteRuleOn(from, r.PhysicalID)
			}
			return map[string]any{"Arn": p.ruleARN(bus(r), r.PhysicalID)}, install(r)
		},
		Delete:  func(_ context.Context, r cfnlocal.Resource) error { p.deleteRuleOn(bus(r), r.PhysicalID); return nil },
		Restore: func(_ context.Context, r cfnlocal.Resource) error { return install(r) },
	}
}

// eventBusProvider makes AWS::Events::EventBus: a custom bus of the place, named Name
// (Ref and the Name attribute), whose Policy admits other accounts; deleting it deletes
// its rules.
func (p *Place) eventBusProvider() cfnlocal.Provider {
	install := func(r cfnlocal.Resource, create bool) error {
		name := text(r.Props["Name"])
		if name == "" || name == defaultBus || strings.Contains(name, "/") && !strings.HasPrefix(name, "aws.partner/") {
			return fmt.Errorf("Event bus name %q is not valid: use 1 to 256 letters, digits and .-_ (not default)", name)
		}
		var policy []string
		if doc := object(asJSONValue(r.Props["Policy"])); doc != nil {
			st := doc["Statement"]
			if m := object(st); m != nil {
				st = []any{m}
			}
			policy = policyAccounts(list(st))
		}
		p.e.mu.Lock()
		defer p.e.mu.Unlock()
		b := p.busLocked(name)
		if b != nil && create {
			return fmt.Errorf("Event bus %s already exists.", name)
		}
		if b == nil {
			b = &eventBus{name: name, created: p.e.opts.Clock.Now(), rules: map[string]*rule{}, policy: map[string][]string{}}
			p.buses[name] = b
		}
		b.description = text(r.Props["Description"])
		delete(b.policy, "Policy")
		if policy != nil {
			b.policy["Policy"] = policy
		}
		return nil
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			name := text(r.Props["Name"])
			return name, map[string]any{"Name": name, "Arn": p.busARN(name)}, install(r, true)
		},
		Update: func(_ context.Context, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) {
			return nil, install(r, false)
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error {
			p.deleteBus(r.PhysicalID)
			return nil
		},
		Restore: func(_ context.Context, r cfnlocal.Resource) error { return install(r, false) },
	}
}

// asJSONValue is v, or the JSON document v holds as text.
func asJSONValue(v any) any {
	if s, ok := v.(string); ok {
		return asJSON(s)
	}
	return v
}

func (p *Place) scheduleProvider() cfnlocal.Provider {
	e := p.e
	key := func(r cfnlocal.Resource) string {
		return orDefault(text(r.Props["GroupName"]), "default") + "/" + r.PhysicalID
	}
	install := func(r cfnlocal.Resource) error {
		target := object(r.Props["Target"])
		if text(target["Arn"]) == "" {
			return fmt.Errorf("Target.Arn is required")
		}
		return e.putSchedule(key(r), text(r.Props["ScheduleExpression"]), text(r.Props["ScheduleExpressionTimezone"]),
			text(target["Arn"]), text(target["Input"]), text(r.Props["State"]) != "DISABLED")
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			return r.PhysicalID, nil, install(r)
		},
		Update: func(_ context.Context, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) {
			return nil, install(r)
		},
		Delete:  func(_ context.Context, r cfnlocal.Resource) error { e.deleteSchedule(key(r)); return nil },
		Restore: func(_ context.Context, r cfnlocal.Resource) error { return install(r) },
	}
}
