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
	if truthy(props["DefinitionUri"]) && truthy(props["DefinitionBody"]) {
		return samErr(n, "Specify either 'DefinitionUri' or 'DefinitionBody' property and not both.")
	}
	if rest {
		if err := restProperties(n, props); err != nil {
			return err
		}
	}
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
	return truthy(body["openapi"]) && openAPI3.MatchString(pyStr(body["openapi"]))
}

// openAPI3 is the translator's _OPENAPI_VERSION_3_REGEX.
var openAPI3 = regexp.MustCompile(`^3(\.\d)(\.\d)?$`)

// docErr is the translator's refusal of the template's structure, at resource n.
func docErr(n, msg string) error {
	return &Error{LogicalID: n, Msg: "Transform AWS::Serverless-2016-10-31 failed with: Invalid Serverless Application Specification document. Number of errors found: 1. Structure of the SAM template is invalid. " + msg}
}

// supportedOpenAPI is SwaggerEditor.get_openapi_versions_supported_regex.
var supportedOpenAPI = regexp.MustCompile(`^[2-3](\.\d)(\.\d)?$`)

// restProperties are an Api's rules of ApiGenerator._validate_properties and its CORS:
// MergeDefinitions of a DefinitionUri, an OpenApiVersion other than 2.x or 3.x, and CORS
// allowing credentials from any origin.
func restProperties(n string, props map[string]any) error {
	if truthy(props["DefinitionUri"]) && truthy(props["MergeDefinitions"]) {
		return samErr(n, "Cannot set 'MergeDefinitions' to True when using `DefinitionUri`.")
	}
	if v := props["OpenApiVersion"]; truthy(v) && !supportedOpenAPI.MatchString(pyStr(v)) {
		return samErr(n, "The OpenApiVersion value must be of the format '3.0.0'.")
	}
	cors, _ := props["Cors"].(map[string]any)
	if body, ok := props["DefinitionBody"].(map[string]any); ok && validSwagger(body) && cors["AllowCredentials"] == true {
		if origin, set := cors["AllowOrigin"]; !set || origin == "'*'" {
			return samErr(n, "Unable to add Cors configuration because 'AllowCredentials' can not be true when 'AllowOrigin' is \"'*'\" or not set")
		}
	}
	return nil
}

// pyStr is Python's str of a decoded scalar, as the translator's regular expressions see
// it: 3.0 is "3.0", where Go prints "3".
func pyStr(v any) string {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return fmt.Sprintf("%.1f", f)
	}
	return fmt.Sprint(v)
}
