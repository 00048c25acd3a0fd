package main

import (
	"os"
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	f, err := os.Open("testdata/bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := parse(f)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	held, measured := table(&b, r)
	out := b.String()
	row := func(figure string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "| "+figure+" ") {
				return l
			}
		}
		t.Fatalf("no row %q in\n%s", figure, out)
		return ""
	}
	for _, tc := range []struct {
		figure, value, holds string
	}{
		{"line of 5 stacks of 4 s each, emulator, 3 s heartbeats: makespan / 20 s", "1.001", "yes"},
		{"10,000-stack load, validate, graph: ms", "139.6", "no"},          // goal < 100
		{"10,000-stack load, validate, graph: MB allocated", "85.0", "no"}, // goal < 64
		{"readiness irregular-16 update-outputs-30, change sets 2-12 s: cairn / critical path", "1.031", "yes"},
		{"readiness irregular-16 update-outputs-30, change sets 2-12 s: 0.25 s thread-per-stack / cairn", "1.009", "yes"}, // 1.040 / 1.031
		{"readiness irregular-16 update-outputs-30, change sets 2-12 s: cairn's calls / the 0.25 s poller's", "0.076", "yes"},
		{"readiness chain-5 create, change sets 2-12 s: cairn / critical path", "not measured", "-"},
		{"port allocations, 20 stacks at once, one function instance: per s", "5400", "yes"},
		{"port allocations, 20 stacks at once, two instances (the deployed SQS source's MaxConcurrency): per s", "480", "no"},
		{"port allocations, 20 stacks at once, an instance per stack (not deployed: a bound on contention): per s", "400", "n/a"},
		{"deployer CPU per stack, 1000 stacks / 50 stacks", "1.02", "yes"},
		{"deployer CPU per stack, 500 stacks / 50 stacks", "not measured", "-"},
		{"deployer bootstrap, linux/arm64: MB (10^6 bytes)", "14.16", "yes"},
		{"deployer init duration (process start to its first request for an event, as Lambda's REPORT line): ms (p50)", "7.2", "yes"},
		{"makespan chain-10/c5: cairn / critical path", "1.006", "yes"},
		{"makespan chain-10/c5: best peer / cairn", "1.0060", "yes"},  // thread 1.012 / 1.006
		{"makespan fanout-50/c50: best peer / cairn", "0.9990", "no"}, // thread 1.007 is ahead
		{"unchanged re-push of 500 stacks: CloudFormation reads", "5", "yes"},
		{"the same beside 2,000 unrelated stacks: writes", "1", "no"},
		{"transitive reduction of 10,000 stacks: ms", "not measured", "-"},
	} {
		cells := strings.Split(row(tc.figure), "|")
		if got := strings.TrimSpace(cells[3]); got != tc.value {
			t.Errorf("%s: value %q, want %q", tc.figure, got, tc.value)
		}
		if got := strings.TrimSpace(cells[4]); got != tc.holds {
			t.Errorf("%s: holds %q, want %q", tc.figure, got, tc.holds)
		}
	}
	if held != 14 || measured != 19 || !strings.Contains(out, "| 14 of 19 goals measured hold |") {
		t.Errorf("%d of %d hold:\n%s", held, measured, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "|") {
			t.Errorf("line %q does not start with |: benchstat would read it", l)
		}
	}
}

// TestMedianOfRuns: a benchmark run several times (go test -count, or the same benchmark
// again in the output) counts as the median of its runs, not its last, and each row says
// of how many runs and under what load (the "# load average:" lines make bench writes).
func TestMedianOfRuns(t *testing.T) {
	for _, tc := range []struct {
		name, input, value, measured string
	}{
		{
			name: "three runs under two loads",
			input: "# load average: 1.50 1.20 1.00\n" +
				"BenchmarkLineOfFive-2 1 22748101095 ns/op 1.200 ratio\n" +
				"BenchmarkLineOfFive-2 1 22748101095 ns/op 1.000 ratio\n" +
				"# load average: 2.50 1.40 1.10\n" +
				"BenchmarkLineOfFive-2 1 22748101095 ns/op 1.100 ratio\n",
			value: "1.100", measured: "median of 3, load 1.50-2.50",
		},
		{
			name:  "two runs: the mean of the middle two",
			input: "# load average: 0.40 0.30 0.20\nBenchmarkLineOfFive-2 1 1 ns/op 1.000 ratio\nBenchmarkLineOfFive-2 1 1 ns/op 1.100 ratio\n",
			value: "1.050", measured: "median of 2, load 0.40",
		},
		{
			name:  "one run, no load line",
			input: "BenchmarkLineOfFive-2 1 1 ns/op 1.300 ratio\n",
			value: "1.300", measured: "1 run, load unknown",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parse(strings.NewReader(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			table(&b, r)
			for _, l := range strings.Split(b.String(), "\n") {
				if !strings.HasPrefix(l, "| line of 5 stacks") {
					continue
				}
				cells := strings.Split(l, "|")
				if got := strings.TrimSpace(cells[3]); got != tc.value {
					t.Errorf("value %q, want %q", got, tc.value)
				}
				if got := strings.TrimSpace(cells[5]); got != tc.measured {
					t.Errorf("measured %q, want %q", got, tc.measured)
				}
				return
			}
			t.Fatalf("no row for the line of five:\n%s", b.String())
		})
	}
}
