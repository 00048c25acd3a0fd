package awslocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairn-dev/cairn/internal/awslocal/eventpattern"
)

// EventPattern selects events by source and detail-type, each matching when empty or when
// the event's value is listed — the subset of EventBridge patterns the Go API takes; rules
// made by stacks (AWS::Events::Rule) take any pattern.
type EventPattern struct {
	Source     []string
	DetailType []string
}

// defaultBus is the name of the bus every account has in every region.
const defaultBus = "default"

// eventBus is an EventBridge event bus of a place: the default one, or a custom one made
// by CreateEventBus or AWS::Events::EventBus. Guarded by the emulator's mu.
type eventBus struct {
	name, description string
	created           time.Time
	rules             map[string]*rule
	// policy admits other accounts to put events on the bus, by statement id.
	policy map[string][]string
	// api says CreateEventBus made it (it is persisted); stacks' buses come back with them.
	api bool
}

// rule is an EventBridge rule: an event pattern or a schedule (schedules on the default
// bus only), and its targets.
type rule struct {
	name, description string
	pattern           *eventpattern.Pattern
	patternText       string
	schedule          string
	enabled           bool
	targets           []ruleTarget
	stop              context.CancelFunc // ends the schedule's goroutine
	// api says the EventBridge API made or changed it (it is persisted).
	api bool
}

// ruleTarget is one target of a rule: an SQS queue, SNS topic, Lambda function or event
// bus ARN, with the constant Input that replaces the event when set, or the InputPath or
// input transformer (PathsMap, Template) that shapes it (see ruleTarget.body).
type ruleTarget struct {
	ID, ARN, Input string
	InputPath      string            `json:",omitempty"`
	PathsMap       map[string]string `json:",omitempty"`
	Template       string            `json:",omitempty"`
}

// busARN is the ARN of the place's bus name.
func (p *Place) busARN(name string) string {
	return "arn:aws:events:" + p.region + ":" + p.account + ":event-bus/" + name
}

// ruleARN is the ARN of a rule: rule/NAME on the default bus, rule/BUS/NAME on others.
func (p *Place) ruleARN(bus, name string) string {
	if bus == defaultBus {
		return "arn:aws:events:" + p.region + ":" + p.account + ":rule/" + name
	}
	return "arn:aws:events:" + p.region + ":" + p.account + ":rule/" + bus + "/" + name
}

// busName returns the name an EventBusName gives (a name or an ARN; "" is the default).
func busName(nameOrARN string) string {
	if i := strings.Index(nameOrARN, ":event-bus/"); i >= 0 {
		return nameOrARN[i+len(":event-bus/"):]
	}
	return orDefault(nameOrARN, defaultBus)
}

// busLocked returns the place's bus name, nil when it does not exist. Called with e.mu.
func (p *Place) busLocked(name string) *eventBus {
	if name == defaultBus && p.buses[defaultBus] == nil {
		p.buses[defaultBus] = &eventBus{name: defaultBus, rules: map[string]*rule{}, policy: map[string][]string{}}
	}
	return p.buses[name]
}

// PutRule creates or replaces an event bus rule sending matching events to an SQS queue.
func (e *Emulator) PutRule(name string, p EventPattern, targetQueueARN string) error {
	if name == "" || targetQueueARN == "" {
		return errors.New("put rule: name and target queue ARN are required")
	}
	doc := map[string]any{}
	if len(p.Source) > 0 {
		doc["source"] = p.Source
	}
	if len(p.DetailType) > 0 {
		doc["detail-type"] = p.DetailType
	}
	b, _ := json.Marshal(doc)
	pat, err := eventpattern.Parse(b)
	if err != nil {
		return fmt.Errorf("put rule %s: %w", name, err)
	}
	return e.home.putRule(name, &rule{pattern: pat, patternText: string(b), enabled: true, targets: []ruleTarget{{ID: "Target0", ARN: targetQueueARN}}})
}

// AddSchedule invokes function on the emulator's clock as an EventBridge schedule rule
// named name does, with expression "rate(5 minutes)" or "cron(0 12 * * ? *)" (UTC), passing
// the scheduled event JSON (detail-type "Scheduled Event", source "aws.events").
func (e *Emulator) AddSchedule(name, expression, function string) error {
	if _, err := parseSchedule(expression); err != nil {
		return fmt.Errorf("schedule %s: %w", name, err)
	}
	if !e.functionExists(function) {
		return fmt.Errorf("schedule %s: no such function %s: register it first", name, function)
	}
	return e.home.putRule(name, &rule{schedule: expression, enabled: true, targets: []ruleTarget{{ID: "Target0", ARN: e.functionARN(function)}}})
}

// putRule installs r under name on the place's default bus, replacing (and stopping) a
// rule of that name.
func (p *Place) putRule(name string, r *rule) error { return p.putRuleOn(defaultBus, name, r) }

// putRuleOn installs r under name on the place's bus, replacing (and stopping) a rule of
// that name; schedules run on the default bus only, as in EventBridge.
func (p *Place) putRuleOn(bus, name string, r *rule) error {
	e := p.e
	var sched schedule
	if r.schedule != "" {
		if bus != defaultBus {
			return fmt.Errorf("ScheduleExpression is supported only on the default event bus.")
		}
		var err error
		if sched, err = parseSchedule(r.schedule); err != nil {
			return fmt.Errorf("rule %s: %w", name, err)
		}
	}
	e.mu.Lock()
	exists := p.busLocked(bus) != nil
	e.mu.Unlock()
	if !exists {
		return fmt.Errorf("Event bus %s does not exist.", bus)
	}
	p.deleteRuleOn(bus, name)
	e.mu.Lock()
	defer e.mu.Unlock()
	r.name = name
	if sched != nil && r.enabled {
		ctx, cancel := context.WithCancel(e.ctx)
		r.stop = cancel
		arn := p.ruleARN(bus, name)
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.runSchedule(ctx, sched, func(at time.Time) {
				payload, _ := json.Marshal(events.CloudWatchEvent{
					Version: "0", ID: newID(), DetailType: "Scheduled Event", Source: "aws.events",
					AccountID: p.account, Time: at.UTC().Truncate(time.Second), Region: p.region,
					Resources: []string{arn}, Detail: json.RawMessage("{}"),
				})
				p.deliverTargets(ctx, name, arn, r.targets, payload)
			})
		}()
	}
	p.busLocked(bus).rules[name] = r
	return nil
}

// deleteBus removes a custom bus and its rules.
func (p *Place) deleteBus(name string) {
	p.e.mu.Lock()
	b := p.buses[name]
	delete(p.buses, name)
	p.e.mu.Unlock()
	if b == nil {
		return
	}
	for _, r := range b.rules {
		if r.stop != nil {
			r.stop()
		}
	}
}

// deleteRuleOn removes a rule of the bus and stops its schedule.
func (p *Place) deleteRuleOn(bus, name string) {
	e := p.e
	e.mu.Lock()
	var r *rule
	if b := p.busLocked(bus); b != nil {
		r = b.rules[name]
		delete(b.rules, name)
	}
	e.mu.Unlock()
	if r != nil && r.stop != nil {
		r.stop()
	}
}

// PutEvent puts an event on the default bus of the home account and region (see
// Place.PutEvent).
func (e *Emulator) PutEvent(ctx context.Context, ev events.CloudWatchEvent) error {
	return e.home.PutEvent(ctx, ev)
}

// PutEvent puts an event on the place's default bus: every enabled rule whose pattern
// matches sends it to its targets as EventBridge does (the event JSON as an SQS message
// body, an SNS message, a Lambda payload, or the event itself on another bus). Empty
// Version, ID, Time, AccountID and Region are filled in as EventBridge does.
func (p *Place) PutEvent(ctx context.Context, ev events.CloudWatchEvent) error {
	_, err := p.putEventOn(ctx, defaultBus, ev)
	return err
}

// putEventOn puts an event on the place's bus (see PutEvent) and returns its id.
func (p *Place) putEventOn(ctx context.Context, bus string, ev events.CloudWatchEvent) (string, error) {
	e := p.e
	if ev.Source == "" || ev.DetailType == "" {
		return "", errors.New("put event: source and detail-type are required")
	}
	if ev.Version == "" {
		ev.Version = "0"
	}
	if ev.ID == "" {
		ev.ID = newID()
	}
	if ev.Time.IsZero() {
		ev.Time = e.opts.Clock.Now().UTC().Truncate(time.Second)
	}
	if ev.AccountID == "" {
		ev.AccountID = p.account
	}
	if ev.Region == "" {
		ev.Region = p.region
	}
	if ev.Resources == nil {
		ev.Resources = []string{}
	}
	if len(ev.Detail) == 0 {
		ev.Detail = json.RawMessage("{}")
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return "", fmt.Errorf("put event: %w", err)
	}
	var doc any
	_ = json.Unmarshal(body, &doc)
	e.mu.Lock()
	type match struct {
		name    string
		targets []ruleTarget
	}
	var matched []match
	b := p.busLocked(bus)
	if b == nil {
		e.mu.Unlock()
		return "", fmt.Errorf("Event bus %s does not exist.", bus)
	}
	for _, name := range sortedKeys(b.rules) {
		r := b.rules[name]
		if r.enabled && r.pattern != nil && r.pattern.Match(doc) {
			matched = append(matched, match{name, r.targets})
		}
	}
	e.mu.Unlock()
	var errs []error
	for _, m := range matched {
		if err := p.deliverTargets(ctx, m.name, p.ruleARN(bus, m.name), m.targets, body); err != nil {
			errs = append(errs, fmt.Errorf("put event: %w", err))
		}
	}
	return ev.ID, errors.Join(errs...)
}

// deliverTargets sends payload (or a target's Input) to each target: SQS and SNS at once,
// Lambda asynchronously, as EventBridge invokes functions.
func (p *Place) deliverTargets(ctx context.Context, source, sourceARN string, targets []ruleTarget, payload []byte) error {
	e := p.e
	var errs []error
	for _, t := range targets {
		body := t.body(payload, source, sourceARN)
		if err := p.deliver(ctx, t.ARN, body); err != nil {
			errs = append(errs, fmt.Errorf("deliver %s's target %s: %w", source, t.ARN, err))
			e.log.Warn("emulator: event not delivered", "rule", source, "target", t.ARN, "err", err)
		}
	}
	return errors.Join(errs...)
}

// deliver sends a message to an SQS queue, SNS topic or Lambda function ARN, or an event
// to another event bus (of another region, or of an account whose bus policy admits this
// place's account).
func (p *Place) deliver(ctx context.Context, arn, body string) error {
	e := p.e
	switch {
	case strings.HasPrefix(arn, "arn:aws:sqs:"):
		return e.send(ctx, arn, body, nil)
	case strings.HasPrefix(arn, "arn:aws:sns:"):
		_, err := e.publish(ctx, arn, "", body)
		return err
	case strings.HasPrefix(arn, "arn:aws:events:"):
		return p.forward(ctx, arn, body)
	case strings.HasPrefix(arn, "arn:aws:lambda:"):
		name := functionName(arn)
		if !e.functionExists(name) {
			return fmt.Errorf("function %s does not exist", name)
		}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			if !e.awaitHandler(e.ctx, name) {
				return
			}
			if _, err := e.Invoke(e.ctx, name, []byte(body)); err != nil {
				e.log.Info("emulator: asynchronous invocation failed", "function", name, "err", err)
			}
		}()
		return nil
	}
	return fmt.Errorf("targets of type %s are not emulated (SQS queues, SNS topics and Lambda functions are)", arn)
}

// forward puts an event on the event bus busARN, as a rule whose target is another bus
// does: the event keeps its account and region. The bus's place must exist and its
// policy admit this place's account (its own account always).
func (p *Place) forward(ctx context.Context, busARN, body string) error {
	parts := strings.SplitN(busARN, ":", 6)
	if len(parts) < 6 || !strings.HasPrefix(parts[5], "event-bus/") {
		return fmt.Errorf("%s is not an event bus ARN", busARN)
	}
	to := p.e.lookupPlace(parts[4], parts[3])
	if to == nil {
		return fmt.Errorf("event bus %s does not exist", busARN)
	}
	bus := busName(busARN)
	if !to.admits(bus, p.account) {
		return fmt.Errorf("account %s is not authorized to put events on %s: its bus policy does not admit the account", p.account, busARN)
	}
	var ev events.CloudWatchEvent
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		return fmt.Errorf("event for %s: %w", busARN, err)
	}
	_, err := to.putEventOn(ctx, bus, ev)
	return err
}

// admits reports whether the place's bus takes events from account: its own always,
// others when the bus's policy (AWS::Events::EventBusPolicy, AWS::Events::EventBus
// Policy) admits them.
func (p *Place) admits(bus, account string) bool {
	if account == p.account {
		return true
	}
	p.e.mu.Lock()
	defer p.e.mu.Unlock()
	b := p.busLocked(bus)
	if b == nil {
		return false
	}
	for _, accounts := range b.policy {
		for _, a := range accounts {
			if a == "*" || a == account {
				return true
			}
		}
	}
	return false
}
