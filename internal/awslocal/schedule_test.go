package awslocal

import (
	"testing"
	"time"
)

func TestScheduleNext(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		expr, after, want string
	}{
		{"rate(5 minutes)", "2026-01-01T00:00:30Z", "2026-01-01T00:05:30Z"},
		{"rate(1 hour)", "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"},
		{"rate(2 days)", "2026-01-01T00:00:00Z", "2026-01-03T00:00:00Z"},
		{"cron(0 12 * * ? *)", "2026-01-01T11:58:00Z", "2026-01-01T12:00:00Z"},
		{"cron(0 12 * * ? *)", "2026-01-01T12:00:00Z", "2026-01-02T12:00:00Z"},
		{"cron(*/15 * * * ? *)", "2026-01-01T10:07:10Z", "2026-01-01T10:15:00Z"},
		{"cron(0 9 ? * MON-FRI *)", "2026-01-02T10:00:00Z", "2026-01-05T09:00:00Z"}, // Friday after 9 -> Monday
		{"cron(30 6 1 JAN,JUL ? 2027)", "2026-03-01T00:00:00Z", "2027-01-01T06:30:00Z"},
		{"cron(0 0 ? * 1 *)", "2026-01-01T00:00:00Z", "2026-01-04T00:00:00Z"}, // 1 = Sunday
	}
	for _, tt := range tests {
		t.Run(tt.expr+" after "+tt.after, func(t *testing.T) {
			s, err := parseSchedule(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.next(at(tt.after)); !got.Equal(at(tt.want)) {
				t.Fatalf("next = %s, want %s", got.Format(time.RFC3339), tt.want)
			}
		})
	}
}

func TestScheduleRejects(t *testing.T) {
	for _, expr := range []string{
		"rate(0 minutes)", "rate(1 minutes)", "rate(5 minute)", "rate(5 weeks)", "every 5 minutes",
		"cron(0 12 * * * *)", "cron(0 12 ? * ? *)", "cron(0 12 * *)", "cron(61 * * * ? *)", "cron(0 12 L * ? *)",
	} {
		if _, err := parseSchedule(expr); err == nil {
			t.Errorf("parseSchedule(%q) succeeded", expr)
		}
	}
}

// TestSchedulerRateUnits: EventBridge Scheduler takes any of minute, minutes, hour,
// hours, day, days after any positive value (rate(5 minute) included), unlike rules.
func TestSchedulerRateUnits(t *testing.T) {
	for expr, want := range map[string]time.Duration{"rate(5 minute)": 5 * time.Minute, "rate(1 minutes)": time.Minute,
		"rate(2 hour)": 2 * time.Hour, "rate(1 day)": 24 * time.Hour, "rate(3 days)": 72 * time.Hour} {
		s, err := parseSchedulerExpression(expr, "")
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if got := s.next(from).Sub(from); got != want {
			t.Errorf("%s: every %s, want %s", expr, got, want)
		}
	}
	for _, expr := range []string{"rate(0 minutes)", "rate(5 weeks)", "rate(five minutes)", "rate(5)"} {
		if _, err := parseSchedulerExpression(expr, ""); err == nil {
			t.Errorf("%s accepted", expr)
		}
	}
}
