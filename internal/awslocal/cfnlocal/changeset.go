package cfnlocal

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// noChangesReason is AWS's exact reason for a change set without changes.
const noChangesReason = "The submitted information didn't contain changes. Submit different information to create a change set."

type changeSet struct {
	ID, Name, StackID, StackName string
	Type                         string // CREATE or UPDATE
	Status, ExecutionStatus      string
	StatusReason                 string
	Description                  string
	Created, ReadyAt             time.Time
	Body                         string // processed
	Original                     string // as given, when transforms changed it
	Failure                      string // why its transforms failed
	Params                       map[string]string
	Tags                         []tag
	Capabilities                 []string
	NotificationARNs             []string
	Rollback                     *rollbackConfig
	ClientToken                  string
	Changes                      []change
	ExecToken                    string
	// IncludeNested: the change set has a nested change set per nested stack it adds or
	// changes (Nested, by the nested stack's logical id); ParentID and RootID are those of
	// a nested change set.
	IncludeNested    bool
	Nested           map[string]string
	ParentID, RootID string
	// ToImport are the resources of an IMPORT change set.
	ToImport []toImport `json:",omitempty"`
	// DeploymentMode is REVERT_DRIFT for a drift-aware change set (driftaware.go).
	DeploymentMode string `json:",omitempty"`
}

type change struct {
	Action, LogicalID, PhysicalID, Type, Replacement string
	ChangeSetID                                      string // the nested change set of a nested stack
	Scope                                            []string
	Details                                          []changeDetail
	// Of a drift-aware change set: the resource's drift, its three states as JSON (masked)
	// and the properties whose drift is not compared.
	DriftStatus                                  string             `json:",omitempty"`
	PreviousContext, BeforeContext, AfterContext string             `json:",omitempty"`
	Ignored                                      []ignoredAttribute `json:",omitempty"`
}

type changeDetail struct {
	Attribute, Name, RequiresRecreation, Evaluation, ChangeSource, CausingEntity string
	Drift                                                                        *threeWay `json:",omitempty"` // of a drift-aware change set
}

// ExecutedChangeSet records one ExecuteChangeSet that started a stack operation.
type ExecutedChangeSet struct {
	StackName, StackID, ChangeSetName, ChangeSetID string
	ClientRequestToken                             string
	ExecutedAt                                     time.Time
	Changes                                        int
}

// ExecutedChangeSets lists, oldest first, the change sets that were executed.
func (s *Service) ExecutedChangeSets() []ExecutedChangeSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ExecutedChangeSet(nil), s.st.Executed...)
}

// MadeChangeSet records one CreateChangeSet: when it was made and when it became ready
// (available, or failed as without changes), as the emulator drew its delay.
type MadeChangeSet struct {
	StackName, ChangeSetID string
	Created, ReadyAt       time.Time
}

// MadeChangeSets lists, oldest first, every change set created since the service
// started (in memory only: a restored emulator starts the list again), deleted ones too.
func (s *Service) MadeChangeSets() []MadeChangeSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]MadeChangeSet(nil), s.made...)
}

// addChangeSet keeps a change set just created, and its record.
func (s *Service) addChangeSet(cs *changeSet) {
	s.st.ChangeSets = append(s.st.ChangeSets, cs)
	s.made = append(s.made, MadeChangeSet{StackName: cs.StackName, ChangeSetID: cs.ID, Created: cs.Created, ReadyAt: cs.ReadyAt})
}

func (s *Service) findChangeSet(name, stackName string) *changeSet {
	for i := len(s.st.ChangeSets) - 1; i >= 0; i-- {
		cs := s.st.ChangeSets[i]
		if cs.ID == name {
			return cs
		}
		if cs.Name == name && stackName != "" {
			st := s.findStack(stackName)
			if st != nil && st.ID == cs.StackID {
				return cs
			}
		}
	}
	return nil
}

func (s *Service) changeSetByID(id string) *changeSet {
	if id == "" {
		return nil
	}
	for _, cs := range s.st.ChangeSets {
		if cs.ID == id {
			return cs
		}
	}
	return nil
}

func changeSetNotFound(name string) error {
	return &apiError{Code: "ChangeSetNotFound", Message: fmt.Sprintf("ChangeSet [%s] does not exist", name), Status: 404}
}

func (s *Service) advanceChangeSets(now time.Time) {
	for _, cs := range s.st.ChangeSets {
		if cs.Status == "CREATE_IN_PROGRESS" && !cs.ReadyAt.After(now) {
			s.completeChangeSet(cs)
		}
	}
}

// completeChangeSet computes the changes of a change set whose creation time has come.
func (s *Service) completeChangeSet(cs *changeSet) {
	st := s.byID[cs.StackID]
	fail := func(reason string) {
		cs.Status, cs.ExecutionStatus, cs.StatusReason = "FAILED", "UNAVAILABLE", reason
	}
	if st == nil {
		fail("stack " + cs.StackName + " no longer exists")
		return
	}
	if cs.Failure != "" {
		fail(cs.Failure)
		return
	}
	p, err := s.planChange(st, cs.Body, cs.Params, cs.NotificationARNs)
	if err != nil {
		fail(err.Error())
		return
	}
	cs.Changes = s.diff(st, p)
	if cs.Type == "UPDATE" && cs.DeploymentMode == revertDrift {
		cs.Changes = s.driftAware(st, p, cs.Changes, s.changeSetSecrets(st, cs, p), cs.ReadyAt)
	}
	if cs.Type == "IMPORT" {
		cs.Changes = importChanges(cs.ToImport)
	}
	if cs.Type == "UPDATE" && len(cs.Changes) == 0 && s.sameOutputsAndTags(st, p, cs.Tags) {
		fail(noChangesReason)
		return
	}
	if cs.IncludeNested {
		if why := s.nestedChangeSets(cs, st, p); why != "" {
			for _, id := range cs.Nested {
				if n := s.changeSetByID(id); n != nil {
					s.dropChangeSet(n)
				}
			}
			cs.Nested = nil
			fail(why)
			return
		}
	}
	cs.Status, cs.ExecutionStatus = "CREATE_COMPLETE", "AVAILABLE"
}

func (s *Service) sameOutputsAndTags(st *stack, p *planned, tags []tag) bool {
	return equalJSON(st.Outputs, p.outputs) && equalJSON(st.Tags, tags)
}

// diff lists what applying p to st would change.
func (s *Service) diff(st *stack, p *planned) []change {
	var out []change
	byName := map[string]*change{}
	active := map[string]bool{}
	oldTpl, _ := st.template()
	changedParams := map[string]bool{}
	for _, k := range sortedKeys(union(anyMap(st.Params), anyMap(p.params))) {
		if st.Params[k] != p.params[k] {
			changedParams[k] = true
		}
	}
	for _, name := range p.active {
		active[name] = true
		d := p.tpl.Resources[name]
		cur := st.Resources[name]
		props := p.props[name]
		if cur == nil || cur.Status == "DELETE_COMPLETE" {
			c := change{Action: "Add", LogicalID: name, Type: d.Type}
			out = append(out, c)
			byName[name] = &out[len(out)-1]
			continue
		}
		c := change{Action: "Modify", LogicalID: name, PhysicalID: cur.PhysicalID, Type: d.Type, Replacement: "False"}
		if cur.Type != d.Type {
			c.Replacement = "True"
		}
		rt := resourceTypes[d.Type]
		for _, k := range sortedKeys(union(cur.Props, props)) {
			if equalJSON(cur.Props[k], props[k]) {
				continue
			}
			for _, det := range causes(oldTpl.decl(name).Properties[k], d.Properties[k], p.tpl, changedParams) {
				det.Attribute, det.Name, det.RequiresRecreation = "Properties", k, "Never"
				if strings.Contains(scalarString(props[k]), knownAfterApply) {
					det.Evaluation, det.ChangeSource, det.CausingEntity = "Dynamic", "ResourceReference", ""
				}
				if rt.requiresReplacement(k) {
					det.RequiresRecreation = "Always"
					if det.Evaluation == "Dynamic" {
						det.RequiresRecreation = "Conditionally"
						if c.Replacement == "False" {
							c.Replacement = "Conditional"
						}
					} else {
						c.Replacement = "True"
					}
				}
				c.Details = append(c.Details, det)
			}
		}
		if len(c.Details) == 0 && d.Type == nestedType && s.nestedTemplateChanged(cur, props) {
			// the same TemplateURL may hold another template now
			c.Details = append(c.Details, changeDetail{Attribute: "Properties", Name: "TemplateURL", RequiresRecreation: "Never",
				Evaluation: "Dynamic", ChangeSource: "Automatic"})
		}
		if len(c.Details) == 0 && cur.Type == d.Type {
			continue
		}
		c.Scope = []string{"Properties"}
		out = append(out, c)
		byName[name] = &out[len(out)-1]
	}
	// resources that reference a replaced resource change too
	for _, name := range p.active {
		if c := byName[name]; c != nil && c.Action == "Add" {
			continue
		}
		for _, dep := range p.tpl.deps(name) {
			dc := byName[dep]
			if dc == nil || dc.Replacement != "True" {
				continue
			}
			if byName[name] == nil {
				cur := st.Resources[name]
				out = append(out, change{Action: "Modify", LogicalID: name, PhysicalID: cur.PhysicalID, Type: cur.Type, Replacement: "False", Scope: []string{"Properties"}})
				byName[name] = &out[len(out)-1]
			}
			c := byName[name]
			c.Details = append(c.Details, changeDetail{Attribute: "Properties", RequiresRecreation: "Conditionally", Evaluation: "Dynamic", ChangeSource: "ResourceReference", CausingEntity: dep})
			if c.Replacement == "False" {
				c.Replacement = "Conditional"
			}
		}
	}
	for _, name := range sortedKeys(st.Resources) {
		r := st.Resources[name]
		if !active[name] && r.Status != "DELETE_COMPLETE" {
			out = append(out, change{Action: "Remove", LogicalID: name, PhysicalID: r.PhysicalID, Type: r.Type})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LogicalID < out[j].LogicalID })
	return out
}

// obsoleteChangeSets marks the stack's remaining change sets OBSOLETE after an update that
// did not come from them.
func (s *Service) obsoleteChangeSets(st *stack) {
	for _, cs := range s.st.ChangeSets {
		if cs.StackID == st.ID && cs.ExecutionStatus != "EXECUTE_COMPLETE" && cs.ExecutionStatus != "EXECUTE_IN_PROGRESS" && cs.ExecutionStatus != "EXECUTE_FAILED" {
			if cs.Status == "CREATE_COMPLETE" || cs.Status == "CREATE_IN_PROGRESS" {
				if cs.Status == "CREATE_IN_PROGRESS" {
					s.completeChangeSet(cs)
				}
				cs.ExecutionStatus = "OBSOLETE"
			}
		}
	}
}

// updateChangeSetExecution mirrors the stack's operation outcome onto its executed change set.
func (s *Service) updateChangeSetExecution() {
	for _, cs := range s.st.ChangeSets {
		if cs.ExecutionStatus != "EXECUTE_IN_PROGRESS" {
			continue
		}
		st := s.byID[cs.StackID]
		if st == nil || st.inProgress() {
			continue
		}
		switch st.Status {
		case "CREATE_COMPLETE", "UPDATE_COMPLETE":
			cs.ExecutionStatus = "EXECUTE_COMPLETE"
		default:
			cs.ExecutionStatus = "EXECUTE_FAILED"
		}
	}
}

// causes says why a property's value changed, as CloudFormation's change details do: its
// template expression was edited (DirectModification), and/or a parameter it references
// got another value (ParameterReference, naming the parameter as CausingEntity).
func causes(oldRaw, newRaw any, tpl *template, changedParams map[string]bool) []changeDetail {
	var out []changeDetail
	if !equalJSON(oldRaw, newRaw) {
		out = append(out, changeDetail{Evaluation: "Static", ChangeSource: "DirectModification"})
	}
	var params []string
	_ = tpl.walkRefs(newRaw, func(kind, target string) error {
		if _, isParam := tpl.Parameters[target]; kind == "Ref" && isParam && changedParams[target] {
			params = append(params, target)
		}
		return nil
	})
	sort.Strings(params)
	for _, p := range dedupe(params) {
		out = append(out, changeDetail{Evaluation: "Static", ChangeSource: "ParameterReference", CausingEntity: p})
	}
	if len(out) == 0 {
		// The value changed for another reason (a resource it references, an export it
		// imports): CloudFormation names the modification itself.
		out = append(out, changeDetail{Evaluation: "Static", ChangeSource: "DirectModification"})
	}
	return out
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
