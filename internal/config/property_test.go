package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestCyclesProperty generates configs whose dependencies only point to earlier stacks
// (acyclic, so they must load), then adds one edge from an earlier stack to a later one
// that reaches it (a cycle, which must be reported as a cycle of real dependencies).
func TestCyclesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 12).Draw(t, "stacks")
		deps := make([][]int, n)
		for i := 1; i < n; i++ {
			deps[i] = rapid.SliceOfNDistinct(rapid.IntRange(0, i-1), 0, 3, rapid.ID).Draw(t, fmt.Sprintf("deps%d", i))
		}
		edges := map[[2]string]bool{}
		render := func(extra *[2]int) string {
			var b strings.Builder
			b.WriteString("namespace: p\nstacks:\n")
			for i := range n {
				fmt.Fprintf(&b, "  - name: s%d\n    template_path: templates/app.yaml\n    parameters:\n      Name: n\n", i)
				var req []string
				for j, d := range deps[i] {
					edges[[2]string{fmt.Sprint("s", i), fmt.Sprint("s", d)}] = true
					if j%2 == 0 {
						req = append(req, fmt.Sprintf("s%d", d))
					} else {
						fmt.Fprintf(&b, "      Size: ${output s%d::Url}\n", d) // one lookup at most
					}
				}
				if extra != nil && extra[0] == i {
					edges[[2]string{fmt.Sprint("s", i), fmt.Sprint("s", extra[1])}] = true
					req = append(req, fmt.Sprintf("s%d", extra[1]))
				}
				if len(req) > 0 {
					fmt.Fprintf(&b, "    requires: [%s]\n", strings.Join(req, ", "))
				}
			}
			return b.String()
		}
		// Deps beyond the first two are dropped: one lookup (Size) and requires keep it simple.
		for i := range deps {
			if len(deps[i]) > 2 {
				deps[i] = deps[i][:2]
			}
		}
		c, err := Load(fuzzBundle(t, []byte(render(nil))))
		if err != nil {
			t.Fatalf("acyclic config failed: %v", err)
		}
		g, err := c.Graph()
		if err != nil {
			t.Fatal(err)
		}
		order, _ := g.Order()
		pos := map[string]int{}
		for i, s := range order {
			pos[s] = i
		}
		for e := range edges {
			if pos[e[0]] <= pos[e[1]] {
				t.Fatalf("%s deploys before its dependency %s", e[0], e[1])
			}
		}

		// Pick a stack with dependencies and point one of its transitive dependencies back at it.
		from := rapid.IntRange(1, n-1).Draw(t, "cycleAt")
		if len(deps[from]) == 0 {
			return
		}
		to := deps[from][0]
		clear(edges)
		_, err = Load(fuzzBundle(t, []byte(render(&[2]int{to, from}))))
		var errs Errors
		if !errors.As(err, &errs) || len(errs) != 1 {
			t.Fatalf("cyclic config: %v", err)
		}
		msg := errs[0].Msg
		const prefix, suffix = "dependency cycle: ", ": remove one of these dependencies"
		if !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, suffix) {
			t.Fatalf("message %q", msg)
		}
		cycle := strings.Split(strings.TrimSuffix(strings.TrimPrefix(msg, prefix), suffix), " -> ")
		if len(cycle) < 2 || cycle[0] != cycle[len(cycle)-1] {
			t.Fatalf("cycle %v does not close", cycle)
		}
		for i := 0; i+1 < len(cycle); i++ {
			if !edges[[2]string{cycle[i], cycle[i+1]}] {
				t.Fatalf("cycle %v uses %s -> %s, which is no dependency", cycle, cycle[i], cycle[i+1])
			}
		}
	})
}
