package awslocal

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// scheduled is an EventBridge Scheduler schedule: it sends its target the schedule's
// Input (default "{}") at each time of its expression.
type scheduled struct {
	stop context.CancelFunc
}

// at is a one-time schedule, at(yyyy-mm-ddThh:mm:ss) in UTC.
type at time.Time

func (a at) next(after time.Time) time.Time {
	if t := time.Time(a); t.After(after) {
		return t
	}
	return time.Time{}
}

// parseSchedulerExpression accepts what EventBridge Scheduler does: at(...), rate(...) and
// cron(...), in UTC (the only time zone the emulator runs schedules in).
func parseSchedulerExpression(expr, timezone string) (schedule, error) {
	if timezone != "" && timezone != "UTC" && timezone != "Etc/UTC" {
		return nil, fmt.Errorf("ScheduleExpressionTimezone %s: the emulator runs schedules in UTC only", timezone)
	}
	if strings.HasPrefix(expr, "at(") && strings.HasSuffix(expr, ")") {
		t, err := time.Parse("2006-01-02T15:04:05", strings.TrimSuffix(strings.TrimPrefix(expr, "at("), ")"))
		if err != nil {
			return nil, fmt.Errorf("expression %q: want at(yyyy-mm-ddThh:mm:ss)", expr)
		}
		return at(t), nil
	}
	if strings.HasPrefix(expr, "rate(") && strings.HasSuffix(expr, ")") {
		return parseSchedulerRate(strings.TrimSuffix(strings.TrimPrefix(expr, "rate("), ")"))
	}
	return parseSchedule(expr)
}

// parseSchedulerRate reads Scheduler's rate(value unit): a positive whole number and one
// of minute, minutes, hour, hours, day, days, with no agreement of number between them
// (unlike EventBridge rules' rate expressions). See
// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html
// (ScheduleExpression: "a unit with the following options: minute | minutes | hour | hours | day | days").
func parseSchedulerRate(s string) (schedule, error) {
	fields := strings.Fields(s)
	if len(fields) != 2 {
		return nil, fmt.Errorf("rate(%s): want rate(VALUE UNIT), e.g. rate(5 minutes)", s)
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n <= 0 {
		return nil, fmt.Errorf("rate(%s): value must be a positive whole number", s)
	}
	units := map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}
	d, ok := units[strings.TrimSuffix(fields[1], "s")]
	if !ok {
		return nil, fmt.Errorf("rate(%s): unit must be one of minute, minutes, hour, hours, day, days", s)
	}
	return rate(time.Duration(n) * d), nil
}

// putSchedule installs (or replaces) the schedule key (GROUP/NAME), sending input to target.
func (e *Emulator) putSchedule(key, expression, timezone, target, input string, enabled bool) error {
	s, err := parseSchedulerExpression(expression, timezone)
	if err != nil {
		return fmt.Errorf("schedule %s: %w", key, err)
	}
	if input == "" {
		input = "{}"
	}
	e.deleteSchedule(key)
	ctx, cancel := context.WithCancel(e.ctx)
	e.mu.Lock()
	e.schedules[key] = &scheduled{stop: cancel}
	e.mu.Unlock()
	if !enabled {
		return nil
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.runSchedule(ctx, s, func(time.Time) {
			if err := e.home.deliver(ctx, target, input); err != nil {
				e.log.Warn("emulator: scheduled invocation not delivered", "schedule", key, "target", target, "err", err)
			}
		})
	}()
	return nil
}

func (e *Emulator) deleteSchedule(key string) {
	e.mu.Lock()
	s := e.schedules[key]
	delete(e.schedules, key)
	e.mu.Unlock()
	if s != nil {
		s.stop()
	}
}
