package cfnlocal

import (
	"encoding/json"
	"fmt"
	"strings"
)

// AWS::LanguageExtensions, as CloudFormation processes it: Fn::ForEach loops in the
// Conditions, Resources (resource properties included) and Outputs sections are expanded;
// Fn::Length and Fn::ToJsonString whose arguments need no resource are replaced by their
// values (the others are evaluated when the stack runs, as intrinsics); DeletionPolicy and
// UpdateReplacePolicy given as Fn::If or a Ref to a parameter become their values.
// Fn::FindInMap with a DefaultValue is resolved too (the evaluator knows it as well).

// maxLoopDepth is how deep CloudFormation lets Fn::ForEach loops nest.
const maxLoopDepth = 5

func (x *transformer) languageExtensions(m map[string]any) error {
	for _, sec := range []string{"Conditions", "Resources", "Outputs"} {
		v, ok := m[sec].(map[string]any)
		if !ok {
			continue
		}
		out, err := expandLoops(v, x.evaluator(m), sec, 0)
		if err != nil {
			return err
		}
		m[sec] = out
	}
	e := x.evaluator(m)
	res, _ := m["Resources"].(map[string]any)
	for _, name := range sortedKeys(res) {
		rm, _ := res[name].(map[string]any)
		for _, k := range []string{"DeletionPolicy", "UpdateReplacePolicy"} {
			if v, ok := rm[k].(map[string]any); ok {
				s, err := e.evalString(v, k)
				if err != nil {
					return fmt.Errorf("%w (in %s of resource %s)", err, k, name)
				}
				rm[k] = s
			}
		}
	}
	for _, sec := range []string{"Resources", "Outputs"} {
		if v, ok := m[sec]; ok {
			m[sec] = resolveStatic(v, e)
		}
	}
	return nil
}

// expandLoops returns section with its Fn::ForEach::Name keys expanded, recursively (loops
// in loops, loops in resource properties).
func expandLoops(section map[string]any, e *evaluator, where string, depth int) (map[string]any, error) {
	out := make(map[string]any, len(section))
	put := func(k string, v any, loop string) error {
		if _, dup := out[k]; dup {
			return invalidf("Template format error: %s: %s makes the key %s, which is already in %s", where, loop, k, where)
		}
		out[k] = v
		return nil
	}
	for _, k := range sortedKeys(section) {
		v := section[k]
		if !strings.HasPrefix(k, "Fn::ForEach::") {
			nv, err := expandIn(v, e, where+"/"+k, depth)
			if err != nil {
				return nil, err
			}
			if err := put(k, nv, k); err != nil {
				return nil, err
			}
			continue
		}
		if depth >= maxLoopDepth {
			return nil, invalidf("Template format error: %s: Fn::ForEach loops nest at most %d deep", where, maxLoopDepth)
		}
		l, ok := v.([]any)
		var id string
		var frag map[string]any
		if ok && len(l) == 3 {
			id, _ = l[0].(string)
			frag, _ = l[2].(map[string]any)
		}
		if id == "" || frag == nil {
			return nil, invalidf("Template format error: %s: %s must be [Identifier, Collection, {OutputKey: OutputValue}]", where, k)
		}
		items, unknown, err := e.evalList(l[1], k)
		if err != nil {
			return nil, fmt.Errorf("%w (the collection of %s in %s)", err, k, where)
		}
		if unknown {
			return nil, invalidf("Template format error: %s: the collection of %s must be known before resources exist", where, k)
		}
		for _, it := range items {
			item := scalarString(it)
			ex, err := expandLoops(substitute(frag, id, item).(map[string]any), e, where, depth+1)
			if err != nil {
				return nil, err
			}
			for _, kk := range sortedKeys(ex) {
				if err := put(kk, ex[kk], k); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// expandIn expands the loops of the mappings inside v.
func expandIn(v any, e *evaluator, where string, depth int) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		return expandLoops(x, e, where, depth)
	case []any:
		out := make([]any, len(x))
		for i, vv := range x {
			r, err := expandIn(vv, e, where, depth)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// substitute copies v with the loop's identifier replaced by item: ${id} in keys and
// strings (Fn::Sub strings included), &{id} by item's letters and digits only, and
// {Ref: id} by item itself.
func substitute(v any, id, item string) any {
	switch x := v.(type) {
	case string:
		return substituteString(x, id, item)
	case map[string]any:
		if r, ok := x["Ref"]; ok && len(x) == 1 && r == id {
			return item
		}
		out := make(map[string]any, len(x))
		for k, vv := range x {
			out[substituteString(k, id, item)] = substitute(vv, id, item)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, vv := range x {
			out[i] = substitute(vv, id, item)
		}
		return out
	}
	return v
}

func substituteString(s, id, item string) string {
	if !strings.Contains(s, "{"+id+"}") {
		return s
	}
	s = strings.ReplaceAll(s, "${"+id+"}", item)
	return strings.ReplaceAll(s, "&{"+id+"}", alnum(item))
}

func alnum(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// resolveStatic replaces Fn::Length and Fn::ToJsonString by their values where they need
// no resource, and resolves the names of Ref and Fn::GetAtt given as intrinsics (a loop's
// !Sub "Bucket${Name}").
func resolveStatic(v any, e *evaluator) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				switch k {
				case "Fn::FindInMap":
					// with a DefaultValue it is the transform's, not CloudFormation's
					if l, ok := arg.([]any); !ok || len(l) != 4 {
						break
					}
					fallthrough
				case "Fn::Length", "Fn::ToJsonString":
					if r, err := e.eval(x); err == nil && !strings.Contains(fmt.Sprint(r), knownAfterApply) {
						return r
					}
				case "Ref":
					if _, ok := arg.(map[string]any); ok {
						if n, err := e.evalString(arg, "Ref"); err == nil {
							return map[string]any{"Ref": n}
						}
					}
				case "Fn::GetAtt":
					if l, ok := arg.([]any); ok && len(l) == 2 {
						for i := range l {
							if _, ok := l[i].(map[string]any); ok {
								if n, err := e.evalString(l[i], "Fn::GetAtt"); err == nil {
									l[i] = n
								}
							}
						}
					}
				}
			}
		}
		for k, vv := range x {
			x[k] = resolveStatic(vv, e)
		}
	case []any:
		for i := range x {
			x[i] = resolveStatic(x[i], e)
		}
	}
	return v
}

// toJSONString renders Fn::ToJsonString's value: compact JSON, as CloudFormation writes it.
func toJSONString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
