package cfnlocal

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rollback triggers, as CloudFormation honours them: while a stack is created or updated,
// and for the MonitoringTimeInMinutes after its last resource is done (the stack stays
// *_IN_PROGRESS meanwhile), CloudFormation watches the CloudWatch alarms of the stack's
// RollbackConfiguration. An alarm in ALARM, or one that does not exist, rolls the whole
// operation back, and the stack's event names the alarm. Rollbacks and deletes are not
// watched. The configuration is kept with the stack: a request that gives none keeps it,
// one that gives triggers replaces them, and an empty list removes them.

// rollbackConfig is a stack's RollbackConfiguration.
type rollbackConfig struct {
	MonitoringTimeInMinutes int
	Triggers                []rollbackTrigger
}

type rollbackTrigger struct{ Arn, Type string }

// CloudFormation's limits on a RollbackConfiguration.
const (
	maxRollbackTriggers  = 5
	maxMonitoringMinutes = 180
)

var triggerTypes = []string{"AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm"}

// rollbackConfigOf reads the RollbackConfiguration of a CreateChangeSet, CreateStack or
// UpdateStack request over prev, the stack's: a request without one keeps prev, and one
// without RollbackTriggers keeps prev's triggers.
func rollbackConfigOf(f form, prev *rollbackConfig) (*rollbackConfig, error) {
	const p = "RollbackConfiguration."
	given := false
	for k := range f.v {
		given = given || strings.HasPrefix(k, p)
	}
	if !given {
		return prev, nil
	}
	rb := &rollbackConfig{}
	if m := f.get(p + "MonitoringTimeInMinutes"); m != "" {
		n, err := strconv.Atoi(m)
		switch {
		case err != nil:
			return nil, validation("1 validation error detected: Value '%s' at 'rollbackConfiguration.monitoringTimeInMinutes' failed to satisfy constraint: Member must be an integer", m)
		case n < 0:
			return nil, validation("1 validation error detected: Value '%d' at 'rollbackConfiguration.monitoringTimeInMinutes' failed to satisfy constraint: Member must have value greater than or equal to 0", n)
		case n > maxMonitoringMinutes:
			return nil, validation("1 validation error detected: Value '%d' at 'rollbackConfiguration.monitoringTimeInMinutes' failed to satisfy constraint: Member must have value less than or equal to %d", n, maxMonitoringMinutes)
		}
		rb.MonitoringTimeInMinutes = n
	}
	given = f.has(p + "RollbackTriggers")
	for i, m := range f.structs(p + "RollbackTriggers") {
		given = true
		t := rollbackTrigger{Arn: m["Arn"], Type: m["Type"]}
		for _, field := range []struct{ name, v string }{{"arn", t.Arn}, {"type", t.Type}} {
			if field.v == "" {
				return nil, validation("1 validation error detected: Value null at 'rollbackConfiguration.rollbackTriggers.%d.member.%s' failed to satisfy constraint: Member must not be null", i+1, field.name)
			}
		}
		if !contains(triggerTypes, t.Type) {
			return nil, validation("Rollback trigger %s has the type %s: the supported types are %s", t.Arn, t.Type, strings.Join(triggerTypes, " and "))
		}
		rb.Triggers = append(rb.Triggers, t)
	}
	if len(rb.Triggers) > maxRollbackTriggers {
		return nil, validation("1 validation error detected: Value at 'rollbackConfiguration.rollbackTriggers' failed to satisfy constraint: Member must have length less than or equal to %d", maxRollbackTriggers)
	}
	if !given && prev != nil {
		rb.Triggers = prev.Triggers
	}
	return rb, nil
}

type xRollbackTrigger struct{ Arn, Type string }

type xRollbackConfig struct {
	MonitoringTimeInMinutes *int               `xml:",omitempty"`
	RollbackTriggers        []xRollbackTrigger `xml:"RollbackTriggers>member"`
}

// xRollback is a stack's RollbackConfiguration as DescribeStacks answers it: always
// there, empty when the stack has none.
func xRollback(rb *rollbackConfig) *xRollbackConfig {
	x := &xRollbackConfig{}
	if rb == nil {
		return x
	}
	if len(rb.Triggers) > 0 || rb.MonitoringTimeInMinutes > 0 {
		m := rb.MonitoringTimeInMinutes
		x.MonitoringTimeInMinutes = &m
	}
	for _, t := range rb.Triggers {
		x.RollbackTriggers = append(x.RollbackTriggers, xRollbackTrigger(t))
	}
	return x
}

// watched reports whether CloudFormation watches st's rollback triggers: while a create or
// update runs (not its cleanup, a rollback or a delete).
func watched(st *stack) bool {
	op := st.Op
	return op != nil && !op.Halted && op.Phase == "main" && (op.Kind == "CREATE" || op.Kind == "UPDATE")
}

// rollbackTriggered rolls st's operation back when one of its rollback triggers fired by
// the time the simulation has reached (the operation's next due time, at most now), and
// reports whether it did. Called with mu held before every step of an operation.
func (s *Service) rollbackTriggered(st *stack, now time.Time) bool {
	if !watched(st) || st.Rollback == nil || len(st.Rollback.Triggers) == 0 {
		return false
	}
	op := st.Op
	at := now
	if op.Due.Before(now) {
		at = op.Due
	}
	reason := s.firedTriggers(st.Rollback.Triggers, at)
	if reason == "" {
		return false
	}
	s.cancelStep(st, at)
	switch {
	case op.Kind == "CREATE" && st.DisableRollback:
		s.setStatus(st, at, "CREATE_FAILED", reason)
		st.Op = nil
	case op.Kind == "CREATE":
		s.startCreateRollback(st, reason, at)
	case st.DisableRollback:
		s.setStatus(st, at, "UPDATE_FAILED", reason)
		op.Halted = true
	default:
		s.startUpdateRollback(st, reason, at)
	}
	return true
}

// firedTriggers returns the reason a stack operation rolls back at t, naming the alarms;
// "" while none fired.
func (s *Service) firedTriggers(triggers []rollbackTrigger, t time.Time) string {
	var alarmed, missing []string
	for _, tr := range triggers {
		state, changed, ok := "", time.Time{}, false
		if s.o.Alarm != nil {
			state, changed, ok = s.o.Alarm(tr.Arn)
		}
		switch {
		case !ok:
			missing = append(missing, tr.Arn)
		case state == "ALARM" && !changed.After(t):
			alarmed = append(alarmed, tr.Arn)
		}
	}
	switch {
	case len(missing) > 0:
		return fmt.Sprintf("The following rollback trigger(s) could not be found: [%s]. ", strings.Join(missing, ", "))
	case len(alarmed) > 0:
		return fmt.Sprintf("The following rollback trigger(s) went into ALARM state: [%s]. ", strings.Join(alarmed, ", "))
	}
	return ""
}

// cancelStep ends the resource step in flight of a stack whose operation rolls back: its
// resource gets CloudFormation's "cancelled" event, and the rollback reverts it.
func (s *Service) cancelStep(st *stack, t time.Time) {
	op := st.Op
	if !op.Started || op.Cur >= len(op.Steps) {
		return
	}
	op.Started = false
	r := st.Resources[op.Steps[op.Cur].LogicalID]
	op.Cur++
	switch {
	case r == nil:
	case r.Status == "CREATE_IN_PROGRESS":
		s.setResource(st, r, t, "CREATE_FAILED", "Resource creation cancelled")
	case r.Status == "UPDATE_IN_PROGRESS":
		s.setResource(st, r, t, "UPDATE_FAILED", "Resource update cancelled")
	}
}

// monitoring keeps a create or update whose resources are all done in progress for the
// stack's MonitoringTimeInMinutes, during which its rollback triggers still roll it back;
// it reports whether the operation is still waiting at t. Called with mu held when the
// operation's main phase would end.
func (s *Service) monitoring(st *stack, t time.Time) bool {
	if !watched(st) || st.Rollback == nil || st.Rollback.MonitoringTimeInMinutes == 0 {
		return false
	}
	op := st.Op
	if op.MonitorUntil.IsZero() {
		op.MonitorUntil = t.Add(time.Duration(st.Rollback.MonitoringTimeInMinutes) * time.Minute)
		op.Due = op.MonitorUntil
		s.poke(op.Due)
		return true
	}
	return t.Before(op.MonitorUntil)
}

// AlarmStateChanged makes the stack operations watching alarms react to a state change
// (SetAlarmState) at once rather than at their next resource step.
func (s *Service) AlarmStateChanged() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.advance(s.clk.Now())
	if err := s.save(); err != nil {
		s.log.Error("cloudformation emulator: save state", "err", err)
	}
	out := s.takeOutbox()
	s.mu.Unlock()
	s.flush(out)
}

func init() {
	// AWS::CloudWatch::Alarm: Ref is the alarm name, Fn::GetAtt Arn its ARN, and a new
	// AlarmName replaces the alarm.
	resourceTypes["AWS::CloudWatch::Alarm"] = resourceType{
		phys:       func(c idCtx) string { return c.name("AlarmName", 255) },
		attrs:      map[string]func(c idCtx) any{"Arn": func(c idCtx) any { return c.arn("cloudwatch", "alarm:"+c.physical) }},
		createOnly: []string{"AlarmName"},
	}
}
