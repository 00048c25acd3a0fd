package sam

import (
	"fmt"
	"regexp"
	"strings"
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

// restDefinitionEdits refuses what the translator's last edits of an Api's inline
// definition refuse (ApiGenerator._add_binary_media_types, _add_endpoint_extension and
// _openapi_postprocess): a body that is no Swagger or OpenAPI document where binary media
// types or DisableExecuteApiEndpoint are written into it, an endpoint configuration
// extension (at the top, or on each server of an OpenAPI 3 document) that is no map, and,
// in a document it converts to OpenAPI 3, paths, path items, options methods and their
// 200 response's headers that are not of the kind it rewrites.
func restDefinitionEdits(n string, props map[string]any) error {
	if truthy(props["DefinitionUri"]) || !truthy(props["DefinitionBody"]) {
		return nil
	}
	body, isMap := props["DefinitionBody"].(map[string]any)
	if truthy(props["Cors"]) && (!isMap || !validSwagger(body)) {
		return samErr(n, "Unable to add Cors configuration because 'DefinitionBody' does not contain a valid Swagger definition.")
	}
	edited := truthy(props["BinaryMediaTypes"]) || props["DisableExecuteApiEndpoint"] != nil
	if edited && (!isMap || !validSwagger(body)) {
		return docErr(n, "Invalid Swagger document or the Swagger document is not explicitly defined in 'DefinitionBody'.")
	}
	if !isMap {
		return nil
	}
	if props["DisableExecuteApiEndpoint"] != nil {
		if err := endpointExtension(n, body); err != nil {
			return err
		}
	}
	return openAPIPostprocess(n, props, body)
}

// endpointExtensionKey is the extension DisableExecuteApiEndpoint is written into.
const endpointExtensionKey = "x-amazon-apigateway-endpoint-configuration"

// endpointExtension is SwaggerEditor.add_disable_execute_api_endpoint_extension's
// refusals: in an OpenAPI 3 document each of its servers (one, empty, when it has none)
// must be a map whose extension, if set, is a map; in any other, the top-level extension.
func endpointExtension(n string, body map[string]any) error {
	if truthy(body["openapi"]) && openAPI3.MatchString(pyStr(body["openapi"])) {
		var servers []any
		switch s := body["servers"].(type) {
		case []any:
			servers = s
		case map[string]any: // Python enumerates a map's keys: text, no map
			for k := range s {
				servers = append(servers, k)
			}
		}
		for i, s := range servers {
			m, ok := s.(map[string]any)
			if !ok {
				return docErr(n, fmt.Sprintf("Invalid OpenAPI definition of 'servers[%d]': It should be a map.", i))
			}
			if v, set := m[endpointExtensionKey]; set {
				if _, ok := v.(map[string]any); !ok {
					return docErr(n, fmt.Sprintf("Invalid OpenAPI definition of 'servers[%d]': The value of '%s' should be a map.", i, endpointExtensionKey))
				}
			}
		}
		return nil
	}
	if v, set := body[endpointExtensionKey]; set {
		if _, ok := v.(map[string]any); !ok {
			return docErr(n, fmt.Sprintf("Invalid OpenAPI definition: The value of '%s' should be a map.", endpointExtensionKey))
		}
	}
	return nil
}

// openAPIPostprocess is ApiGenerator._openapi_postprocess's refusals: a definition with no
// swagger version whose OpenAPI version (its own, or OpenApiVersion when that is set) is
// 3.x has its CORS preflights rewritten, so its paths must be a map of path items that are
// maps, each options method a map, and the headers of its 200 response a map.
func openAPIPostprocess(n string, props, body map[string]any) error {
	if body["swagger"] != nil {
		return nil
	}
	version := props["OpenApiVersion"]
	if body["openapi"] != nil && version == nil {
		version = body["openapi"]
	}
	if !truthy(version) || !openAPI3.MatchString(pyStr(version)) || !truthy(body["paths"]) {
		return nil
	}
	paths, ok := body["paths"].(map[string]any)
	if !ok {
		return docErr(n, "Value of paths must be a dictionary according to Swagger spec.")
	}
	for _, path := range sortedKeys(paths) {
		item, ok := paths[path].(map[string]any)
		if !ok {
			return docErr(n, fmt.Sprintf("Value of '%s' path must be a dictionary according to Swagger spec.", path))
		}
		if !truthy(item["options"]) {
			continue
		}
		options, ok := item["options"].(map[string]any)
		if !ok {
			return docErr(n, fmt.Sprintf("Value of options method for path %s must be a dictionary according to Swagger spec.", path))
		}
		responses, set := options["responses"]
		if !set || responses == nil {
			continue
		}
		rm, ok := responses.(map[string]any)
		if !ok {
			return docErr(n, fmt.Sprintf("Invalid responses in options method for path %s: It should be a map.", path))
		}
		ok200 := rm["200"]
		if ok200 == nil {
			continue
		}
		r200, ok := ok200.(map[string]any)
		if !ok {
			return docErr(n, fmt.Sprintf("Invalid responses in options method for path %s: The value of '200' should be a map.", path))
		}
		if h := r200["headers"]; truthy(h) {
			if _, ok := h.(map[string]any); !ok {
				return docErr(n, fmt.Sprintf("Value of response's headers in options method for path %s must be a dictionary according to Swagger spec.", path))
			}
		}
	}
	return nil
}

// validOpenAPI is OpenApiEditor.is_valid: a map of paths and an openapi 3 version.
func validOpenAPI(body any) bool {
	m, ok := body.(map[string]any)
	if !ok || !truthy(m) {
		return false
	}
	if _, ok := m["paths"].(map[string]any); !ok || !truthy(m["openapi"]) {
		return false
	}
	return openAPI3.MatchString(pyStr(m["openapi"]))
}

// openAPIEditor refuses what the translator's OpenApiEditor refuses of an HttpApi's
// definition when SAM edits it (an event's route or permission, its tags): a document
// that is no OpenAPI 3 one, and components, definitions, tags or info that are not of
// the kind it reads.
func openAPIEditor(n string, body any) error {
	if !validOpenAPI(body) {
		return samErr(n, "Structure of the SAM template is invalid. Invalid OpenApi document. Invalid values or missing keys for 'openapi' or 'paths' in 'DefinitionBody'.")
	}
	m := body.(map[string]any)
	for _, path := range [][]string{{"components", "securitySchemes"}, {"definitions"}, {"tags"}, {"info"}} {
		d, rel := any(m), ""
		for _, k := range path {
			if d == nil {
				break
			}
			dm, ok := d.(map[string]any)
			if !ok {
				return samErr(n, "Structure of the SAM template is invalid. Invalid OpenApi document: The value of '%s' should be a map", rel)
			}
			d, rel = dm[k], strings.TrimPrefix(rel+"."+k, ".")
		}
	}
	return nil
}

// httpDefinitionEdits refuses, as HttpApiGenerator._add_cors and _add_tags do, CORS or Tags
// to write into an inline definition that is no OpenAPI 3 document; a valid one always gets
// SAM's tag, so the editor reads it.
func httpDefinitionEdits(n string, props map[string]any, cors any) error {
	body := props["DefinitionBody"]
	if !truthy(body) || truthy(props["DefinitionUri"]) {
		return nil
	}
	if truthy(cors) && !validOpenAPI(body) {
		return samErr(n, "Unable to add Cors configuration because 'DefinitionBody' does not contain a valid OpenApi definition.")
	}
	if !validOpenAPI(body) {
		if truthy(props["Tags"]) {
			return samErr(n, "Unable to add `Tags` because 'DefinitionBody' does not contain a valid OpenApi definition.")
		}
		return nil
	}
	if err := openAPIEditor(n, body); err != nil {
		return err
	}
	// SAM's tag is added to the body's tags, a list of maps each with a name
	if tags := object(body)["tags"]; truthy(tags) {
		list, ok := tags.([]any)
		if !ok {
			return docErr(n, fmt.Sprintf("Tags in OpenApi DefinitionBody needs to be a list. It is a %s.", pyType(tags)))
		}
		for _, tag := range list {
			if _, ok := tag.(map[string]any); !ok {
				return docErr(n, fmt.Sprintf("Tags in OpenApi DefinitionBody needs to be a list of maps. %s is a %s.", pyValue(tag), pyType(tag)))
			}
		}
	}
	return nil
}
