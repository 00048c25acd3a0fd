package sam

// inlineOnly refuses, as the translator does, what an Api or HttpApi adds to a definition
// SAM edits, when the definition is a DefinitionUri (the translator has no body to add it
// to): the properties are checked in the translator's order (api_generator.py,
// http_api_generator.py).
func inlineOnly(n string, props map[string]any, rest bool) error {
	if props["DefinitionBody"] != nil || props["DefinitionUri"] == nil {
		return nil
	}
	if props["DisableExecuteApiEndpoint"] != nil {
		return samErr(n, "DisableExecuteApiEndpoint works only within 'DefinitionBody' property.")
	}
	if rest {
		for _, p := range []string{"Cors", "Auth", "GatewayResponses", "Models"} {
			if truthy(props[p]) {
				return samErr(n, "%s works only with inline Swagger specified in 'DefinitionBody' property.", p)
			}
		}
		return nil
	}
	if truthy(props["CorsConfiguration"]) {
		return samErr(n, "Cors works only with inline OpenApi specified in 'DefinitionBody' property.")
	}
	for _, p := range []string{"Auth", "Tags", "Description", "Name"} {
		if truthy(props[p]) {
			return samErr(n, "%s works only with inline OpenApi specified in the 'DefinitionBody' property.", p)
		}
	}
	return nil
}

// truthy is Python's truth of a decoded value: not null, false, 0, "" or empty.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case int:
		return x != 0
	case float64:
		return x != 0
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	}
	return true
}
