package cfnlocal

import (
	"fmt"
	"slices"
	"strings"
)

// Nested change sets: a change set created with IncludeNestedStacks gets, for each nested
// stack it adds or changes, a change set of the child (ParentChangeSetId and
// RootChangeSetId set, its id in the parent's change of the nested stack), recursively. A
// nested stack the change set adds is created in REVIEW_IN_PROGRESS for it, as AWS does,
// and executing the root adopts it. Only the root is executed or deleted; a nested change
// set that cannot be made fails the root.

// nestedChangeSets makes the nested change sets of cs, whose changes are computed from p;
// it returns the failure of the root, "" if none. Called with mu held.
func (s *Service) nestedChangeSets(cs *changeSet, st *stack, p *planned) string {
	cs.Nested = map[string]string{}
	for i := range cs.Changes {
		c := &cs.Changes[i]
		if c.Type != nestedType || (c.Action != "Add" && c.Action != "Modify") {
			continue
		}
		props := p.props[c.LogicalID]
		url := scalarString(props["TemplateURL"])
		if strings.Contains(url, knownAfterApply) {
			continue // known when the parent runs
		}
		body, err := s.fetchTemplate(url)
		if err != nil {
			return fmt.Sprintf("Nested change set for %s was not successfully created: %v", c.LogicalID, err)
		}
		params := nestedParams(props["Parameters"])
		child := s.byID[c.PhysicalID]
		typ := "UPDATE"
		if c.Action == "Add" || child == nil {
			typ = "CREATE"
			name := st.Name + "-" + c.LogicalID
			if len(name) > 128-14 {
				name = name[:128-14]
			}
			child = &stack{Name: name + "-" + hashUpper(13, cs.ID, c.LogicalID), Seq: s.nextSeq(), Created: cs.Created,
				Resources: map[string]*resource{}, ParentID: st.ID, RootID: rootOf(st), Tags: cs.Tags, Capabilities: cs.Capabilities,
				NotificationARNs: cs.NotificationARNs, Params: params}
			child.ID = s.stackARN(child.Name)
		}
		n := &changeSet{Name: cs.Name + "-" + c.LogicalID, StackID: child.ID, StackName: child.Name, Type: typ,
			Status: "CREATE_COMPLETE", ExecutionStatus: "AVAILABLE", Description: cs.Description, Created: cs.Created, ReadyAt: cs.ReadyAt,
			Params: params, Tags: cs.Tags, Capabilities: cs.Capabilities, NotificationARNs: cs.NotificationARNs,
			IncludeNested: true, ParentID: cs.ID, RootID: orDefault(cs.RootID, cs.ID)}
		n.ID = fmt.Sprintf("arn:aws:cloudformation:%s:%s:changeSet/%s/%s", s.o.Region, s.o.AccountID, n.Name, hashUUID("cs", child.ID, n.Name, fmt.Sprint(s.nextSeq())))
		cp, err := s.planNested(child, body, params)
		if err != nil {
			return fmt.Sprintf("Nested change set %s was not successfully created: Currently in FAILED with reason: %v", n.ID, err)
		}
		n.Body, n.Original = cp.body, cp.original
		if typ == "CREATE" {
			child.Body, child.Original, child.tpl, child.Description = cp.body, cp.original, cp.tpl, cp.tpl.Description
			s.st.Stacks = append(s.st.Stacks, child)
			s.byID[child.ID] = child
			s.setStatus(child, cs.Created, "REVIEW_IN_PROGRESS", "User Initiated")
		}
		n.Changes = s.diff(child, cp)
		s.st.ChangeSets = append(s.st.ChangeSets, n)
		cs.Nested[c.LogicalID], c.ChangeSetID = n.ID, n.ID
		if why := s.nestedChangeSets(n, child, cp); why != "" {
			return why
		}
	}
	return ""
}

// dropChangeSet removes a change set with its nested change sets, and the stacks made in
// REVIEW_IN_PROGRESS for them. Called with mu held.
func (s *Service) dropChangeSet(cs *changeSet) {
	for _, id := range sortedKeys(cs.Nested) {
		if n := s.changeSetByID(cs.Nested[id]); n != nil {
			s.dropChangeSet(n)
			if child := s.byID[n.StackID]; child != nil && child.Status == "REVIEW_IN_PROGRESS" && n.ExecutionStatus == "AVAILABLE" {
				s.setStatus(child, s.clk.Now(), "DELETE_COMPLETE", "")
			}
		}
	}
	s.st.ChangeSets = slices.DeleteFunc(s.st.ChangeSets, func(o *changeSet) bool { return o == cs })
}

// executeNested marks the nested change set of a nested stack the root's execution
// updates as executing it, and returns it (nil when there is none).
func (s *Service) executeNested(op *operation, logicalID string, child *stack) *changeSet {
	cs := s.changeSetByID(op.ChangeSetID)
	if cs == nil {
		return nil
	}
	n := s.changeSetByID(cs.Nested[logicalID])
	if n == nil || n.StackID != child.ID {
		return nil
	}
	n.ExecutionStatus = "EXECUTE_IN_PROGRESS"
	child.ChangeSetID = n.ID
	return n
}
