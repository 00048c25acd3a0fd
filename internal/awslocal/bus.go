package awslocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// EventPattern selects events by source and detail-type, each matching when empty or when
// the event's value is listed — the subset of EventBridge patterns cairn uses.
type EventPattern struct {
	Source     []string
	DetailType []string
}

type rule struct {
	pattern EventPattern
	target  string // queue ARN
}

// PutRule creates or replaces an event bus rule sending matching events to an SQS queue.
func (e *Emulator) PutRule(name string, pattern EventPattern, targetQueueARN string) error {
	if name == "" || targetQueueARN == "" {
		return errors.New("put rule: name and target queue ARN are required")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rules[name] = rule{pattern, targetQueueARN}
	return nil
}

// PutEvent puts an event on the default bus: every matching rule's queue receives it as
// EventBridge delivers events to SQS (the event JSON as the message body). Empty Version,
// ID, Time, AccountID and Region are filled in as EventBridge does.
func (e *Emulator) PutEvent(ctx context.Context, ev events.CloudWatchEvent) error {
	if ev.Source == "" || ev.DetailType == "" {
		return errors.New("put event: source and detail-type are required")
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
		ev.AccountID = e.opts.AccountID
	}
	if ev.Region == "" {
		ev.Region = e.opts.Region
	}
	if ev.Resources == nil {
		ev.Resources = []string{}
	}
	if len(ev.Detail) == 0 {
		ev.Detail = json.RawMessage("{}")
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("put event: %w", err)
	}
	e.mu.Lock()
	var targets []string
	for _, name := range sortedKeys(e.rules) {
		r := e.rules[name]
		if (len(r.pattern.Source) == 0 || slices.Contains(r.pattern.Source, ev.Source)) &&
			(len(r.pattern.DetailType) == 0 || slices.Contains(r.pattern.DetailType, ev.DetailType)) {
			targets = append(targets, r.target)
		}
	}
	e.mu.Unlock()
	var errs []error
	for _, t := range targets {
		if _, err := e.sqs.Send(ctx, t, string(body), nil, 0); err != nil {
			errs = append(errs, fmt.Errorf("put event: deliver to %s: %w", t, err))
		}
	}
	return errors.Join(errs...)
}
