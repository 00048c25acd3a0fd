package template

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/spec"
)

// Property values are checked against the keywords of their resource provider schema as
// CloudFormation applies them: a single value is converted to the kind the property takes
// first (a string "5" is a number, "true" a boolean, 5 a string), and only a value known
// before deployment is checked. The results of intrinsic functions are checked for their
// kind alone (Fn::Join gives a string, Fn::GetAZs a list, Ref to a resource a string); a
// Ref to a parameter is checked through the parameter's Default and AllowedValues, as
// warnings, since the stack may give another value (config.Load checks the value a stack
// gives); dynamic references ({{resolve:...}}) are unknown until deployment.

// packaged are the properties packaging turns from a local path into what the property
// takes (an S3 location object, often): a string there is a path to package. The list is
// artifacts.go's (packageable, and the nested stacks' template properties).
var packaged = func() map[string]bool {
	m := map[string]bool{}
	for _, p := range packageable {
		if !p.Metadata {
			m[p.Type+"."+p.Property] = true
		}
	}
	for typ, prop := range nestedTypes {
		m[typ+"."+prop] = true
	}
	return m
}()

// valueCtx is where a value sits: the resource type, the path from its Properties (for
// messages and the packaged table), and the node problems about the value itself point at.
type valueCtx struct {
	typ   string
	where string // e.g. SSESpecification.SSEType ("" for the Properties themselves)
	// chosen: the value is a branch of an Fn::If, used only when its condition says so.
	chosen bool
}

func (v valueCtx) of() string {
	if v.where == "" {
		return v.typ
	}
	return v.where + " of " + v.typ
}

func (v valueCtx) sub(key string) valueCtx {
	if v.where == "" {
		return valueCtx{v.typ, key, v.chosen}
	}
	return valueCtx{v.typ, v.where + "." + key, v.chosen}
}

func (v valueCtx) item(i int) valueCtx {
	return valueCtx{v.typ, fmt.Sprintf("%s[%d]", v.where, i), v.chosen}
}

// schemaPath is the property's path without list indexes, as the packaged table names it.
func (v valueCtx) schemaPath() string {
	var b strings.Builder
	depth := 0
	for _, r := range v.where {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return v.typ + "." + b.String()
}

// value checks a property value against its shape; at is the key holding it (or the list
// item), where problems with the value as a whole are reported.
func (c *checker) value(n *yaml.Node, sh *spec.Shape, path string, at *yaml.Node, vc valueCtx) {
	n = resolve(n)
	if at == nil {
		at = n
	}
	if fn := intrinsic(n); fn != "" {
		c.intrinsicValue(fn, n, sh, path, at, vc)
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		c.errorf(at, path, "has no value: CloudFormation refuses null values; remove the key or give it a value")
		return
	}
	switch {
	case sh.Kind == spec.Any:
		if n.Kind == yaml.ScalarNode && sh.Constrained() && !strings.Contains(n.Value, "{{resolve:") {
			if msg := constraintProblem(n, sh); msg != "" {
				c.errorf(n, path, "%s", msg)
			}
		}
	case sh.Kind.Scalar():
		if n.Kind != yaml.ScalarNode {
			c.errorf(at, path, "must be a single value (a string, number or boolean), not %s", kindOf(n))
			return
		}
		if msg := scalarProblem(n, sh); msg != "" {
			c.errorf(n, path, "%s", msg)
		}
	case sh.Kind == spec.List:
		if n.Kind != yaml.SequenceNode {
			if n.Kind == yaml.ScalarNode && packaged[vc.schemaPath()] {
				return
			}
			c.errorf(at, path, "must be a list, not %s", kindOf(n))
			return
		}
		for i, item := range n.Content {
			c.value(item, sh.Elem, fmt.Sprintf("%s[%d]", path, i), item, vc.item(i))
		}
		c.listConstraints(n, sh, path, at)
	case sh.Kind == spec.Map || sh.Kind == spec.Object:
		if n.Kind != yaml.MappingNode {
			if n.Kind == yaml.ScalarNode && packaged[vc.schemaPath()] {
				return
			}
			c.errorf(at, path, "must be a mapping, not %s", kindOf(n))
			return
		}
		c.object(n, sh, path, at, vc)
	}
}

// object checks a mapping's keys and values, and the combinations of keys its shape
// requires or excludes.
func (c *checker) object(n *yaml.Node, sh *spec.Shape, path string, at *yaml.Node, vc valueCtx) {
	keys := presence(n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Value == "Fn::Transform" {
			continue // a macro's: it rewrites the mapping before CloudFormation reads it
		}
		p := sh.Properties[k.Value]
		if p == nil && sh.Kind == spec.Map && len(sh.PatternProperties) == 0 {
			p = sh.Elem
		}
		if p == nil {
			for _, pp := range sh.PatternProperties {
				if ok, err := searchPattern(pp.Pattern, k.Value); ok || err != nil {
					p = pp.Shape
					break
				}
			}
		}
		if p == nil {
			if sh.Closed || sh.Kind == spec.Map && len(sh.PatternProperties) > 0 {
				if sh.Kind == spec.Map {
					c.errorf(k, path+"."+k.Value, "key %q of %s does not match the pattern %s its keys must match", k.Value, vc.of(), sh.PatternProperties[0].Pattern)
				} else {
					c.errorf(k, path+"."+k.Value, "unknown property %q of %s%s", k.Value, vc.of(), Suggest(k.Value, sh.PropertyNames()))
				}
			} else if sh.Kind == spec.Map {
				c.value(n.Content[i+1], sh.Elem, path+"."+k.Value, k, vc.sub(k.Value))
			}
			continue
		}
		c.value(n.Content[i+1], p, path+"."+k.Value, k, vc.sub(k.Value))
	}
	if count := len(n.Content) / 2; sh.MaxProperties >= 0 && keys.least() > sh.MaxProperties {
		c.errorf(at, path, "%s has %d keys, more than the %d it takes", vc.of(), count, sh.MaxProperties)
	} else if sh.MinProperties >= 0 && keys.most() < sh.MinProperties {
		c.errorf(at, path, "%s has %d keys, fewer than the %d it needs", vc.of(), count, sh.MinProperties)
	}
	if sh.Kind != spec.Object {
		return
	}
	var missing []string
	for _, r := range sh.Required {
		if !keys.maybe(r) {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		c.errorf(at, path, "%s requires %s %s", vc.of(), plural(len(missing), "property", "properties"), strings.Join(missing, ", "))
	}
	c.combinations(keys, sh, path, at, n, vc)
}

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
func (ks keySet) most() int  { return len(ks.sure) + len(ks.unsure) }

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
func (c *checker) combinations(keys keySet, sh *spec.Shape, path string, at, obj *yaml.Node, vc valueCtx) {
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
func describeRequirement(r spec.Requirement, keys keySet) string {
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

func requirementText(r spec.Requirement) string {
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

// listConstraints checks minItems, maxItems and uniqueItems. An item that may be
// AWS::NoValue counts as maybe there.
func (c *checker) listConstraints(n *yaml.Node, sh *spec.Shape, path string, at *yaml.Node) {
	lo, hi := 0, 0
	for _, it := range n.Content {
		it = resolve(it)
		switch {
		case isNoValue(it):
		case mayBeNoValue(it):
			hi++
		default:
			lo++
			hi++
		}
	}
	if sh.MinItems >= 0 && hi < sh.MinItems {
		c.errorf(at, path, "has %d %s, fewer than the %d it needs", hi, plural(hi, "item", "items"), sh.MinItems)
	}
	if sh.MaxItems >= 0 && lo > sh.MaxItems {
		c.errorf(at, path, "has %d items, more than the %d it takes", lo, sh.MaxItems)
	}
	if sh.UniqueItems {
		seen := map[string]int{}
		var repeats []string
		for i, it := range n.Content {
			it = resolve(it)
			if intrinsic(it) != "" {
				continue // its value is known at deployment
			}
			v := identity(it)
			if j, dup := seen[v]; dup {
				repeats = append(repeats, fmt.Sprintf("item %d repeats item %d", i, j))
				continue
			}
			seen[v] = i
		}
		if len(repeats) > 0 {
			c.errorf(at, path, "has repeated items (%s): the items must be unique", strings.Join(repeats, ", "))
		}
	}
}

// identity is a value's text for comparing items: equal values, equal text.
func identity(n *yaml.Node) string {
	n = resolve(n)
	switch n.Kind {
	case yaml.ScalarNode:
		return "s" + canonical(n)
	case yaml.SequenceNode:
		var b strings.Builder
		b.WriteString("[")
		for _, c := range n.Content {
			b.WriteString(strconv.Quote(identity(c)))
			b.WriteString(",")
		}
		return b.String() + "]"
	case yaml.MappingNode:
		pairs := make([]string, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			pairs = append(pairs, strconv.Quote(n.Content[i].Value)+":"+strconv.Quote(identity(n.Content[i+1])))
		}
		slices.Sort(pairs)
		return "{" + strings.Join(pairs, ",") + "}"
	}
	return ""
}

// scalarProblem says why CloudFormation refuses a single value for the shape, or "".
func scalarProblem(n *yaml.Node, sh *spec.Shape) string {
	if strings.Contains(n.Value, "{{resolve:") {
		return "" // a dynamic reference: known at deployment
	}
	if msg := kindProblem(n, sh.Kind); msg != "" {
		return msg
	}
	return constraintProblem(n, sh)
}

// booleanStrings are the strings CloudFormation converts to a boolean; yaml11Bools the
// unquoted words its YAML 1.1 parser reads as booleans.
var (
	booleanStrings = map[string]bool{"true": true, "True": true, "TRUE": true, "false": true, "False": true, "FALSE": true}
	yaml11Bools    = map[string]bool{"yes": true, "Yes": true, "YES": true, "no": true, "No": true, "NO": true,
		"on": true, "On": true, "ON": true, "off": true, "Off": true, "OFF": true}
)

// kindProblem says why a single value cannot be converted to the kind, or "".
func kindProblem(n *yaml.Node, k spec.Kind) string {
	v := strings.TrimSpace(n.Value)
	switch k {
	case spec.Integer:
		switch n.Tag {
		case "!!int", "!!float":
			return ""
		case "!!bool":
			return fmt.Sprintf("must be an integer, not the boolean %s", n.Value)
		}
		if _, err := strconv.ParseInt(v, 10, 64); err == nil {
			return ""
		}
		if _, err := strconv.ParseFloat(v, 64); err == nil && !strings.ContainsAny(v, "eE.") {
			return "" // out of int64's range, still an integer
		}
		return fmt.Sprintf("must be an integer, not %q", n.Value)
	case spec.Number:
		switch n.Tag {
		case "!!int", "!!float":
			return ""
		case "!!bool":
			return fmt.Sprintf("must be a number, not the boolean %s", n.Value)
		}
		if _, err := strconv.ParseFloat(v, 64); err == nil && !strings.HasPrefix(strings.ToLower(strings.TrimLeft(v, "+-")), "0x") {
			return ""
		}
		return fmt.Sprintf("must be a number, not %q", n.Value)
	case spec.Boolean:
		quoted := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0
		if n.Tag == "!!bool" || booleanStrings[v] || !quoted && yaml11Bools[v] {
			return ""
		}
		return fmt.Sprintf("must be a boolean (true or false), not %q", n.Value)
	}
	return ""
}

// canonical is a single value as CloudFormation reads it: a YAML boolean is true or
// false; anything else is its text.
func canonical(n *yaml.Node) string {
	if n.Tag == "!!bool" {
		switch strings.ToLower(n.Value) {
		case "true", "yes", "on", "y":
			return "true"
		}
		return "false"
	}
	return n.Value
}

// constraintProblem checks enum, pattern, format, lengths, ranges and alternatives.
func constraintProblem(n *yaml.Node, sh *spec.Shape) string {
	v := canonical(n)
	if len(sh.Enum) > 0 && !enumHas(sh.Enum, v, false) {
		return fmt.Sprintf("%q is not one of the values it takes: %s%s", v, enumList(sh.Enum), Suggest(v, sh.Enum))
	}
	if len(sh.EnumFold) > 0 && !enumHas(sh.EnumFold, v, true) {
		return fmt.Sprintf("%q is not one of the values it takes (in any case): %s%s", v, enumList(sh.EnumFold), Suggest(v, sh.EnumFold))
	}
	if sh.Pattern != "" {
		if ok, err := searchPattern(sh.Pattern, v); err == nil && !ok {
			return fmt.Sprintf("%q does not match the pattern %s", v, sh.Pattern)
		}
	}
	if sh.Format != "" {
		if f := formats[sh.Format]; f.check != nil && n.Tag == "!!str" && !f.check(v) {
			return fmt.Sprintf("%q is not %s", v, f.what)
		}
	}
	if n.Tag == "!!str" || n.Tag == "" {
		length := utf8.RuneCountInString(n.Value)
		if sh.MinLength >= 0 && length < sh.MinLength {
			return fmt.Sprintf("%q is %d characters long, shorter than the %d it needs", n.Value, length, sh.MinLength)
		}
		if sh.MaxLength >= 0 && length > sh.MaxLength {
			return fmt.Sprintf("%s is %d characters long, more than the %d it takes", shorten(n.Value), length, sh.MaxLength)
		}
	}
	if sh.Minimum != nil || sh.Maximum != nil || sh.ExclusiveMinimum != nil || sh.ExclusiveMaximum != nil {
		if f, err := strconv.ParseFloat(strings.TrimSpace(n.Value), 64); err == nil && n.Tag != "!!bool" {
			switch {
			case sh.Minimum != nil && f < *sh.Minimum:
				return fmt.Sprintf("%s is less than the minimum %s", n.Value, fmtFloat(*sh.Minimum))
			case sh.Maximum != nil && f > *sh.Maximum:
				return fmt.Sprintf("%s is more than the maximum %s", n.Value, fmtFloat(*sh.Maximum))
			case sh.ExclusiveMinimum != nil && f <= *sh.ExclusiveMinimum:
				return fmt.Sprintf("%s must be more than %s", n.Value, fmtFloat(*sh.ExclusiveMinimum))
			case sh.ExclusiveMaximum != nil && f >= *sh.ExclusiveMaximum:
				return fmt.Sprintf("%s must be less than %s", n.Value, fmtFloat(*sh.ExclusiveMaximum))
			}
		}
	}
	if len(sh.Alternatives) > 0 {
		var why []string
		for _, a := range sh.Alternatives {
			msg := constraintProblem(n, a)
			if msg == "" {
				return ""
			}
			why = append(why, alternativeText(a))
		}
		return fmt.Sprintf("%q is none of: %s", v, strings.Join(why, "; "))
	}
	return ""
}

func alternativeText(a *spec.Shape) string {
	switch {
	case a.Format != "":
		return formats[a.Format].what
	case a.Pattern != "":
		return "a match of " + a.Pattern
	case len(a.Enum) > 0:
		return "one of " + enumList(a.Enum)
	case len(a.EnumFold) > 0:
		return "one of " + enumList(a.EnumFold) + " (in any case)"
	}
	return "a value it takes"
}

func enumHas(enum []string, v string, fold bool) bool {
	for _, e := range enum {
		if e == v || fold && strings.EqualFold(e, v) {
			return true
		}
	}
	// 5 is 5.0: compare as numbers when the value is one.
	if v == "" || !strings.ContainsAny(v[:1], "+-.0123456789") {
		return false
	}
	b, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return false
	}
	for _, e := range enum {
		if e != "" && strings.ContainsAny(e[:1], "+-.0123456789") {
			if a, err := strconv.ParseFloat(e, 64); err == nil && a == b {
				return true
			}
		}
	}
	return false
}

// enumList lists allowed values, the first 12 when there are more.
func enumList(enum []string) string {
	if len(enum) <= 12 {
		return strings.Join(enum, ", ")
	}
	return strings.Join(enum[:12], ", ") + fmt.Sprintf(", ... (%d in all)", len(enum))
}

func shorten(s string) string {
	if len(s) <= 40 {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:37] + "...")
}

// intrinsicValue checks what an intrinsic function gives where a property of shape sh
// goes: its kind (a list, a mapping or a single value), and for a Ref to a parameter, the
// parameter's Default and AllowedValues.
func (c *checker) intrinsicValue(fn string, n *yaml.Node, sh *spec.Shape, path string, at *yaml.Node, vc valueCtx) {
	arg := resolve(n.Content[1])
	switch fn {
	case "Fn::If":
		if arg.Kind == yaml.SequenceNode && len(arg.Content) == 3 {
			branch := vc
			branch.chosen = true
			c.value(arg.Content[1], sh, path, arg.Content[1], branch)
			c.value(arg.Content[2], sh, path, arg.Content[2], branch)
		}
		return
	case "Ref":
		if arg.Kind != yaml.ScalarNode {
			return
		}
		if p, ok := c.t.Parameters[arg.Value]; ok {
			c.parameterFlow(p, arg, sh, path, at, vc)
			return
		}
		if _, ok := c.resources[arg.Value]; ok {
			c.gives(single, "Ref to a resource", sh, path, at, vc)
			return
		}
		switch arg.Value {
		case "AWS::NoValue", "AWS::NotificationARNs":
		default:
			if slices.Contains(pseudoParameters, arg.Value) {
				c.gives(single, "Ref "+arg.Value, sh, path, at, vc)
			}
		}
	case "Fn::GetAtt":
		res, attr := getAttArgs(arg)
		r, ok := c.resources[res]
		if !ok || attr == "" {
			return
		}
		st := spec.Lookup(r.typ)
		if st == nil || !st.HasAttribute(attr) || nestedTypes[r.typ] != "" {
			return
		}
		if st.ListAttribute(attr) {
			c.gives(list, "Fn::GetAtt "+res+"."+attr, sh, path, at, vc)
		} else if !slices.Contains(getAttObjects, r.typ+"."+attr) {
			c.gives(single, "Fn::GetAtt "+res+"."+attr, sh, path, at, vc)
		}
	case "Fn::Sub":
		c.gives(single, fn, sh, path, at, vc)
		c.pseudoSub(arg, sh, path, at)
	case "Fn::Join", "Fn::Base64", "Fn::ImportValue", "Fn::ToJsonString":
		c.gives(single, fn, sh, path, at, vc)
	case "Fn::GetAZs", "Fn::Split", "Fn::Cidr":
		c.gives(list, fn, sh, path, at, vc)
	case "Fn::Length":
		c.gives(single, fn, sh, path, at, vc)
	}
}

// getAttObjects are attributes whose values are JSON objects, not single values.
var getAttObjects = []string{"AWS::CloudFormation::CustomResource.Data"}

// result is the kind of value an intrinsic function gives.
type result uint8

const (
	single result = iota
	list
)

// gives reports an intrinsic function whose result is of the wrong kind for the shape.
func (c *checker) gives(g result, what string, sh *spec.Shape, path string, at *yaml.Node, vc valueCtx) {
	switch {
	case sh.Kind == spec.Any:
	case g == single && sh.Kind == spec.List:
		c.errorf(at, path, "must be a list, but %s gives a single value", what)
	case g == single && (sh.Kind == spec.Object || sh.Kind == spec.Map) && !packaged[vc.schemaPath()]:
		c.errorf(at, path, "must be a mapping, but %s gives a single value", what)
	case g == list && sh.Kind.Scalar():
		c.errorf(at, path, "must be a single value, but %s gives a list: select an item with Fn::Select or join them with Fn::Join", what)
	case g == list && (sh.Kind == spec.Object || sh.Kind == spec.Map):
		c.errorf(at, path, "must be a mapping, but %s gives a list", what)
	}
}

func getAttArgs(arg *yaml.Node) (res, attr string) {
	if arg.Kind == yaml.SequenceNode && len(arg.Content) == 2 {
		r, a := resolve(arg.Content[0]), resolve(arg.Content[1])
		if r.Kind == yaml.ScalarNode && a.Kind == yaml.ScalarNode {
			return r.Value, a.Value
		}
		if r.Kind == yaml.ScalarNode {
			return r.Value, ""
		}
	}
	return "", ""
}

// listParameter reports whether a parameter's value is a list (List<...>,
// CommaDelimitedList, and their SSM forms).
func listParameter(typ string) bool {
	typ = strings.TrimSuffix(strings.TrimPrefix(typ, "AWS::SSM::Parameter::Value<"), ">")
	return strings.HasPrefix(typ, "List<") || typ == "CommaDelimitedList"
}

// parameterFlow checks a Ref to a parameter where a property of shape sh goes: the
// parameter's kind (a list or a single value) must fit, and its Default and AllowedValues
// must meet the property's constraints (warnings: the stack may give another value).
func (c *checker) parameterFlow(p Parameter, ref *yaml.Node, sh *spec.Shape, path string, at *yaml.Node, vc valueCtx) {
	isList := listParameter(p.Type)
	what := fmt.Sprintf("parameter %s (%s)", p.Name, p.Type)
	switch {
	case sh.Kind == spec.Any:
		return
	case isList && sh.Kind.Scalar():
		c.errorf(at, path, "must be a single value, but %s is a list: select an item with Fn::Select or join them with Fn::Join", what)
		return
	case !isList && sh.Kind == spec.List:
		c.errorf(at, path, "must be a list, but %s is a single value: make it a CommaDelimitedList or List<...> parameter, or write [!Ref %s]", what, p.Name)
		return
	case sh.Kind == spec.Object || sh.Kind == spec.Map:
		if !packaged[vc.schemaPath()] {
			c.errorf(at, path, "must be a mapping, but %s is not", what)
		}
		return
	}
	target := sh
	if isList {
		target = sh.Elem
	}
	if target != nil && (target.Kind == spec.Object || target.Kind == spec.Map) {
		c.errorf(at, path, "must be a list of mappings, but %s is a list of single values", what)
		return
	}
	if target == nil || !target.Kind.Scalar() {
		return
	}
	if !vc.chosen {
		// A value an Fn::If may leave unused is not refused for sure: its Default and
		// AllowedValues are warned of below, a stack's value is not judged.
		c.uses = append(c.uses, ParameterUse{Parameter: p.Name, Path: path, Line: ref.Line, Col: ref.Column, shape: target, list: isList})
	}
	if p.NoEcho {
		return // its values are never printed
	}
	check := func(value, label string) {
		items := []string{value}
		if isList {
			items = splitList(value)
		}
		for _, it := range items {
			n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: it}
			if msg := scalarProblem(n, target); msg != "" {
				c.add(ref, path, true, "parameter %s flows here, and its %s is refused: %s", p.Name, label, msg)
				return
			}
		}
	}
	if p.HasDefault && !(p.Default == "" && !isList) {
		check(p.Default, "Default")
	}
	for _, v := range p.AllowedValues {
		if v != p.Default || !p.HasDefault {
			check(v, fmt.Sprintf("allowed value %q", v))
		}
	}
}

func splitList(v string) []string {
	items := strings.Split(v, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// ParameterUse is a place a parameter's value goes as it is (a Ref where a property takes
// a single value, or each item of a list parameter): the value a stack gives must meet the
// property's constraints there.
type ParameterUse struct {
	Parameter string
	// Path is the property, such as Resources.DB.Properties.Engine; Line and Col locate
	// the Ref.
	Path      string
	Line, Col int
	shape     *spec.Shape
	list      bool
}

// Check returns why CloudFormation would refuse value at this use, or "".
func (u ParameterUse) Check(value string) string {
	items := []string{value}
	if u.list {
		items = splitList(value)
	}
	for _, it := range items {
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: it}
		if msg := scalarProblem(n, u.shape); msg != "" {
			return msg
		}
	}
	return ""
}
