package awslocal

import (
	"context"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
)

func (p *Place) ruleProvider() cfnlocal.Provider {
	install := func(r cfnlocal.Resource) error {
		if bus := text(r.Props["EventBusName"]); bus != "" && bus != "default" && !strings.HasSuffix(bus, ":event-bus/default") {
			return fmt.Errorf("event bus %s: the emulator serves the default event bus only", bus)
		}
		rl := &rule{schedule: text(r.Props["ScheduleExpression"]), enabled: text(r.Props["State"]) != "DISABLED"}
		if p, ok := r.Props["EventPattern"]; ok {
			doc := text(p)
			pat, err := patternParse(doc)
			if err != nil {
				return fmt.Errorf("Event pattern is not valid. Reason: %v", err)
			}
			rl.pattern = pat
		}
		if rl.pattern == nil && rl.schedule == "" {
			return fmt.Errorf("Parameter(s) EventPattern or ScheduleExpression must be specified.")
		}
		for _, t := range list(r.Props["Targets"]) {
			m := object(t)
			for _, unsupported := range []string{"InputPath", "InputTransformer"} {
				if _, ok := m[unsupported]; ok {
					return fmt.Errorf("target %s: %s is not emulated (Input is)", text(m["Id"]), unsupported)
				}
			}
			rl.targets = append(rl.targets, ruleTarget{ID: text(m["Id"]), ARN: text(m["Arn"]), Input: text(m["Input"])})
		}
		return p.putRule(r.PhysicalID, rl)
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			return r.PhysicalID, nil, install(r)
		},
		Update: func(_ context.Context, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) {
			return nil, install(r)
		},
		Delete:  func(_ context.Context, r cfnlocal.Resource) error { p.deleteRule(r.PhysicalID); return nil },
		Restore: func(_ context.Context, r cfnlocal.Resource) error { return install(r) },
	}
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
