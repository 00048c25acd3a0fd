package template

import "gopkg.in/yaml.v3"

// OutputParameters maps each output of t whose value is one of its parameters as given
// to that parameter: the output's Value is a Ref to a parameter of Type String that is
// not NoEcho, and the output has no Condition. Such an output's value after a deploy is
// known as soon as the deploy's parameters are, before CloudFormation ends the operation:
// a run uses it to make a dependent's change set early from the value it will have
// (run.Stack.OutputParameters). nil when there is none.
func (t *Template) OutputParameters() map[string]string {
	if t == nil || t.Node == nil {
		return nil
	}
	outputs := value(t.Node, "Outputs")
	if outputs == nil || outputs.Kind != yaml.MappingNode {
		return nil
	}
	var m map[string]string
	for i := 0; i+1 < len(outputs.Content); i += 2 {
		name, o := outputs.Content[i].Value, resolve(outputs.Content[i+1])
		if o.Kind != yaml.MappingNode || value(o, "Condition") != nil {
			continue
		}
		v := value(o, "Value")
		if v == nil || v.Kind != yaml.MappingNode || len(v.Content) != 2 || v.Content[0].Value != "Ref" {
			continue
		}
		ref := resolve(v.Content[1])
		if ref.Kind != yaml.ScalarNode {
			continue
		}
		p, ok := t.Parameters[ref.Value]
		if !ok || p.Type != "String" || p.NoEcho {
			continue
		}
		if m == nil {
			m = map[string]string{}
		}
		m[name] = p.Name
	}
	return m
}
