package cfnlocal

import (
	"encoding/json"
	"fmt"
	"strings"
)

// getTemplate answers the template as given (TemplateStage Original, the default) or as
// its transforms made it (Processed).
func (s *Service) getTemplate(f form) (any, error) {
	body, original := "", ""
	if csName := f.get("ChangeSetName"); csName != "" {
		cs := s.findChangeSet(csName, f.get("StackName"))
		if cs == nil {
			return nil, changeSetNotFound(csName)
		}
		body, original = cs.Body, cs.Original
	} else {
		st, err := s.mustStack(f.get("StackName"))
		if err != nil {
			return nil, err
		}
		body, original = st.Body, st.Original
	}
	switch stage := f.get("TemplateStage"); stage {
	case "", "Original":
		body = orDefault(original, body)
	case "Processed":
	default:
		return nil, validation("1 validation error detected: Value '%s' at 'templateStage' failed to satisfy constraint: Member must satisfy enum value set: [Original, Processed]", stage)
	}
	return struct {
		TemplateBody    string
		StagesAvailable []string `xml:"StagesAvailable>member"`
	}{body, []string{"Original", "Processed"}}, nil
}

type xTemplateParam struct {
	ParameterKey string
	DefaultValue string `xml:",omitempty"`
	NoEcho       bool
	Description  string `xml:",omitempty"`
}

func (s *Service) validateTemplate(f form) (any, error) {
	body, err := s.templateBody(f)
	if err != nil {
		return nil, err
	}
	if body == "" {
		return nil, validation("Either Template URL or Template Body must be specified.")
	}
	if names := transformsOf(body); len(names) > 0 {
		// Macros run when a stack or change set is created: the template as given is checked
		// for its parameters only, as AWS does.
		return s.validateUnprocessed(body, names)
	}
	tpl, err := s.parse(body)
	if err != nil {
		return nil, err
	}
	// evaluate everything that does not depend on parameter values or other stacks
	probe := &stack{Name: "validate", ID: "validate", Resources: map[string]*resource{}}
	params := map[string]string{}
	for _, n := range tpl.ParamOrder {
		d := tpl.Parameters[n]
		if d.Default == nil {
			params[n] = sampleValue(d)
		}
	}
	if e, err := s.evaluator(probe, tpl, params, nil); err == nil {
		e.importValue = func(string) (string, error) { return knownAfterApply, nil }
		for _, n := range sortedKeys(tpl.Resources) {
			if _, err := e.eval(tpl.Resources[n].Properties); err != nil && !isParamDependent(err) {
				return nil, fmt.Errorf("%w (in resource %s)", err, n)
			}
		}
	} else if !isParamDependent(err) {
		return nil, err
	}
	ps := templateParams(tpl)
	res := struct {
		Parameters         []xTemplateParam `xml:"Parameters>member"`
		Description        string           `xml:",omitempty"`
		Capabilities       []string         `xml:"Capabilities>member"`
		CapabilitiesReason string           `xml:",omitempty"`
	}{Parameters: ps, Description: tpl.Description}
	if err := checkCapabilities(tpl, nil); err != nil {
		want := strings.TrimSuffix(strings.TrimPrefix(err.(*apiError).Message, "Requires capabilities : ["), "]")
		res.Capabilities = []string{want}
		res.CapabilitiesReason = "The following resource(s) require capabilities: [AWS::IAM::*]"
	}
	return res, nil
}

// validateUnprocessed answers ValidateTemplate for a template with transforms: its
// parameters, description and the transforms it declares.
func (s *Service) validateUnprocessed(body string, transforms []string) (any, error) {
	m, err := rawTemplate(body)
	if err != nil {
		return nil, err
	}
	decl := &template{Parameters: map[string]paramDecl{}}
	if err := decl.parseParameters(m["Parameters"]); err != nil {
		return nil, err
	}
	if _, ok := m["Resources"].(map[string]any); !ok {
		return nil, invalidf("Template format error: At least one Resources member must be defined.")
	}
	ps := templateParams(decl)
	return struct {
		Parameters         []xTemplateParam `xml:"Parameters>member"`
		Description        string           `xml:",omitempty"`
		Capabilities       []string         `xml:"Capabilities>member"`
		CapabilitiesReason string           `xml:",omitempty"`
		DeclaredTransforms []string         `xml:"DeclaredTransforms>member"`
	}{Parameters: ps, Description: scalarString(m["Description"]), Capabilities: []string{"CAPABILITY_AUTO_EXPAND"},
		CapabilitiesReason: "The following resource(s) require capabilities: [transforms]", DeclaredTransforms: transforms}, nil
}

// templateParams are the template's parameters as ValidateTemplate lists them.
func templateParams(tpl *template) []xTemplateParam {
	var ps []xTemplateParam
	for _, n := range tpl.ParamOrder {
		d := tpl.Parameters[n]
		p := xTemplateParam{ParameterKey: n, NoEcho: d.NoEcho, Description: d.Description}
		if d.Default != nil {
			p.DefaultValue = *d.Default
		}
		ps = append(ps, p)
	}
	return ps
}

// sampleValue is a placeholder for a parameter without a default during ValidateTemplate.
func sampleValue(d paramDecl) string {
	if len(d.AllowedValues) > 0 {
		return d.AllowedValues[0]
	}
	if d.Type == "Number" {
		if d.MinValue != nil {
			return fmt.Sprint(*d.MinValue)
		}
		return "1"
	}
	return "validate"
}

func isParamDependent(err error) bool {
	m := err.Error()
	return strings.HasPrefix(m, "Parameter ") || strings.HasPrefix(m, "Parameters:")
}

func (s *Service) getTemplateSummary(f form) (any, error) {
	body, err := s.templateBody(f)
	if err != nil {
		return nil, err
	}
	if body == "" && f.get("StackName") != "" {
		st, err := s.mustStack(f.get("StackName"))
		if err != nil {
			return nil, err
		}
		body = st.Body
	}
	names := transformsOf(body)
	var tpl *template
	if len(names) > 0 {
		// the processed template is known once a stack or change set is made: the summary
		// is of the template as given
		m, err := rawTemplate(body)
		if err != nil {
			return nil, err
		}
		tpl = &template{Parameters: map[string]paramDecl{}, Resources: map[string]resourceDecl{}, Description: scalarString(m["Description"])}
		if err := tpl.parseParameters(m["Parameters"]); err != nil {
			return nil, err
		}
		res, _ := m["Resources"].(map[string]any)
		for n, r := range res {
			if typ, ok := object(r)["Type"].(string); ok {
				tpl.Resources[n] = resourceDecl{Type: typ}
			}
		}
	} else if tpl, err = s.parse(body); err != nil {
		return nil, err
	}
	return summarize(body, tpl, names)
}

// summaryParameter is a parameter as GetTemplateSummary describes it.
type summaryParameter struct {
	ParameterKey         string
	DefaultValue         string `xml:",omitempty"`
	ParameterType        string
	NoEcho               bool
	Description          string `xml:",omitempty"`
	ParameterConstraints struct {
		AllowedValues []string `xml:"AllowedValues>member"`
	}
}

// summarize is GetTemplateSummary's answer for a template: its parameters (with their
// allowed values), description, resource types, transforms, the capability its IAM
// resources need and why, and its Metadata section as JSON. See
// https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_GetTemplateSummary.html.
func summarize(body string, tpl *template, transforms []string) (any, error) {
	var ps []summaryParameter
	for _, n := range tpl.ParamOrder {
		d := tpl.Parameters[n]
		p := summaryParameter{ParameterKey: n, ParameterType: d.Type, NoEcho: d.NoEcho, Description: d.Description}
		if d.Default != nil {
			p.DefaultValue = *d.Default
		}
		p.ParameterConstraints.AllowedValues = d.AllowedValues
		ps = append(ps, p)
	}
	types := map[string]bool{}
	for _, r := range tpl.Resources {
		types[r.Type] = true
	}
	var caps []string
	reason := ""
	if c, iam := requiredCapability(tpl); c != "" {
		caps = []string{c}
		reason = "The following resource(s) require capabilities: [" + strings.Join(iam, ", ") + "]"
	}
	metadata := ""
	if m, err := rawTemplate(body); err == nil && m["Metadata"] != nil {
		b, err := json.Marshal(m["Metadata"])
		if err != nil {
			return nil, invalidf("Template format error: Metadata cannot be written as JSON: %v", err)
		}
		metadata = string(b)
	}
	return struct {
		Parameters         []summaryParameter `xml:"Parameters>member"`
		Description        string             `xml:",omitempty"`
		Capabilities       []string           `xml:"Capabilities>member"`
		CapabilitiesReason string             `xml:",omitempty"`
		ResourceTypes      []string           `xml:"ResourceTypes>member"`
		Version            string
		Metadata           string   `xml:",omitempty"`
		DeclaredTransforms []string `xml:"DeclaredTransforms>member"`
	}{ps, tpl.Description, caps, reason, sortedKeys(types), "2010-09-09", metadata, transforms}, nil
}
