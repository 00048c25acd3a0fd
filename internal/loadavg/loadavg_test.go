package loadavg

import (
	"os"
	"regexp"
	"testing"
)

func TestRead(t *testing.T) {
	got := Read()
	if _, err := os.Stat("/proc/loadavg"); err != nil {
		if got != "unknown" {
			t.Errorf("Read() = %q without /proc/loadavg, want unknown", got)
		}
		return
	}
	if !regexp.MustCompile(`^\d+\.\d+ \d+\.\d+ \d+\.\d+$`).MatchString(got) {
		t.Errorf("Read() = %q, want three load averages", got)
	}
}
