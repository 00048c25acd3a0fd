package sam

import (
	"fmt"
	"regexp"
)

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

// swaggerPaths refuses, as the translator's SwaggerEditor does when SAM edits an Api's
// inline Swagger (for CORS, binary media types, auth, gateway responses, models, the
// execute-api endpoint, or an event's route), a path whose value (either branch of an
// Fn::If) is not a map.
func swaggerPaths(n string, props, eventPaths map[string]any) error {
	body, ok := props["DefinitionBody"].(map[string]any)
	if !ok || !validSwagger(body) {
		return nil
	}
	edits := len(eventPaths) > 0 || props["DisableExecuteApiEndpoint"] != nil
	for _, p := range []string{"Cors", "BinaryMediaTypes", "Auth", "GatewayResponses", "Models"} {
		edits = edits || truthy(props[p])
	}
	if !edits {
		return nil
	}
	paths := body["paths"].(map[string]any)
	for _, path := range sortedKeys(paths) {
		items := []any{paths[path]}
		if m, ok := paths[path].(map[string]any); ok && m["Fn::If"] != nil {
			branches, ok := m["Fn::If"].([]any)
			if !ok {
				return docErr(n, "Value of Fn::If must be a list.")
			}
			items = nil
			for _, b := range branches[min(1, len(branches)):] {
				if bm, ok := b.(map[string]any); !ok || bm["Ref"] != "AWS::NoValue" {
					items = append(items, b)
				}
			}
		}
		for _, it := range items {
			if _, ok := it.(map[string]any); !ok {
				return docErr(n, fmt.Sprintf("Value of '%s' path must be a dictionary according to Swagger spec.", path))
			}
		}
	}
	return nil
}

// validSwagger is SwaggerEditor.is_valid: a map of paths, and a swagger version or an
// openapi 3 one.
func validSwagger(body map[string]any) bool {
	if _, ok := body["paths"].(map[string]any); !ok {
		return false
	}
	if truthy(body["swagger"]) {
		return true
	}
	return truthy(body["openapi"]) && openAPI3.MatchString(fmt.Sprint(body["openapi"]))
}

// openAPI3 is the translator's _OPENAPI_VERSION_3_REGEX.
var openAPI3 = regexp.MustCompile(`^3(\.\d)(\.\d)?$`)

// docErr is the translator's refusal of the template's structure, at resource n.
func docErr(n, msg string) error {
	return &Error{LogicalID: n, Msg: "Transform AWS::Serverless-2016-10-31 failed with: Invalid Serverless Application Specification document. Number of errors found: 1. Structure of the SAM template is invalid. " + msg}
}
