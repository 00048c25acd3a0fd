package template

import (
	"maps"
	"math"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/resourcespec"
)

// keySet is which keys an object has: a key whose value is Ref AWS::NoValue is absent,
// one whose value is an Fn::If with an AWS::NoValue branch may be either.
type keySet struct {
	sure, unsure []string
}

func presence(n *yaml.Node) keySet {
	var ks keySet
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, resolve(n.Content[i+1])
		switch {
		case isNoValue(v):
		case mayBeNoValue(v):
			ks.unsure = append(ks.unsure, k)
		default:
			ks.sure = append(ks.sure, k)
		}
	}
	return ks
}

func (ks keySet) maybe(k string) bool {
	return slices.Contains(ks.sure, k) || slices.Contains(ks.unsure, k)
}

func (ks keySet) least() int { return len(ks.sure) }

func (ks keySet) most() int { return len(ks.sure) + len(ks.unsure) }

// holds reports whether a requirement on keys holds for some choice of the unsure keys
// (a problem is reported only when it fails whichever way they go): each unsure key
// present or absent, up to 2^8 choices, all present and all absent beyond.
func (ks keySet) holds(f func(has func(string) bool, keys []string) bool) bool {
	n := len(ks.unsure)
	if n == 0 {
		return f(func(k string) bool { return slices.Contains(ks.sure, k) }, ks.sure)
	}
	tries := []uint64{0, math.MaxUint64}
	if n <= 8 {
		tries = tries[:0]
		for m := uint64(0); m < 1<<n; m++ {
			tries = append(tries, m)
		}
	}
	for _, m := range tries {
		keys := slices.Clone(ks.sure)
		for i, k := range ks.unsure {
			if m&(1<<i) != 0 {
				keys = append(keys, k)
			}
		}
		if f(func(k string) bool { return slices.Contains(keys, k) }, keys) {
			return true
		}
	}
	return false
}

func isNoValue(v *yaml.Node) bool {
	if intrinsic(v) != "Ref" {
		return false
	}
	a := resolve(v.Content[1])
	return a.Kind == yaml.ScalarNode && a.Value == "AWS::NoValue"
}

func mayBeNoValue(v *yaml.Node) bool {
	if intrinsic(v) != "Fn::If" {
		return false
	}
	args := resolve(v.Content[1])
	if args.Kind != yaml.SequenceNode || len(args.Content) != 3 {
		return false
	}
	for _, b := range args.Content[1:] {
		b = resolve(b)
		if isNoValue(b) || mayBeNoValue(b) {
			return true
		}
	}
	return false
}

// combinations checks oneOf/anyOf requirements, requiredXor/requiredOr and the
// properties that require or exclude each other. obj is the object (nil for a resource
// without Properties): a property given too many times over is reported at its key, as
// cfn-lint does; a missing one at the object.
func (c *checker) combinations(keys keySet, sh *resourcespec.Shape, path string, at, obj *yaml.Node, vc valueCtx) {
	conflicted := map[string]bool{} // properties a failed "exactly one" names
	tooMany := func(names []string) *yaml.Node {
		var present []string
		for _, n := range names {
			if slices.Contains(keys.sure, n) {
				present = append(present, n)
			}
		}
		if len(present) < 2 {
			return at
		}
		for _, n := range present {
			conflicted[n] = true
		}
		return laterKey(obj, present, at)
	}
	for _, r := range sh.Requirements {
		if !keys.holds(r.Holds) {
			where := at
			if r.Op == '1' {
				var names []string
				for _, s := range r.Sub {
					names = append(names, s.Names...)
				}
				where = tooMany(names)
			}
			c.errorf(where, path, "%s %s", vc.of(), describeRequirement(r, keys))
		}
	}
	if len(sh.RequiredXor) > 0 {
		ok := keys.holds(func(has func(string) bool, _ []string) bool {
			n := 0
			for _, p := range sh.RequiredXor {
				if has(p) {
					n++
				}
			}
			return n == 1
		})
		if !ok {
			c.errorf(tooMany(sh.RequiredXor), path, "%s takes exactly one of %s%s", vc.of(), strings.Join(sh.RequiredXor, ", "), given(sh.RequiredXor, keys))
		}
	}
	if len(sh.RequiredOr) > 0 {
		ok := keys.holds(func(has func(string) bool, _ []string) bool {
			return slices.ContainsFunc(sh.RequiredOr, has)
		})
		if !ok {
			c.errorf(at, path, "%s needs at least one of %s", vc.of(), strings.Join(sh.RequiredOr, ", "))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(sh.DependentRequired)) {
		if !slices.Contains(keys.sure, p) {
			continue
		}
		var missing []string
		for _, q := range sh.DependentRequired[p] {
			if !keys.maybe(q) {
				missing = append(missing, q)
			}
		}
		if len(missing) > 0 {
			c.errorf(at, path, "%s: %s requires %s", vc.of(), p, strings.Join(missing, " and "))
		}
	}
	reported := map[[2]string]bool{}
	for _, p := range slices.Sorted(maps.Keys(sh.DependentExcluded)) {
		if !slices.Contains(keys.sure, p) {
			continue
		}
		for _, q := range sh.DependentExcluded[p] {
			if !slices.Contains(keys.sure, q) || reported[[2]string{q, p}] || conflicted[p] && conflicted[q] {
				continue
			}
			reported[[2]string{p, q}] = true
			c.errorf(laterKey(obj, []string{p, q}, at), path, "%s: %s and %s exclude each other: give one of them", vc.of(), p, q)
		}
	}
}

// laterKey returns the key node of obj, among names, that comes last in the template,
// or def.
func laterKey(obj *yaml.Node, names []string, def *yaml.Node) *yaml.Node {
	var last *yaml.Node
	if obj == nil {
		return def
	}
	for i := 0; i+1 < len(obj.Content); i += 2 {
		if k := obj.Content[i]; slices.Contains(names, k.Value) {
			last = k
		}
	}
	if last == nil {
		return def
	}
	return last
}

// given says which of names the object has, for messages.
func given(names []string, keys keySet) string {
	var have []string
	for _, n := range names {
		if keys.maybe(n) {
			have = append(have, n)
		}
	}
	if len(have) == 0 {
		return ", and has none"
	}
	return ", and has " + strings.Join(have, " and ")
}

// describeRequirement says what a failed requirement asks for.
func describeRequirement(r resourcespec.Requirement, keys keySet) string {
	single := true // every branch names one property
	var names []string
	for _, s := range r.Sub {
		if s.Op != 'r' || len(s.Names) > 1 {
			single = false
		}
		names = append(names, strings.Join(s.Names, " and "))
	}
	switch {
	case r.Op == '1' && single:
		var all []string
		for _, s := range r.Sub {
			all = append(all, s.Names...)
		}
		return "takes exactly one of " + strings.Join(all, ", ") + given(all, keys)
	case r.Op == '+' && single:
		return "needs at least one of " + strings.Join(names, ", ")
	case r.Op == 'r':
		return "requires " + strings.Join(r.Names, ", ")
	}
	var alts []string
	for _, s := range r.Sub {
		alts = append(alts, requirementText(s))
	}
	switch r.Op {
	case '1':
		return "must match exactly one of these combinations of properties: " + strings.Join(alts, "; ")
	case '+':
		return "must match at least one of these combinations of properties: " + strings.Join(alts, "; ")
	}
	return "must match all of: " + strings.Join(alts, "; ")
}

func requirementText(r resourcespec.Requirement) string {
	switch r.Op {
	case 'r':
		s := strings.Join(r.Names, " and ")
		if s == "" {
			s = "none of them"
		}
		if r.Keys != nil {
			s += " (and no property but " + listOr(r.Keys, "none") + ")"
		}
		return s
	case '1', '+', '&':
		var parts []string
		for _, s := range r.Sub {
			parts = append(parts, requirementText(s))
		}
		op := map[byte]string{'1': "exactly one of", '+': "one or more of", '&': "all of"}[r.Op]
		return op + " (" + strings.Join(parts, " | ") + ")"
	}
	return ""
}
