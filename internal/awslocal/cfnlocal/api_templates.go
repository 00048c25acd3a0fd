package cfnlocal

import (
	"fmt"
	"strings"
)

func (s *Service) getTemplate(f form) (any, error) {
	body := ""
	if csName := f.get("ChangeSetName"); csName != "" {
		cs := s.findChangeSet(csName, f.get("StackName"))
		if cs == nil {
			return nil, changeSetNotFound(csName)
		}
		body = cs.Body
	} else {
		st, err := s.mustStack(f.get("StackName"))
		if err != nil {
			return nil, err
		}
		body = st.Body
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
	var ps []xTemplateParam
	for _, n := range tpl.ParamOrder {
		d := tpl.Parameters[n]
		p := xTemplateParam{ParameterKey: n, NoEcho: d.NoEcho, Description: d.Description}
		if d.Default != nil {
			p.DefaultValue = *d.Default
		}
		ps = append(ps, p)
	}
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
	tpl, err := s.parse(body)
	if err != nil {
		return nil, err
	}
	type pd struct {
		ParameterKey  string
		DefaultValue  string `xml:",omitempty"`
		ParameterType string
		NoEcho        bool
		Description   string `xml:",omitempty"`
	}
	var ps []pd
	for _, n := range tpl.ParamOrder {
		d := tpl.Parameters[n]
		p := pd{ParameterKey: n, ParameterType: d.Type, NoEcho: d.NoEcho, Description: d.Description}
		if d.Default != nil {
			p.DefaultValue = *d.Default
		}
		ps = append(ps, p)
	}
	types := map[string]bool{}
	for _, r := range tpl.Resources {
		types[r.Type] = true
	}
	return struct {
		Parameters    []pd     `xml:"Parameters>member"`
		Description   string   `xml:",omitempty"`
		ResourceTypes []string `xml:"ResourceTypes>member"`
		Version       string
	}{ps, tpl.Description, sortedKeys(types), "2010-09-09"}, nil
}
