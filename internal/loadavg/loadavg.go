// Package loadavg reads the machine's load average, which benchmarks print beside their
// figures: the machines they run on are shared, and a figure means little without it.
package loadavg

import (
	"os"
	"strings"
)

// Read returns the 1, 5 and 15 minute load averages as /proc/loadavg gives them
// ("0.42 1.10 0.90"), or "unknown" where it cannot be read (not Linux).
func Read() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
