package sam

import "strings"

// checkProperties refuses what AWS's translator refuses of a Serverless resource before it
// expands it: an IgnoreGlobals other than "*" or a list of properties its type's Globals
// set, a property its type does not take, and a value of a kind the property does not
// take (an intrinsic function where the property takes one is judged by CloudFormation).
func (t *sam) checkProperties(name string, r any) error {
	rm := object(r)
	typ := typeOfRaw(r)
	short, _ := strings.CutPrefix(typ, "AWS::Serverless::")
	g, hasGlobals := t.globals[short]
	// the translator reads IgnoreGlobals only of a type its Globals name
	if ig, ok := rm["IgnoreGlobals"]; ok && ig != nil && hasGlobals && strings.HasPrefix(typ, "AWS::Serverless::") {
		switch x := ig.(type) {
		case string:
			if x != "*" {
				return samErr(name, "Resource %s has invalid resource attribute 'IgnoreGlobals'.", name)
			}
		case []any:
			for _, k := range x {
				s, _ := k.(string)
				if _, ok := g[s]; !ok {
					return samErr(name, "Resource %s has invalid resource attribute 'IgnoreGlobals' on item '%v'.", name, k)
				}
			}
		default:
			return samErr(name, "Resource %s has invalid resource attribute 'IgnoreGlobals'.", name)
		}
	}
	spec, ok := data().Properties[typ]
	props, isMap := rm["Properties"].(map[string]any)
	if !ok || !isMap {
		return nil
	}
	for _, k := range sortedKeys(props) {
		p, known := spec.Properties[k]
		if !known {
			if spec.Closed {
				return samErr(name, "property %s not defined for resource of type %s", k, typ)
			}
			continue
		}
		v := props[k]
		// K is empty for a validator gendata.py does not read (IS_STR_ENUM): not judged
		if v == nil || p.K == "" || p.X && isIntrinsic(v) {
			continue
		}
		if !strings.Contains(p.K, valueKind(v)) && !managedOpenAPIVersion(typ, k, v, props) {
			return samErr(name, "Type of property '%s' is invalid.", k)
		}
	}
	return nil
}

// valueKind is the letter of resourceProperties.K for a decoded value.
func valueKind(v any) string {
	switch x := v.(type) {
	case string:
		return "s"
	case bool:
		return "b"
	case int, int64, uint64:
		return "i"
	case float64:
		if x == float64(int64(x)) {
			return "i"
		}
		return "f"
	case map[string]any:
		return "m"
	case []any:
		return "l"
	}
	return "?"
}

// managedOpenAPIVersion reports a number as an Api's OpenApiVersion (3.0 unquoted) where
// SAM writes the definition (no DefinitionBody, no DefinitionUri): the translator's
// Globals plugin turns it into text before the property is checked (fix_openapi_definitions).
func managedOpenAPIVersion(typ, k string, v any, props map[string]any) bool {
	if typ != "AWS::Serverless::Api" || k != "OpenApiVersion" || props["DefinitionBody"] != nil || props["DefinitionUri"] != nil {
		return false
	}
	f, ok := v.(float64)
	return ok && f >= 3 && f < 4
}
