package cfnlocal

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
)

func init() {
	actions = map[string]handler{
		"CreateStack":                       (*Service).createStack,
		"UpdateStack":                       (*Service).updateStack,
		"DeleteStack":                       (*Service).deleteStack,
		"DescribeStacks":                    (*Service).describeStacks,
		"ListStacks":                        (*Service).listStacks,
		"DescribeStackEvents":               (*Service).describeStackEvents,
		"DescribeStackResources":            (*Service).describeStackResources,
		"DescribeStackResource":             (*Service).describeStackResource,
		"ListStackResources":                (*Service).listStackResources,
		"GetTemplate":                       (*Service).getTemplate,
		"ValidateTemplate":                  (*Service).validateTemplate,
		"GetTemplateSummary":                (*Service).getTemplateSummary,
		"CreateChangeSet":                   (*Service).createChangeSet,
		"DescribeChangeSet":                 (*Service).describeChangeSet,
		"ListChangeSets":                    (*Service).listChangeSets,
		"ExecuteChangeSet":                  (*Service).executeChangeSet,
		"DeleteChangeSet":                   (*Service).deleteChangeSet,
		"UpdateTerminationProtection":       (*Service).updateTerminationProtection,
		"SetStackPolicy":                    (*Service).setStackPolicy,
		"GetStackPolicy":                    (*Service).getStackPolicy,
		"ContinueUpdateRollback":            (*Service).continueUpdateRollback,
		"RollbackStack":                     (*Service).rollbackStack,
		"CancelUpdateStack":                 (*Service).cancelUpdateStack,
		"ListExports":                       (*Service).listExports,
		"ListImports":                       (*Service).listImports,
		"DetectStackDrift":                  (*Service).detectStackDrift,
		"DescribeStackDriftDetectionStatus": (*Service).describeStackDriftDetectionStatus,
		"DescribeStackResourceDrifts":       (*Service).describeStackResourceDrifts,
	}
}

// templateBody reads TemplateBody or TemplateURL (from the emulator's S3).
func (s *Service) templateBody(f form) (string, error) {
	if b := f.get("TemplateBody"); b != "" {
		return b, nil
	}
	u := f.get("TemplateURL")
	if u == "" {
		return "", nil
	}
	bucket, key, err := parseS3URL(u)
	if err != nil {
		return "", err
	}
	if s.o.GetObject == nil {
		return "", validation("TemplateURL %s cannot be read: the emulator has no S3 attached", u)
	}
	// The lock is held; GetObject talks to another service of the emulator, never to us.
	b, err := s.o.GetObject(context.Background(), bucket, key)
	if err != nil {
		return "", validation("TemplateURL must be a supported URL. Could not read %s: %v", u, err)
	}
	return string(b), nil
}

// parseS3URL accepts path-style (http://host/bucket/key), virtual-hosted
// (https://bucket.s3.amazonaws.com/key) and s3://bucket/key URLs.
func parseS3URL(raw string) (string, string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", "", validation("TemplateURL must be a supported URL: %q", raw)
	}
	if u.Scheme == "s3" {
		return u.Host, strings.TrimPrefix(u.Path, "/"), nil
	}
	host := u.Hostname()
	if i := strings.Index(host, ".s3"); i > 0 && !strings.HasPrefix(host, "s3") {
		return host[:i], strings.TrimPrefix(u.Path, "/"), nil
	}
	parts := strings.SplitN(strings.TrimPrefix(u.Path, "/"), "/", 2)
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", validation("TemplateURL must be a supported URL: %q names no bucket and key", raw)
	}
	return parts[0], parts[1], nil
}

// givenParams merges Parameters with the previous values where UsePreviousValue is set.
func givenParams(f form, prev map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range f.structs("Parameters") {
		k := m["ParameterKey"]
		if m["UsePreviousValue"] == "true" {
			v, ok := prev[k]
			if !ok {
				return nil, validation("Invalid input for parameter key %s. Cannot specify usePreviousValue as true for a parameter key not in the previous template", k)
			}
			out[k] = v
			continue
		}
		out[k] = m["ParameterValue"]
	}
	return out, nil
}

func givenTags(f form) []tag {
	var out []tag
	for _, m := range f.structs("Tags") {
		out = append(out, tag{m["Key"], m["Value"]})
	}
	return out
}

// checkCapabilities refuses IAM resources without the capability, as AWS does.
func checkCapabilities(tpl *template, caps []string) error {
	has := map[string]bool{}
	for _, c := range caps {
		has[c] = true
	}
	var iam []string
	named := false
	for _, name := range sortedKeys(tpl.Resources) {
		d := tpl.Resources[name]
		if strings.HasPrefix(d.Type, "AWS::IAM::") {
			iam = append(iam, name)
			for _, p := range []string{"RoleName", "UserName", "GroupName", "ManagedPolicyName", "InstanceProfileName"} {
				if _, ok := d.Properties[p]; ok {
					named = true
				}
			}
		}
	}
	if len(iam) == 0 || has["CAPABILITY_NAMED_IAM"] || (has["CAPABILITY_IAM"] && !named) {
		return nil
	}
	want := "CAPABILITY_IAM"
	if named {
		want = "CAPABILITY_NAMED_IAM"
	}
	return &apiError{Code: "InsufficientCapabilitiesException", Message: fmt.Sprintf("Requires capabilities : [%s]", want), Status: 400}
}

func (s *Service) createStack(f form) (any, error) {
	name := f.get("StackName")
	if name == "" {
		return nil, validation("1 validation error detected: Value null at 'stackName' failed to satisfy constraint: Member must not be null")
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
	now := s.clk.Now()
	st := &stack{Name: name, Seq: s.nextSeq(), Created: now, Resources: map[string]*resource{}, Params: params,
		Tags: givenTags(f), Capabilities: f.list("Capabilities"), NotificationARNs: f.list("NotificationARNs"),
		DisableRollback: f.get("DisableRollback") == "true" || f.get("OnFailure") == "DO_NOTHING",
		Protected:       f.get("EnableTerminationProtection") == "true", Policy: f.get("StackPolicyBody"),
		LastClientToken: f.get("ClientRequestToken")}
	st.ID = s.stackARN(name)
	p, err := s.plan(st, body, params, st.NotificationARNs)
	if err != nil {
		return nil, err
	}
	if err := s.checkImports(st, p); err != nil {
		return nil, err
	}
	if err := checkCapabilities(p.tpl, st.Capabilities); err != nil {
		return nil, err
	}
	st.Body, st.tpl, st.Description, st.Imports = body, p.tpl, p.tpl.Description, p.imports
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
	op := &operation{Kind: "UPDATE", Body: p.body, Params: p.params, Token: token,
		OldBody: st.Body, OldParams: st.Params, OldOutputs: st.Outputs, OldImports: st.Imports,
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
		body = st.Body
	}
	if body == "" {
		return nil, validation("Either Template URL or Template Body must be specified.")
	}
	params, err := givenParams(f, st.Params)
	if err != nil {
		return nil, err
	}
	p, err := s.plan(st, body, params, st.NotificationARNs)
	if err != nil {
		return nil, err
	}
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
	if f.has("NotificationARNs.member.1") {
		st.NotificationARNs = f.list("NotificationARNs")
	}
	if f.has("DisableRollback") {
		st.DisableRollback = f.get("DisableRollback") == "true"
	}
	st.Tags, st.Capabilities = tags, caps
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
		}
	}
	// change sets of a deleted stack go away
	kept := s.st.ChangeSets[:0]
	for _, cs := range s.st.ChangeSets {
		if cs.StackID != st.ID {
			kept = append(kept, cs)
		}
	}
	s.st.ChangeSets = kept
	s.startDelete(st, s.clk.Now(), f.get("ClientRequestToken"))
	return nil, nil
}

// --- describe ---

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
	EnableTerminationProtection bool
	DriftInformation            xDriftInfo
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
		EnableTerminationProtection: st.Protected,
		DriftInformation:            xDriftInfo{StackDriftStatus: orDefault(st.DriftStatus, "NOT_CHECKED"), LastCheckTimestamp: tp(st.DriftChecked)}}
	tpl, _ := st.template()
	for _, k := range sortedKeys(st.Params) {
		v := st.Params[k]
		if tpl != nil && tpl.Parameters[k].NoEcho {
			v = "****"
		}
		x.Parameters = append(x.Parameters, xParam{ParameterKey: k, ParameterValue: v})
	}
	if tpl != nil {
		for _, k := range tpl.ParamOrder {
			if _, ok := st.Params[k]; ok {
				continue
			}
			if d := tpl.Parameters[k]; d.Default != nil {
				v := *d.Default
				if d.NoEcho {
					v = "****"
				}
				x.Parameters = append(x.Parameters, xParam{ParameterKey: k, ParameterValue: v})
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
		DriftInformation    struct{ StackDriftStatus string }
	}
	var all []summary
	for i := len(s.st.Stacks) - 1; i >= 0; i-- {
		st := s.st.Stacks[i]
		if len(filter) > 0 && !filter[st.Status] {
			continue
		}
		sm := summary{StackId: st.ID, StackName: st.Name, TemplateDescription: st.Description, CreationTime: tp(st.Created),
			LastUpdatedTime: tp(st.Updated), DeletionTime: tp(st.Deleted), StackStatus: st.Status, StackStatusReason: st.Reason}
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

type xResource struct {
	StackName            string `xml:",omitempty"`
	StackId              string `xml:",omitempty"`
	LogicalResourceId    string
	PhysicalResourceId   string `xml:",omitempty"`
	ResourceType         string
	Timestamp            *xtime `xml:",omitempty"`
	LastUpdatedTimestamp *xtime `xml:",omitempty"`
	ResourceStatus       string
	ResourceStatusReason string `xml:",omitempty"`
	DriftInformation     struct {
		StackResourceDriftStatus string
		LastCheckTimestamp       *xtime `xml:",omitempty"`
	}
}

func (s *Service) xresource(st *stack, r *resource, summary bool) xResource {
	x := xResource{LogicalResourceId: r.LogicalID, PhysicalResourceId: r.PhysicalID, ResourceType: r.Type,
		ResourceStatus: r.Status, ResourceStatusReason: r.Reason}
	if summary {
		x.LastUpdatedTimestamp = tp(r.Updated)
	} else {
		x.StackName, x.StackId, x.Timestamp = st.Name, st.ID, tp(r.Updated)
	}
	x.DriftInformation.StackResourceDriftStatus = orDefault(r.DriftStatus, "NOT_CHECKED")
	x.DriftInformation.LastCheckTimestamp = tp(r.DriftChecked)
	return x
}

func (s *Service) describeStackResources(f form) (any, error) {
	name := f.get("StackName")
	var st *stack
	if name == "" && f.get("PhysicalResourceId") != "" {
		for _, c := range s.st.Stacks {
			for _, r := range c.Resources {
				if r.PhysicalID == f.get("PhysicalResourceId") {
					st = c
				}
			}
		}
		if st == nil {
			return nil, validation("Stack for %s does not exist", f.get("PhysicalResourceId"))
		}
	} else {
		var err error
		if st, err = s.mustStack(name); err != nil {
			return nil, err
		}
	}
	var out []xResource
	for _, n := range sortedKeys(st.Resources) {
		if lid := f.get("LogicalResourceId"); lid != "" && lid != n {
			continue
		}
		out = append(out, s.xresource(st, st.Resources[n], false))
	}
	return struct {
		StackResources []xResource `xml:"StackResources>member"`
	}{out}, nil
}

func (s *Service) describeStackResource(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	r := st.Resources[f.get("LogicalResourceId")]
	if r == nil {
		return nil, validation("Resource %s does not exist for stack %s", f.get("LogicalResourceId"), st.Name)
	}
	x := s.xresource(st, r, false)
	return struct {
		StackResourceDetail struct {
			xResource
			LastUpdatedTimestamp *xtime
		}
	}{struct {
		xResource
		LastUpdatedTimestamp *xtime
	}{x, tp(r.Updated)}}, nil
}

func (s *Service) listStackResources(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	var out []xResource
	for _, n := range sortedKeys(st.Resources) {
		out = append(out, s.xresource(st, st.Resources[n], true))
	}
	pg, next, err := page(out, f.get("NextToken"), s.o.PageSize)
	if err != nil {
		return nil, err
	}
	return struct {
		StackResourceSummaries []xResource `xml:"StackResourceSummaries>member"`
		NextToken              string      `xml:",omitempty"`
	}{pg, next}, nil
}

func (s *Service) getTemplate(f form) (any, error) {
	body := ""
	if csName := f.get("ChangeSetName"); csName != "" {
		cs := s.findChangeSet(csName, f.get("StackName"))
		if cs == nil {
			return nil, changeSetNotFound(csName)
		}
		body = cs.Body
	} else {
		st, err := s.mustStack(f.get("StackName"))
		if err != nil {
			return nil, err
		}
		body = st.Body
	}
	return struct {
		TemplateBody    string
		StagesAvailable []string `xml:"StagesAvailable>member"`
	}{body, []string{"Original", "Processed"}}, nil
}

type xTemplateParam struct {
	ParameterKey string
	DefaultValue string `xml:",omitempty"`
	NoEcho       bool
	Description  string `xml:",omitempty"`
}

func (s *Service) validateTemplate(f form) (any, error) {
	body, err := s.templateBody(f)
	if err != nil {
		return nil, err
	}
	if body == "" {
		return nil, validation("Either Template URL or Template Body must be specified.")
	}
	tpl, err := s.parse(body)
	if err != nil {
		return nil, err
	}
	// evaluate everything that does not depend on parameter values or other stacks
	probe := &stack{Name: "validate", ID: "validate", Resources: map[string]*resource{}}
	params := map[string]string{}
	for _, n := range tpl.ParamOrder {
		d := tpl.Parameters[n]
		if d.Default == nil {
			params[n] = sampleValue(d)
		}
	}
	if e, err := s.evaluator(probe, tpl, params, nil); err == nil {
		e.importValue = func(string) (string, error) { return knownAfterApply, nil }
		for _, n := range sortedKeys(tpl.Resources) {
			if _, err := e.eval(tpl.Resources[n].Properties); err != nil && !isParamDependent(err) {
				return nil, fmt.Errorf("%w (in resource %s)", err, n)
			}
		}
	} else if !isParamDependent(err) {
		return nil, err
	}
	var ps []xTemplateParam
	for _, n := range tpl.ParamOrder {
		d := tpl.Parameters[n]
		p := xTemplateParam{ParameterKey: n, NoEcho: d.NoEcho, Description: d.Description}
		if d.Default != nil {
			p.DefaultValue = *d.Default
		}
		ps = append(ps, p)
	}
	res := struct {
		Parameters         []xTemplateParam `xml:"Parameters>member"`
		Description        string           `xml:",omitempty"`
		Capabilities       []string         `xml:"Capabilities>member"`
		CapabilitiesReason string           `xml:",omitempty"`
	}{Parameters: ps, Description: tpl.Description}
	if err := checkCapabilities(tpl, nil); err != nil {
		want := strings.TrimSuffix(strings.TrimPrefix(err.(*apiError).Message, "Requires capabilities : ["), "]")
		res.Capabilities = []string{want}
		res.CapabilitiesReason = "The following resource(s) require capabilities: [AWS::IAM::*]"
	}
	return res, nil
}

// sampleValue is a placeholder for a parameter without a default during ValidateTemplate.
func sampleValue(d paramDecl) string {
	if len(d.AllowedValues) > 0 {
		return d.AllowedValues[0]
	}
	if d.Type == "Number" {
		if d.MinValue != nil {
			return fmt.Sprint(*d.MinValue)
		}
		return "1"
	}
	return "validate"
}

func isParamDependent(err error) bool {
	m := err.Error()
	return strings.HasPrefix(m, "Parameter ") || strings.HasPrefix(m, "Parameters:")
}

func (s *Service) getTemplateSummary(f form) (any, error) {
	body, err := s.templateBody(f)
	if err != nil {
		return nil, err
	}
	if body == "" && f.get("StackName") != "" {
		st, err := s.mustStack(f.get("StackName"))
		if err != nil {
			return nil, err
		}
		body = st.Body
	}
	tpl, err := s.parse(body)
	if err != nil {
		return nil, err
	}
	type pd struct {
		ParameterKey  string
		DefaultValue  string `xml:",omitempty"`
		ParameterType string
		NoEcho        bool
		Description   string `xml:",omitempty"`
	}
	var ps []pd
	for _, n := range tpl.ParamOrder {
		d := tpl.Parameters[n]
		p := pd{ParameterKey: n, ParameterType: d.Type, NoEcho: d.NoEcho, Description: d.Description}
		if d.Default != nil {
			p.DefaultValue = *d.Default
		}
		ps = append(ps, p)
	}
	types := map[string]bool{}
	for _, r := range tpl.Resources {
		types[r.Type] = true
	}
	return struct {
		Parameters    []pd     `xml:"Parameters>member"`
		Description   string   `xml:",omitempty"`
		ResourceTypes []string `xml:"ResourceTypes>member"`
		Version       string
	}{ps, tpl.Description, sortedKeys(types), "2010-09-09"}, nil
}

// --- change sets ---

func (s *Service) createChangeSet(f form) (any, error) {
	name, csName := f.get("StackName"), f.get("ChangeSetName")
	if name == "" || csName == "" {
		return nil, validation("StackName and ChangeSetName are required")
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
			return nil, &apiError{Code: "AlreadyExistsException", Message: fmt.Sprintf("Stack [%s] already exists and cannot be created again with the changeSet [%s].", name, csName), Status: 400}
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
	default:
		return nil, validation("ChangeSetType %s is not supported by the emulator (CREATE or UPDATE)", typ)
	}
	body, err := s.templateBody(f)
	if err != nil {
		return nil, err
	}
	if f.get("UsePreviousTemplate") == "true" && st != nil {
		body = st.Body
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
	tpl, err := s.parse(body)
	if err != nil {
		return nil, err
	}
	caps := f.list("Capabilities")
	if err := checkCapabilities(tpl, caps); err != nil {
		return nil, err
	}
	if _, _, err := tpl.resolveParams(params, s.ssm); err != nil {
		return nil, err
	}
	if st == nil {
		st = &stack{Name: name, Seq: s.nextSeq(), Created: now, Resources: map[string]*resource{}, Params: params,
			Tags: givenTags(f), Capabilities: caps, NotificationARNs: f.list("NotificationARNs"), Body: body, tpl: tpl,
			Description: tpl.Description}
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
	if !f.has("NotificationARNs.member.1") {
		arns = st.NotificationARNs
	}
	cs := &changeSet{
		ID:   fmt.Sprintf("arn:aws:cloudformation:%s:%s:changeSet/%s/%s", s.o.Region, s.o.AccountID, csName, hashUUID("cs", st.ID, csName, fmt.Sprint(s.nextSeq()))),
		Name: csName, StackID: st.ID, StackName: st.Name, Type: typ, Status: "CREATE_IN_PROGRESS", ExecutionStatus: "UNAVAILABLE",
		Description: f.get("Description"), Created: now, ReadyAt: now.Add(s.o.ChangeSetDelay), Body: body, Params: params,
		Tags: tags, Capabilities: caps, NotificationARNs: arns, ClientToken: f.get("ClientToken"),
	}
	s.st.ChangeSets = append(s.st.ChangeSets, cs)
	s.poke(cs.ReadyAt)
	return struct{ Id, StackId string }{cs.ID, cs.StackID}, nil
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
	}
}

type xDetail struct {
	Target struct {
		Attribute          string
		Name               string `xml:",omitempty"`
		RequiresRecreation string
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
		rc.Action, rc.LogicalResourceId, rc.PhysicalResourceId, rc.ResourceType, rc.Replacement, rc.Scope =
			c.Action, c.LogicalID, c.PhysicalID, c.Type, c.Replacement, c.Scope
		for _, d := range c.Details {
			var xd xDetail
			xd.Target.Attribute, xd.Target.Name, xd.Target.RequiresRecreation = d.Attribute, d.Name, d.RequiresRecreation
			xd.Evaluation, xd.ChangeSource, xd.CausingEntity = d.Evaluation, d.ChangeSource, d.CausingEntity
			rc.Details = append(rc.Details, xd)
		}
		changes = append(changes, x)
	}
	pg, next, err := page(changes, f.get("NextToken"), s.o.PageSize)
	if err != nil {
		return nil, err
	}
	var params []xParam
	for _, k := range sortedKeys(cs.Params) {
		params = append(params, xParam{ParameterKey: k, ParameterValue: cs.Params[k]})
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
	}{cs.Name, cs.ID, cs.StackID, cs.StackName, cs.Description, params, tp(cs.Created), cs.ExecutionStatus, cs.Status,
		cs.StatusReason, cs.NotificationARNs, cs.Capabilities, tags, pg, next}, nil
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
	st := s.byID[cs.StackID]
	if st == nil || st.deleted() {
		return nil, stackNotFound(cs.StackName)
	}
	if cs.Type == "UPDATE" {
		if err := s.checkUpdatable(st); err != nil {
			return nil, err
		}
	}
	p, err := s.plan(st, cs.Body, cs.Params, cs.NotificationARNs)
	if err == nil {
		err = s.checkImports(st, p)
	}
	if err != nil {
		return nil, err
	}
	now := s.clk.Now()
	cs.ExecutionStatus, cs.ExecToken = "EXECUTE_IN_PROGRESS", tok
	// executing deletes the stack's other change sets
	kept := s.st.ChangeSets[:0]
	for _, o := range s.st.ChangeSets {
		if o.StackID != st.ID || o == cs {
			kept = append(kept, o)
		}
	}
	s.st.ChangeSets = kept
	s.st.Executed = append(s.st.Executed, ExecutedChangeSet{StackName: st.Name, StackID: st.ID, ChangeSetName: cs.Name,
		ChangeSetID: cs.ID, ClientRequestToken: tok, ExecutedAt: now, Changes: len(cs.Changes)})
	st.ChangeSetID = cs.ID
	st.Tags, st.Capabilities, st.NotificationARNs = cs.Tags, cs.Capabilities, cs.NotificationARNs
	if f.has("DisableRollback") {
		st.DisableRollback = f.get("DisableRollback") == "true"
	}
	st.LastClientToken = tok
	if cs.Type == "CREATE" {
		st.Body, st.tpl, st.Params, st.Description, st.Imports = p.body, p.tpl, p.params, p.tpl.Description, p.imports
		s.setStatus(st, now, "CREATE_IN_PROGRESS", "User Initiated")
		s.startOp(st, s.createOp(p, tok, false), now)
		return nil, nil
	}
	st.Updated = now
	op := s.updateOp(st, p, tok)
	op.ChangeSetID = cs.ID
	s.setStatus(st, now, "UPDATE_IN_PROGRESS", "User Initiated")
	s.startOp(st, op, now)
	return nil, nil
}

func (s *Service) deleteChangeSet(f form) (any, error) {
	csName := f.get("ChangeSetName")
	cs := s.findChangeSet(csName, f.get("StackName"))
	if cs == nil {
		return nil, changeSetNotFound(csName)
	}
	if cs.ExecutionStatus == "EXECUTE_IN_PROGRESS" {
		return nil, &apiError{Code: "InvalidChangeSetStatus", Message: fmt.Sprintf("ChangeSet [%s] cannot be deleted in its current status of [EXECUTE_IN_PROGRESS]", cs.ID), Status: 400}
	}
	kept := s.st.ChangeSets[:0]
	for _, o := range s.st.ChangeSets {
		if o != cs {
			kept = append(kept, o)
		}
	}
	s.st.ChangeSets = kept
	return nil, nil
}

// --- protection, policy, rollback ---

func (s *Service) updateTerminationProtection(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	st.Protected = f.get("EnableTerminationProtection") == "true"
	return struct{ StackId string }{st.ID}, nil
}

func (s *Service) setStackPolicy(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	body := f.get("StackPolicyBody")
	if body == "" && f.get("StackPolicyURL") != "" {
		bucket, key, err := parseS3URL(f.get("StackPolicyURL"))
		if err != nil {
			return nil, err
		}
		if s.o.GetObject == nil {
			return nil, validation("StackPolicyURL cannot be read: the emulator has no S3 attached")
		}
		b, err := s.o.GetObject(context.Background(), bucket, key)
		if err != nil {
			return nil, validation("StackPolicyURL %s cannot be read: %v", f.get("StackPolicyURL"), err)
		}
		body = string(b)
	}
	if _, err := parsePolicy(body); err != nil {
		return nil, err
	}
	st.Policy = body
	return nil, nil
}

func (s *Service) getStackPolicy(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	return struct {
		StackPolicyBody string `xml:",omitempty"`
	}{st.Policy}, nil
}

func (s *Service) continueUpdateRollback(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	if st.Status != "UPDATE_ROLLBACK_FAILED" || st.Op == nil {
		return nil, validation("Stack %s is in %s state and can not continue update rollback (only UPDATE_ROLLBACK_FAILED can)", st.Name, st.Status)
	}
	op := st.Op
	skip := map[string]bool{}
	for _, r := range f.list("ResourcesToSkip") {
		if st.Resources[r] == nil {
			return nil, validation("ResourcesToSkip: %s is not a resource of stack %s", r, st.Name)
		}
		skip[r] = true
	}
	now := s.clk.Now()
	var steps []step
	for _, sp := range op.Steps[op.Cur:] {
		if skip[sp.LogicalID] {
			r := st.Resources[sp.LogicalID]
			s.setResource(st, r, now, "UPDATE_COMPLETE", "Resource update skipped.")
			continue
		}
		steps = append(steps, sp)
	}
	op.Steps, op.Cur, op.Started, op.Halted = steps, 0, false, false
	s.setStatus(st, now, "UPDATE_ROLLBACK_IN_PROGRESS", "User Initiated")
	s.startOp(st, op, now)
	return nil, nil
}

func (s *Service) rollbackStack(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	now := s.clk.Now()
	switch {
	case st.Status == "UPDATE_FAILED" && st.Op != nil:
		st.Op.Halted = false
		s.startUpdateRollback(st, "User Initiated", now)
		s.startOp(st, st.Op, now)
	case st.Status == "CREATE_FAILED":
		var names []string
		if tpl, err := st.template(); err == nil {
			names, _ = tpl.order()
		}
		st.Op = &operation{Touched: names}
		for i := 0; i < len(names); {
			if st.Resources[names[i]] == nil {
				names = append(names[:i], names[i+1:]...)
				continue
			}
			i++
		}
		st.Op.Touched = names
		s.startCreateRollback(st, "User Initiated", now)
		s.startOp(st, st.Op, now)
	default:
		return nil, validation("Stack %s is in %s state and can not be rolled back (only UPDATE_FAILED or CREATE_FAILED can)", st.Name, st.Status)
	}
	return struct{ StackId string }{st.ID}, nil
}

func (s *Service) cancelUpdateStack(f form) (any, error) {
	st, err := s.mustStack(f.get("StackName"))
	if err != nil {
		return nil, err
	}
	if st.Status != "UPDATE_IN_PROGRESS" || st.Op == nil {
		return nil, validation("CancelUpdateStack cannot be called from current stack status %s", st.Status)
	}
	now := s.clk.Now()
	if st.Op.Started {
		st.Op.Started = false
	}
	s.startUpdateRollback(st, "Stack cancel requested", now)
	s.startOp(st, st.Op, now)
	return nil, nil
}

// --- exports ---

func (s *Service) listExports(f form) (any, error) {
	type xExport struct{ ExportingStackId, Name, Value string }
	var out []xExport
	for _, st := range s.st.Stacks {
		if st.deleted() {
			continue
		}
		for _, o := range st.Outputs {
			if o.ExportName != "" {
				out = append(out, xExport{st.ID, o.ExportName, o.Value})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	pg, next, err := page(out, f.get("NextToken"), s.o.PageSize)
	if err != nil {
		return nil, err
	}
	return struct {
		Exports   []xExport `xml:"Exports>member"`
		NextToken string    `xml:",omitempty"`
	}{pg, next}, nil
}

func (s *Service) listImports(f form) (any, error) {
	name := f.get("ExportName")
	users := s.importers(name)
	if len(users) == 0 {
		return nil, validation("Export '%s' is not imported by any stack.", name)
	}
	var names []string
	for _, u := range users {
		names = append(names, u.Name)
	}
	pg, next, err := page(names, f.get("NextToken"), s.o.PageSize)
	if err != nil {
		return nil, err
	}
	return struct {
		Imports   []string `xml:"Imports>member"`
		NextToken string   `xml:",omitempty"`
	}{pg, next}, nil
}
