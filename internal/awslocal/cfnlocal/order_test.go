package cfnlocal

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// scanOrder is how the emulator ordered resources before it used the graph's walker, kept
// as the definition the walker must agree with: repeatedly take the smallest logical id
// whose dependencies are all placed; when none is left, name every resource not placed.
func scanOrder(t *template, extra map[string][]string) ([]string, error) {
	names := sortedKeys(t.Resources)
	indeg := map[string]int{}
	rev := map[string][]string{}
	for _, n := range names {
		ds := t.deps(n)
		for _, d := range extra[n] {
			if !slices.Contains(ds, d) && d != n {
				ds = append(ds, d)
			}
		}
		indeg[n] = len(ds)
		for _, d := range ds {
			rev[d] = append(rev[d], n)
		}
	}
	var out []string
	done := map[string]bool{}
	for len(out) < len(names) {
		progressed := false
		for _, n := range names {
			if done[n] || indeg[n] > 0 {
				continue
			}
			done[n] = true
			out = append(out, n)
			for _, m := range rev[n] {
				indeg[m]--
			}
			progressed = true
			break
		}
		if !progressed {
			var cyc []string
			for _, n := range names {
				if !done[n] {
					cyc = append(cyc, n)
				}
			}
			return nil, invalidf("Template format error: Circular dependency between resources: [%s]", strings.Join(cyc, ", "))
		}
	}
	return out, nil
}

// dependsOn makes a template of topics from "A>B A>C D" (A DependsOn B and C; D alone).
func dependsOn(spec string) *template {
	t := &template{Resources: map[string]resourceDecl{}}
	for _, tok := range strings.Fields(spec) {
		from, to, edge := strings.Cut(tok, ">")
		d := t.Resources[from]
		d.Type = "AWS::SNS::Topic"
		if edge {
			d.DependsOn = append(d.DependsOn, to)
			if _, ok := t.Resources[to]; !ok && !strings.HasPrefix(to, "Ghost") {
				t.Resources[to] = resourceDecl{Type: "AWS::SNS::Topic"}
			}
		}
		t.Resources[from] = d
	}
	return t
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestResourceOrder(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		extra      map[string][]string
		want, err  string
	}{
		{name: "independent, by logical id", spec: "C B A", want: "A B C"},
		{name: "dependencies first", spec: "A>B B>C", want: "C B A"},
		{name: "smallest ready first", spec: "Z>M A>M", want: "M A Z"},
		{name: "a cycle names every resource on it", spec: "A>B B>A C", err: "Circular dependency between resources: [A, B]"},
		{name: "and those depending on it", spec: "A>B B>C C>B D>A E", err: "Circular dependency between resources: [A, B, C, D]"},
		{name: "a self-dependency", spec: "A>A B", err: "[A]"},
		{name: "an undeclared dependency, and what depends on it", spec: "A>Ghost B>A C", err: "Circular dependency between resources: [A, B]"},
		{name: "implied dependencies order too", spec: "A B", extra: map[string][]string{"A": {"B"}}, want: "B A"},
		{name: "implied dependencies making a cycle are left out", spec: "A>B", extra: map[string][]string{"B": {"A"}}, want: "B A"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl := dependsOn(tc.spec)
			got, err := tpl.orderWith(tc.extra)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("order %q, error %v; want error %q", got, err, tc.err)
				}
			} else if err != nil || strings.Join(got, " ") != tc.want {
				t.Fatalf("order %q, error %v; want %q", got, err, tc.want)
			}
			want, werr := scanOrder(tpl, tc.extra)
			if tc.extra == nil && (!slices.Equal(got, want) || errText(err) != errText(werr)) {
				t.Fatalf("order %q, %v; the scan gives %q, %v", got, err, want, werr)
			}
		})
	}
}

// TestPropertyResourceOrderAsBefore: on random templates (DependsOn among up to 15
// resources, cycles and undeclared names included, with implied dependencies), the
// walker orders resources, and reports cycles, exactly as the scan did.
func TestPropertyResourceOrderAsBefore(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 15).Draw(t, "resources")
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("R%02d", (i*7)%n) // ids out of step with their draw
		}
		targets := append(slices.Clone(ids), "Ghost")
		tpl := &template{Resources: map[string]resourceDecl{}}
		extra := map[string][]string{}
		for _, id := range ids {
			d := resourceDecl{Type: "AWS::SNS::Topic"}
			for range rapid.IntRange(0, 3).Draw(t, "deps of "+id) {
				to := rapid.SampledFrom(targets).Draw(t, "dep")
				if to == "Ghost" && !rapid.Bool().Draw(t, "keep ghost") {
					continue
				}
				d.DependsOn = append(d.DependsOn, to)
			}
			if rapid.IntRange(0, 4).Draw(t, "implied") == 0 {
				extra[id] = append(extra[id], rapid.SampledFrom(ids).Draw(t, "implied dep"))
			}
			tpl.Resources[id] = d
		}
		for _, x := range []map[string][]string{nil, extra} {
			got, err := tpl.orderBy(x)
			want, werr := scanOrder(tpl, x)
			if !slices.Equal(got, want) || errText(err) != errText(werr) {
				t.Fatalf("extra %v: order %q, %v; the scan gives %q, %v", x, got, err, want, werr)
			}
		}
	})
}
