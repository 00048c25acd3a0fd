package cfnlocal

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

func (t *template) parseParameters(raw any) error {
	pm, ok := raw.(map[string]any)
	if !ok {
		return nil
	}
	for name, v := range pm {
		m, ok := v.(map[string]any)
		if !ok {
			return invalidf("Template format error: Parameter %s is malformed", name)
		}
		d := paramDecl{Name: name, Type: scalarString(m["Type"])}
		if d.Type == "" {
			return invalidf("Template format error: Every Parameters object must contain a Type member; %s does not", name)
		}
		if !validParamType(d.Type) {
			return invalidf("Template format error: Unrecognized parameter type: %s", d.Type)
		}
		if def, ok := m["Default"]; ok {
			s := paramString(def)
			d.Default = &s
		}
		if av, ok := m["AllowedValues"].([]any); ok {
			for _, x := range av {
				d.AllowedValues = append(d.AllowedValues, scalarString(x))
			}
		}
		d.AllowedPattern = scalarString(m["AllowedPattern"])
		d.Description = scalarString(m["Description"])
		d.Constraint = scalarString(m["ConstraintDescription"])
		d.NoEcho = strings.EqualFold(scalarString(m["NoEcho"]), "true")
		d.MinLength = optInt(m["MinLength"])
		d.MaxLength = optInt(m["MaxLength"])
		d.MinValue = optFloat(m["MinValue"])
		d.MaxValue = optFloat(m["MaxValue"])
		t.Parameters[name] = d
		t.ParamOrder = append(t.ParamOrder, name)
	}
	sort.Strings(t.ParamOrder)
	return nil
}

func validParamType(t string) bool {
	switch {
	case t == "String", t == "Number", t == "List<Number>", t == "CommaDelimitedList":
		return true
	case strings.HasPrefix(t, "AWS::SSM::Parameter::"):
		return true
	case strings.HasPrefix(t, "AWS::"), strings.HasPrefix(t, "List<AWS::"):
		return true
	}
	return false
}

func isListParamType(t string) bool {
	return t == "CommaDelimitedList" || strings.HasPrefix(t, "List<") ||
		strings.HasPrefix(t, "AWS::SSM::Parameter::Value<List<") || t == "AWS::SSM::Parameter::Value<CommaDelimitedList>"
}

func optInt(v any) *int {
	if v == nil {
		return nil
	}
	n, err := strconv.Atoi(scalarString(v))
	if err != nil {
		return nil
	}
	return &n
}

func optFloat(v any) *float64 {
	if v == nil {
		return nil
	}
	f, err := strconv.ParseFloat(scalarString(v), 64)
	if err != nil {
		return nil
	}
	return &f
}

func paramString(v any) string {
	if l, ok := v.([]any); ok {
		parts := make([]string, len(l))
		for i, x := range l {
			parts[i] = scalarString(x)
		}
		return strings.Join(parts, ",")
	}
	return scalarString(v)
}

// resolveParams checks given parameter values against the template and returns the values
// the evaluator uses (string or []string) plus the effective value of each parameter.
func (t *template) resolveParams(given map[string]string, ssm func(name, typ string) (string, error)) (map[string]any, map[string]string, error) {
	for k := range given {
		if _, ok := t.Parameters[k]; !ok {
			return nil, nil, invalidf("Parameters: [%s] do not exist in the template", k)
		}
	}
	vals := map[string]any{}
	eff := map[string]string{}
	var missing []string
	for _, name := range t.ParamOrder {
		d := t.Parameters[name]
		v, ok := given[name]
		if !ok {
			if d.Default == nil {
				missing = append(missing, name)
				continue
			}
			v = *d.Default
		}
		eff[name] = v
		if err := d.check(v); err != nil {
			return nil, nil, err
		}
		if strings.HasPrefix(d.Type, "AWS::SSM::Parameter::Value<") {
			r, err := ssm(v, d.Type)
			if err != nil {
				return nil, nil, invalidf("%s", err.Error())
			}
			v = r
		}
		if isListParamType(d.Type) {
			var l []string
			if v != "" {
				l = strings.Split(v, ",")
			}
			for i := range l {
				l[i] = strings.TrimSpace(l[i])
			}
			vals[name] = l
		} else {
			vals[name] = v
		}
	}
	if len(missing) > 0 {
		return nil, nil, invalidf("Parameters: [%s] must have values", strings.Join(missing, ", "))
	}
	return vals, eff, nil
}

func (d paramDecl) check(v string) error {
	fail := func(why string) error {
		msg := fmt.Sprintf("Parameter '%s' %s", d.Name, why)
		if d.Constraint != "" {
			msg = fmt.Sprintf("Parameter '%s' failed to satisfy constraint: %s", d.Name, d.Constraint)
		}
		return invalidf("%s", msg)
	}
	values := []string{v}
	if isListParamType(d.Type) {
		values = strings.Split(v, ",")
	}
	for _, x := range values {
		x = strings.TrimSpace(x)
		if len(d.AllowedValues) > 0 {
			found := false
			for _, a := range d.AllowedValues {
				if a == x {
					found = true
				}
			}
			if !found {
				return invalidf("Parameter '%s' must be one of AllowedValues", d.Name)
			}
		}
		if d.AllowedPattern != "" {
			ok, err := matchAllowedPattern(d.AllowedPattern, x)
			if err != nil {
				return invalidf("Template format error: Parameter '%s' has an invalid AllowedPattern: %v", d.Name, err)
			}
			if !ok {
				return fail("must match pattern " + d.AllowedPattern)
			}
		}
		if d.Type == "Number" || d.Type == "List<Number>" {
			f, err := strconv.ParseFloat(x, 64)
			if err != nil {
				return invalidf("Parameter '%s' must be a number not %s", d.Name, x)
			}
			if d.MinValue != nil && f < *d.MinValue {
				return fail(fmt.Sprintf("must be a number not less than %v", *d.MinValue))
			}
			if d.MaxValue != nil && f > *d.MaxValue {
				return fail(fmt.Sprintf("must be a number not greater than %v", *d.MaxValue))
			}
		}
	}
	if d.MinLength != nil && len(v) < *d.MinLength {
		return fail(fmt.Sprintf("must contain at least %d characters", *d.MinLength))
	}
	if d.MaxLength != nil && len(v) > *d.MaxLength {
		return fail(fmt.Sprintf("must contain at most %d characters", *d.MaxLength))
	}
	return nil
}
