package cfnlocal

import (
	"encoding/json"
	"sort"
	"time"
)

// Drift-aware change sets (CreateChangeSet with DeploymentMode REVERT_DRIFT), as AWS
// documents them in the CloudFormation API reference (CreateChangeSet, DescribeChangeSet,
// ResourceChange, ResourceTargetDefinition, LiveResourceDrift) and the user guide's
// "Using drift-aware change sets":
//
//   - the change set compares three states of every resource the stack has: its actual
//     state, read when the change set is made; its previous deployment (the properties the
//     stack last set); and the desired state (the new template);
//   - each property whose actual value differs from the previous deployment is drifted:
//     its target's BeforeValue is the actual value (BeforeValueFrom ACTUAL_STATE) and its
//     Drift carries ActualValue and PreviousValue; when the new template wants the actual
//     value, the property is SyncWithActual (nothing is touched, the drift is reset), else
//     executing the change set brings it back to the template's value, even when the
//     template did not change it;
//   - a property that did not drift but changes in the template compares the previous
//     deployment with the template (BeforeValueFrom PREVIOUS_DEPLOYMENT_STATE);
//   - a resource whose every change is SyncWithActual has the action SyncWithActual; a
//     resource change carries ResourceDriftStatus (IN_SYNC, MODIFIED, DELETED, or
//     UNSUPPORTED for a type whose actual state is not compared: custom resources and
//     nested stacks here) and PreviousDeploymentContext; a property holding a dynamic
//     reference is left out (ResourceDriftIgnoredAttributes, SENSITIVE_PROPERTY);
//   - a resource deleted out of band (its actual state cannot be read) is DELETED, and the
//     change set re-creates it (Action Add) from the template;
//   - a failed execution rolls back to the actual state from before it (the rollback
//     restores the resources as they were, out-of-band changes included).
//
// Every value shown is masked of the stack's NoEcho values, old and new.

const revertDrift = "REVERT_DRIFT"

// deploymentModes are the values DeploymentMode takes (the API reference's enum).
var deploymentModes = []string{revertDrift}

// threeWay is what a drift-aware change set shows of a property.
type threeWay struct {
	Path, ChangeType         string
	BeforeValue, AfterValue  *string `json:",omitempty"`
	BeforeFrom, AfterFrom    string
	Actual, Previous         *string `json:",omitempty"`
	DriftAt                  time.Time
	Drifted, TemplateChanged bool
}

type ignoredAttribute struct{ Path, Reason string }

// driftAware turns the template changes of a REVERT_DRIFT change set into its
// three-way changes, reading each resource's actual state now.
func (s *Service) driftAware(st *stack, p *planned, base []change, secrets map[string]bool, now time.Time) []change {
	byName := map[string]int{}
	for i, c := range base {
		byName[c.LogicalID] = i
	}
	out := base
	for _, name := range p.active {
		cur := st.Resources[name]
		decl := p.tpl.Resources[name]
		if cur == nil || cur.Status == "DELETE_COMPLETE" || cur.Type != decl.Type {
			continue
		}
		i, has := byName[name]
		if isCustomType(cur.Type) || cur.Type == nestedType {
			if has {
				out[i].DriftStatus = "UNSUPPORTED"
			}
			continue
		}
		actual, found := s.readLive(st, cur)
		if !found {
			// Deleted out of band: the change set re-creates it from the template.
			c := change{Action: "Add", LogicalID: name, Type: cur.Type, DriftStatus: "DELETED", PreviousContext: contextOf(cur.Props, secrets)}
			if has {
				out[i] = c
			} else {
				out = append(out, c)
				byName[name] = len(out) - 1
			}
			continue
		}
		var c change
		if has {
			c = out[i]
		} else {
			c = change{Action: "Modify", LogicalID: name, PhysicalID: cur.PhysicalID, Type: cur.Type, Replacement: "False", Scope: []string{"Properties"}}
		}
		if !s.compareThreeWays(&c, cur, actual, p.props[name], secrets, now) {
			continue
		}
		if has {
			out[i] = c
		} else {
			out = append(out, c)
			byName[name] = len(out) - 1
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LogicalID < out[j].LogicalID })
	return out
}

// compareThreeWays rewrites c's property details as three-way ones; it reports whether
// the resource has anything to show (a template change or drift).
func (s *Service) compareThreeWays(c *change, cur *resource, actual, desired map[string]any, secrets map[string]bool, now time.Time) bool {
	prev := orEmpty(cur.Props)
	desired = orEmpty(desired)
	rt := resourceTypes[cur.Type]
	drifted, needsChange := false, false
	seen := copyProps(actual) // the actual state as shown
	if seen == nil {
		seen = map[string]any{}
	}
	var details []changeDetail
	byProp := map[string][]changeDetail{}
	for _, d := range c.Details {
		if d.Name == "" {
			details = append(details, d) // a replaced resource it references
			needsChange = true
			continue
		}
		byProp[d.Name] = append(byProp[d.Name], d)
	}
	c.Ignored = nil
	for _, k := range sortedKeys(union(prev, desired)) {
		pv, pin := prev[k]
		av, ain := actual[k]
		dv, din := desired[k]
		if hasDynamicRef(pv) || hasDynamicRef(dv) {
			// Its actual value is a secret's: not compared, not shown.
			c.Ignored = append(c.Ignored, ignoredAttribute{Path: "/Properties/" + k, Reason: "SENSITIVE_PROPERTY"})
			av, ain = pv, pin
			seen[k] = pv
			if !pin {
				delete(seen, k)
			}
		}
		tw := threeWay{Path: "/Properties/" + k, AfterFrom: "TEMPLATE", DriftAt: now,
			Drifted:         pin != ain || len(propDiffs("", pv, av)) > 0,
			TemplateChanged: pin != din || !equalJSON(pv, dv)}
		if !tw.Drifted && !tw.TemplateChanged {
			continue
		}
		before, bin := pv, pin
		tw.BeforeFrom = "PREVIOUS_DEPLOYMENT_STATE"
		if tw.Drifted {
			drifted = true
			before, bin, tw.BeforeFrom = av, ain, "ACTUAL_STATE"
			tw.Actual, tw.Previous = shown(av, ain, secrets), shown(pv, pin, secrets)
		}
		tw.BeforeValue, tw.AfterValue = shown(before, bin, secrets), shown(dv, din, secrets)
		switch {
		case tw.Drifted && ain == din && len(propDiffs("", av, dv)) == 0:
			tw.ChangeType = "SyncWithActual"
		case !bin:
			tw.ChangeType = "Add"
		case !din:
			tw.ChangeType = "Remove"
		default:
			tw.ChangeType = "Modify"
		}
		if tw.ChangeType != "SyncWithActual" {
			needsChange = true
		}
		ds := byProp[k]
		if len(ds) == 0 {
			ds = []changeDetail{{Attribute: "Properties", Name: k, RequiresRecreation: "Never", Evaluation: "Static", ChangeSource: "DirectModification"}}
			if rt.requiresReplacement(k) && tw.ChangeType != "SyncWithActual" {
				ds[0].RequiresRecreation, c.Replacement = "Always", "True"
			}
		}
		for _, d := range ds {
			t := tw
			d.Drift = &t
			details = append(details, d)
		}
	}
	c.Details = details
	c.DriftStatus = "IN_SYNC"
	if drifted {
		c.DriftStatus = "MODIFIED"
	}
	c.PreviousContext = contextOf(prev, secrets)
	c.BeforeContext = contextOf(seen, secrets)
	c.AfterContext = contextOf(desired, secrets)
	if !needsChange {
		c.Action, c.Replacement = "SyncWithActual", ""
	}
	return len(details) > 0
}

// shown is a property value as a change set shows it: a scalar as its text, a list or an
// object as JSON, secrets masked; nil when the property is not set.
func shown(v any, set bool, secrets map[string]bool) *string {
	if !set {
		return nil
	}
	t := maskSecrets(jsonScalar(v), secrets)
	return &t
}

func contextOf(props map[string]any, secrets map[string]bool) string {
	b, _ := json.Marshal(map[string]any{"Properties": orEmpty(props)})
	return maskSecrets(string(b), secrets)
}

// changeSetSecrets are the NoEcho values a change set's descriptions mask: the stack's
// and those of the change set's own template and parameters.
func (s *Service) changeSetSecrets(st *stack, cs *changeSet, p *planned) map[string]bool {
	out := s.secretsOf(st)
	noEchoValues(out, p.tpl, cs.Params)
	return out
}

// changeSetOp is the update an UPDATE change set's execution runs: the template's
// changes, and for a drift-aware change set also each resource it brings back or syncs.
func (s *Service) changeSetOp(st *stack, p *planned, cs *changeSet, token string) *operation {
	op := s.updateOp(st, p, token)
	if cs.DeploymentMode != revertDrift {
		return op
	}
	stepOf := map[string]step{}
	for _, sp := range op.Steps {
		stepOf[sp.LogicalID] = sp
	}
	for _, c := range cs.Changes {
		if c.DriftStatus == "DELETED" && c.Action == "Add" {
			stepOf[c.LogicalID] = step{Action: "create", LogicalID: c.LogicalID} // a new physical resource
			continue
		}
		if _, ok := stepOf[c.LogicalID]; !ok && (c.Action == "Modify" || c.Action == "SyncWithActual") {
			stepOf[c.LogicalID] = step{Action: "modify", LogicalID: c.LogicalID}
		}
	}
	op.Steps = op.Steps[:0]
	for _, n := range p.active {
		if sp, ok := stepOf[n]; ok {
			op.Steps = append(op.Steps, sp)
		}
	}
	return op
}

// takeOver gives the properties a resource has before an update step changes it. A
// drift-aware execution drops the resource's out-of-band changes (Tamper's) and starts
// from what its service holds, so its provider is asked for every property that differs
// from the template: a drifted one is brought back, and one the template now sets to its
// drifted value is written as it was seen (in AWS, it already is; here the service may
// not hold what Tamper made it look like). The rollback restores the resource as it was.
func (s *Service) takeOver(st *stack, op *operation, cur *resource) map[string]any {
	cs := s.changeSetByID(op.ChangeSetID)
	if cs == nil || cs.DeploymentMode != revertDrift || isCustomType(cur.Type) || cur.Type == nestedType {
		return cur.Props
	}
	cur.Tampered = nil
	if live, found := s.readLive(st, cur); found {
		return live
	}
	return cur.Props
}
