package cfnlocal

import (
	"sort"
	"strings"
)

// evaluator resolves intrinsic functions against one stack's parameters and resources.
type evaluator struct {
	tpl        *template
	params     map[string]any // string or []string
	pseudo     map[string]any
	conditions map[string]bool
	// ref and getAtt resolve resources; they return knownAfterApply when the value does
	// not exist yet.
	ref         func(name string) (any, error)
	getAtt      func(name, attr string) (any, error)
	importValue func(name string) (string, error)
	region      string
	condEval    map[string]bool // conditions being evaluated, for cycles
}

func (e *evaluator) evalConditions() error {
	e.conditions = map[string]bool{}
	e.condEval = map[string]bool{}
	names := make([]string, 0, len(e.tpl.Conditions))
	for n := range e.tpl.Conditions {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := e.condition(n); err != nil {
			return err
		}
	}
	return nil
}

func (e *evaluator) condition(name string) (bool, error) {
	if v, ok := e.conditions[name]; ok {
		return v, nil
	}
	raw, ok := e.tpl.Conditions[name]
	if !ok {
		return false, invalidf("Template error: unresolved condition dependency %s", name)
	}
	if e.condEval[name] {
		return false, invalidf("Template error: circular condition dependency %s", name)
	}
	e.condEval[name] = true
	v, err := e.eval(raw)
	if err != nil {
		return false, err
	}
	b, err := asBool(v, "Condition "+name)
	if err != nil {
		return false, err
	}
	e.conditions[name] = b
	return b, nil
}

func asBool(v any, what string) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		if x == "true" {
			return true, nil
		}
		if x == "false" {
			return false, nil
		}
	}
	return false, invalidf("Template error: %s must evaluate to a boolean, got %v", what, v)
}

// eval resolves every intrinsic function in v.
func (e *evaluator) eval(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				if k == "Ref" || strings.HasPrefix(k, "Fn::") || k == "Condition" {
					return e.fn(k, arg)
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, vv := range x {
			r, err := e.eval(vv)
			if err != nil {
				return nil, err
			}
			if r == noValue {
				continue
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, 0, len(x))
		for _, vv := range x {
			r, err := e.eval(vv)
			if err != nil {
				return nil, err
			}
			if r == noValue {
				continue
			}
			out = append(out, r)
		}
		return out, nil
	default:
		return v, nil
	}
}

func (e *evaluator) evalString(v any, fn string) (string, error) {
	r, err := e.eval(v)
	if err != nil {
		return "", err
	}
	switch x := r.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case bool, int, int64, uint64, float64:
		return scalarString(x), nil
	}
	return "", invalidf("Template error: %s expects a string, got %s", fn, scalarString(r))
}

func (e *evaluator) evalList(v any, fn string) ([]any, bool, error) {
	r, err := e.eval(v)
	if err != nil {
		return nil, false, err
	}
	switch x := r.(type) {
	case []any:
		return x, false, nil
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, false, nil
	case string:
		if strings.Contains(x, knownAfterApply) {
			return nil, true, nil
		}
	}
	return nil, false, invalidf("Template error: %s expects a list, got %s", fn, scalarString(r))
}
