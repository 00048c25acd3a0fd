package drift

import (
	"fmt"
	"time"

	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
)

// PlanMaxAge is how old a drift report a plan relies on may be: the sweep's schedule runs
// daily by default, so the last sweep's report is at most a day old when sweeps run.
const PlanMaxAge = 24 * time.Hour

// ForPlan is what report r, the newest of a deployment's drift reports (at key), says
// changed outside cairn in stack name (CloudFormation stackName), as a plan records it
// (plan.Stack.SettleDrift): each drifted resource not ignored by drift.ignore, with its
// properties (what the last deployment set, what is there now; secret values masked as
// the report masks them), and where it comes from. ok is false when r is nil, older than
// maxAge at now, or did not check the stack: a plan then knows nothing of its drift.
func ForPlan(r *Report, key string, name, stackName string, now time.Time, maxAge time.Duration) (found []plan.ResourceDrift, from string, ok bool) {
	if r == nil || r.Graph == nil || now.Sub(r.WrittenAt) > maxAge {
		return nil, "", false
	}
	for _, s := range r.Graph.Stacks {
		if s.Name != name || s.StackName != stackName || (s.Status != Drifted && s.Status != InSync) {
			continue
		}
		for _, res := range s.Resources {
			if res.Ignored != "" {
				continue
			}
			rd := plan.ResourceDrift{LogicalID: res.LogicalID, Type: res.Type, Status: res.Status}
			for _, d := range res.Differences {
				pd := plan.PropertyDrift{Property: d.Path, Previous: d.Expected, Actual: d.Actual}
				if d.Masked {
					pd.Previous, pd.Actual = masked, masked
				}
				rd.Properties = append(rd.Properties, pd)
			}
			found = append(found, rd)
		}
		return found, fmt.Sprintf("drift report %s of %s", key, clock.Stamp(r.WrittenAt)), true
	}
	return nil, "", false
}

// Detected is what a drift detection made while planning found in stack name (CloudFormation
// stackName) of the planned config cfg, as a plan records it (plan.Stack.SettleDrift): its
// modified and deleted resources but those drift.ignore ignores, each property's values
// masked where a secret reaches it (as a sweep's report masks them: every value when the
// stack's template is not known).
func Detected(cfg *config.Config, name, stackName string, found []Resource) []plan.ResourceDrift {
	s := &Stack{Name: name, StackName: stackName, Resources: found}
	var ignore []string
	if cfg != nil {
		s.Secrets = secretsOf(cfg, cfg.Secrecy(nil), name)
		ignore = cfg.Drift.Ignore
	} else {
		s.Secrets = map[string][]string{"*": {"*"}}
	}
	maskSecrets(s)
	var out []plan.ResourceDrift
	for _, res := range s.Resources {
		if matchIgnore(ignore, res.LogicalID, name+"/"+res.LogicalID, stackName+"/"+res.LogicalID) != "" {
			continue
		}
		rd := plan.ResourceDrift{LogicalID: res.LogicalID, Type: res.Type, Status: res.Status}
		for _, d := range res.Differences {
			rd.Properties = append(rd.Properties, plan.PropertyDrift{Property: d.Path, Previous: d.Expected, Actual: d.Actual})
		}
		out = append(out, rd)
	}
	return out
}
