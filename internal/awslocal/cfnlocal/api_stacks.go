package cfnlocal

import (
	"fmt"
	"slices"
	"sort"
)

func (s *Service) createStack(f form) (any, error) {
	name := f.get("StackName")
	if name == "" {
		return nil, validation("1 validation error detected: Value null at 'stackName' failed to satisfy constraint: Member must not be null")
	}
	if err := checkName("stackName", name, namePattern, namePatternLiteral); err != nil {
		return nil, err
	}
	if st := s.findStack(name); st != nil {
		if tok := f.get("ClientRequestToken"); tok != "" && tok == st.LastClientToken {
			return struct{ StackId string }{st.ID}, nil
		}
		return nil, &apiError{Code: "AlreadyExistsException", Message: fmt.Sprintf("Stack [%s] already exists", name), Status: 400}
	}
	body, err := s.templateBody(f)
	if err != nil {
		return nil, err
	}
	if body == "" {
		return nil, validation("Either Template URL or Template Body must be specified.")
	}
	params, err := givenParams(f, nil)
	if err != nil {
		return nil, err
	}
	rollback, err := rollbackConfigOf(f, nil)
	if err != nil {
		return nil, err
	}
	now := s.clk.Now()
	st := &stack{Name: name, Seq: s.nextSeq(), Created: now, Resources: map[string]*resource{}, Params: params,
		Tags: givenTags(f), Capabilities: f.list("Capabilities"), NotificationARNs: f.list("NotificationARNs"),
		DisableRollback: f.get("DisableRollback") == "true" || f.get("OnFailure") == "DO_NOTHING",
		Protected:       f.get("EnableTerminationProtection") == "true", Policy: f.get("StackPolicyBody"),
		LastClientToken: f.get("ClientRequestToken"), Rollback: rollback}
	st.ID = s.stackARN(name)
	if err := checkAutoExpand(body, st.Capabilities); err != nil {
		return nil, err
	}
	processed, err := s.process(st, body, params)
	if err != nil {
		return nil, err
	}
	p, err := s.plan(st, processed, params, st.NotificationARNs)
	if err != nil {
		return nil, err
	}
	if err := s.checkImports(st, p); err != nil {
		return nil, err
	}
	if err := checkCapabilities(p.tpl, st.Capabilities); err != nil {
		return nil, err
	}
	st.Body, st.Original, st.tpl, st.Description, st.Imports = processed, originalOr(body, processed), p.tpl, p.tpl.Description, p.imports
	s.st.Stacks = append(s.st.Stacks, st)
	s.byID[st.ID] = st
	s.setStatus(st, now, "CREATE_IN_PROGRESS", "User Initiated")
	s.startOp(st, s.createOp(p, st.LastClientToken, f.get("OnFailure") == "DELETE"), now)
	return struct{ StackId string }{st.ID}, nil
}

func (s *Service) createOp(p *planned, token string, onFailureDelete bool) *operation {
	op := &operation{Kind: "CREATE", Body: p.body, Params: p.params, Token: token, OnFailureDelete: onFailureDelete}
	for _, n := range p.active {
		op.Steps = append(op.Steps, step{Action: "create", LogicalID: n})
	}
	return op
}

// updateOp builds the operation that moves st to p, remembering what rollback needs.
func (s *Service) updateOp(st *stack, p *planned, token string) *operation {
	op := &operation{Kind: "UPDATE", Body: p.body, Original: p.original, Params: p.params, Token: token,
		OldBody: st.Body, OldOriginal: st.Original, OldParams: st.Params, OldOutputs: st.Outputs, OldImports: st.Imports,
		OldResources: map[string]*resource{}}
	for n, r := range st.Resources {
		c := *r
		c.Props = copyProps(r.Props)
		op.OldResources[n] = &c
	}
	changes := map[string]change{}
	for _, c := range s.diff(st, p) {
		changes[c.LogicalID] = c
	}
	for _, n := range p.active {
		c, ok := changes[n]
		if !ok {
			continue
		}
		switch c.Action {
		case "Add":
			op.Steps = append(op.Steps, step{Action: "create", LogicalID: n})
		case "Modify":
			op.Steps = append(op.Steps, step{Action: "modify", LogicalID: n})
		}
	}
	return op
}

func (s *Service) checkUpdatable(st *stack) error {
	switch st.Status {
	case "CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE", "IMPORT_COMPLETE", "IMPORT_ROLLBACK_COMPLETE":
		return nil
	}
	return validation("Stack:%s is in %s state and can not be updated.", st.ID, st.Status)
}

func (s *Service) updateStack(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	if err := s.checkUpdatable(st); err != nil {
		return nil, err
	}
	body, err := s.templateBody(f)
	if err != nil {
		return nil, err
	}
	if f.get("UsePreviousTemplate") == "true" {
		body = orDefault(st.Original, st.Body)
	}
	if body == "" {
		return nil, validation("Either Template URL or Template Body must be specified.")
	}
	params, err := givenParams(f, st.Params)
	if err != nil {
		return nil, err
	}
	if err := checkAutoExpand(body, f.list("Capabilities")); err != nil {
		return nil, err
	}
	processed, err := s.process(st, body, params)
	if err != nil {
		return nil, err
	}
	p, err := s.plan(st, processed, params, st.NotificationARNs)
	if err != nil {
		return nil, err
	}
	p.original = originalOr(body, processed)
	if err := s.checkImports(st, p); err != nil {
		return nil, err
	}
	caps := f.list("Capabilities")
	if err := checkCapabilities(p.tpl, caps); err != nil {
		return nil, err
	}
	tags := givenTags(f)
	if tags == nil {
		tags = st.Tags
	}
	if len(s.diff(st, p)) == 0 && s.sameOutputsAndTags(st, p, tags) {
		return nil, validation("No updates are to be performed.")
	}
	rollback, err := rollbackConfigOf(f, st.Rollback)
	if err != nil {
		return nil, err
	}
	if f.has("NotificationARNs.member.1") {
		st.NotificationARNs = f.list("NotificationARNs")
	}
	if f.has("DisableRollback") {
		st.DisableRollback = f.get("DisableRollback") == "true"
	}
	st.Tags, st.Capabilities, st.Rollback = tags, caps, rollback
	s.beginUpdate(st, p, f.get("ClientRequestToken"))
	return struct{ StackId string }{st.ID}, nil
}

func (s *Service) beginUpdate(st *stack, p *planned, token string) {
	now := s.clk.Now()
	s.obsoleteChangeSets(st)
	st.Updated = now
	st.LastClientToken = token
	op := s.updateOp(st, p, token)
	s.setStatus(st, now, "UPDATE_IN_PROGRESS", "User Initiated")
	s.startOp(st, op, now)
}

func (s *Service) deleteStack(f form) (any, error) {
	name := f.get("StackName")
	st := s.findStack(name)
	if st == nil || st.deleted() {
		return nil, nil // deleting a missing stack succeeds
	}
	if st.Protected {
		return nil, validation("Stack [%s] cannot be deleted while TerminationProtection is enabled", st.Name)
	}
	if st.Status == "DELETE_IN_PROGRESS" {
		return nil, nil
	}
	if st.inProgress() {
		return nil, validation("Stack [%s] cannot be deleted while in status %s", st.Name, st.Status)
	}
	if st.Op != nil && st.Op.Halted {
		st.Op = nil
	}
	if st.Status == "REVIEW_IN_PROGRESS" {
		now := s.clk.Now()
		s.setStatus(st, now, "DELETE_COMPLETE", "")
		return nil, nil
	}
	retain := map[string]bool{}
	for _, r := range f.list("RetainResources") {
		retain[r] = true
	}
	for n := range retain {
		if r := st.Resources[n]; r != nil {
			r.DeletionPolicy = "Retain"
			s.touchResource(st, n)
		}
	}
	// change sets of a deleted stack go away
	for _, cs := range slices.Clone(s.st.ChangeSets) {
		if cs.StackID == st.ID {
			s.dropChangeSet(cs)
		}
	}
	s.startDelete(st, s.clk.Now(), f.get("ClientRequestToken"))
	return nil, nil
}

type xParam struct {
	ParameterKey     string
	ParameterValue   string
	ResolvedValue    string `xml:",omitempty"`
	UsePreviousValue *bool  `xml:",omitempty"`
}

type xTag struct{ Key, Value string }

type xOutput struct {
	OutputKey, OutputValue string
	Description            string `xml:",omitempty"`
	ExportName             string `xml:",omitempty"`
}

type xStack struct {
	StackId                     string
	StackName                   string
	ChangeSetId                 string   `xml:",omitempty"`
	Description                 string   `xml:",omitempty"`
	Parameters                  []xParam `xml:"Parameters>member"`
	CreationTime                *xtime
	DeletionTime                *xtime `xml:",omitempty"`
	LastUpdatedTime             *xtime `xml:",omitempty"`
	StackStatus                 string
	StackStatusReason           string    `xml:",omitempty"`
	DisableRollback             bool      `xml:"DisableRollback"`
	NotificationARNs            []string  `xml:"NotificationARNs>member"`
	Capabilities                []string  `xml:"Capabilities>member"`
	Outputs                     []xOutput `xml:"Outputs>member"`
	Tags                        []xTag    `xml:"Tags>member"`
	RollbackConfiguration       *xRollbackConfig
	EnableTerminationProtection bool
	DriftInformation            xDriftInfo
	ParentId                    string `xml:",omitempty"`
	RootId                      string `xml:",omitempty"`
}

type xDriftInfo struct {
	StackDriftStatus   string
	LastCheckTimestamp *xtime `xml:",omitempty"`
}

func (s *Service) xstack(st *stack) xStack {
	x := xStack{StackId: st.ID, StackName: st.Name, ChangeSetId: st.ChangeSetID, Description: st.Description,
		CreationTime: tp(st.Created), DeletionTime: tp(st.Deleted), LastUpdatedTime: tp(st.Updated),
		StackStatus: st.Status, StackStatusReason: st.Reason, DisableRollback: st.DisableRollback,
		NotificationARNs: st.NotificationARNs, Capabilities: st.Capabilities,
		EnableTerminationProtection: st.Protected, RollbackConfiguration: xRollback(st.Rollback), ParentId: st.ParentID, RootId: st.RootID,
		DriftInformation: xDriftInfo{StackDriftStatus: orDefault(st.DriftStatus, "NOT_CHECKED"), LastCheckTimestamp: tp(st.DriftChecked)}}
	tpl, _ := st.template()
	for _, k := range sortedKeys(st.Params) {
		v := st.Params[k]
		if tpl != nil && tpl.Parameters[k].NoEcho {
			v = mask
		}
		x.Parameters = append(x.Parameters, xParam{ParameterKey: k, ParameterValue: v, ResolvedValue: st.Resolved[k]})
	}
	if tpl != nil {
		for _, k := range tpl.ParamOrder {
			if _, ok := st.Params[k]; ok {
				continue
			}
			if d := tpl.Parameters[k]; d.Default != nil {
				v := *d.Default
				if d.NoEcho {
					v = mask
				}
				x.Parameters = append(x.Parameters, xParam{ParameterKey: k, ParameterValue: v, ResolvedValue: st.Resolved[k]})
			}
		}
		sort.Slice(x.Parameters, func(i, j int) bool { return x.Parameters[i].ParameterKey < x.Parameters[j].ParameterKey })
	}
	for _, o := range st.Outputs {
		x.Outputs = append(x.Outputs, xOutput{o.Key, o.Value, o.Description, o.ExportName})
	}
	for _, t := range st.Tags {
		x.Tags = append(x.Tags, xTag(t))
	}
	return x
}

func (s *Service) describeStacks(f form) (any, error) {
	var list []*stack
	if name := f.get("StackName"); name != "" {
		st := s.findStack(name)
		if st == nil {
			return nil, stackNotFound(name)
		}
		list = []*stack{st}
	} else {
		for _, st := range s.st.Stacks {
			if !st.deleted() {
				list = append(list, st)
			}
		}
	}
	pg, next, err := page(list, f.get("NextToken"), s.o.PageSize)
	if err != nil {
		return nil, err
	}
	res := struct {
		Stacks    []xStack `xml:"Stacks>member"`
		NextToken string   `xml:",omitempty"`
	}{NextToken: next}
	for _, st := range pg {
		res.Stacks = append(res.Stacks, s.xstack(st))
	}
	return res, nil
}

func (s *Service) listStacks(f form) (any, error) {
	filter := map[string]bool{}
	for _, v := range f.list("StackStatusFilter") {
		filter[v] = true
	}
	type summary struct {
		StackId             string
		StackName           string
		TemplateDescription string `xml:",omitempty"`
		CreationTime        *xtime
		LastUpdatedTime     *xtime `xml:",omitempty"`
		DeletionTime        *xtime `xml:",omitempty"`
		StackStatus         string
		StackStatusReason   string `xml:",omitempty"`
		ParentId            string `xml:",omitempty"`
		RootId              string `xml:",omitempty"`
		DriftInformation    struct{ StackDriftStatus string }
	}
	var all []summary
	for i := len(s.st.Stacks) - 1; i >= 0; i-- {
		st := s.st.Stacks[i]
		if len(filter) > 0 && !filter[st.Status] {
			continue
		}
		sm := summary{StackId: st.ID, StackName: st.Name, TemplateDescription: st.Description, CreationTime: tp(st.Created),
			LastUpdatedTime: tp(st.Updated), DeletionTime: tp(st.Deleted), StackStatus: st.Status, StackStatusReason: st.Reason,
			ParentId: st.ParentID, RootId: st.RootID}
		sm.DriftInformation.StackDriftStatus = orDefault(st.DriftStatus, "NOT_CHECKED")
		all = append(all, sm)
	}
	pg, next, err := page(all, f.get("NextToken"), s.o.PageSize)
	if err != nil {
		return nil, err
	}
	return struct {
		StackSummaries []summary `xml:"StackSummaries>member"`
		NextToken      string    `xml:",omitempty"`
	}{pg, next}, nil
}

type xEvent struct {
	StackId              string
	EventId              string
	StackName            string
	LogicalResourceId    string
	PhysicalResourceId   string
	ResourceType         string
	Timestamp            *xtime
	ResourceStatus       string
	ResourceStatusReason string `xml:",omitempty"`
	ResourceProperties   string `xml:",omitempty"`
	ClientRequestToken   string `xml:",omitempty"`
}

func (s *Service) describeStackEvents(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	evs := make([]xEvent, 0, len(st.Events))
	for i := len(st.Events) - 1; i >= 0; i-- {
		e := st.Events[i]
		evs = append(evs, xEvent{st.ID, e.ID, st.Name, e.LogicalID, e.PhysicalID, e.Type, tp(e.Time), e.Status, e.Reason, e.Props, e.Token})
	}
	pg, next, err := page(evs, f.get("NextToken"), s.o.PageSize)
	if err != nil {
		return nil, err
	}
	return struct {
		StackEvents []xEvent `xml:"StackEvents>member"`
		NextToken   string   `xml:",omitempty"`
	}{pg, next}, nil
}
