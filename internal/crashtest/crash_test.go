package crashtest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// knownViolations are the invariant violations the suite finds that are not fixed yet. A
// violation of one of an entry's Invariants, in a play where a crash point matching its
// Point fired, is expected: it is reported and does not fail the suite. Remove an entry
// when its fix lands, so the suite fails if it comes back; the report says how many
// entries the plays matched. It is empty: every violation found so far is fixed (a start
// killed before its first heartbeat is resumed by the upload's redelivery, a last step
// killed before its clean-up is finished by the next trigger of the run).
var knownViolations = []known{}

// known is a class of expected violations: of any of Invariants, in a play where a crash
// point matching Point fired.
type known struct {
	Point      string // a substring of a fired point, e.g. "before s3.DeleteObject locks/shop"
	Invariants []string
	Why        string
}

func (k known) matches(v violation, fired []firedPoint) bool {
	if !slices.Contains(k.Invariants, v.Invariant) {
		return false
	}
	for _, f := range fired {
		if strings.Contains(f.point.String(), k.Point) {
			return true
		}
	}
	return false
}

// Folders of the objects whose writes are named crash points.
var (
	graphFolder   = path.Dir(graphKey(namespace, graphKeyName))
	lockFolder    = path.Dir(lockKey(namespace, graphKeyName))
	runFolder     = strings.TrimSuffix(runPrefix(deployment), "/")
	openRunFolder = strings.TrimSuffix(openRunPrefix(), "/")
)

// namedPoints are the step boundaries the issue names, in the order a run meets them, and
// those where the suite once found violations: a start killed after recording its run
// and before its first heartbeat, and a last step killed after saving the ended run and
// before removing its index entry.
var namedPoints = []point{
	{When: after, Label: "s3.PutObject " + runFolder + " if-none-match", Occurrence: 1, How: panics},
	{When: before, Label: "sqs.SendMessage", Occurrence: 1, How: cancels},
	{When: after, Label: "cloudformation.CreateChangeSet", Occurrence: 1, How: cancels},
	{When: after, Label: "cloudformation.ExecuteChangeSet", Occurrence: 1, How: panics},
	{When: after, Label: "s3.PutObject " + graphFolder + " if-none-match", Occurrence: 1, How: cancels},
	{When: after, Label: "s3.PutObject " + graphFolder + " if-match", Occurrence: 1, How: panics},
	{When: before, Label: "s3.DeleteObject " + openRunFolder, Occurrence: 1, How: panics},
	{When: before, Label: "s3.DeleteObject " + lockFolder + " if-match", Occurrence: 1, How: panics},
	{When: before, Label: "cloudformation.DeleteStack", Occurrence: 1, How: cancels},
	{When: after, Label: "cloudformation.DeleteStack", Occurrence: 1, How: panics},
}

// TestCrashAtNamedPoints crashes the deployer once at each boundary the issue names.
func TestCrashAtNamedPoints(t *testing.T) {
	ref := uncrashed(t)
	suite := newTally("named points")
	t.Cleanup(func() { suite.report(t) })
	for _, p := range namedPoints {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			out := suite.play(t, p.String(), []point{p}, &ref, "replay: go test ./internal/crashtest -run 'TestCrashAtNamedPoints/"+regexpQuote(p.String())+"'")
			if len(out.Unfired) > 0 {
				var labels []string
				for _, c := range ref.Calls {
					if !slices.Contains(labels, c.Label) {
						labels = append(labels, c.Label)
					}
				}
				t.Errorf("crash point %s never fired: the deployer no longer makes that call; its calls are %s", p, strings.Join(labels, ", "))
			}
		})
	}
}

// restartPoints are step boundaries where `cairn local up` itself is killed and started
// again on the same --dir: a run recorded and its first heartbeat not yet queued, a stack
// operation in flight, and the lock about to be released. (make crash restarts at many
// more: CAIRN_CRASH_RESTART_SEEDS.)
var restartPoints = []point{
	{When: before, Label: "sqs.SendMessage", Occurrence: 1, How: restarts},
	{When: after, Label: "cloudformation.ExecuteChangeSet", Occurrence: 2, How: restarts},
	{When: before, Label: "s3.DeleteObject " + lockFolder + " if-match", Occurrence: 2, How: restarts},
}

// TestCrashRestart kills the deployer and `cairn local up` with it at each restart point,
// starts the emulator again on the same --dir and address (as a user does), and lets the
// redelivered triggers carry on: the same invariants hold. CAIRN_CRASH_RESTART_SEEDS
// random plays more (from CAIRN_CRASH_FIRST_SEED) restart at the points a seed draws.
func TestCrashRestart(t *testing.T) {
	ref := uncrashed(t)
	suite := newTally("restarts of cairn local up")
	t.Cleanup(func() { suite.report(t) })
	for _, p := range restartPoints {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			out := suite.play(t, p.String(), []point{p}, &ref, "replay: go test ./internal/crashtest -run 'TestCrashRestart/"+regexpQuote(p.String())+"'")
			if len(out.Unfired) > 0 || out.Restarts != 1 {
				t.Errorf("restart point %s: %d unfired, %d restart(s)", p, len(out.Unfired), out.Restarts)
			}
		})
	}
	first, count := envInt(t, "CAIRN_CRASH_FIRST_SEED", 1), envInt(t, "CAIRN_CRASH_RESTART_SEEDS", 0)
	for seed := first; seed < first+count; seed++ {
		points := draw(uint64(seed), ref.Calls)
		for i := range points {
			points[i].How = restarts
		}
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			t.Parallel()
			suite.play(t, fmt.Sprintf("restart seed %d", seed), points, &ref, fmt.Sprintf("replay: CAIRN_CRASH_FIRST_SEED=%d CAIRN_CRASH_RESTART_SEEDS=1 go test ./internal/crashtest -run 'TestCrashRestart/seed'", seed))
		})
	}
}

// TestCrashRandom crashes the deployer at one to three points drawn from the calls of the
// uncrashed play, a seed per play: CAIRN_CRASH_SEEDS plays (default 4), seeds from
// CAIRN_CRASH_FIRST_SEED (default 1), or only CAIRN_CRASH_SEED.
func TestCrashRandom(t *testing.T) {
	ref := uncrashed(t)
	first, count := envInt(t, "CAIRN_CRASH_FIRST_SEED", 1), envInt(t, "CAIRN_CRASH_SEEDS", 4)
	if s := os.Getenv("CAIRN_CRASH_SEED"); s != "" {
		first, count = envInt(t, "CAIRN_CRASH_SEED", 0), 1
	}
	suite := newTally("random crash points")
	t.Cleanup(func() { suite.report(t) })
	for seed := first; seed < first+count; seed++ {
		points := draw(uint64(seed), ref.Calls)
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			t.Parallel()
			suite.play(t, fmt.Sprintf("seed %d", seed), points, &ref, fmt.Sprintf("replay: CAIRN_CRASH_SEED=%d go test ./internal/crashtest -run TestCrashRandom", seed))
		})
	}
}

// TestCrashSweep, with CAIRN_CRASH_SWEEP=1, crashes the deployer once before and once after
// every call of the uncrashed play: every step boundary of both pushes.
func TestCrashSweep(t *testing.T) {
	if os.Getenv("CAIRN_CRASH_SWEEP") == "" {
		t.Skip("set CAIRN_CRASH_SWEEP=1 to crash before and after every call of the scenario (make crash)")
	}
	ref := uncrashed(t)
	suite := newTally("sweep of every call")
	t.Cleanup(func() { suite.report(t) })
	counts := map[string]int{}
	for i, c := range ref.Calls {
		counts[c.Label]++
		for _, p := range []point{
			{When: before, Label: c.Label, Occurrence: counts[c.Label], How: how([]how{panics, cancels}[i%2])},
			{When: after, Label: c.Label, Occurrence: counts[c.Label], How: how([]how{cancels, panics}[i%2])},
		} {
			name := fmt.Sprintf("call %d of %s: %s", i+1, c.Phase, p)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				suite.play(t, name, []point{p}, &ref, "replay: CAIRN_CRASH_SWEEP=1 go test ./internal/crashtest -run 'TestCrashSweep/"+regexpQuote(name)+"'")
			})
		}
	}
}

// draw picks a seed's crash points among the calls of the uncrashed play.
func draw(seed uint64, calls []call) []point {
	rng := rand.New(rand.NewPCG(seed, 0x63726173685f7375))
	var points []point
	for range 1 + rng.IntN(3) {
		i := rng.IntN(len(calls))
		occurrence := 0
		for _, c := range calls[:i+1] {
			if c.Label == calls[i].Label {
				occurrence++
			}
		}
		p := point{When: []when{before, after}[rng.IntN(2)], Label: calls[i].Label, Occurrence: occurrence, How: []how{panics, cancels}[rng.IntN(2)]}
		if !slices.ContainsFunc(points, func(q point) bool { return q.Label == p.Label && q.Occurrence == p.Occurrence }) {
			points = append(points, p)
		}
	}
	return points
}

// tally gathers a test's figures for its report.
type tally struct {
	mu         sync.Mutex
	name       string
	plays      int
	armed      int
	fired      int
	processes  int
	restarts   int
	found      []finding
	knownSeen  map[int]bool
	boundaries map[string]bool
}

type finding struct {
	play  string
	step  string
	v     violation
	known *known
	fired []firedPoint
}

func newTally(name string) *tally {
	return &tally{name: name, knownSeen: map[int]bool{}, boundaries: map[string]bool{}}
}

// play plays the scenario with points, fails t on an unexpected violation and counts.
func (s *tally) play(t *testing.T, name string, points []point, ref *outcome, replay string) outcome {
	out := play(t, points, ref)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.plays++
	s.armed += len(points)
	s.fired += len(out.Fired)
	s.processes += out.Processes
	s.restarts += out.Restarts
	var fired []string
	for _, f := range out.Fired {
		fired = append(fired, f.Phase+": "+f.point.String())
		s.boundaries[f.When.String()+" "+f.Label] = true
	}
	t.Logf("crash points armed %v; fired %v; deployer processes %d; emulator restarts %d; dead-lettered %s", points, fired, out.Processes, out.Restarts, out.DeadLetter)
	for i, vs := range out.Violations {
		for _, v := range vs {
			f := finding{play: name, step: scenario[i].Name, v: v, fired: out.Fired}
			for k := range knownViolations {
				if knownViolations[k].matches(v, out.Fired) {
					f.known = &knownViolations[k]
					s.knownSeen[k] = true
					break
				}
			}
			s.found = append(s.found, f)
			if f.known != nil {
				t.Logf("known violation after %s: %s [%s]", scenario[i].Name, v, f.known.Why)
				continue
			}
			t.Errorf("%s: after %s, with crashes %v: %s\n%s", name, scenario[i].Name, fired, v, replay)
		}
	}
	return out
}

func (w when) String() string { return string(w) }

// report logs the figures: plays, crash points, boundaries, violations by invariant.
func (s *tally) report(t *testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byInvariant := map[string][2]int{} // unexpected, known
	for _, f := range s.found {
		c := byInvariant[f.v.Invariant]
		if f.known != nil {
			c[1]++
		} else {
			c[0]++
		}
		byInvariant[f.v.Invariant] = c
	}
	var lines []string
	for _, inv := range invariants {
		c := byInvariant[inv]
		lines = append(lines, fmt.Sprintf("  %-45s %d unexpected, %d known", inv, c[0], c[1]))
	}
	t.Logf("crash suite, %s: %d play(s), %d crash point(s) armed, %d fired at %d distinct boundaries, %d deployer process(es), %d emulator restart(s); violations:\n%s\n%d of the %d known violations were seen",
		s.name, s.plays, s.armed, s.fired, len(s.boundaries), s.processes, s.restarts, strings.Join(lines, "\n"), len(s.knownSeen), len(knownViolations))
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a whole number", name, s)
	}
	return n
}

// regexpQuote quotes a subtest name for -run, where spaces became underscores.
func regexpQuote(name string) string {
	r := strings.NewReplacer(" ", "_", "(", `\(`, ")", `\)`, "#", `#`, "/", `.`, ".", `\.`)
	return "^" + r.Replace(name) + "$"
}
