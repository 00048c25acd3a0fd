package awslocal

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// schedule says when a rule fires next after a given time.
type schedule interface {
	next(after time.Time) time.Time
}

// runSchedule calls fire at each time s says, on the emulator's clock, until ctx ends or s
// has no next time. A clock that jumped past several firings fires once, as a late
// EventBridge rule does.
func (e *Emulator) runSchedule(ctx context.Context, s schedule, fire func(at time.Time)) {
	at := s.next(e.opts.Clock.Now())
	for !at.IsZero() {
		select {
		case <-e.opts.Clock.After(at.Sub(e.opts.Clock.Now())):
		case <-ctx.Done():
			return
		}
		now := e.opts.Clock.Now()
		if now.Before(at) {
			continue
		}
		fire(at)
		at = s.next(now)
	}
}

func parseSchedule(expr string) (schedule, error) {
	switch {
	case strings.HasPrefix(expr, "rate(") && strings.HasSuffix(expr, ")"):
		return parseRate(strings.TrimSuffix(strings.TrimPrefix(expr, "rate("), ")"))
	case strings.HasPrefix(expr, "cron(") && strings.HasSuffix(expr, ")"):
		return parseCron(strings.TrimSuffix(strings.TrimPrefix(expr, "cron("), ")"))
	}
	return nil, fmt.Errorf("expression %q: want rate(N unit) or cron(min hour day-of-month month day-of-week year)", expr)
}

type rate time.Duration

func (r rate) next(after time.Time) time.Time { return after.Add(time.Duration(r)) }

func parseRate(s string) (schedule, error) {
	fields := strings.Fields(s)
	if len(fields) != 2 {
		return nil, fmt.Errorf("rate(%s): want rate(VALUE UNIT), e.g. rate(5 minutes)", s)
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n <= 0 {
		return nil, fmt.Errorf("rate(%s): value must be a positive whole number", s)
	}
	units := map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}
	unit := fields[1]
	single := strings.TrimSuffix(unit, "s")
	d, ok := units[single]
	if !ok || (n == 1) != (unit == single) {
		return nil, fmt.Errorf("rate(%s): unit must be minute, hour or day for 1 and minutes, hours or days otherwise", s)
	}
	return rate(time.Duration(n) * d), nil
}

// cron is an EventBridge cron expression: minutes hours day-of-month month day-of-week year,
// in UTC, with day-of-week 1-7 meaning SUN-SAT and one of the day fields "?".
type cron struct {
	minute, hour, dom, month, dow, year map[int]bool // nil: any
}

func parseCron(s string) (schedule, error) {
	f := strings.Fields(s)
	if len(f) != 6 {
		return nil, fmt.Errorf("cron(%s): want 6 fields (minutes hours day-of-month month day-of-week year)", s)
	}
	if (f[2] == "?") == (f[4] == "?") {
		return nil, fmt.Errorf("cron(%s): exactly one of day-of-month and day-of-week must be ?", s)
	}
	months := []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	days := []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
	var c cron
	var err error
	for _, p := range []struct {
		dst      *map[int]bool
		field    string
		min, max int
		names    []string
	}{
		{&c.minute, f[0], 0, 59, nil},
		{&c.hour, f[1], 0, 23, nil},
		{&c.dom, f[2], 1, 31, nil},
		{&c.month, f[3], 1, 12, months},
		{&c.dow, f[4], 1, 7, days},
		{&c.year, f[5], 1970, 2199, nil},
	} {
		if *p.dst, err = parseCronField(p.field, p.min, p.max, p.names); err != nil {
			return nil, fmt.Errorf("cron(%s): %w", s, err)
		}
	}
	return c, nil
}

func parseCronField(field string, lo, hi int, names []string) (map[int]bool, error) {
	if field == "*" || field == "?" {
		return nil, nil
	}
	value := func(s string) (int, error) {
		for i, n := range names {
			if strings.EqualFold(s, n) {
				return lo + i, nil
			}
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < lo || v > hi {
			return 0, fmt.Errorf("field %q: %q is not a value in %d-%d (L, W and # are not supported by the emulator)", field, s, lo, hi)
		}
		return v, nil
	}
	set := map[int]bool{}
	for _, part := range strings.Split(field, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			var err error
			if step, err = strconv.Atoi(stepText); err != nil || step <= 0 {
				return nil, fmt.Errorf("field %q: bad step %q", field, stepText)
			}
		}
		from, to := lo, hi
		if rng != "*" {
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if from, err = value(a); err != nil {
				return nil, err
			}
			to = from
			if isRange {
				if to, err = value(b); err != nil {
					return nil, err
				}
			} else if hasStep {
				to = hi
			}
		}
		for v := from; v <= to; v += step {
			set[v] = true
		}
	}
	return set, nil
}

func in(set map[int]bool, v int) bool { return set == nil || set[v] }

func (c cron) next(after time.Time) time.Time {
	t := after.UTC().Truncate(time.Minute).Add(time.Minute)
	for i := 0; i < 1_000_000; i++ {
		switch {
		case !in(c.year, t.Year()):
			if t.Year() > 2199 {
				return time.Time{}
			}
			t = time.Date(t.Year()+1, 1, 1, 0, 0, 0, 0, time.UTC)
		case !in(c.month, int(t.Month())):
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !in(c.dom, t.Day()) || !in(c.dow, int(t.Weekday())+1):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
		case !in(c.hour, t.Hour()):
			t = t.Truncate(time.Hour).Add(time.Hour)
		case !in(c.minute, t.Minute()):
			t = t.Add(time.Minute)
		default:
			return t
		}
	}
	return time.Time{}
}
