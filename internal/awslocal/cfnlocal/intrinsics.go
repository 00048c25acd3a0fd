package cfnlocal

import (
	"encoding/base64"
	"math/big"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws-cloudformation/rain/cft/parse"
)

func (e *evaluator) fn(name string, arg any) (any, error) {
	switch name {
	case "Ref":
		n, ok := arg.(string)
		if !ok {
			return nil, invalidf("Template error: Ref expects a name, got %s", scalarString(arg))
		}
		return e.refName(n)
	case "Condition":
		n, ok := arg.(string)
		if !ok {
			return nil, invalidf("Template error: Condition expects a name")
		}
		return e.condition(n)
	case "Fn::GetAtt":
		res, attr, ok := getAttArgs(arg)
		if !ok {
			l, isList := arg.([]any)
			if isList && len(l) == 2 {
				r, _ := l[0].(string)
				a, err := e.evalString(l[1], "Fn::GetAtt")
				if err != nil {
					return nil, err
				}
				res, attr, ok = r, a, r != ""
			}
			if !ok {
				return nil, invalidf("Template error: every Fn::GetAtt object requires two non-empty parameters")
			}
		}
		if _, ok := e.tpl.Resources[res]; !ok {
			return nil, invalidf("Template error: instance of Fn::GetAtt references undefined resource %s", res)
		}
		return e.getAtt(res, attr)
	case "Fn::Sub":
		return e.sub(arg)
	case "Fn::Join":
		l, ok := arg.([]any)
		if !ok || len(l) != 2 {
			return nil, invalidf("Template error: Fn::Join requires [delimiter, [values]]")
		}
		delim, err := e.evalString(l[0], "Fn::Join")
		if err != nil {
			return nil, err
		}
		items, unknown, err := e.evalList(l[1], "Fn::Join")
		if err != nil {
			return nil, err
		}
		if unknown {
			return knownAfterApply, nil
		}
		parts := make([]string, 0, len(items))
		for _, it := range items {
			switch it.(type) {
			case map[string]any, []any:
				return nil, invalidf("Template error: Fn::Join values must be strings, got %s", scalarString(it))
			}
			parts = append(parts, scalarString(it))
		}
		return strings.Join(parts, delim), nil
	case "Fn::Select":
		l, ok := arg.([]any)
		if !ok || len(l) != 2 {
			return nil, invalidf("Template error: Fn::Select requires [index, [values]]")
		}
		is, err := e.evalString(l[0], "Fn::Select")
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(is)
		if err != nil {
			return nil, invalidf("Template error: Fn::Select index %q is not a number", is)
		}
		items, unknown, err := e.evalList(l[1], "Fn::Select")
		if err != nil {
			return nil, err
		}
		if unknown {
			return knownAfterApply, nil
		}
		if i < 0 || i >= len(items) {
			return nil, invalidf("Template error: Fn::Select cannot select nonexistent value at index %d", i)
		}
		return items[i], nil
	case "Fn::Split":
		l, ok := arg.([]any)
		if !ok || len(l) != 2 {
			return nil, invalidf("Template error: Fn::Split requires [delimiter, string]")
		}
		delim, err := e.evalString(l[0], "Fn::Split")
		if err != nil {
			return nil, err
		}
		s, err := e.evalString(l[1], "Fn::Split")
		if err != nil {
			return nil, err
		}
		if strings.Contains(s, knownAfterApply) {
			return knownAfterApply, nil
		}
		parts := strings.Split(s, delim)
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	case "Fn::If":
		l, ok := arg.([]any)
		if !ok || len(l) != 3 {
			return nil, invalidf("Template error: Fn::If requires [condition, then, else]")
		}
		c, ok := l[0].(string)
		if !ok {
			return nil, invalidf("Template error: Fn::If condition must be a condition name")
		}
		b, err := e.condition(c)
		if err != nil {
			return nil, err
		}
		if b {
			return e.eval(l[1])
		}
		return e.eval(l[2])
	case "Fn::Equals":
		l, ok := arg.([]any)
		if !ok || len(l) != 2 {
			return nil, invalidf("Template error: Fn::Equals requires two values")
		}
		a, err := e.eval(l[0])
		if err != nil {
			return nil, err
		}
		b, err := e.eval(l[1])
		if err != nil {
			return nil, err
		}
		return scalarString(a) == scalarString(b), nil
	case "Fn::And", "Fn::Or":
		l, ok := arg.([]any)
		if !ok || len(l) < 2 || len(l) > 10 {
			return nil, invalidf("Template error: %s requires between 2 and 10 conditions", name)
		}
		acc := name == "Fn::And"
		for _, c := range l {
			v, err := e.eval(c)
			if err != nil {
				return nil, err
			}
			b, err := asBool(v, name)
			if err != nil {
				return nil, err
			}
			if name == "Fn::And" {
				acc = acc && b
			} else {
				acc = acc || b
			}
		}
		return acc, nil
	case "Fn::Not":
		l, ok := arg.([]any)
		if !ok || len(l) != 1 {
			return nil, invalidf("Template error: Fn::Not requires one condition")
		}
		v, err := e.eval(l[0])
		if err != nil {
			return nil, err
		}
		b, err := asBool(v, name)
		return !b, err
	case "Fn::FindInMap":
		l, ok := arg.([]any)
		if !ok || len(l) < 3 {
			return nil, invalidf("Template error: Fn::FindInMap requires [map, top key, second key]")
		}
		keys := make([]string, 3)
		for i := range 3 {
			k, err := e.evalString(l[i], "Fn::FindInMap")
			if err != nil {
				return nil, err
			}
			keys[i] = k
		}
		// AWS::LanguageExtensions: [map, top, second, {DefaultValue: v}] gives v when the
		// keys name nothing
		var def any
		hasDefault := false
		if len(l) == 4 {
			if dm, ok := l[3].(map[string]any); ok {
				def, hasDefault = dm["DefaultValue"]
			}
		}
		m, ok := e.tpl.Mappings[keys[0]].(map[string]any)
		if !ok && !hasDefault {
			return nil, invalidf("Template error: Unable to get mapping for %s", keys[0])
		}
		top, ok := m[keys[1]].(map[string]any)
		v, found := top[keys[2]]
		if !ok || !found {
			if hasDefault {
				return e.eval(def)
			}
			return nil, invalidf("Template error: Unable to get mapping for %s::%s::%s", keys[0], keys[1], keys[2])
		}
		return v, nil
	case "Fn::ImportValue":
		n, err := e.evalString(arg, "Fn::ImportValue")
		if err != nil {
			return nil, err
		}
		if strings.Contains(n, knownAfterApply) {
			return nil, invalidf("Template error: the export name of Fn::ImportValue cannot depend on resources")
		}
		return e.importValue(n)
	case "Fn::GetAZs":
		r, err := e.evalString(arg, "Fn::GetAZs")
		if err != nil {
			return nil, err
		}
		if r == "" {
			r = e.region
		}
		return availabilityZones(r), nil
	case "Fn::Base64":
		s, err := e.evalString(arg, "Fn::Base64")
		if err != nil {
			return nil, err
		}
		if strings.Contains(s, knownAfterApply) {
			return knownAfterApply, nil
		}
		return base64.StdEncoding.EncodeToString([]byte(s)), nil
	case "Fn::Cidr":
		l, ok := arg.([]any)
		if !ok || len(l) != 3 {
			return nil, invalidf("Template error: Fn::Cidr requires [ipBlock, count, cidrBits]")
		}
		var s [3]string
		for i := range 3 {
			v, err := e.evalString(l[i], "Fn::Cidr")
			if err != nil {
				return nil, err
			}
			s[i] = v
		}
		if strings.Contains(s[0], knownAfterApply) {
			return knownAfterApply, nil
		}
		return cidr(s[0], s[1], s[2])
	case "Fn::Length":
		items, unknown, err := e.evalList(arg, name)
		if err != nil {
			return nil, err
		}
		if unknown {
			return knownAfterApply, nil
		}
		return len(items), nil
	case "Fn::ToJsonString":
		v, err := e.eval(arg)
		if err != nil {
			return nil, err
		}
		return toJSONString(v), nil
	}
	return nil, invalidf("Template format error: Unrecognized function %s; the emulator supports Ref, Fn::GetAtt, Fn::Sub, Fn::Join, Fn::Select, Fn::Split, Fn::If, Fn::Equals, Fn::And, Fn::Or, Fn::Not, Fn::FindInMap, Fn::ImportValue, Fn::GetAZs, Fn::Base64, Fn::Cidr, Fn::Length, Fn::ToJsonString", name)
}

func (e *evaluator) refName(n string) (any, error) {
	if v, ok := e.pseudo[n]; ok {
		return v, nil
	}
	if n == "AWS::NoValue" {
		return noValue, nil
	}
	if v, ok := e.params[n]; ok {
		if l, ok := v.([]string); ok {
			out := make([]any, len(l))
			for i, s := range l {
				out[i] = s
			}
			return out, nil
		}
		return v, nil
	}
	if _, ok := e.tpl.Resources[n]; ok {
		return e.ref(n)
	}
	return nil, invalidf("Template format error: Unresolved resource dependencies [%s] in the Resources block of the template", n)
}

// subVariable matches a variable of a Fn::Sub string, its name with the whitespace around
// it that CloudFormation ignores: ${ AWS::Region } is ${AWS::Region}, ${ !Literal } is
// ${!Literal} (as cairn validate reads them, internal/template's subVariables).
var subVariable = regexp.MustCompile(`\$\{([^}]*)\}`)

// parseSub splits a Fn::Sub string into words as CloudFormation reads it: rain's parser,
// once whitespace around names is dropped (rain would keep " Q" as the name, and read
// " AWS::Region" as a reference to " Region").
func parseSub(str string) ([]parse.SubWord, error) {
	str = subVariable.ReplaceAllStringFunc(str, func(v string) string {
		if name := strings.TrimSpace(v[2 : len(v)-1]); name != "" {
			return "${" + name + "}"
		}
		return v
	})
	return parse.ParseSub(str, false)
}

func (e *evaluator) sub(arg any) (any, error) {
	str, rawVars := subArgs(arg)
	if str == "" {
		if _, ok := arg.(string); !ok {
			return nil, invalidf("Template error: Fn::Sub requires a string or [string, {variables}]")
		}
	}
	vars := map[string]string{}
	for k, v := range rawVars {
		s, err := e.evalString(v, "Fn::Sub variable "+k)
		if err != nil {
			return nil, err
		}
		vars[k] = s
	}
	words, err := parseSub(str)
	if err != nil {
		return nil, invalidf("Template error: Fn::Sub %q is malformed: %v", str, err)
	}
	var b strings.Builder
	for _, w := range words {
		if w.T == parse.STR {
			b.WriteString(w.W)
			continue
		}
		if w.T == parse.AWS {
			w.W = "AWS::" + w.W
		}
		if v, ok := vars[w.W]; ok {
			b.WriteString(v)
			continue
		}
		if w.T == parse.GETATT {
			i := strings.Index(w.W, ".")
			res, attr := w.W[:i], w.W[i+1:]
			if _, ok := e.tpl.Resources[res]; !ok {
				return nil, invalidf("Template error: instance of Fn::Sub references undefined resource %s", res)
			}
			v, err := e.getAtt(res, attr)
			if err != nil {
				return nil, err
			}
			b.WriteString(scalarString(v))
			continue
		}
		v, err := e.refName(w.W)
		if err != nil {
			return nil, invalidf("Template error: Fn::Sub variable ${%s} is not a parameter, resource or pseudo parameter", w.W)
		}
		if l, ok := v.([]any); ok {
			return nil, invalidf("Template error: Fn::Sub variable ${%s} is a list (%d values), not a string", w.W, len(l))
		}
		b.WriteString(scalarString(v))
	}
	return b.String(), nil
}

// cidr implements Fn::Cidr: count blocks with cidrBits host bits carved from ipBlock.
func cidr(block, countS, bitsS string) (any, error) {
	p, err := netip.ParsePrefix(block)
	if err != nil {
		return nil, invalidf("Template error: Fn::Cidr ipBlock %q is not a CIDR block", block)
	}
	count, err1 := strconv.Atoi(countS)
	bits, err2 := strconv.Atoi(bitsS)
	total := p.Addr().BitLen()
	newLen := total - bits
	if err1 != nil || err2 != nil || count < 1 || count > 256 || bits < 1 || newLen < p.Bits() {
		return nil, invalidf("Template error: Fn::Cidr [%s, %s, %s] asks for blocks that do not fit", block, countS, bitsS)
	}
	if newLen-p.Bits() < 62 && count > 1<<(newLen-p.Bits()) {
		return nil, invalidf("Template error: Fn::Cidr [%s, %s, %s] asks for more blocks than fit", block, countS, bitsS)
	}
	base := new(big.Int).SetBytes(p.Masked().Addr().AsSlice())
	step := new(big.Int).Lsh(big.NewInt(1), uint(bits))
	out := make([]any, 0, count)
	for i := range count {
		n := new(big.Int).Add(base, new(big.Int).Mul(step, big.NewInt(int64(i))))
		buf := make([]byte, total/8)
		n.FillBytes(buf)
		a, _ := netip.AddrFromSlice(buf)
		out = append(out, netip.PrefixFrom(a, newLen).String())
	}
	return out, nil
}
