package cfnlocal

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/aws-cloudformation/rain/cft/parse"
)

// knownAfterApply stands for a value that only exists once a resource has been created; it
// is what AWS itself shows in change set details for such values.
const knownAfterApply = "{{changeSet:KNOWN_AFTER_APPLY}}"

// noValue is the evaluated form of AWS::NoValue: the enclosing property is removed.
type noValueT struct{}

var noValue = noValueT{}

// template is a parsed CloudFormation template.
type template struct {
	Description string
	Parameters  map[string]paramDecl
	ParamOrder  []string
	Mappings    map[string]any
	Conditions  map[string]any
	Resources   map[string]resourceDecl
	Outputs     map[string]outputDecl
}

type paramDecl struct {
	Name           string
	Type           string
	Default        *string
	AllowedValues  []string
	AllowedPattern string
	MinLength      *int
	MaxLength      *int
	MinValue       *float64
	MaxValue       *float64
	NoEcho         bool
	Description    string
	Constraint     string
}

type resourceDecl struct {
	Type                string
	Properties          map[string]any
	DependsOn           []string
	Condition           string
	DeletionPolicy      string
	UpdateReplacePolicy string
}

type outputDecl struct {
	Value       any
	Description string
	Export      any
	Condition   string
}

// validationError is a template or input error reported to the caller as a ValidationError.
type validationError struct{ msg string }

func (e *validationError) Error() string { return e.msg }

func invalidf(format string, args ...any) error {
	return &validationError{fmt.Sprintf(format, args...)}
}

// parseTemplate parses a JSON or YAML template, short-form intrinsics included.
func parseTemplate(body string) (tpl *template, err error) {
	if strings.TrimSpace(body) == "" {
		return nil, invalidf("Template format error: template body is empty")
	}
	t, err := parse.String(body)
	if err != nil {
		return nil, invalidf("Template format error: %v", err)
	}
	var m map[string]any
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = invalidf("Template format error: %v", r)
			}
		}()
		m = t.Map()
	}()
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, invalidf("Template format error: template is not a YAML or JSON object")
	}
	tpl = &template{
		Parameters: map[string]paramDecl{},
		Mappings:   map[string]any{},
		Conditions: map[string]any{},
		Resources:  map[string]resourceDecl{},
		Outputs:    map[string]outputDecl{},
	}
	for k := range m {
		switch k {
		case "AWSTemplateFormatVersion", "Description", "Metadata", "Parameters", "Mappings",
			"Conditions", "Resources", "Outputs", "Rules":
		case "Transform":
			return nil, invalidf("Template format error: Transform %v is not supported by the local emulator; deploy the processed template instead", m[k])
		default:
			return nil, invalidf("Template format error: Invalid template property or properties [%s]", k)
		}
	}
	if d, ok := m["Description"]; ok {
		tpl.Description = scalarString(d)
	}
	if err := tpl.parseParameters(m["Parameters"]); err != nil {
		return nil, err
	}
	if mp, ok := m["Mappings"].(map[string]any); ok {
		tpl.Mappings = mp
	}
	if c, ok := m["Conditions"].(map[string]any); ok {
		tpl.Conditions = c
	}
	res, ok := m["Resources"].(map[string]any)
	if !ok || len(res) == 0 {
		return nil, invalidf("Template format error: At least one Resources member must be defined.")
	}
	for name, raw := range res {
		rm, ok := raw.(map[string]any)
		if !ok {
			return nil, invalidf("Template format error: [/Resources/%s] resource definition is malformed", name)
		}
		typ, _ := rm["Type"].(string)
		if typ == "" {
			return nil, invalidf("Template format error: [/Resources/%s] Every Resources object must contain a Type member.", name)
		}
		d := resourceDecl{Type: typ}
		if p, ok := rm["Properties"].(map[string]any); ok {
			d.Properties = p
		} else if rm["Properties"] != nil {
			return nil, invalidf("Template format error: [/Resources/%s/Properties] must be an object", name)
		}
		switch dep := rm["DependsOn"].(type) {
		case string:
			d.DependsOn = []string{dep}
		case []any:
			for _, x := range dep {
				d.DependsOn = append(d.DependsOn, scalarString(x))
			}
		}
		d.Condition, _ = rm["Condition"].(string)
		d.DeletionPolicy, _ = rm["DeletionPolicy"].(string)
		d.UpdateReplacePolicy, _ = rm["UpdateReplacePolicy"].(string)
		tpl.Resources[name] = d
	}
	if outs, ok := m["Outputs"].(map[string]any); ok {
		for name, raw := range outs {
			om, ok := raw.(map[string]any)
			if !ok {
				return nil, invalidf("Template format error: [/Outputs/%s] output definition is malformed", name)
			}
			if _, ok := om["Value"]; !ok {
				return nil, invalidf("Template format error: Every Outputs member must contain a Value object, the Outputs member %s does not", name)
			}
			o := outputDecl{Value: om["Value"]}
			o.Description = scalarString(om["Description"])
			o.Condition, _ = om["Condition"].(string)
			if ex, ok := om["Export"].(map[string]any); ok {
				o.Export = ex["Name"]
			}
			tpl.Outputs[name] = o
		}
	}
	if err := tpl.checkReferences(); err != nil {
		return nil, err
	}
	return tpl, nil
}

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

// scalarString renders a YAML/JSON scalar the way CloudFormation sees it.
func scalarString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
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

var pseudoParams = map[string]bool{
	"AWS::AccountId": true, "AWS::Region": true, "AWS::StackName": true, "AWS::StackId": true,
	"AWS::Partition": true, "AWS::URLSuffix": true, "AWS::NotificationARNs": true, "AWS::NoValue": true,
}

// checkReferences verifies every Ref, GetAtt, Sub variable, DependsOn and Condition names
// something the template declares, and that resources have no dependency cycle.
func (t *template) checkReferences() error {
	var unresolved []string
	for name, r := range t.Resources {
		for _, d := range r.DependsOn {
			if _, ok := t.Resources[d]; !ok {
				return invalidf("Template format error: Unresolved resource dependencies [%s] in the Resources block of the template", d)
			}
		}
		if r.Condition != "" {
			if _, ok := t.Conditions[r.Condition]; !ok {
				return invalidf("Template format error: Unresolved dependencies [%s]. Cannot reference resources in the Conditions block of the template", r.Condition)
			}
		}
		if err := t.walkRefs(r.Properties, func(kind, target string) error {
			switch kind {
			case "Ref":
				if !t.nameDefined(target) {
					unresolved = append(unresolved, target)
				}
			case "GetAtt":
				if _, ok := t.Resources[target]; !ok {
					return invalidf("Template error: instance of Fn::GetAtt references undefined resource %s", target)
				}
			case "Condition":
				if _, ok := t.Conditions[target]; !ok {
					return invalidf("Template error: unresolved condition dependency %s in Fn::If", target)
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("%w (resource %s)", err, name)
		}
	}
	for name, o := range t.Outputs {
		if err := t.walkRefs([]any{o.Value, o.Export}, func(kind, target string) error {
			if kind == "Ref" && !t.nameDefined(target) {
				unresolved = append(unresolved, target)
			}
			if kind == "GetAtt" {
				if _, ok := t.Resources[target]; !ok {
					return invalidf("Template error: instance of Fn::GetAtt references undefined resource %s", target)
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("%w (output %s)", err, name)
		}
		if o.Condition != "" {
			if _, ok := t.Conditions[o.Condition]; !ok {
				return invalidf("Template format error: Unresolved dependencies [%s] in the Outputs block of the template", o.Condition)
			}
		}
	}
	if len(unresolved) > 0 {
		sort.Strings(unresolved)
		return invalidf("Template format error: Unresolved resource dependencies [%s] in the Resources block of the template", strings.Join(dedupe(unresolved), ", "))
	}
	if _, err := t.order(); err != nil {
		return err
	}
	return nil
}

func (t *template) nameDefined(n string) bool {
	if pseudoParams[n] {
		return true
	}
	if _, ok := t.Parameters[n]; ok {
		return true
	}
	_, ok := t.Resources[n]
	return ok
}

// walkRefs calls fn for every reference in v: ("Ref", name), ("GetAtt", resource) and
// ("Condition", name).
func (t *template) walkRefs(v any, fn func(kind, target string) error) error {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				switch k {
				case "Ref":
					if s, ok := arg.(string); ok {
						return fn("Ref", s)
					}
				case "Fn::GetAtt":
					if res, _, ok := getAttArgs(arg); ok {
						if err := fn("GetAtt", res); err != nil {
							return err
						}
					}
					return t.walkRefs(arg, fn)
				case "Fn::Sub":
					str, vars := subArgs(arg)
					words, err := parse.ParseSub(str, false)
					if err != nil {
						return invalidf("Template error: Fn::Sub %q is malformed: %v", str, err)
					}
					for _, w := range words {
						if w.T == parse.STR {
							continue
						}
						if w.T == parse.AWS {
							w.W = "AWS::" + w.W
						}
						if _, ok := vars[w.W]; ok {
							continue
						}
						name, kind := w.W, "Ref"
						if w.T == parse.GETATT {
							i := strings.Index(name, ".")
							name, kind = name[:i], "GetAtt"
						}
						if err := fn(kind, name); err != nil {
							return err
						}
					}
					for _, vv := range vars {
						if err := t.walkRefs(vv, fn); err != nil {
							return err
						}
					}
					return nil
				case "Fn::If":
					if l, ok := arg.([]any); ok && len(l) == 3 {
						if c, ok := l[0].(string); ok {
							if err := fn("Condition", c); err != nil {
								return err
							}
						}
						return t.walkRefs(l[1:], fn)
					}
				}
			}
		}
		for _, vv := range x {
			if err := t.walkRefs(vv, fn); err != nil {
				return err
			}
		}
	case []any:
		for _, vv := range x {
			if err := t.walkRefs(vv, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

func getAttArgs(arg any) (res, attr string, ok bool) {
	switch a := arg.(type) {
	case string:
		i := strings.Index(a, ".")
		if i <= 0 {
			return "", "", false
		}
		return a[:i], a[i+1:], true
	case []any:
		if len(a) != 2 {
			return "", "", false
		}
		r, ok1 := a[0].(string)
		at, ok2 := a[1].(string)
		return r, at, ok1 && ok2
	}
	return "", "", false
}

func subArgs(arg any) (string, map[string]any) {
	switch a := arg.(type) {
	case string:
		return a, nil
	case []any:
		if len(a) == 2 {
			s, _ := a[0].(string)
			vars, _ := a[1].(map[string]any)
			return s, vars
		}
	}
	return "", nil
}

// deps returns the resources the named resource depends on.
func (t *template) deps(name string) []string {
	r := t.Resources[name]
	set := map[string]bool{}
	for _, d := range r.DependsOn {
		set[d] = true
	}
	_ = t.walkRefs(r.Properties, func(kind, target string) error {
		if kind == "Ref" || kind == "GetAtt" {
			if _, ok := t.Resources[target]; ok {
				set[target] = true
			}
		}
		return nil
	})
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// order returns the resources in a deterministic dependency order (dependencies first).
func (t *template) order() ([]string, error) {
	names := make([]string, 0, len(t.Resources))
	for n := range t.Resources {
		names = append(names, n)
	}
	sort.Strings(names)
	indeg := map[string]int{}
	rev := map[string][]string{}
	for _, n := range names {
		ds := t.deps(n)
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

func dedupe(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

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
		m, ok := e.tpl.Mappings[keys[0]].(map[string]any)
		if !ok {
			return nil, invalidf("Template error: Unable to get mapping for %s", keys[0])
		}
		top, ok := m[keys[1]].(map[string]any)
		if !ok {
			return nil, invalidf("Template error: Unable to get mapping for %s::%s::%s", keys[0], keys[1], keys[2])
		}
		v, ok := top[keys[2]]
		if !ok {
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
		return []any{r + "a", r + "b", r + "c"}, nil
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
		b, _ := json.Marshal(v)
		return string(b), nil
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
	words, err := parse.ParseSub(str, false)
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
				return nil, nil, err
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

// hashHex gives a deterministic hex string of n characters for the given parts.
func hashHex(n int, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	s := hex.EncodeToString(h[:])
	for len(s) < n {
		s += s
	}
	return s[:n]
}

// hashUUID gives a deterministic UUID-shaped string for the given parts.
func hashUUID(parts ...string) string {
	h := hashHex(32, parts...)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// hashUpper gives a deterministic upper-case alphanumeric suffix like CloudFormation's.
func hashUpper(n int, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	out := make([]byte, n)
	for i := range n {
		v := binary.BigEndian.Uint16(h[(2*i)%30:])
		out[i] = alpha[int(v)%len(alpha)]
	}
	return string(out)
}
