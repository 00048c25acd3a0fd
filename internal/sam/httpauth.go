package sam

import (
	"fmt"
	"slices"
	"strings"
)

// What aws-sam-translator 1.110.0 refuses of an HttpApi's Auth, its authorizers and its
// default authorizer's paths, each with its message, as apiauth.go does for a REST Api's.

// httpAuth checks an HttpApi's Auth as the translator's HttpApiGenerator._add_auth and
// ApiGatewayV2Authorizer do: its keys, each authorizer's kind (JWT when it has a
// JwtConfiguration, Lambda otherwise) with what that kind requires and takes, a Lambda
// authorizer's identity sources as lists of strings, and a DefaultAuthorizer it defines,
// set on every method of the definition.
func httpAuth(n string, props map[string]any) error {
	auth, ok := props["Auth"].(map[string]any)
	// an inline definition, or the one SAM writes of the events (inlineOnly refused a
	// DefinitionUri with Auth)
	body, _ := props["DefinitionBody"].(map[string]any)
	if !truthy(props["Auth"]) || !ok || props["DefinitionUri"] != nil && body == nil {
		return nil
	}
	for _, k := range sortedKeys(auth) {
		if !slices.Contains(httpAuthKeys, k) {
			return samErr(n, "Invalid value for 'Auth' property")
		}
	}
	if props["DefinitionBody"] != nil && !validOpenAPI(props["DefinitionBody"]) {
		return samErr(n, "Unable to add Auth configuration because 'DefinitionBody' does not contain a valid OpenApi definition.")
	}
	named := map[string]bool{"AWS_IAM": auth["EnableIamAuthorizer"] == true}
	if cfg := auth["Authorizers"]; truthy(cfg) {
		m, ok := cfg.(map[string]any)
		if !ok {
			return samErr(n, "Property 'Auth.Authorizers' should be a map.")
		}
		for _, name := range sortedKeys(m) {
			a, ok := m[name].(map[string]any)
			if !ok {
				return samErr(n, "Property 'Auth.Authorizers.%s' should be a map.", name)
			}
			if err := httpAuthorizer(n, name, a); err != nil {
				return err
			}
			named[name] = true
		}
	}
	def := auth["DefaultAuthorizer"]
	if !truthy(def) || object(def)["Ref"] == "AWS::NoValue" {
		return nil
	}
	s, ok := def.(string)
	if !ok {
		return samErr(n, "Property 'Auth.DefaultAuthorizer' should be a string.")
	}
	if !named[s] {
		return samErr(n, "Unable to set DefaultAuthorizer because '%s' was not defined in 'Authorizers'.", s)
	}
	return httpDefaultAuthorizerPaths(n, body)
}

// httpDefaultAuthorizerPaths refuses what OpenApiEditor.set_path_default_authorizer does
// when it sets an HttpApi's DefaultAuthorizer on every method: a path item that is not a
// map, a method named other than as the editor names it (lower case, ANY as
// x-amazon-apigateway-any-method), and a method definition that is not a map; the
// parameters and options of a path are left alone.
func httpDefaultAuthorizerPaths(n string, body map[string]any) error {
	paths, _ := body["paths"].(map[string]any)
	for _, path := range sortedKeys(paths) {
		items, err := conditional(n, paths[path])
		if err != nil {
			return err
		}
		for _, it := range items {
			item, ok := it.(map[string]any)
			if !ok {
				return docErr(n, fmt.Sprintf("Value of '%s' path must be a dictionary according to Swagger spec.", path))
			}
			for _, method := range sortedKeys(item) {
				name := strings.ToLower(method)
				if name == "any" {
					name = "x-amazon-apigateway-any-method"
				}
				if name == "parameters" || name == "options" {
					continue
				}
				if _, ok := item[name]; !ok {
					return docErr(n, fmt.Sprintf("Could not find %s in %s within DefinitionBody.", name, path))
				}
				defs, err := conditional(n, item[method])
				if err != nil {
					return err
				}
				for _, d := range defs {
					if _, ok := d.(map[string]any); !ok {
						return docErr(n, fmt.Sprintf("Definition of method '%s' for path '%s' should be a map.", method, path))
					}
				}
			}
		}
	}
	return nil
}

// httpAuthorizer checks one authorizer of an HttpApi.
func httpAuthorizer(n, name string, a map[string]any) error {
	if _, ok := a["OpenIdConnectUrl"]; ok {
		return samErr(n, "'OpenIdConnectUrl' is no longer a supported property for authorizer '%s'. Please refer to the AWS SAM documentation.", name)
	}
	jwt := a["JwtConfiguration"]
	if truthy(jwt) {
		if _, ok := jwt.(map[string]any); !ok {
			return samErr(n, "Property 'JwtConfiguration' should be a map.")
		}
	}
	if s, ok := a["AuthorizationScopes"]; ok && s != nil {
		if _, ok := s.([]any); !ok {
			return samErr(n, "AuthorizationScopes must be a list.")
		}
	}
	kind, takes := "Lambda Authorizer", []string{"FunctionArn", "FunctionInvokeRole", "Identity", "AuthorizerPayloadFormatVersion", "EnableSimpleResponses", "EnableFunctionDefaultPermissions"}
	if truthy(jwt) {
		kind, takes = "OAuth2 Authorizer", []string{"AuthorizationScopes", "JwtConfiguration", "IdentitySource"}
	}
	for _, p := range [][2]string{{"AuthorizationScopes", "OAuth2 Authorizer"}, {"JwtConfiguration", "OAuth2 Authorizer"},
		{"IdentitySource", "OAuth2 Authorizer. For Lambda Authorizer, use the 'Identity' property instead"},
		{"FunctionArn", "Lambda Authorizer"}, {"FunctionInvokeRole", "Lambda Authorizer"}, {"Identity", "Lambda Authorizer"},
		{"AuthorizerPayloadFormatVersion", "Lambda Authorizer"}, {"EnableSimpleResponses", "Lambda Authorizer"},
		{"EnableFunctionDefaultPermissions", "Lambda Authorizer"}} {
		if a[p[0]] != nil && !slices.Contains(takes, p[0]) {
			return samErr(n, "%s is only supported for %s.", p[0], p[1])
		}
	}
	if kind == "OAuth2 Authorizer" {
		if !truthy(a["IdentitySource"]) {
			return samErr(n, "%s OAuth2 Authorizer must define 'IdentitySource'.", name)
		}
		return nil
	}
	if !truthy(a["FunctionArn"]) {
		return samErr(n, "%s Lambda Authorizer must define 'FunctionArn'.", name)
	}
	if !truthy(a["AuthorizerPayloadFormatVersion"]) {
		return samErr(n, "%s Lambda Authorizer must define 'AuthorizerPayloadFormatVersion'.", name)
	}
	if d := a["EnableFunctionDefaultPermissions"]; d != nil {
		if _, ok := d.(bool); !ok {
			return samErr(n, "Property 'Authorizers.%s.EnableFunctionDefaultPermissions' should be a boolean.", name)
		}
	}
	if id := a["Identity"]; truthy(id) {
		m, ok := id.(map[string]any)
		if !ok {
			return samErr(n, "Property 'Auth.Authorizers.%s.Identity' should be a map.", name)
		}
		for _, k := range []string{"Headers", "QueryStrings", "StageVariables", "Context"} {
			if !truthy(m[k]) {
				continue
			}
			list, ok := m[k].([]any)
			if !ok {
				return samErr(n, "Property 'Authorizers.%s.Identity.%s' should be a list.", name, k)
			}
			for i, it := range list {
				if _, ok := it.(string); !ok {
					return samErr(n, "Property 'Authorizers.%s.Identity.%s[%d]' should be a string.", name, k, i)
				}
			}
		}
	}
	return nil
}
