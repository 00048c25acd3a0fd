package cfnlocal

import (
	"encoding/json"
	"fmt"
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
	CreationPolicy      map[string]any
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

// rawTemplate parses a JSON or YAML template, short-form intrinsics included, into its
// tree of maps, lists and scalars, checking nothing else.
func rawTemplate(body string) (m map[string]any, err error) {
	if strings.TrimSpace(body) == "" {
		return nil, invalidf("Template format error: template body is empty")
	}
	t, err := parse.String(body)
	if err != nil {
		return nil, invalidf("Template format error: %v", err)
	}
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
	return m, nil
}

// parseTemplate parses a JSON or YAML template whose transforms, if any, were processed.
func parseTemplate(body string) (tpl *template, err error) {
	m, err := rawTemplate(body)
	if err != nil {
		return nil, err
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
			// processed already (see process); a template still naming one was not
			return nil, invalidf("Template format error: the template's Transform %v was not processed", m[k])
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
		d.CreationPolicy, _ = rm["CreationPolicy"].(map[string]any)
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
