package scaffold

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// SAMConfigName is the SAM CLI's configuration file, beside an app's template.
const SAMConfigName = "samconfig.toml"

// SAMOverrides returns the parameter values a samconfig.toml gives `sam deploy` in its
// default environment: parameter_overrides of [default.deploy.parameters], over those of
// [default.global.parameters], as a string ("Key=Value Key2='a b'", or the CloudFormation
// CLI's "ParameterKey=K,ParameterValue=V") or a list of such strings; where says which
// table gave them. None is no error.
func SAMOverrides(body []byte) (values map[string]string, where string, err error) {
	var doc map[string]any
	if err := toml.Unmarshal(body, &doc); err != nil {
		return nil, "", fmt.Errorf("%s: %w", SAMConfigName, err)
	}
	values = map[string]string{}
	for _, cmd := range []string{"global", "deploy"} {
		params, _ := dig(doc, "default", cmd, "parameters").(map[string]any)
		var items []string
		switch v := params["parameter_overrides"].(type) {
		case nil:
			continue
		case string:
			items = append(items, v)
		case []any:
			for _, x := range v {
				s, ok := x.(string)
				if !ok {
					return nil, "", fmt.Errorf("%s: [default.%s.parameters] parameter_overrides holds %v, not a string", SAMConfigName, cmd, x)
				}
				items = append(items, s)
			}
		default:
			return nil, "", fmt.Errorf("%s: [default.%s.parameters] parameter_overrides is %T, not a string or a list of strings", SAMConfigName, cmd, v)
		}
		for _, item := range items {
			kv, err := overrides(item)
			if err != nil {
				return nil, "", fmt.Errorf("%s: [default.%s.parameters] parameter_overrides: %w", SAMConfigName, cmd, err)
			}
			for k, v := range kv {
				values[k] = v
			}
		}
		where = "parameter_overrides of [default." + cmd + ".parameters]"
	}
	return values, where, nil
}

func dig(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// overrides parses one parameter_overrides string as the SAM CLI does: words split on
// spaces outside quotes, each Key=Value (the value's quotes removed) or
// ParameterKey=K,ParameterValue=V.
func overrides(s string) (map[string]string, error) {
	var words []string
	var cur strings.Builder
	var quote rune
	in := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%q: a quote is not closed", s)
	}
	if in {
		words = append(words, cur.String())
	}
	out := map[string]string{}
	for _, w := range words {
		if rest, ok := strings.CutPrefix(w, "ParameterKey="); ok {
			k, v, ok := strings.Cut(rest, ",ParameterValue=")
			if !ok {
				return nil, fmt.Errorf("%q: ParameterKey without ParameterValue", w)
			}
			out[k] = v
			continue
		}
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not Key=Value", w)
		}
		out[k] = v
	}
	return out, nil
}
