package deployer_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// bestSchedule is the second bound of a phase: the makespan of the best schedule of the
// recorded durations (weight, by stack index; zero for a stack with no operation) under
// slots concurrent stacks, by list scheduling with the longest remaining chain first and no
// overhead between a dependency's end and its dependent's start. With enough slots it is
// the critical path; with fewer, a graph wider than the slots takes waves no tool avoids.
func bestSchedule(deps [][]int, weight []time.Duration, slots int) time.Duration {
	return listSchedule(deps, weight, slots, true)
}

// blindSchedule is the third bound: the same list scheduling with no overhead, but ranking
// the stacks as an engine that does not know their durations must (a create has no
// history): the longest chain behind a stack counted in stacks, then its name (sN), as
// run.start ranks them. Against it, what is left of a side's makespan is its overhead,
// not the luck of the draw's durations.
func blindSchedule(deps [][]int, weight []time.Duration, slots int) time.Duration {
	return listSchedule(deps, weight, slots, false)
}

// listSchedule schedules by the longest remaining chain first, in time when knowing, else
// in stacks then by name.
func listSchedule(deps [][]int, weight []time.Duration, slots int, knowing bool) time.Duration {
	n := len(deps)
	dependents := make([][]int, n)
	for i, ds := range deps {
		for _, d := range ds {
			dependents[d] = append(dependents[d], i)
		}
	}
	tail := make([]time.Duration, n) // the longest chain from i to the end, i included
	for i := n - 1; i >= 0; i-- {
		for _, d := range dependents[i] {
			tail[i] = max(tail[i], tail[d])
		}
		if knowing {
			tail[i] += weight[i]
		} else {
			tail[i]++ // a stack counts one
		}
	}
	name := func(i int) string { return fmt.Sprintf("s%d", i) }
	end := make([]time.Duration, n)
	started, finished := make([]bool, n), make([]bool, n)
	var now time.Duration
	running := 0
	for done := 0; done < n; {
		var ready []int
		for i, ds := range deps {
			if started[i] {
				continue
			}
			ok := true
			for _, d := range ds {
				ok = ok && finished[d] && end[d] <= now
			}
			if ok {
				ready = append(ready, i)
			}
		}
		sort.SliceStable(ready, func(a, b int) bool {
			x, y := ready[a], ready[b]
			return tail[x] > tail[y] || !knowing && tail[x] == tail[y] && name(x) < name(y)
		})
		for _, i := range ready {
			if weight[i] == 0 { // nothing to do: done at once, no slot
				started[i], finished[i], end[i] = true, true, now
				done++
				continue
			}
			if running < slots {
				started[i], end[i] = true, now+weight[i]
				running++
			}
		}
		if slices.ContainsFunc(ready, func(i int) bool { return weight[i] == 0 }) {
			continue // a stack done at once may make others ready now
		}
		next := time.Duration(-1)
		for i := range deps {
			if started[i] && !finished[i] && (next < 0 || end[i] < next) {
				next = end[i]
			}
		}
		if next < 0 {
			break
		}
		now = next
		for i := range deps {
			if started[i] && !finished[i] && end[i] <= now {
				finished[i] = true
				running--
				done++
			}
		}
	}
	var last time.Duration
	for _, e := range end {
		last = max(last, e)
	}
	return last
}

// byAction is the calls of each CloudFormation action between two counts, per stack.
func byAction(before, after map[string]int, stacks int) map[string]float64 {
	out := map[string]float64{}
	for k, n := range after {
		if d := n - before[k]; d > 0 {
			out[k] = float64(d) / float64(stacks)
		}
	}
	return out
}

// actionsLine prints the median calls per stack of each action over runs, most first.
func actionsLine(rs []sideResult) string {
	names := map[string]bool{}
	for _, r := range rs {
		for k := range r.actions {
			names[k] = true
		}
	}
	type kv struct {
		k string
		v float64
	}
	var l []kv
	for k := range names {
		l = append(l, kv{k, median(rs, func(r sideResult) float64 { return r.actions[k] })})
	}
	sort.Slice(l, func(a, b int) bool { return l[a].v > l[b].v || l[a].v == l[b].v && l[a].k < l[b].k })
	var s []string
	for _, e := range l {
		if e.v > 0 {
			s = append(s, fmt.Sprintf("%s %.2f", e.k, e.v))
		}
	}
	return strings.Join(s, ", ")
}

func TestBestSchedule(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		name   string
		deps   [][]int
		weight []time.Duration
		slots  int
		want   time.Duration
	}{
		{"a chain is its sum", [][]int{nil, {0}, {1}}, []time.Duration{s, 2 * s, 3 * s}, 10, 6 * s},
		{"a wide level takes waves", [][]int{nil, nil, nil}, []time.Duration{s, s, s}, 2, 2 * s},
		{"the longest chain goes first", [][]int{nil, nil, {1}}, []time.Duration{2 * s, s, 2 * s}, 1, 5 * s},
		{"a stack with nothing to do takes no slot", [][]int{nil, {0}, nil}, []time.Duration{0, s, s}, 1, 2 * s},
		{"longest remaining chain beats the name", [][]int{nil, nil, {1}, nil}, []time.Duration{s, s, 3 * s, s}, 2, 4 * s},
	} {
		if got := bestSchedule(c.deps, c.weight, c.slots); got != c.want {
			t.Errorf("%s: bestSchedule = %v, want %v", c.name, got, c.want)
		}
	}
	// Not knowing durations: stacks of equal chains go by name, so a long one named last
	// starts in the second wave (s10 sorts before s2).
	deps := [][]int{nil, nil, nil}
	weight := []time.Duration{s, s, 3 * s}
	if got := blindSchedule(deps, weight, 2); got != 4*s {
		t.Errorf("blindSchedule = %v, want 4s (s0 and s1, then s2)", got)
	}
	if got := bestSchedule(deps, weight, 2); got != 3*s {
		t.Errorf("bestSchedule = %v, want 3s (s2 first)", got)
	}
	// Twelve alike but s9, with ten slots: by name s0, s1, s10, s11, s2 ... s7 go first,
	// s9 after them.
	weight = []time.Duration{s, s, s, s, s, s, s, s, s, 3 * s, s, s}
	if got := blindSchedule(make([][]int, 12), weight, 10); got != 4*s {
		t.Errorf("blindSchedule of twelve = %v, want 4s (s9 in the second wave)", got)
	}
	if got := bestSchedule(make([][]int, 12), weight, 10); got != 3*s {
		t.Errorf("bestSchedule of twelve = %v, want 3s (s9 first)", got)
	}
}
