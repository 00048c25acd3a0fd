package cfnlocal

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairn-dev/cairn/internal/resourcespec"
)

// stack is one CloudFormation stack, deleted or not.
type stack struct {
	ID, Name          string
	Seq               int
	Status, Reason    string
	Created, Updated  time.Time
	Deleted           time.Time
	Description       string
	Body              string            // current template, processed (see process)
	Original          string            // the template as given, when its transforms changed it
	Params            map[string]string // effective parameter values as given
	Resolved          map[string]string `json:",omitempty"` // values of SSM parameter types, as the last operation read them
	NoEcho            map[string]bool
	Tags              []tag
	Capabilities      []string
	NotificationARNs  []string
	Rollback          *rollbackConfig // rollback triggers (triggers.go)
	DisableRollback   bool
	TimeoutMinutes    int
	Protected         bool
	Policy            string
	Outputs           []output
	Resources         map[string]*resource
	Events            []event // oldest first
	Imports           []string
	Op                *operation
	ChangeSetID       string // change set of the last execution
	DriftStatus       string
	DriftChecked      time.Time
	LastClientToken   string
	RetainedResources []string
	// ParentID and RootID are the parent and root stacks of a nested stack; Undo is its last
	// completed update, which its parent's rollback rolls back.
	ParentID, RootID string
	Undo             *operation

	tpl   *template  // parsed Body, cached
	saved stackSaved // what the journal holds of it (persist.go)
}

type tag struct{ Key, Value string }

type output struct {
	Key, Value, Description, ExportName string
}

type resource struct {
	LogicalID, Type, PhysicalID string
	Status, Reason              string
	Updated                     time.Time
	Props                       map[string]any
	Attrs                       map[string]any // custom resource Data
	Seed                        string
	DeletionPolicy              string
	UpdateReplacePolicy         string
	Tampered                    map[string]any // property path -> out-of-band value
	DriftStatus                 string
	DriftChecked                time.Time
}

type event struct {
	ID, LogicalID, PhysicalID, Type string
	Time                            time.Time
	Status, Reason                  string
	Props                           string
	Token                           string
}

func (st *stack) template() (*template, error) {
	if st.tpl == nil {
		t, err := parseTemplate(st.Body)
		if err != nil {
			return nil, err
		}
		st.tpl = t
	}
	return st.tpl, nil
}

func (st *stack) deleted() bool { return st.Status == "DELETE_COMPLETE" }

func (st *stack) inProgress() bool {
	return strings.HasSuffix(st.Status, "_IN_PROGRESS") && st.Status != "REVIEW_IN_PROGRESS"
}

// findStack finds a live stack by name or any stack by id.
func (s *Service) findStack(nameOrID string) *stack {
	if st, ok := s.byID[nameOrID]; ok {
		return st
	}
	for i := len(s.st.Stacks) - 1; i >= 0; i-- {
		st := s.st.Stacks[i]
		if st.Name == nameOrID && !st.deleted() {
			return st
		}
	}
	return nil
}

func (s *Service) mustStack(nameOrID string) (*stack, error) {
	if nameOrID == "" {
		return nil, validation("1 validation error detected: Value null at 'stackName' failed to satisfy constraint: Member must not be null")
	}
	st := s.findStack(nameOrID)
	if st == nil {
		return nil, stackNotFound(nameOrID)
	}
	return st, nil
}

func (s *Service) stackARN(name string) string {
	return fmt.Sprintf("arn:aws:cloudformation:%s:%s:stack/%s/%s", s.o.Region, s.o.AccountID, name, hashUUID("stack", name, fmt.Sprint(s.nextSeq())))
}

// addEvent records one status change and sends it to the stack's NotificationARNs.
//
// A stack's events are a millisecond apart at least, as the API shows them: clients order
// them by Timestamp (the CDK CLI sorts what it reads by it, newest first within a tie), so
// events of one instant of the emulator's clock would come out of order — a stack's
// CREATE_COMPLETE before its last resource's, UPDATE_COMPLETE before UPDATE_IN_PROGRESS.
func (s *Service) addEvent(st *stack, at time.Time, logicalID, physicalID, typ, status, reason string, props map[string]any) {
	if n := len(st.Events); n > 0 {
		if last := st.Events[n-1].Time.Truncate(time.Millisecond); !at.Truncate(time.Millisecond).After(last) {
			at = last.Add(time.Millisecond)
		}
	}
	ev := event{
		ID: hashUUID("event", st.ID, fmt.Sprint(len(st.Events))), LogicalID: logicalID, PhysicalID: physicalID,
		Type: typ, Time: at, Status: status, Reason: reason, Token: st.LastClientToken,
	}
	if logicalID != st.Name || typ != "AWS::CloudFormation::Stack" {
		// AWS's resource event ids name the resource, status and time; an id is unique in
		// the stack, so a second event of the same status at the same millisecond (a
		// provider's "Resource creation Initiated") gets a UUID instead. Events come in
		// time order: only those of the same millisecond are looked at.
		ev.ID = logicalID + "-" + status + "-" + at.UTC().Format("2006-01-02T15:04:05.000Z")
		ms := at.Truncate(time.Millisecond)
		for i := len(st.Events) - 1; i >= 0 && st.Events[i].Time.Truncate(time.Millisecond).Equal(ms); i-- {
			if st.Events[i].ID == ev.ID {
				ev.ID = logicalID + "-" + hashUUID("event", st.ID, fmt.Sprint(len(st.Events)))
				break
			}
		}
	}
	if props != nil {
		b, _ := json.Marshal(props)
		ev.Props = maskSecrets(string(b), s.secretsOf(st)) // as AWS masks NoEcho values in stack events
	}
	st.Events = append(st.Events, ev)
	if logicalID != st.Name || typ != "AWS::CloudFormation::Stack" {
		s.touchResource(st, logicalID)
	}
	s.touch(st)
	for _, arn := range st.NotificationARNs {
		msg := notification(s, st, ev)
		s.outbox = append(s.outbox, func(ctx context.Context) {
			if s.o.Publish == nil {
				return
			}
			if err := s.o.Publish(ctx, arn, "AWS CloudFormation Notification", msg); err != nil {
				s.log.Warn("cloudformation emulator: stack notification not delivered", "stack", st.Name, "topic", arn, "err", err)
			}
		})
	}
}

func notification(s *Service, st *stack, ev event) string {
	props := ev.Props
	if props == "" {
		props = "null"
	}
	token := ev.Token
	if token == "" {
		token = "null"
	}
	return fmt.Sprintf("StackId='%s'\nTimestamp='%s'\nEventId='%s'\nLogicalResourceId='%s'\nNamespace='%s'\nPhysicalResourceId='%s'\nPrincipalId='%s'\nResourceProperties='%s'\nResourceStatus='%s'\nResourceStatusReason='%s'\nResourceType='%s'\nStackName='%s'\nClientRequestToken='%s'\n",
		st.ID, ev.Time.UTC().Format("2006-01-02T15:04:05.000Z"), ev.ID, ev.LogicalID, s.o.AccountID, ev.PhysicalID,
		s.o.AccountID, props, ev.Status, ev.Reason, ev.Type, st.Name, token)
}

// setStatus changes the stack status, records the stack event and sends the EventBridge
// "CloudFormation Stack Status Change" event.
func (s *Service) setStatus(st *stack, at time.Time, status, reason string) {
	st.Status, st.Reason = status, reason
	s.addEvent(st, at, st.Name, st.ID, "AWS::CloudFormation::Stack", status, reason, nil)
	if status == "DELETE_COMPLETE" {
		st.Deleted = at
	}
	s.emitStatusChange(st, at, status, reason)
	if st.ParentID != "" && !strings.HasSuffix(status, "_IN_PROGRESS") {
		s.nestedSettled(st, status, at)
	}
}

// setResource changes a resource status and records the event.
func (s *Service) setResource(st *stack, r *resource, at time.Time, status, reason string) {
	r.Status, r.Reason, r.Updated = status, reason, at
	s.addEvent(st, at, r.LogicalID, r.PhysicalID, r.Type, status, reason, r.Props)
}

// evaluator builds an evaluator of tpl with the given parameters against the stack's
// current resources. Resources that do not exist yet evaluate to knownAfterApply.
func (s *Service) evaluator(st *stack, tpl *template, params map[string]string, notificationARNs []string) (*evaluator, error) {
	vals, _, err := tpl.resolveParams(params, s.ssm)
	if err != nil {
		return nil, err
	}
	arns := make([]any, len(notificationARNs))
	for i, a := range notificationARNs {
		arns[i] = a
	}
	e := &evaluator{
		tpl: tpl, params: vals, region: s.o.Region,
		pseudo: map[string]any{
			"AWS::AccountId": s.o.AccountID, "AWS::Region": s.o.Region, "AWS::StackName": st.Name,
			"AWS::StackId": st.ID, "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com",
			"AWS::NotificationARNs": arns,
		},
	}
	e.ref = func(name string) (any, error) {
		if c := tpl.Resources[name].Condition; c != "" {
			if ok, _ := e.condition(c); !ok {
				return nil, invalidf("Template format error: Unresolved resource dependencies [%s] in the Resources block of the template (its condition %s is false)", name, c)
			}
		}
		r := st.Resources[name]
		if r == nil || r.PhysicalID == "" || r.Type != tpl.Resources[name].Type {
			return knownAfterApply, nil
		}
		return r.PhysicalID, nil
	}
	e.getAtt = func(name, attr string) (any, error) {
		if c := tpl.Resources[name].Condition; c != "" {
			if ok, _ := e.condition(c); !ok {
				return nil, invalidf("Template error: Fn::GetAtt of %s whose condition %s is false", name, c)
			}
		}
		r := st.Resources[name]
		if r == nil || r.PhysicalID == "" || r.Type != tpl.Resources[name].Type {
			return knownAfterApply, nil
		}
		return s.attr(st, r, attr)
	}
	e.importValue = func(name string) (string, error) {
		ex, ok := s.exports()[name]
		if !ok || ex.stack == st {
			return "", invalidf("No export named %s found.", name)
		}
		return ex.value, nil
	}
	if err := e.evalConditions(); err != nil {
		return nil, err
	}
	return e, nil
}

func (s *Service) attr(st *stack, r *resource, attr string) (any, error) {
	if r.Type == nestedType {
		return s.nestedOutput(r, attr)
	}
	if isCustomType(r.Type) {
		if v, ok := r.Attrs[attr]; ok {
			return v, nil
		}
		return nil, invalidf("CustomResource attribute error: Vendor response doesn't contain %s key in object %s|%s|%s in S3 bucket cloudformation-custom-resource-storage-%s", attr, st.ID, r.LogicalID, r.PhysicalID, s.o.Region)
	}
	if t := resourcespec.Lookup(r.Type); t != nil && !t.HasAttribute(attr) {
		// an attribute named by an expression (Fn::Sub, Fn::If): the template check saw no literal
		return nil, invalidf("Template error: resource %s does not support attribute type %s in Fn::GetAtt", r.LogicalID, attr)
	}
	if v, ok := r.Attrs[attr]; ok && s.provides(r.Type) {
		return v, nil
	}
	return attribute(r.Type, attr, s.idCtx(st, r)), nil
}

func (s *Service) idCtx(st *stack, r *resource) idCtx {
	return idCtx{region: s.o.Region, account: s.o.AccountID, stack: st.Name, logicalID: r.LogicalID, seed: r.Seed, props: r.Props, physical: r.PhysicalID}
}

func (s *Service) ssm(name, typ string) (string, error) {
	if s.o.SSMParameter != nil {
		return s.o.SSMParameter(name, typ)
	}
	return PublicParameter(name, typ), nil
}

// PublicParameter is the stand-in value of an SSM parameter the emulator does not hold:
// an ami- id for image ids, a stable string otherwise.
func PublicParameter(name, typ string) string {
	if strings.Contains(typ, "AWS::EC2::Image::Id") {
		return "ami-" + hashHex(17, name)
	}
	return "ssm-" + hashHex(12, name)
}

// planned is a template evaluated ahead of execution: what a stack would become.
type planned struct {
	tpl      *template
	body     string
	original string // the template as given, when transforms changed it
	params   map[string]string
	active   []string // resources whose condition holds, in dependency order
	props    map[string]map[string]any
	outputs  []output
	imports  []string
}

// plan evaluates the template against the stack's current state; every unresolvable
// expression is an error.
func (s *Service) plan(st *stack, body string, params map[string]string, arns []string) (*planned, error) {
	return s.planImports(st, body, params, arns, false)
}

// planChange is plan for change sets: an import of an export that does not exist is known
// only when the change set executes (checkImports then rolls the stack back), as in AWS.
func (s *Service) planChange(st *stack, body string, params map[string]string, arns []string) (*planned, error) {
	return s.planImports(st, body, params, arns, true)
}

func (s *Service) planImports(st *stack, body string, params map[string]string, arns []string, lateImports bool) (*planned, error) {
	tpl, err := s.parse(body)
	if err != nil {
		return nil, err
	}
	e, err := s.evaluator(st, tpl, params, arns)
	if err != nil {
		return nil, err
	}
	// The outputs of a nested stack that changes are known once it has: what reads them
	// changes too, with a value known after apply, as AWS's change sets show it.
	changing := map[string]bool{}
	getAtt := e.getAtt
	e.getAtt = func(name, attr string) (any, error) {
		if changing[name] {
			return knownAfterApply, nil
		}
		return getAtt(name, attr)
	}
	var imports []string
	inner := e.importValue
	e.importValue = func(name string) (string, error) {
		imports = append(imports, name)
		v, err := inner(name)
		if err != nil && lateImports {
			return knownAfterApply, nil
		}
		return v, err
	}
	order, err := tpl.order()
	if err != nil {
		return nil, err
	}
	_, eff, err := tpl.resolveParams(params, s.ssm)
	if err != nil {
		return nil, err
	}
	// the stack keeps every parameter's effective value, defaults included, so that
	// UsePreviousValue works for parameters that were never given
	p := &planned{tpl: tpl, body: body, params: eff, props: map[string]map[string]any{}}
	for _, name := range order {
		d := tpl.Resources[name]
		if d.Condition != "" {
			if ok, err := e.condition(d.Condition); err != nil {
				return nil, err
			} else if !ok {
				continue
			}
		}
		v, err := e.eval(d.Properties)
		if err != nil {
			return nil, fmt.Errorf("%w (in resource %s)", err, name)
		}
		props, _ := v.(map[string]any)
		if props == nil {
			props = map[string]any{}
		}
		if isCustomType(d.Type) {
			if _, ok := props["ServiceToken"]; !ok {
				return nil, invalidf("Template error: custom resource %s has no ServiceToken property", name)
			}
		}
		p.active = append(p.active, name)
		p.props[name] = props
		if cur := st.Resources[name]; d.Type == nestedType && cur != nil && (!equalJSON(cur.Props, props) || s.nestedTemplateChanged(cur, props)) {
			changing[name] = true
		}
	}
	if ord, err := resourceOrder(tpl, p.props); err == nil {
		p.active = slices.DeleteFunc(ord, func(n string) bool { _, ok := p.props[n]; return !ok })
	}
	outs, err := s.evalOutputs(e, tpl)
	if err != nil {
		return nil, err
	}
	p.outputs = outs
	if err := s.checkDynamicRefs(p); err != nil {
		return nil, err
	}
	sort.Strings(imports)
	p.imports = dedupe(imports)
	return p, nil
}

func (s *Service) evalOutputs(e *evaluator, tpl *template) ([]output, error) {
	names := make([]string, 0, len(tpl.Outputs))
	for n := range tpl.Outputs {
		names = append(names, n)
	}
	sort.Strings(names)
	var outs []output
	for _, n := range names {
		o := tpl.Outputs[n]
		if o.Condition != "" {
			if ok, err := e.condition(o.Condition); err != nil {
				return nil, err
			} else if !ok {
				continue
			}
		}
		v, err := e.eval(o.Value)
		if err != nil {
			return nil, fmt.Errorf("%w (in output %s)", err, n)
		}
		val, err := outputString(v, n)
		if err != nil {
			return nil, err
		}
		out := output{Key: n, Value: val, Description: o.Description}
		if o.Export != nil {
			ev, err := e.eval(o.Export)
			if err != nil {
				return nil, fmt.Errorf("%w (in export of output %s)", err, n)
			}
			out.ExportName = scalarString(ev)
		}
		outs = append(outs, out)
	}
	return outs, nil
}

func outputString(v any, name string) (string, error) {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = scalarString(p)
		}
		return strings.Join(parts, ","), nil
	case map[string]any:
		return "", invalidf("Template format error: Output %s is malformed: the Value must evaluate to a string or a list of strings", name)
	}
	return scalarString(v), nil
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb) || reflect.DeepEqual(a, b)
}

func copyProps(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

func (s *Service) emitStatusChange(st *stack, at time.Time, status, reason string) {
	if s.o.PutEvent == nil {
		return
	}
	detail, _ := json.Marshal(map[string]any{
		"stack-id":             st.ID,
		"status-details":       map[string]string{"status": status, "status-reason": reason},
		"client-request-token": st.LastClientToken,
	})
	evt := events.CloudWatchEvent{
		Version: "0", ID: hashUUID("evt", st.ID, fmt.Sprint(len(st.Events))), DetailType: "CloudFormation Stack Status Change",
		Source: "aws.cloudformation", AccountID: s.o.AccountID, Time: at.UTC().Truncate(time.Second), Region: s.o.Region,
		Resources: []string{st.ID}, Detail: detail,
	}
	s.outbox = append(s.outbox, func(ctx context.Context) {
		if err := s.o.PutEvent(ctx, evt); err != nil {
			s.log.Warn("cloudformation emulator: status change event not delivered", "stack", st.Name, "err", err)
		}
	})
}
