package template

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/resourcespec"
)

// listConstraints checks minItems, maxItems and uniqueItems. An item that may be
// AWS::NoValue counts as maybe there.
func (c *checker) listConstraints(n *yaml.Node, sh *resourcespec.Shape, path string, at *yaml.Node) {
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
func scalarProblem(n *yaml.Node, sh *resourcespec.Shape) string {
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
func kindProblem(n *yaml.Node, k resourcespec.Kind) string {
	v := strings.TrimSpace(n.Value)
	switch k {
	case resourcespec.Integer:
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
	case resourcespec.Number:
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
	case resourcespec.Boolean:
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
func constraintProblem(n *yaml.Node, sh *resourcespec.Shape) string {
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

func alternativeText(a *resourcespec.Shape) string {
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
