package awslocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairn-dev/cairn/internal/awslocal/statefile"
)

// eventsAPI serves the EventBridge API of a place (AWS JSON 1.1, X-Amz-Target
// AWSEvents.ACTION): event buses (CreateEventBus, DeleteEventBus, DescribeEventBus,
// ListEventBuses), PutEvents to any bus, and rules and targets on any bus (PutRule,
// DeleteRule, DescribeRule, ListRules, EnableRule, DisableRule, PutTargets, RemoveTargets,
// ListTargetsByRule). What it makes is kept under the place's folder; what stacks make
// comes back with them.
type eventsAPI struct{ p *Place }

// eventsError is an EventBridge API error.
type eventsError struct{ code, message string }

func (e *eventsError) Error() string { return e.message }

func eventsErr(code, format string, args ...any) error {
	return &eventsError{code, fmt.Sprintf(format, args...)}
}

func (a eventsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, action, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil && len(strings.TrimSpace(string(body))) == 0 {
		body = []byte("{}")
	}
	var out any
	if err == nil {
		out, err = a.call(r.Context(), action, body)
	}
	if err != nil {
		var e *eventsError
		if !errors.As(err, &e) {
			e = &eventsError{"InternalException", err.Error()}
		}
		writeServiceError(w, "json", http.StatusBadRequest, e.code, e.message)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

var (
	busNameRE  = regexp.MustCompile(`^[/\.\-_A-Za-z0-9]{1,256}$`)
	ruleNameRE = regexp.MustCompile(`^[\.\-_A-Za-z0-9]{1,64}$`)
)

// epoch is a time as EventBridge's JSON carries it: seconds since the epoch.
func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// call serves one EventBridge action (the X-Amz-Target of the request) on its JSON body.
func (a eventsAPI) call(ctx context.Context, action string, body []byte) (any, error) {
	switch action {
	case "CreateEventBus", "DeleteEventBus", "DescribeEventBus", "ListEventBuses":
		return a.busCall(action, body)
	case "PutEvents":
		return a.putEvents(ctx, body)
	case "PutRule":
		return a.putRule(action, body)
	case "DeleteRule", "DescribeRule", "ListRules", "EnableRule", "DisableRule":
		return a.ruleCall(action, body)
	case "PutTargets", "RemoveTargets", "ListTargetsByRule":
		return a.targetCall(action, body)
	}
	return nil, eventsErr("UnknownOperationException", "The action %s is not served by the local emulator (it serves event buses, PutEvents, rules and targets).", action)
}

// decodeEvents reads the JSON body of an EventBridge request for action into v.
func decodeEvents(action string, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return eventsErr("SerializationException", "could not read the %s request: %v", action, err)
	}
	return nil
}

// ruleRef names a rule in a request: by Name (or Rule) on an event bus.
type ruleRef struct{ Name, Rule, EventBusName string }

// busCall serves the event bus actions: CreateEventBus, DeleteEventBus, DescribeEventBus,
// ListEventBuses.
func (a eventsAPI) busCall(action string, body []byte) (any, error) {
	p, e := a.p, a.p.e
	switch action {
	case "CreateEventBus":
		var in struct{ Name, Description string }
		if err := decodeEvents(action, body, &in); err != nil {
			return nil, err
		}
		if !busNameRE.MatchString(in.Name) || in.Name == defaultBus {
			return nil, eventsErr("ValidationException", "1 validation error detected: Value '%s' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: [/\\.\\-_A-Za-z0-9]+ (and not be default)", in.Name)
		}
		e.mu.Lock()
		if p.busLocked(in.Name) != nil {
			e.mu.Unlock()
			return nil, eventsErr("ResourceAlreadyExistsException", "Event bus %s already exists.", in.Name)
		}
		p.buses[in.Name] = &eventBus{name: in.Name, description: in.Description, created: e.opts.Clock.Now(), rules: map[string]*rule{}, policy: map[string][]string{}, api: true}
		e.mu.Unlock()
		return map[string]string{"EventBusArn": p.busARN(in.Name)}, p.saveEvents()
	case "DeleteEventBus":
		var in struct{ Name string }
		if err := decodeEvents(action, body, &in); err != nil {
			return nil, err
		}
		if busName(in.Name) == defaultBus {
			return nil, eventsErr("ValidationException", "Cannot delete event bus default.")
		}
		p.deleteBus(busName(in.Name))
		return struct{}{}, p.saveEvents()
	case "DescribeEventBus":
		var in struct{ Name string }
		if err := decodeEvents(action, body, &in); err != nil {
			return nil, err
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		b := p.busLocked(busName(in.Name))
		if b == nil {
			return nil, eventsErr("ResourceNotFoundException", "Event bus %s does not exist.", busName(in.Name))
		}
		return p.describeBusLocked(b), nil
	default: // ListEventBuses
		var in struct {
			NamePrefix string
			Limit      int
			NextToken  string
		}
		if err := decodeEvents(action, body, &in); err != nil {
			return nil, err
		}
		e.mu.Lock()
		p.busLocked(defaultBus)
		var all []map[string]any
		for _, name := range sortedKeys(p.buses) {
			if strings.HasPrefix(name, in.NamePrefix) {
				all = append(all, p.describeBusLocked(p.buses[name]))
			}
		}
		e.mu.Unlock()
		return eventsPage("EventBuses", all, in.Limit, in.NextToken)
	}
}

// putRule serves PutRule: a rule made or changed, keeping its targets.
func (a eventsAPI) putRule(action string, body []byte) (any, error) {
	p, e := a.p, a.p.e
	var in struct {
		Name, EventPattern, ScheduleExpression, State, Description, EventBusName string
	}
	if err := decodeEvents(action, body, &in); err != nil {
		return nil, err
	}
	if !ruleNameRE.MatchString(in.Name) {
		return nil, eventsErr("ValidationException", "1 validation error detected: Value '%s' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\.\\-_A-Za-z0-9]+", in.Name)
	}
	bus := busName(in.EventBusName)
	r := &rule{schedule: in.ScheduleExpression, enabled: in.State != "DISABLED", description: in.Description, api: true}
	if in.EventPattern != "" {
		pat, err := patternParse(in.EventPattern)
		if err != nil {
			return nil, eventsErr("InvalidEventPatternException", "Event pattern is not valid. Reason: %v", err)
		}
		r.pattern, r.patternText = pat, in.EventPattern
	}
	if r.pattern == nil && r.schedule == "" {
		return nil, eventsErr("ValidationException", "Parameter(s) EventPattern or ScheduleExpression must be specified.")
	}
	if r.schedule != "" && bus != defaultBus {
		return nil, eventsErr("ValidationException", "ScheduleExpression is supported only on the default event bus.")
	}
	if r.schedule != "" {
		if _, err := parseSchedule(r.schedule); err != nil {
			return nil, eventsErr("ValidationException", "Parameter ScheduleExpression is not valid.")
		}
	}
	e.mu.Lock()
	b := p.busLocked(bus)
	var old *rule
	if b != nil {
		old = b.rules[in.Name]
	}
	e.mu.Unlock()
	if b == nil {
		return nil, eventsErr("ResourceNotFoundException", "Event bus %s does not exist.", bus)
	}
	if old != nil {
		r.targets = old.targets // PutRule keeps a rule's targets
	}
	if err := p.putRuleOn(bus, in.Name, r); err != nil {
		return nil, eventsErr("ValidationException", "%v", err)
	}
	return map[string]string{"RuleArn": p.ruleARN(bus, in.Name)}, p.saveEvents()
}

// ruleCall serves the rule actions but PutRule: DeleteRule, DescribeRule, ListRules,
// EnableRule and DisableRule.
func (a eventsAPI) ruleCall(action string, body []byte) (any, error) {
	p, e := a.p, a.p.e
	switch action {
	case "DeleteRule":
		var in ruleRef
		if err := decodeEvents(action, body, &in); err != nil {
			return nil, err
		}
		bus := busName(in.EventBusName)
		e.mu.Lock()
		var targets int
		if b := p.busLocked(bus); b != nil && b.rules[in.Name] != nil {
			targets = len(b.rules[in.Name].targets)
		}
		e.mu.Unlock()
		if targets > 0 {
			return nil, eventsErr("ValidationException", "Rule can't be deleted since it has targets.")
		}
		p.deleteRuleOn(bus, in.Name)
		return struct{}{}, p.saveEvents()
	case "DescribeRule":
		var in ruleRef
		if err := decodeEvents(action, body, &in); err != nil {
			return nil, err
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		_, r, err := p.ruleLocked(in.EventBusName, in.Name)
		if err != nil {
			return nil, err
		}
		return p.describeRuleLocked(busName(in.EventBusName), r), nil
	case "ListRules":
		var in struct {
			NamePrefix, EventBusName, NextToken string
			Limit                               int
		}
		if err := decodeEvents(action, body, &in); err != nil {
			return nil, err
		}
		bus := busName(in.EventBusName)
		e.mu.Lock()
		b := p.busLocked(bus)
		if b == nil {
			e.mu.Unlock()
			return nil, eventsErr("ResourceNotFoundException", "Event bus %s does not exist.", bus)
		}
		var all []map[string]any
		for _, name := range sortedKeys(b.rules) {
			if strings.HasPrefix(name, in.NamePrefix) {
				all = append(all, p.describeRuleLocked(bus, b.rules[name]))
			}
		}
		e.mu.Unlock()
		return eventsPage("Rules", all, in.Limit, in.NextToken)
	default: // EnableRule, DisableRule
		var in ruleRef
		if err := decodeEvents(action, body, &in); err != nil {
			return nil, err
		}
		e.mu.Lock()
		_, r, err := p.ruleLocked(in.EventBusName, in.Name)
		var copy rule
		if err == nil {
			copy = *r
		}
		e.mu.Unlock()
		if err != nil {
			return nil, err
		}
		copy.enabled, copy.api, copy.stop = action == "EnableRule", true, nil
		if err := p.putRuleOn(busName(in.EventBusName), in.Name, &copy); err != nil {
			return nil, err
		}
		return struct{}{}, p.saveEvents()
	}
}

// targetCall serves the target actions: PutTargets, RemoveTargets, ListTargetsByRule.
func (a eventsAPI) targetCall(action string, body []byte) (any, error) {
	p, e := a.p, a.p.e
	switch action {
	case "PutTargets":
		var in struct {
			Rule, EventBusName string
			Targets            []map[string]any
		}
		if err := decodeEvents(action, body, &in); err != nil {
			return nil, err
		}
		parsed, err := parseTargets(in.Targets)
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		_, r, err := p.ruleLocked(in.EventBusName, in.Rule)
		if err == nil {
			err = checkTargetCount(r, parsed)
		}
		if err == nil {
			for _, nt := range parsed {
				if i := slices.IndexFunc(r.targets, func(o ruleTarget) bool { return o.ID == nt.ID }); i >= 0 {
					r.targets[i] = nt
				} else {
					r.targets = append(r.targets, nt)
				}
			}
			r.api = true
		}
		e.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return map[string]any{"FailedEntryCount": 0, "FailedEntries": []any{}}, p.saveEvents()
	case "RemoveTargets":
		var in struct {
			Rule, EventBusName string
			Ids                []string
		}
		if err := decodeEvents(action, body, &in); err != nil {
			return nil, err
		}
		e.mu.Lock()
		_, r, err := p.ruleLocked(in.EventBusName, in.Rule)
		if err == nil {
			r.targets = slices.DeleteFunc(r.targets, func(t ruleTarget) bool { return slices.Contains(in.Ids, t.ID) })
			r.api = true
		}
		e.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return map[string]any{"FailedEntryCount": 0, "FailedEntries": []any{}}, p.saveEvents()
	default: // ListTargetsByRule
		var in ruleRef
		if err := decodeEvents(action, body, &in); err != nil {
			return nil, err
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		_, r, err := p.ruleLocked(in.EventBusName, orDefault(in.Rule, in.Name))
		if err != nil {
			return nil, err
		}
		targets := []map[string]any{}
		for _, t := range r.targets {
			targets = append(targets, t.listing())
		}
		return map[string]any{"Targets": targets}, nil
	}
}

// ruleLocked finds a rule, failing in EventBridge's words. Called with e.mu.
func (p *Place) ruleLocked(busNameOrARN, name string) (*eventBus, *rule, error) {
	bus := busName(busNameOrARN)
	b := p.busLocked(bus)
	if b == nil {
		return nil, nil, eventsErr("ResourceNotFoundException", "Event bus %s does not exist.", bus)
	}
	r := b.rules[name]
	if r == nil {
		return nil, nil, eventsErr("ResourceNotFoundException", "Rule %s does not exist on EventBus %s.", name, bus)
	}
	return b, r, nil
}

func (p *Place) describeBusLocked(b *eventBus) map[string]any {
	out := map[string]any{"Name": b.name, "Arn": p.busARN(b.name)}
	if b.description != "" {
		out["Description"] = b.description
	}
	if !b.created.IsZero() {
		out["CreationTime"], out["LastModifiedTime"] = epoch(b.created), epoch(b.created)
	}
	return out
}

func (p *Place) describeRuleLocked(bus string, r *rule) map[string]any {
	out := map[string]any{"Name": r.name, "Arn": p.ruleARN(bus, r.name), "EventBusName": bus, "State": "ENABLED"}
	if !r.enabled {
		out["State"] = "DISABLED"
	}
	if r.patternText != "" {
		out["EventPattern"] = r.patternText
	}
	if r.schedule != "" {
		out["ScheduleExpression"] = r.schedule
	}
	if r.description != "" {
		out["Description"] = r.description
	}
	return out
}

// eventsPage is one page of a listing, at most limit (100 by default) after token.
func eventsPage(key string, all []map[string]any, limit int, token string) (any, error) {
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	start := 0
	if token != "" {
		n, err := strconv.Atoi(token)
		if err != nil || n < 0 || n > len(all) {
			return nil, eventsErr("ValidationException", "The NextToken is not valid: pass the one the previous answer gave.")
		}
		start = n
	}
	out := map[string]any{key: orEmptyList(all[start:min(start+limit, len(all))])}
	if start+limit < len(all) {
		out["NextToken"] = strconv.Itoa(start + limit)
	}
	return out, nil
}

func orEmptyList(l []map[string]any) []map[string]any {
	if l == nil {
		return []map[string]any{}
	}
	return l
}

// putEvents is PutEvents: each entry is checked and put on its bus (the default one
// unless EventBusName names another) on its own, as EventBridge answers them.
// See https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html
func (a eventsAPI) putEvents(ctx context.Context, body []byte) (any, error) {
	p := a.p
	var in struct {
		Entries []struct {
			Source, DetailType, Detail, EventBusName string
			Resources                                []string
			Time                                     *float64
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, eventsErr("SerializationException", "could not read the PutEvents request: %v", err)
	}
	if len(in.Entries) == 0 || len(in.Entries) > 10 {
		return nil, eventsErr("ValidationException", "1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length less than or equal to 10 and greater than or equal to 1")
	}
	type result struct {
		EventId      string `json:",omitempty"`
		ErrorCode    string `json:",omitempty"`
		ErrorMessage string `json:",omitempty"`
	}
	failed := 0
	var results []result
	for _, en := range in.Entries {
		fail := func(code, msg string) {
			failed++
			results = append(results, result{ErrorCode: code, ErrorMessage: msg})
		}
		var detail map[string]any
		switch {
		case en.Source == "":
			fail("InvalidArgument", "Parameter Source is not valid. Reason: Source is a required argument.")
			continue
		case en.DetailType == "":
			fail("InvalidArgument", "Parameter DetailType is not valid. Reason: DetailType is a required argument.")
			continue
		case en.Detail == "":
			fail("InvalidArgument", "Parameter Detail is not valid. Reason: Detail is a required argument.")
			continue
		case json.Unmarshal([]byte(en.Detail), &detail) != nil:
			fail("MalformedDetail", "Detail is malformed.")
			continue
		}
		ev := events.CloudWatchEvent{Source: en.Source, DetailType: en.DetailType, Detail: json.RawMessage(en.Detail), Resources: en.Resources}
		if en.Time != nil {
			ev.Time = time.UnixMilli(int64(*en.Time * 1000)).UTC()
		}
		bus := busName(en.EventBusName)
		target := p
		if strings.HasPrefix(en.EventBusName, "arn:") {
			if q := p.e.placeOfARN(en.EventBusName); q != nil {
				target = q
			}
		}
		if target != p && !target.admits(bus, p.account) {
			fail("AccessDeniedException", fmt.Sprintf("User: arn:aws:iam::%s:root is not authorized to perform: events:PutEvents on resource: %s", p.account, en.EventBusName))
			continue
		}
		if target != p {
			ev.AccountID, ev.Region = p.account, p.region
		}
		id, err := target.putEventOn(ctx, bus, ev)
		if err != nil && id == "" {
			fail("ResourceNotFoundException", err.Error())
			continue
		}
		results = append(results, result{EventId: id})
	}
	return map[string]any{"FailedEntryCount": failed, "Entries": results}, nil
}

// eventsState is what the EventBridge API made in a place, kept under its folder.
type eventsState struct {
	Buses []savedBus  `json:"buses,omitempty"`
	Rules []savedRule `json:"rules,omitempty"`
}

type savedBus struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Created     time.Time `json:"created"`
}

type savedRule struct {
	Bus, Name, Pattern, Schedule, Description string
	Enabled                                   bool
	Targets                                   []savedTarget
}

type savedTarget ruleTarget

func (p *Place) eventsPath() string { return filepath.Join(p.dir, "events", "events.json") }

// saveEvents writes what the API made; stacks' buses and rules come back with the stacks.
func (p *Place) saveEvents() error {
	if p.dir == "" {
		return nil
	}
	p.e.mu.Lock()
	var st eventsState
	for _, name := range sortedKeys(p.buses) {
		b := p.buses[name]
		if b.api {
			st.Buses = append(st.Buses, savedBus{Name: b.name, Description: b.description, Created: b.created})
		}
		for _, rn := range sortedKeys(b.rules) {
			r := b.rules[rn]
			if !r.api {
				continue
			}
			sr := savedRule{Bus: name, Name: rn, Pattern: r.patternText, Schedule: r.schedule, Description: r.description, Enabled: r.enabled}
			for _, t := range r.targets {
				sr.Targets = append(sr.Targets, savedTarget(t))
			}
			st.Rules = append(st.Rules, sr)
		}
	}
	p.e.mu.Unlock()
	if err := statefile.Write(p.eventsPath(), st, 0o644); err != nil {
		return fmt.Errorf("events emulator: save state: %w", err)
	}
	return nil
}

// loadEvents brings back what the API made before a restart.
func (p *Place) loadEvents() error {
	if p.dir == "" {
		return nil
	}
	var st eventsState
	if err := statefile.Read(p.eventsPath(), &st); err != nil {
		return fmt.Errorf("events emulator: %w", err)
	}
	p.e.mu.Lock()
	for _, b := range st.Buses {
		p.buses[b.Name] = &eventBus{name: b.Name, description: b.Description, created: b.Created, rules: map[string]*rule{}, policy: map[string][]string{}, api: true}
	}
	p.e.mu.Unlock()
	for _, sr := range st.Rules {
		r := &rule{schedule: sr.Schedule, enabled: sr.Enabled, description: sr.Description, api: true, patternText: sr.Pattern}
		if sr.Pattern != "" {
			pat, err := patternParse(sr.Pattern)
			if err != nil {
				return fmt.Errorf("events emulator: rule %s of %s: %w", sr.Name, p.eventsPath(), err)
			}
			r.pattern = pat
		}
		for _, t := range sr.Targets {
			r.targets = append(r.targets, ruleTarget(t))
		}
		if err := p.putRuleOn(sr.Bus, sr.Name, r); err != nil {
			return fmt.Errorf("events emulator: rule %s of %s: %w", sr.Name, p.eventsPath(), err)
		}
	}
	return nil
}
