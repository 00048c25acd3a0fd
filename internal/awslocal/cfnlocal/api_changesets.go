package cfnlocal

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

func (s *Service) createChangeSet(f form) (any, error) {
	name, csName := f.get("StackName"), f.get("ChangeSetName")
	if err := checkChangeSetInput(f); err != nil {
		return nil, err
	}
	typ := orDefault(f.get("ChangeSetType"), "UPDATE")
	st := s.findStack(name)
	now := s.clk.Now()
	for _, cs := range s.st.ChangeSets {
		if st != nil && cs.StackID == st.ID && cs.Name == csName {
			if tok := f.get("ClientToken"); tok != "" && tok == cs.ClientToken {
				return struct{ Id, StackId string }{cs.ID, cs.StackID}, nil
			}
			return nil, &apiError{Code: "AlreadyExistsException", Message: fmt.Sprintf("ChangeSet %s already exists", csName), Status: 400}
		}
	}
	switch typ {
	case "CREATE":
		if st != nil && st.Status != "REVIEW_IN_PROGRESS" {
			return nil, validation("Stack [%s] already exists and cannot be created again with the changeSet [%s].", name, csName) // AWS's code; AlreadyExistsException is for a change set name in use
		}
	case "UPDATE":
		if st == nil {
			return nil, stackNotFound(name)
		}
		if st.Status == "REVIEW_IN_PROGRESS" {
			return nil, validation("Stack [%s] is in REVIEW_IN_PROGRESS state and can not be updated; create its change set with ChangeSetType CREATE", st.Name)
		}
		if err := s.checkUpdatable(st); err != nil {
			return nil, err
		}
	case "IMPORT":
		if st != nil && st.Status != "REVIEW_IN_PROGRESS" {
			if err := s.checkUpdatable(st); err != nil {
				return nil, err
			}
		}
	default:
		return nil, validation("1 validation error detected: Value '%s' at 'changeSetType' failed to satisfy constraint: Member must satisfy enum value set: [IMPORT, UPDATE, CREATE]", typ)
	}
	var imports []toImport
	if typ == "IMPORT" {
		var err error
		if imports, err = resourcesToImport(f); err != nil {
			return nil, err
		}
	} else if f.has("ResourcesToImport.member.1.LogicalResourceId") {
		return nil, validation("ResourcesToImport can only be given with ChangeSetType IMPORT")
	}
	body, err := s.templateBody(f)
	if err != nil {
		return nil, err
	}
	if f.get("UsePreviousTemplate") == "true" && st != nil {
		body = orDefault(st.Original, st.Body)
	}
	if body == "" {
		return nil, validation("Either Template URL or Template Body must be specified.")
	}
	var prev map[string]string
	if st != nil {
		prev = st.Params
	}
	params, err := givenParams(f, prev)
	if err != nil {
		return nil, err
	}
	probe := st
	if probe == nil {
		probe = &stack{Name: name}
	}
	// A transform that fails (a macro that does not exist) fails the change set, not the call.
	caps := f.list("Capabilities")
	processed, err := s.process(probe, body, params)
	var te *transformError
	failure := ""
	if errors.As(err, &te) {
		failure, processed = te.Error(), body
	} else if err != nil {
		return nil, err
	}
	var tpl *template
	description := ""
	if failure == "" {
		tpl, err = s.parse(processed)
		if err == nil {
			err = checkCapabilities(tpl, caps)
		}
		// A processed template is checked after the call returns, as AWS does it: its
		// errors (a GetAtt the generated resources do not have, a capability the generated
		// roles need) fail the change set. A template without transforms is refused at once.
		if err != nil && len(transformsOf(body)) == 0 {
			return nil, err
		} else if err != nil {
			failure, processed, tpl = err.Error(), body, nil
		}
	}
	if tpl != nil {
		if _, _, err := tpl.resolveParams(params, s.ssm); err != nil {
			return nil, err
		}
		description = tpl.Description
		if typ == "IMPORT" {
			existing := st
			if existing != nil && existing.Status == "REVIEW_IN_PROGRESS" {
				existing = nil
			}
			if err := s.checkImport(existing, processed, tpl, imports, params); err != nil {
				return nil, err
			}
		}
	}
	var prevRollback *rollbackConfig
	if st != nil {
		prevRollback = st.Rollback
	}
	rollback, err := rollbackConfigOf(f, prevRollback)
	if err != nil {
		return nil, err
	}
	if st == nil {
		st = &stack{Name: name, Seq: s.nextSeq(), Created: now, Resources: map[string]*resource{}, Params: params,
			Tags: givenTags(f), Capabilities: caps, NotificationARNs: f.list("NotificationARNs"), Body: processed, tpl: tpl,
			Original: originalOr(body, processed), Description: description}
		st.ID = s.stackARN(name)
		s.st.Stacks = append(s.st.Stacks, st)
		s.byID[st.ID] = st
		s.setStatus(st, now, "REVIEW_IN_PROGRESS", "User Initiated")
	}
	tags := givenTags(f)
	if tags == nil {
		tags = st.Tags
	}
	arns := f.list("NotificationARNs")
	if !f.has("NotificationARNs.member.1") && !f.has("NotificationARNs") { // an empty list clears them
		arns = st.NotificationARNs
	}
	cs := &changeSet{
		ID:   fmt.Sprintf("arn:aws:cloudformation:%s:%s:changeSet/%s/%s", s.o.Region, s.o.AccountID, csName, hashUUID("cs", st.ID, csName, fmt.Sprint(s.nextSeq()))),
		Name: csName, StackID: st.ID, StackName: st.Name, Type: typ, Status: "CREATE_IN_PROGRESS", ExecutionStatus: "UNAVAILABLE",
		Description: f.get("Description"), Created: now, ReadyAt: now.Add(s.draw(s.o.ChangeSetDelay, s.o.ChangeSetDelayMax)), Body: processed, Params: params,
		Original: originalOr(body, processed), Failure: failure,
		Tags: tags, Capabilities: caps, NotificationARNs: arns, Rollback: rollback, ClientToken: f.get("ClientToken"),
		IncludeNested: f.get("IncludeNestedStacks") == "true", ToImport: imports, DeploymentMode: f.get("DeploymentMode"),
	}
	s.addChangeSet(cs)
	s.poke(cs.ReadyAt)
	return struct{ Id, StackId string }{cs.ID, cs.StackID}, nil
}

// checkChangeSetInput checks what CreateChangeSet is given before it looks at the stack.
func checkChangeSetInput(f form) error {
	name, csName := f.get("StackName"), f.get("ChangeSetName")
	if name == "" || csName == "" {
		return validation("StackName and ChangeSetName are required")
	}
	if err := checkName("stackName", name, stackOrARNPattern, stackOrARNLiteral); err != nil {
		return err
	}
	if err := checkName("changeSetName", csName, namePattern, namePatternLiteral); err != nil {
		return err
	}
	if m := f.get("DeploymentMode"); f.has("DeploymentMode") && !slices.Contains(deploymentModes, m) {
		return validation("1 validation error detected: Value '%s' at 'deploymentMode' failed to satisfy constraint: Member must satisfy enum value set: [%s]", m, strings.Join(deploymentModes, ", "))
	}
	return nil
}

type xChange struct {
	Type           string
	ResourceChange struct {
		Action             string
		LogicalResourceId  string
		PhysicalResourceId string `xml:",omitempty"`
		ResourceType       string
		Replacement        string    `xml:",omitempty"`
		Scope              []string  `xml:"Scope>member"`
		Details            []xDetail `xml:"Details>member"`
		ChangeSetId        string    `xml:",omitempty"`
		// of a drift-aware change set
		ResourceDriftStatus            string     `xml:",omitempty"`
		PreviousDeploymentContext      string     `xml:",omitempty"`
		BeforeContext                  string     `xml:",omitempty"`
		AfterContext                   string     `xml:",omitempty"`
		ResourceDriftIgnoredAttributes []xIgnored `xml:"ResourceDriftIgnoredAttributes>member"`
	}
}

type xIgnored struct{ Path, Reason string }

type xLiveDrift struct {
	ActualValue             *string
	PreviousValue           *string
	DriftDetectionTimestamp *xtime
}

type xDetail struct {
	Target struct {
		Attribute          string
		Name               string `xml:",omitempty"`
		RequiresRecreation string
		// of a drift-aware change set
		Path                *string     `xml:",omitempty"`
		AttributeChangeType string      `xml:",omitempty"`
		BeforeValue         *string     `xml:",omitempty"`
		AfterValue          *string     `xml:",omitempty"`
		BeforeValueFrom     string      `xml:",omitempty"`
		AfterValueFrom      string      `xml:",omitempty"`
		Drift               *xLiveDrift `xml:",omitempty"`
	}
	Evaluation    string
	ChangeSource  string
	CausingEntity string `xml:",omitempty"`
}

func (s *Service) describeChangeSet(f form) (any, error) {
	csName := f.get("ChangeSetName")
	cs := s.findChangeSet(csName, f.get("StackName"))
	if cs == nil {
		return nil, changeSetNotFound(csName)
	}
	var changes []xChange
	for _, c := range cs.Changes {
		var x xChange
		x.Type = "Resource"
		rc := &x.ResourceChange
		rc.Action, rc.LogicalResourceId, rc.PhysicalResourceId, rc.ResourceType, rc.Replacement, rc.Scope, rc.ChangeSetId =
			c.Action, c.LogicalID, c.PhysicalID, c.Type, c.Replacement, c.Scope, c.ChangeSetID
		for _, d := range c.Details {
			var xd xDetail
			xd.Target.Attribute, xd.Target.Name, xd.Target.RequiresRecreation = d.Attribute, d.Name, d.RequiresRecreation
			xd.Evaluation, xd.ChangeSource, xd.CausingEntity = d.Evaluation, d.ChangeSource, d.CausingEntity
			if tw := d.Drift; tw != nil {
				t := &xd.Target
				t.Path, t.AttributeChangeType, t.BeforeValue, t.AfterValue = &tw.Path, tw.ChangeType, tw.BeforeValue, tw.AfterValue
				t.BeforeValueFrom, t.AfterValueFrom = tw.BeforeFrom, tw.AfterFrom
				if tw.Drifted {
					t.Drift = &xLiveDrift{tw.Actual, tw.Previous, tp(tw.DriftAt)}
				}
			}
			rc.Details = append(rc.Details, xd)
		}
		rc.ResourceDriftStatus, rc.PreviousDeploymentContext = c.DriftStatus, c.PreviousContext
		rc.BeforeContext, rc.AfterContext = c.BeforeContext, c.AfterContext
		for _, ig := range c.Ignored {
			rc.ResourceDriftIgnoredAttributes = append(rc.ResourceDriftIgnoredAttributes, xIgnored(ig))
		}
		changes = append(changes, x)
	}
	pg, next, err := page(changes, f.get("NextToken"), s.o.PageSize)
	if err != nil {
		return nil, err
	}
	var params []xParam
	tpl, _ := s.parse(cs.Body)
	for _, k := range sortedKeys(cs.Params) {
		v := cs.Params[k]
		if tpl != nil && tpl.Parameters[k].NoEcho {
			v = mask // as AWS masks NoEcho values in every describe call
		}
		params = append(params, xParam{ParameterKey: k, ParameterValue: v})
	}
	var tags []xTag
	for _, t := range cs.Tags {
		tags = append(tags, xTag(t))
	}
	return struct {
		ChangeSetName    string
		ChangeSetId      string
		StackId          string
		StackName        string
		Description      string   `xml:",omitempty"`
		Parameters       []xParam `xml:"Parameters>member"`
		CreationTime     *xtime
		ExecutionStatus  string
		Status           string
		StatusReason     string    `xml:",omitempty"`
		NotificationARNs []string  `xml:"NotificationARNs>member"`
		Capabilities     []string  `xml:"Capabilities>member"`
		Tags             []xTag    `xml:"Tags>member"`
		Changes          []xChange `xml:"Changes>member"`
		NextToken        string    `xml:",omitempty"`
		IncludeNested    bool      `xml:"IncludeNestedStacks"`
		ParentID         string    `xml:"ParentChangeSetId,omitempty"`
		RootID           string    `xml:"RootChangeSetId,omitempty"`
		DeploymentMode   string    `xml:",omitempty"`
	}{cs.Name, cs.ID, cs.StackID, cs.StackName, cs.Description, params, tp(cs.Created), cs.ExecutionStatus, cs.Status,
		cs.StatusReason, cs.NotificationARNs, cs.Capabilities, tags, pg, next, cs.IncludeNested, cs.ParentID, cs.RootID, cs.DeploymentMode}, nil
}

func (s *Service) listChangeSets(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	type summary struct {
		StackId, StackName, ChangeSetId, ChangeSetName string
		ExecutionStatus, Status                        string
		StatusReason                                   string `xml:",omitempty"`
		CreationTime                                   *xtime
		Description                                    string `xml:",omitempty"`
	}
	var out []summary
	for _, cs := range s.st.ChangeSets {
		if cs.StackID == st.ID {
			out = append(out, summary{cs.StackID, cs.StackName, cs.ID, cs.Name, cs.ExecutionStatus, cs.Status, cs.StatusReason, tp(cs.Created), cs.Description})
		}
	}
	pg, next, err := page(out, f.get("NextToken"), s.o.PageSize)
	if err != nil {
		return nil, err
	}
	return struct {
		Summaries []summary `xml:"Summaries>member"`
		NextToken string    `xml:",omitempty"`
	}{pg, next}, nil
}

func (s *Service) executeChangeSet(f form) (any, error) {
	csName := f.get("ChangeSetName")
	cs := s.findChangeSet(csName, f.get("StackName"))
	if cs == nil {
		return nil, changeSetNotFound(csName)
	}
	tok := f.get("ClientRequestToken")
	if tok != "" && tok == cs.ExecToken && (cs.ExecutionStatus == "EXECUTE_IN_PROGRESS" || cs.ExecutionStatus == "EXECUTE_COMPLETE" || cs.ExecutionStatus == "EXECUTE_FAILED") {
		return nil, nil // idempotent retry
	}
	if cs.ExecutionStatus != "AVAILABLE" {
		return nil, &apiError{Code: "InvalidChangeSetStatus", Message: fmt.Sprintf("ChangeSet [%s] cannot be executed in its current status of [%s]", cs.ID, cs.ExecutionStatus), Status: 400}
	}
	if cs.ParentID != "" {
		return nil, validation("ChangeSet [%s] is a nested change set: execute its root change set [%s]", cs.ID, cs.RootID)
	}
	st := s.byID[cs.StackID]
	if st == nil || st.deleted() {
		return nil, stackNotFound(cs.StackName)
	}
	if cs.Type == "UPDATE" || cs.Type == "IMPORT" && st.Status != "REVIEW_IN_PROGRESS" {
		if err := s.checkUpdatable(st); err != nil {
			return nil, err
		}
	}
	p, err := s.planChange(st, cs.Body, cs.Params, cs.NotificationARNs)
	if err != nil {
		return nil, err
	}
	// A missing export fails the execution, not the call: the stack rolls back at once.
	missingImport := s.checkImports(st, p)
	now := s.clk.Now()
	cs.ExecutionStatus, cs.ExecToken = "EXECUTE_IN_PROGRESS", tok
	// executing deletes the stack's other change sets
	for _, o := range slices.Clone(s.st.ChangeSets) {
		if o.StackID == st.ID && o != cs {
			s.dropChangeSet(o)
		}
	}
	s.st.Executed = append(s.st.Executed, ExecutedChangeSet{StackName: st.Name, StackID: st.ID, ChangeSetName: cs.Name,
		ChangeSetID: cs.ID, ClientRequestToken: tok, ExecutedAt: now, Changes: len(cs.Changes)})
	st.ChangeSetID = cs.ID
	st.Tags, st.Capabilities, st.NotificationARNs, st.Rollback = cs.Tags, cs.Capabilities, cs.NotificationARNs, cs.Rollback
	if f.has("DisableRollback") {
		st.DisableRollback = f.get("DisableRollback") == "true"
	}
	st.LastClientToken = tok
	if cs.Type == "CREATE" {
		st.Body, st.Original, st.tpl, st.Params, st.Description, st.Imports = p.body, cs.Original, p.tpl, p.params, p.tpl.Description, p.imports
		s.setStatus(st, now, "CREATE_IN_PROGRESS", "User Initiated")
		op := s.createOp(p, tok, false)
		op.ChangeSetID = cs.ID
		if missingImport != nil {
			st.Op = op
			op.Touched = nil
			s.startCreateRollback(st, missingImport.Error(), now)
			op = st.Op
		}
		s.startOp(st, op, now)
		return nil, nil
	}
	if cs.Type == "IMPORT" {
		if st.Status != "REVIEW_IN_PROGRESS" {
			st.Updated = now
		}
		p.original = cs.Original
		op := s.importOp(st, p, cs.ToImport, tok)
		op.ChangeSetID = cs.ID
		s.setStatus(st, now, "IMPORT_IN_PROGRESS", "User Initiated")
		s.startOp(st, op, now)
		return nil, nil
	}
	st.Updated = now
	p.original = cs.Original
	op := s.changeSetOp(st, p, cs, tok)
	op.ChangeSetID = cs.ID
	s.setStatus(st, now, "UPDATE_IN_PROGRESS", "User Initiated")
	if missingImport != nil {
		st.Op = op
		s.startUpdateRollback(st, missingImport.Error(), now)
	}
	s.startOp(st, op, now)
	return nil, nil
}

func (s *Service) deleteChangeSet(f form) (any, error) {
	csName, stackName := f.get("ChangeSetName"), f.get("StackName")
	cs := s.findChangeSet(csName, stackName)
	if cs == nil {
		// CloudFormation deletes a change set by name "as long as the stack exists, even if the
		// change set does not" (the CDK CLI relies on it before every deploy of an existing stack);
		// a stack that does not exist, or exists no more, is a ValidationError; a change set ARN
		// that names nothing is not found.
		if stackName == "" || strings.HasPrefix(csName, "arn:") {
			return nil, changeSetNotFound(csName)
		}
		if st := s.findStack(stackName); st == nil || st.deleted() {
			return nil, validation("Stack [%s] does not exist", stackName)
		}
		return nil, nil
	}
	if cs.ExecutionStatus == "EXECUTE_IN_PROGRESS" {
		return nil, &apiError{Code: "InvalidChangeSetStatus", Message: fmt.Sprintf("ChangeSet [%s] cannot be deleted in its current status of [EXECUTE_IN_PROGRESS]", cs.ID), Status: 400}
	}
	if cs.ParentID != "" {
		return nil, validation("ChangeSet [%s] is a nested change set: delete its root change set [%s]", cs.ID, cs.RootID)
	}
	s.dropChangeSet(cs)
	return nil, nil
}
