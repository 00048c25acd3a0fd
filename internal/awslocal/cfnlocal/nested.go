package cfnlocal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Nested stacks (AWS::CloudFormation::Stack) are real child stacks, as in AWS: created from
// the template at TemplateURL in the emulator's S3 (a missing object fails the resource with
// S3's Access Denied, as AWS's does), with their own events and outputs
// (!GetAtt Child.Outputs.X), the child's stack ARN as physical id, and updated, rolled back
// and deleted with their parent. The parent's step waits for the child's operation; the
// child tells its parent when it settles (nestedSettled).

const nestedType = "AWS::CloudFormation::Stack"

// nestedResult is how a child's operation ended for the parent step waiting on it.
type nestedResult struct {
	Failure string
}

// s3AccessDenied is what AWS says when a nested stack's template cannot be read (a missing
// object reads as Access Denied to whoever may not list the bucket).
const s3AccessDenied = "S3 error: Access Denied\nFor more information check http://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html"

// fetchTemplate reads the template at url from the emulator's S3.
func (s *Service) fetchTemplate(url string) (string, error) {
	bucket, key, err := parseS3URL(url)
	if err != nil {
		return "", err
	}
	if s.o.GetObject == nil {
		return "", invalidf("%s", s3AccessDenied)
	}
	b, err := s.o.GetObject(context.Background(), bucket, key)
	if err != nil {
		return "", invalidf("%s", s3AccessDenied)
	}
	return string(b), nil
}

// nestedParams are the child's parameter values from the resource's Parameters property:
// lists become comma-separated, as CloudFormation passes them.
func nestedParams(v any) map[string]string {
	out := map[string]string{}
	m, _ := v.(map[string]any)
	for k, x := range m {
		out[k] = paramString(x)
	}
	return out
}

// nestedName is the name AWS gives a nested stack: parent, logical id and a random suffix.
func nestedName(parent *stack, r *resource) string {
	suffix := hashUpper(13, r.Seed)
	base := parent.Name + "-" + r.LogicalID
	if len(base)+14 > 128 {
		base = base[:128-14]
	}
	return base + "-" + suffix
}

func rootOf(st *stack) string { return orDefault(st.RootID, st.ID) }

// beginNested starts the child operation of a nested stack step (reqType Create, Update or
// Delete), or fails the step. Called with mu held from beginStep.
func (s *Service) beginNested(st *stack, r *resource, reqType string, revert bool, t time.Time) {
	op := st.Op
	op.NestedID, op.NestedResult = "", nil
	fail := func(reason string) { op.Fail, op.Due = reason, t }
	wait := func(child *stack) {
		op.NestedID = child.ID
		op.Due = t.Add(24 * time.Hour) // until the child settles (nestedSettled)
	}
	switch reqType {
	case "Create":
		body, err := s.fetchTemplate(scalarString(r.Props["TemplateURL"]))
		if err != nil {
			fail(err.Error())
			return
		}
		params := nestedParams(r.Props["Parameters"])
		child := s.adoptNested(op, r.LogicalID)
		if child == nil {
			child = &stack{Name: nestedName(st, r), Seq: s.nextSeq(), Created: t, Resources: map[string]*resource{}}
			child.ID = s.stackARN(child.Name)
		}
		child.ParentID, child.RootID, child.Params = st.ID, rootOf(st), params
		child.Tags, child.Capabilities, child.DisableRollback = st.Tags, st.Capabilities, st.DisableRollback
		child.NotificationARNs = st.NotificationARNs
		if arns, ok := r.Props["NotificationARNs"].([]any); ok {
			child.NotificationARNs = nil
			for _, a := range arns {
				child.NotificationARNs = append(child.NotificationARNs, scalarString(a))
			}
		}
		p, err := s.planNested(child, body, params)
		if err != nil {
			fail(reasonOf(err))
			return
		}
		child.Body, child.Original, child.tpl, child.Description, child.Imports = p.body, p.original, p.tpl, p.tpl.Description, p.imports
		if s.byID[child.ID] == nil {
			s.st.Stacks = append(s.st.Stacks, child)
			s.byID[child.ID] = child
		}
		r.PhysicalID = child.ID
		wait(child)
		child.LastClientToken = op.Token
		s.setStatus(child, t, "CREATE_IN_PROGRESS", "User Initiated")
		cop := s.createOp(p, op.Token, false)
		cop.ChangeSetID = child.ChangeSetID // the nested change set it executes, if any
		s.startOp(child, cop, t)
	case "Update":
		child := s.byID[r.PhysicalID]
		if child == nil || child.deleted() {
			fail(fmt.Sprintf("Nested stack %s does not exist", r.PhysicalID))
			return
		}
		if revert {
			// the parent rolls back: a child whose update completed is rolled back too;
			// one whose update failed rolled itself back already
			if child.Undo == nil {
				return
			}
			child.Op, child.Undo = child.Undo, nil
			s.touch(child)
			wait(child)
			s.startUpdateRollback(child, "", t)
			s.poke(t)
			return
		}
		body, err := s.fetchTemplate(scalarString(r.Props["TemplateURL"]))
		if err != nil {
			fail(err.Error())
			return
		}
		params := nestedParams(r.Props["Parameters"])
		p, err := s.planNested(child, body, params)
		if err != nil {
			fail(reasonOf(err))
			return
		}
		if len(s.diff(child, p)) == 0 && s.sameOutputsAndTags(child, p, st.Tags) {
			child.Undo = nil
			s.touch(child)
			return // nothing changes in the child
		}
		if err := s.checkUpdatable(child); err != nil {
			fail(err.Error())
			return
		}
		child.Tags, child.Undo = st.Tags, nil
		s.touch(child)
		wait(child)
		n := s.executeNested(op, r.LogicalID, child)
		s.obsoleteChangeSets(child)
		child.Updated, child.LastClientToken = t, op.Token
		cop := s.updateOp(child, p, op.Token)
		if n != nil {
			cop.ChangeSetID = n.ID
		}
		s.setStatus(child, t, "UPDATE_IN_PROGRESS", "User Initiated")
		s.startOp(child, cop, t)
	case "Delete":
		child := s.byID[r.PhysicalID]
		if child == nil || child.deleted() {
			return
		}
		wait(child)
		s.startDelete(child, t, op.Token)
		if child.Status != "DELETE_IN_PROGRESS" && !child.deleted() {
			op.NestedID = ""
			fail(fmt.Sprintf("Embedded stack %s was not successfully deleted: %s", child.ID, child.Reason))
		}
	}
}

// reasonOf is an API error's message, as a failed resource's reason shows it.
func reasonOf(err error) string {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Message
	}
	return err.Error()
}

// adoptNested returns the child a nested change set made for logicalID (in
// REVIEW_IN_PROGRESS), if the operation executes one.
func (s *Service) adoptNested(op *operation, logicalID string) *stack {
	cs := s.changeSetByID(op.ChangeSetID)
	if cs == nil {
		return nil
	}
	nested := s.changeSetByID(cs.Nested[logicalID])
	if nested == nil {
		return nil
	}
	child := s.byID[nested.StackID]
	if child == nil || child.Status != "REVIEW_IN_PROGRESS" {
		return nil
	}
	nested.ExecutionStatus = "EXECUTE_IN_PROGRESS"
	child.ChangeSetID = nested.ID
	return child
}

// planNested processes and plans a child's template with the checks CreateStack makes.
func (s *Service) planNested(child *stack, body string, params map[string]string) (*planned, error) {
	processed, err := s.process(child, body, params)
	if err != nil {
		return nil, err
	}
	p, err := s.plan(child, processed, params, child.NotificationARNs)
	if err != nil {
		return nil, err
	}
	p.original = originalOr(body, processed)
	if err := s.checkImports(child, p); err != nil {
		return nil, err
	}
	if err := checkCapabilities(p.tpl, child.Capabilities); err != nil {
		return nil, err
	}
	return p, nil
}

// nestedSettled tells the parent of a nested stack that reached status at (a status no
// longer in progress) how the child's operation ended. Called with mu held.
func (s *Service) nestedSettled(child *stack, status string, at time.Time) {
	parent := s.byID[child.ParentID]
	if parent == nil || parent.Op == nil || parent.Op.NestedID != child.ID || !parent.Op.Started {
		return
	}
	op := parent.Op
	sp := op.Steps[op.Cur]
	reason := lastReason(child)
	res := &nestedResult{}
	switch {
	case sp.Action == "revert" && op.OldResources[sp.LogicalID] != nil:
		if status != "UPDATE_ROLLBACK_COMPLETE" {
			res.Failure = fmt.Sprintf("Embedded stack %s was not successfully updated. Currently in %s with reason: %s", child.ID, status, reason)
		}
	case sp.Action == "delete" || sp.Action == "deleteOld" || sp.Action == "revert":
		if status != "DELETE_COMPLETE" {
			res.Failure = fmt.Sprintf("Embedded stack %s was not successfully deleted: %s", child.ID, reason)
		}
	case status == "CREATE_COMPLETE" || status == "UPDATE_COMPLETE":
	case strings.HasPrefix(status, "UPDATE"):
		res.Failure = fmt.Sprintf("Embedded stack %s was not successfully updated. Currently in %s with reason: %s", child.ID, status, reason)
	default:
		res.Failure = fmt.Sprintf("Embedded stack %s was not successfully created: %s", child.ID, reason)
	}
	op.NestedResult = res
	op.Due = at
	s.touch(parent)
	s.poke(at)
}

// lastReason is the reason of the stack's last status that gave one.
func lastReason(st *stack) string {
	for i := len(st.Events) - 1; i >= 0; i-- {
		ev := st.Events[i]
		if ev.LogicalID == st.Name && ev.Type == nestedType && ev.Reason != "" && ev.Reason != "User Initiated" {
			return ev.Reason
		}
	}
	return st.Reason
}

// nestedOutput is Fn::GetAtt Child.Outputs.Name.
func (s *Service) nestedOutput(r *resource, attr string) (any, error) {
	name := strings.TrimPrefix(attr, "Outputs.")
	if child := s.byID[r.PhysicalID]; child != nil && name != attr {
		for _, o := range child.Outputs {
			if o.Key == name {
				return o.Value, nil
			}
		}
	}
	return nil, invalidf("Template error: resource %s does not support attribute type %s in Fn::GetAtt", r.LogicalID, attr)
}

// nestedTemplateChanged reports whether the template at a nested stack's TemplateURL is
// not the one its child runs.
func (s *Service) nestedTemplateChanged(r *resource, props map[string]any) bool {
	child := s.byID[r.PhysicalID]
	if child == nil || child.deleted() {
		return false
	}
	body, err := s.fetchTemplate(scalarString(props["TemplateURL"]))
	return err == nil && strings.TrimSpace(body) != strings.TrimSpace(orDefault(child.Original, child.Body))
}
