// Command benchgoals reads the output of `go test -bench` (as `make bench` writes it) and
// prints the table of cairn's performance goals: each figure, its goal, the value measured
// and whether the goal holds. It only adds lines that start with "|", which benchstat
// ignores, so the benchmark output stays benchstat's input.
//
//	go test -run '^$' -bench . ./... > bench.txt; go run ./internal/benchgoals < bench.txt
package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// results are the metrics of each benchmark, by name without the -GOMAXPROCS suffix and
// by unit ("ns/op", "ratio", ...): the median of its runs (go test -count, or the same
// benchmark in several runs of the output), with how many runs and the machine's load
// average at each (the "# load average:" line `make bench` writes before each package's
// benchmarks; none: unknown).
type results struct {
	runs  map[string]map[string][]float64
	loads map[string][]float64
	// touched are the benchmarks the goal being judged read (get).
	touched map[string]bool
}

// loadLine is the line `make bench` writes before each package's benchmarks: the first
// three fields of /proc/loadavg. Benchstat ignores it.
const loadLine = "# load average:"

var procs = regexp.MustCompile(`-\d+$`)

func parse(r io.Reader) (*results, error) {
	out := &results{runs: map[string]map[string][]float64{}, loads: map[string][]float64{}}
	load := -1.0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), loadLine); ok {
			load = -1
			if f := strings.Fields(rest); len(f) > 0 {
				if v, err := strconv.ParseFloat(f[0], 64); err == nil {
					load = v
				}
			}
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // a benchmark's name printed alone, before its figures
		}
		name := procs.ReplaceAllString(f[0], "")
		if out.runs[name] == nil {
			out.runs[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			out.runs[name][f[i+1]] = append(out.runs[name][f[i+1]], v)
		}
		out.loads[name] = append(out.loads[name], load)
	}
	return out, sc.Err()
}

// get is the median of bench's runs of unit.
func (r *results) get(bench, unit string) (float64, bool) {
	if r.touched != nil {
		r.touched[bench] = true
	}
	v := slices.Clone(r.runs[bench][unit])
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}

// measured says of what a goal's value is the median: the runs of the benchmarks it read
// and the load averages (1 minute) at them.
func (r *results) measured(benches map[string]bool) string {
	runs := 0
	var loads []float64
	unknown := false
	for _, b := range slices.Sorted(maps.Keys(benches)) {
		runs = max(runs, len(r.loads[b]))
		for _, l := range r.loads[b] {
			if l < 0 {
				unknown = true
				continue
			}
			loads = append(loads, l)
		}
	}
	what := fmt.Sprintf("median of %d", runs)
	if runs == 1 {
		what = "1 run"
	}
	switch {
	case len(loads) == 0:
		return what + ", load unknown"
	case unknown:
		what += ", load partly unknown"
	}
	lo, hi := slices.Min(loads), slices.Max(loads)
	if lo == hi {
		return fmt.Sprintf("%s, load %.2f", what, lo)
	}
	return fmt.Sprintf("%s, load %.2f-%.2f", what, lo, hi)
}

// goal is one row of the table: the figure, how to read it from the results, and the goal.
type goal struct {
	figure string
	goal   string
	value  func(*results) (float64, bool)
	format string // of the value
	// holds judges the value; nil for a figure reported beside a goal without one of its
	// own (shown "n/a", not counted).
	holds func(float64) bool
}

func metric(bench, unit string) func(*results) (float64, bool) {
	return func(r *results) (float64, bool) { return r.get(bench, unit) }
}

func scaled(f func(*results) (float64, bool), by float64) func(*results) (float64, bool) {
	return func(r *results) (float64, bool) {
		v, ok := f(r)
		return v * by, ok
	}
}

// ahead is how far cairn's makespan is ahead of the better peer's on bench: the better
// peer's ratio divided by cairn's (above 1: cairn is ahead).
func ahead(bench string) func(*results) (float64, bool) {
	return func(r *results) (float64, bool) {
		c, ok := r.get(bench, "cairn/cp")
		if !ok || c == 0 {
			return 0, false
		}
		level, _ := r.get(bench, "level/cp")
		thread, _ := r.get(bench, "thread/cp")
		return min(level, thread) / c, true
	}
}

// ratioOf is one metric of bench divided by another (of bench2, or of bench when "").
func ratioOf(bench, unit, bench2, unit2 string) func(*results) (float64, bool) {
	if bench2 == "" {
		bench2 = bench
	}
	return func(r *results) (float64, bool) {
		a, ok := r.get(bench, unit)
		b, ok2 := r.get(bench2, unit2)
		if !ok || !ok2 || b == 0 {
			return 0, false
		}
		return a / b, true
	}
}

func atMost(limit float64) func(float64) bool  { return func(v float64) bool { return v <= limit } }
func below(limit float64) func(float64) bool   { return func(v float64) bool { return v < limit } }
func above(limit float64) func(float64) bool   { return func(v float64) bool { return v > limit } }
func atLeast(limit float64) func(float64) bool { return func(v float64) bool { return v >= limit } }
func exactly(want float64) func(float64) bool  { return func(v float64) bool { return v == want } }

// makespanCases are the makespan benchmark's graphs and concurrencies; free ones are not
// limited by concurrency (the work divided by max_concurrency is below the critical path).
var makespanCases = []struct {
	name string
	free bool
}{
	{"chain-10/c5", true}, {"chain-10/c10", true}, {"chain-10/c50", true},
	{"fanout-50/c5", false}, {"fanout-50/c10", false}, {"fanout-50/c50", true},
	{"random-200/c5", false}, {"random-200/c10", false}, {"random-200/c50", true},
	{"config-1000/c5", false}, {"config-1000/c10", false}, {"config-1000/c50", true},
}

func goals() []goal {
	gs := []goal{
		{"line of 5 stacks of 4 s each, emulator, 3 s heartbeats: makespan / 20 s", "<= 1.15", metric("BenchmarkLineOfFive", "ratio"), "%.3f", atMost(1.15)},
	}
	for _, c := range makespanCases {
		b := "BenchmarkMakespan/" + c.name
		if c.free {
			gs = append(gs, goal{"makespan " + c.name + ": cairn / critical path", "<= 1.05", metric(b, "cairn/cp"), "%.3f", atMost(1.05)})
		}
		gs = append(gs, goal{"makespan " + c.name + ": best peer / cairn", "> 1 (ahead of both)", ahead(b), "%.4f", above(1)})
	}
	return append(append(append(gs,
		goal{"10,000-stack load, validate, graph: ms", "< 100", metric("BenchmarkLoad10k", "ms/load"), "%.1f", below(100)},
		goal{"10,000-stack load, validate, graph: MB allocated", "< 64", metric("BenchmarkLoad10k", "MB-alloc/load"), "%.1f", below(64)},
		goal{"transitive reduction of 10,000 stacks: ms", "well under 95 (< 50)", scaled(metric("BenchmarkTransitiveReduction10k", "ns/op"), 1e-6), "%.1f", below(50)},
		goal{"a step blocking a 3,000-stack chain named against its order: ms", "< 100", scaled(metric("BenchmarkBlockChain3000", "ns/op"), 1e-6), "%.1f", below(100)},
		goal{"a step blocking 3,000 stacks beside each other: ms", "< 100", scaled(metric("BenchmarkBlockFanOut3000", "ns/op"), 1e-6), "%.1f", below(100)},
		goal{"the step of an unchanged 3,000-stack chain named against its order: ms", "< 100", scaled(metric("BenchmarkUnchangedChain3000", "ns/op"), 1e-6), "%.1f", below(100)},
		goal{"the step finishing the root of 2,999 stacks (they become ready): ms", "< 100", scaled(metric("BenchmarkStepFanOut3000", "ns/op"), 1e-6), "%.1f", below(100)},
		goal{"the step finishing the last of 2,999 stacks one requires (it becomes ready): ms", "< 100", scaled(metric("BenchmarkStepFanOut3000Reversed", "ns/op"), 1e-6), "%.1f", below(100)},
		goal{"unchanged re-push of 500 stacks: CloudFormation writes", "0", metric("BenchmarkPush500/others-0", "repush-cfn-writes"), "%.0f", exactly(0)},
		goal{"unchanged re-push of 500 stacks: CloudFormation reads", "<= 5", metric("BenchmarkPush500/others-0", "repush-cfn-reads"), "%.0f", atMost(5)},
		goal{"the same beside 2,000 unrelated stacks: writes", "0", metric("BenchmarkPush500/others-2000", "repush-cfn-writes"), "%.0f", exactly(0)},
		goal{"the same beside 2,000 unrelated stacks: reads", "<= 2 x min(500 stacks, 25 pages)", metric("BenchmarkPush500/others-2000", "repush-cfn-reads"), "%.0f", atMost(50)},
		goal{"deployer bootstrap, linux/arm64: MB (10^6 bytes)", "< 15", metric("BenchmarkColdStart", "MB-arm64"), "%.2f", below(15)},
		goal{"deployer init duration (process start to its first request for an event, as Lambda's REPORT line): ms (p50)", "<= 50", metric("BenchmarkColdStart", "ms-to-ready-p50"), "%.1f", atMost(50)},
		goal{"port allocations, 20 stacks at once, one function instance: per s", ">= 500", metric("BenchmarkAllocate/stacks=20/instances=1", "allocs/s"), "%.0f", atLeast(500)},
		goal{"port allocations, 20 stacks at once, two instances (the deployed SQS source's MaxConcurrency): per s", ">= 500", metric("BenchmarkAllocate/stacks=20/instances=2", "allocs/s"), "%.0f", atLeast(500)},
		goal{"port allocations, 20 stacks at once, an instance per stack (not deployed: a bound on contention): per s", "none (reported)", metric("BenchmarkAllocate/stacks=20/instances=20", "allocs/s"), "%.0f", nil},
	), readinessGoals()...), runCPUGoals()...)
}

// readinessCases are BenchmarkReadiness's graphs, and readinessPhases the runs of each
// the goals read: a create, and an update in which 30% of the stacks' outputs change
// (the benchmark also reports 0% and 100%).
var (
	readinessCases  = []string{"chain-5", "irregular-16", "random-30", "dag-20"}
	readinessPhases = []string{"create", "update-outputs-30"}
)

// readinessGoals: cairn's makespan within 5% of the critical path with change sets of 2 to
// 12 s, ahead of a 0.25 s thread-per-stack poller (throttled as CloudFormation throttles)
// with at most a fifth of its calls.
func readinessGoals() []goal {
	var gs []goal
	for _, g := range readinessCases {
		for _, run := range readinessPhases {
			b := "BenchmarkReadiness/" + g + "/" + run
			name := "readiness " + g + " " + run + ", change sets 2-12 s: "
			gs = append(gs,
				goal{name + "cairn / critical path", "<= 1.05", metric(b, "cairn/cp"), "%.3f", atMost(1.05)},
				goal{name + "0.25 s thread-per-stack / cairn", "> 1 (ahead)", ratioOf(b, "thread-0.25s/cp", "", "cairn/cp"), "%.3f", above(1)},
				goal{name + "cairn's calls / the 0.25 s poller's", "<= 0.2", ratioOf(b, "cairn-calls/stack", "", "thread-0.25s-calls/stack"), "%.3f", atMost(0.2)},
				goal{name + "cairn making change sets after the dependencies (its looks alone) / critical path", "none (reported)", metric(b, "cairn-after-deps/cp"), "%.3f", nil},
			)
			if g == "dag-20" { // more stacks ready at once than max_concurrency: the critical path is out of reach
				gs = append(gs, goal{name + "cairn / the best schedule at max_concurrency 10", "none (reported)", metric(b, "cairn/best"), "%.3f", nil})
			}
		}
	}
	return gs
}

// runCPUGoals: the deployer's CPU per stack flat in the run's size (BenchmarkRunCPU).
func runCPUGoals() []goal {
	var gs []goal
	for _, n := range []string{"200", "500", "1000"} {
		gs = append(gs, goal{"deployer CPU per stack, " + n + " stacks / 50 stacks", "<= 1.25 (flat)",
			ratioOf("BenchmarkRunCPU/stacks="+n, "deployer-cpu-ms/stack", "BenchmarkRunCPU/stacks=50", "deployer-cpu-ms/stack"), "%.2f", atMost(1.25)})
	}
	return gs
}

// table writes the goals table of r to w and reports how many goals hold and were measured.
func table(w io.Writer, r *results) (held, measured int) {
	rows := [][5]string{{"figure", "goal", "value", "holds", "measured"}}
	for _, g := range goals() {
		r.touched = map[string]bool{}
		v, ok := g.value(r)
		if !ok {
			rows = append(rows, [5]string{g.figure, g.goal, "not measured", "-", ""})
			continue
		}
		of := r.measured(r.touched)
		if g.holds == nil {
			rows = append(rows, [5]string{g.figure, g.goal, fmt.Sprintf(g.format, v), "n/a", of})
			continue
		}
		measured++
		verdict := "no"
		if g.holds(v) {
			verdict = "yes"
			held++
		}
		rows = append(rows, [5]string{g.figure, g.goal, fmt.Sprintf(g.format, v), verdict, of})
	}
	r.touched = nil
	var width [5]int
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], len(c))
		}
	}
	for i, row := range rows {
		fmt.Fprintf(w, "| %-*s | %-*s | %*s | %-*s | %-*s |\n", width[0], row[0], width[1], row[1], width[2], row[2], width[3], row[3], width[4], row[4])
		if i == 0 {
			var sep strings.Builder
			for _, n := range width {
				sep.WriteString("|" + strings.Repeat("-", n+2))
			}
			fmt.Fprintf(w, "%s|\n", sep.String())
		}
	}
	fmt.Fprintf(w, "| %d of %d goals measured hold |\n", held, measured)
	return held, measured
}

func main() {
	r, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchgoals: reading the benchmark output:", err)
		os.Exit(2)
	}
	table(os.Stdout, r)
}
