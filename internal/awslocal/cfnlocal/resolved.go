package cfnlocal

import "strings"

// resolvedSSM returns the values of a template's parameters of SSM parameter types
// (AWS::SSM::Parameter::Value<...>) for the given names, as DescribeStacks answers them in
// ResolvedValue; a parameter that no longer resolves is left out. See
// https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_Parameter.html
// (ResolvedValue: "Read-only. The value that corresponds to a SSM parameter key").
func (s *Service) resolvedSSM(tpl *template, params map[string]string) map[string]string {
	if tpl == nil {
		return nil
	}
	var out map[string]string
	for name, d := range tpl.Parameters {
		v, ok := params[name]
		if !ok || !strings.HasPrefix(d.Type, "AWS::SSM::Parameter::Value<") {
			continue
		}
		r, err := s.ssm(v, d.Type)
		if err != nil {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = r
	}
	return out
}
