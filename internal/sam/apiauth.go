package sam

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// What aws-sam-translator 1.110.0 refuses of a REST Api's Auth, GatewayResponses and
// UsagePlan (ApiGenerator._add_auth, _get_authorizers, _set_default_authorizer,
// _add_gateway_responses, _construct_usage_plan; ApiGatewayAuthorizer and
// ApiGatewayResponse), in the order it meets them, each with its message. cairn's
// transform does not write the authorizers into the definition; it refuses what the
// translator refuses, so a template CloudFormation would refuse is refused here first.

// authKeys are the keys of an Api's Auth (AuthProperties).
var authKeys = []string{"Authorizers", "DefaultAuthorizer", "InvokeRole", "AddDefaultAuthorizerToCorsPreflight",
	"AddApiKeyRequiredToCorsPreflight", "ApiKeyRequired", "ResourcePolicy", "UsagePlan"}

// usagePlanKeys are the keys of an Api's Auth.UsagePlan (UsagePlanProperties).
var usagePlanKeys = []string{"CreateUsagePlan", "Description", "Quota", "Tags", "Throttle", "UsagePlanName"}

// restAuth checks an Api's Auth, GatewayResponses and UsagePlan. The translator reaches
// them only with an inline definition, which inlineOnly has required.
func restAuth(n string, props, eventPaths map[string]any) error {
	auth, hasAuth := props["Auth"].(map[string]any)
	if truthy(props["Auth"]) && hasAuth {
		for _, k := range sortedKeys(auth) {
			if !slices.Contains(authKeys, k) {
				return samErr(n, "Invalid value for 'Auth' property")
			}
		}
		body, given := props["DefinitionBody"], props["DefinitionBody"] != nil
		if given && !validSwagger(object(body)) {
			return samErr(n, "Unable to add Auth configuration because 'DefinitionBody' does not contain a valid Swagger definition.")
		}
		if err := authorizers(n, auth, props); err != nil {
			return err
		}
		// the authorizers and the API key are written into the definition's
		// securityDefinitions (where the translator meets a list or text, it fails)
		defs := object(body)["securityDefinitions"]
		if _, isMap := defs.(map[string]any); truthy(defs) && !isMap && (truthy(auth["Authorizers"]) || truthy(auth["ApiKeyRequired"])) {
			return docErr(n, "securityDefinitions must be a dictionary.")
		}
		if rp := auth["ResourcePolicy"]; truthy(rp) {
			m, ok := rp.(map[string]any)
			if !ok {
				return docErr(n, "ResourcePolicy must be a map (ResourcePolicyStatement).")
			}
			// written for each path of the definition, the source VPC lists as they are
			paths, _ := object(body)["paths"].(map[string]any)
			if len(paths) > 0 || body == nil && len(eventPaths) > 0 {
				for _, k := range []string{"SourceVpcBlacklist", "SourceVpcWhitelist"} {
					list, _ := m[k].([]any)
					for _, v := range list {
						if _, ok := v.(string); !ok {
							kind := strings.TrimPrefix(k, "SourceVpc")
							return docErr(n, fmt.Sprintf("%s must be a list of strings. Use IntrinsicVpc%s instead for values that use Intrinsic Functions", k, kind))
						}
					}
				}
			}
		}
	}
	if err := gatewayResponses(n, props["GatewayResponses"]); err != nil {
		return err
	}
	if hasAuth && auth["UsagePlan"] != nil {
		plan, ok := auth["UsagePlan"].(map[string]any)
		if !ok {
			return samErr(n, "'UsagePlan' must be a dictionary")
		}
		for _, k := range sortedKeys(plan) {
			if !slices.Contains(usagePlanKeys, k) {
				return samErr(n, "Invalid property for 'UsagePlan'")
			}
		}
		// a Ref of a parameter the translator resolves to its Default first: judged by
		// CloudFormation's parameter checks
		switch create := plan["CreateUsagePlan"]; {
		case create == nil:
			return samErr(n, "'CreateUsagePlan' is a required field for UsagePlan.")
		case isIntrinsic(create), create == "SHARED", create == "PER_API", create == "NONE":
		default:
			return samErr(n, "'CreateUsagePlan' accepts one of ['SHARED', 'PER_API', 'NONE'].")
		}
	}
	return nil
}

// authorizers checks Auth.Authorizers (and DefaultAuthorizer, which names one of them).
func authorizers(n string, auth, props map[string]any) error {
	def := auth["DefaultAuthorizer"]
	named := map[string]bool{}
	if def == "AWS_IAM" {
		named["AWS_IAM"] = true
	}
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
			if err := authorizer(n, name, a); err != nil {
				return err
			}
			named[name] = true
		}
	}
	if len(named) == 0 || !truthy(def) {
		return nil
	}
	s, ok := def.(string)
	if !ok {
		return samErr(n, "DefaultAuthorizer is not a string.")
	}
	if !named[s] {
		return samErr(n, "Unable to set DefaultAuthorizer because '%s' was not defined in 'Authorizers'.", s)
	}
	// the default is set on every method of the definition
	if body, ok := props["DefinitionBody"].(map[string]any); ok {
		if err := methodMaps(n, body, "summary", "description", "parameters"); err != nil {
			return err
		}
		return methodSecurity(n, body, auth["AddDefaultAuthorizerToCorsPreflight"] != false)
	}
	return nil
}

// methodSecurity refuses what SwaggerEditor.set_path_default_authorizer refuses of the
// methods it sets a DefaultAuthorizer on (each with an integration; options only when the
// default is added to CORS preflights): a security that is not a list of maps.
func methodSecurity(n string, body map[string]any, preflight bool) error {
	paths, _ := body["paths"].(map[string]any)
	for _, path := range sortedKeys(paths) {
		items, _ := conditional(n, paths[path]) // methodMaps checked them
		for _, it := range items {
			item := object(it)
			for _, method := range sortedKeys(item) {
				name := strings.ToLower(method)
				if name == "any" {
					name = "x-amazon-apigateway-any-method"
				}
				if slices.Contains([]string{"summary", "description", "parameters"}, method) || !preflight && name == "options" {
					continue
				}
				defs, _ := conditional(n, item[method])
				for _, d := range defs {
					def := object(d)
					if !truthy(def["x-amazon-apigateway-integration"]) {
						continue
					}
					security, set := def["security"]
					if !set {
						continue
					}
					list, ok := security.([]any)
					if !ok {
						return docErr(n, fmt.Sprintf("Type of security for path %s method %s must be a list", path, name))
					}
					for _, s := range list {
						if _, ok := s.(map[string]any); !ok {
							return docErr(n, fmt.Sprintf("%s in Security for path %s method %s is not a valid dictionary.", pyValue(s), path, name))
						}
					}
				}
			}
		}
	}
	return nil
}

// authorizer checks one authorizer of an Api: its payload type, its identity (a map,
// naming a source for a REQUEST authorizer, each a list of strings), scopes and
// permissions.
func authorizer(n, name string, a map[string]any) error {
	payload := a["FunctionPayloadType"]
	if payload != nil && payload != "TOKEN" && payload != "REQUEST" {
		return samErr(n, "%s Authorizer has invalid 'FunctionPayloadType': %s.", name, pyValue(payload))
	}
	identity := a["Identity"]
	if payload == "REQUEST" && missingIdentitySource(identity) {
		if truthy(identity) {
			if _, ok := identity.(map[string]any); !ok {
				return samErr(n, "Property 'Authorizer.%s.Identity' should be a map.", name)
			}
		}
		return samErr(n, "%s Authorizer must specify Identity with at least one of Headers, QueryStrings, StageVariables, or Context.", name)
	}
	if s, ok := a["AuthorizationScopes"]; ok && s != nil {
		if _, ok := s.([]any); !ok {
			return samErr(n, "Property 'Authorizers.%s.AuthorizationScopes' should be a list.", name)
		}
	}
	if d, ok := a["DisableFunctionDefaultPermissions"]; ok && d != nil {
		if _, ok := d.(bool); !ok {
			return samErr(n, "Property 'Authorizers.%s.DisableFunctionDefaultPermissions' should be a boolean.", name)
		}
	}
	lambda := !truthy(a["UserPoolArn"])
	if lambda && payload == "REQUEST" {
		id, _ := identity.(map[string]any)
		for _, k := range []string{"Headers", "QueryStrings", "StageVariables", "Context"} {
			if !truthy(id[k]) {
				continue
			}
			list, ok := id[k].([]any)
			if !ok {
				return samErr(n, "Property 'Auth.Authorizers.%s.Identity.%s' should be a list.", name, k)
			}
			for i, it := range list {
				if _, ok := it.(string); !ok {
					return samErr(n, "Property 'Auth.Authorizers.%s.Identity.%s[%d]' should be a string.", name, k, i)
				}
			}
		}
		return nil
	}
	if truthy(identity) {
		if _, ok := identity.(map[string]any); !ok {
			return samErr(n, "Auth.Authorizers.<Authorizer>.Identity must be a dict (LambdaTokenAuthorizationIdentity, LambdaRequestAuthorizationIdentity or CognitoAuthorizationIdentity).")
		}
	}
	return nil
}

// missingIdentitySource is ApiGatewayAuthorizer._is_missing_identity_source for an
// identity that is a map (any other is reported by the caller): no Headers, QueryStrings,
// StageVariables or Context, unless ReauthorizeEvery is 0 (caching off needs no source).
func missingIdentitySource(identity any) bool {
	if !truthy(identity) {
		return true
	}
	id, ok := identity.(map[string]any)
	if !ok {
		return true
	}
	missing := !truthy(id["Headers"]) && !truthy(id["QueryStrings"]) && !truthy(id["StageVariables"]) && !truthy(id["Context"])
	ttl, ok := pyInt(id["ReauthorizeEvery"])
	if !ok {
		return missing
	}
	return ttl > 0 && missing
}

// pyInt is Python's int() of a decoded value, ok false where it raises.
func pyInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case float64:
		return int(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		i, err := strconv.Atoi(x)
		return i, err == nil
	}
	return 0, false
}

// gatewayResponseKeys are the keys of a gateway response (GatewayResponseProperties), and
// responseParameterKeys those of its ResponseParameters.
var (
	gatewayResponseKeys   = []string{"ResponseParameters", "ResponseTemplates", "StatusCode"}
	responseParameterKeys = []string{"Headers", "Paths", "QueryStrings"}
	statusCode            = regexp.MustCompile(`^[0-9]{1,3}$`)
)

// gatewayResponses checks an Api's GatewayResponses: each a map (no intrinsic function) of
// the keys a response takes, its ResponseParameters a map of Headers, Paths and
// QueryStrings maps, and its StatusCode of one to three digits.
func gatewayResponses(n string, v any) error {
	responses, ok := v.(map[string]any)
	if !truthy(v) || !ok {
		return nil
	}
	keys := sortedKeys(responses)
	for _, k := range keys {
		r := responses[k]
		if isIntrinsic(r) {
			return samErr(n, "Unable to set GatewayResponses attribute because intrinsic functions are not supported for this field.")
		}
		m, ok := r.(map[string]any)
		if !ok {
			return samErr(n, "Invalid property type '%s' for GatewayResponses. Expected an object of type 'GatewayResponse'.", pyType(r))
		}
		for _, rk := range sortedKeys(m) {
			if !slices.Contains(gatewayResponseKeys, rk) {
				return samErr(n, "Invalid property '%s' in 'GatewayResponses' property '%s'.", rk, k)
			}
		}
	}
	for _, k := range keys {
		m := responses[k].(map[string]any)
		params := m["ResponseParameters"]
		if truthy(params) {
			pm, ok := params.(map[string]any)
			if !ok {
				return samErr(n, "Property 'GatewayResponses.%s.ResponseParameters' should be a map.", k)
			}
			for _, pk := range sortedKeys(pm) {
				if !slices.Contains(responseParameterKeys, pk) {
					return samErr(n, "Invalid gateway response parameter '%s'", pk)
				}
			}
		}
		if code := m["StatusCode"]; truthy(code) && !statusCode.MatchString(pyValue(code)) {
			return samErr(n, "Property 'StatusCode' must be numeric")
		}
		pm, _ := params.(map[string]any)
		for _, pk := range responseParameterKeys {
			if p, ok := pm[pk]; ok {
				if _, isMap := p.(map[string]any); !isMap {
					return samErr(n, "Property 'ResponseParameters.%s' should be a map.", pk)
				}
			}
		}
	}
	return nil
}

// pyType is the name of a decoded value's Python type, as the translator prints it.
func pyType(v any) string {
	switch x := v.(type) {
	case string:
		return "str"
	case bool:
		return "bool"
	case int:
		return "int"
	case float64:
		if x == float64(int64(x)) {
			return "int"
		}
		return "float"
	case []any:
		return "list"
	case nil:
		return "NoneType"
	}
	return "dict"
}

// pyValue is Python's str of a decoded value (True, 401, text).
func pyValue(v any) string {
	switch x := v.(type) {
	case bool:
		if x {
			return "True"
		}
		return "False"
	case float64:
		if x == float64(int64(x)) {
			return strconv.FormatInt(int64(x), 10)
		}
	}
	return fmt.Sprint(v)
}

// eventAuth checks an Api event's Auth against its API's (PushApi.add_auth_to_swagger and
// the request model's validators): the authorizer the event names must be one of the
// API's (AWS_IAM aside), NONE needs a DefaultAuthorizer to lift, AuthorizationScopes need
// an Authorizer, ApiKeyRequired false needs the API to require keys, and a RequestModel's
// ValidateBody and ValidateParameters are booleans. apiProps are the API's properties,
// Globals merged. The translator writes an event into the definition it makes of the
// events (an API without DefinitionBody or DefinitionUri, or MergeDefinitions), and into an
// inline DefinitionBody only the Auth of an event that sets OverrideApiAuth, which then
// needs something to override with.
func eventAuth(id, event, method, path string, props, apiProps map[string]any) error {
	if apiProps["DefinitionUri"] != nil && apiProps["DefinitionBody"] == nil {
		return nil
	}
	managed := apiProps["DefinitionBody"] == nil || truthy(apiProps["MergeDefinitions"])
	auth, hasAuth := props["Auth"].(map[string]any)
	hasAuth = hasAuth && truthy(props["Auth"])
	override := apiProps["DefinitionBody"] != nil && hasAuth && truthy(auth["OverrideApiAuth"])
	if override && !truthy(auth["Authorizer"]) && !truthy(auth["ApiKeyRequired"]) && !truthy(auth["ResourcePolicy"]) {
		return eventErr(id, event, "Must define one of: Authorizer, ApiKeyRequired or ResourcePolicy when using the OverrideApiAuth property.")
	}
	if !managed && !override {
		return nil
	}
	where := fmt.Sprintf("on API method [%s] for path [%s]", method, path)
	apiAuth, _ := apiProps["Auth"].(map[string]any)
	if hasAuth {
		authz := auth["Authorizer"]
		defined := apiAuth["Authorizers"]
		switch {
		case !truthy(authz), authz == "AWS_IAM":
		case authz == "NONE":
			if !truthy(apiAuth["DefaultAuthorizer"]) {
				return eventErr(id, event, "Unable to set Authorizer "+where+" because 'NONE' is only a valid value when a DefaultAuthorizer on the API is specified.")
			}
		case !truthy(defined):
			return eventErr(id, event, fmt.Sprintf("Unable to set Authorizer [%s] %s because the related API does not define any Authorizers.", pyValue(authz), where))
		default:
			m, isMap := defined.(map[string]any)
			s, isStr := authz.(string)
			if !isMap || !isStr {
				return eventErr(id, event, fmt.Sprintf("Unable to set Authorizer [%s] %s. The method authorizer must be a string with a corresponding dict entry in the api authorizer.", pyValue(authz), where))
			}
			if !truthy(m[s]) {
				return eventErr(id, event, fmt.Sprintf("Unable to set Authorizer [%s] %s because it wasn't defined in the API's Authorizers.", s, where))
			}
		}
		if truthy(auth["AuthorizationScopes"]) && !truthy(authz) {
			return eventErr(id, event, "AuthorizationScopes works only when Authorizer is set")
		}
		if k, set := auth["ApiKeyRequired"]; set && k != nil && !truthy(k) && !truthy(apiAuth["ApiKeyRequired"]) {
			return eventErr(id, event, "Unable to set ApiKeyRequired [False] "+where+" because the related API does not specify any ApiKeyRequired.")
		}
	}
	if rm := props["RequestModel"]; truthy(rm) && managed {
		model, ok := rm.(map[string]any)
		if !ok {
			return eventErr(id, event, "Property 'RequestModel' should be a map.")
		}
		if name := model["Model"]; truthy(name) {
			on := fmt.Sprintf("Unable to set RequestModel [%s] %s because ", pyValue(name), where)
			models := apiProps["Models"]
			m, isMap := models.(map[string]any)
			s, isStr := name.(string)
			switch {
			case !truthy(models):
				return eventErr(id, event, on+"the related API does not define any Models.")
			case !isIntrinsic(models) && !isMap:
				return eventErr(id, event, on+"the related API Models defined is of invalid type.")
			case !isStr:
				return eventErr(id, event, on+"the related API does not contain valid Models.")
			case !truthy(m[s]):
				return eventErr(id, event, on+"it wasn't defined in the API's Models.")
			}
			body, params := model["ValidateBody"], model["ValidateParameters"]
			if body != nil || params != nil {
				_, b1 := orAnyValue(body, false).(bool)
				_, b2 := orAnyValue(params, false).(bool)
				if !b1 || !b2 {
					return eventErr(id, event, fmt.Sprintf("Unable to set Validator to RequestModel [%s] %s ValidateBody and ValidateParameters must be a boolean type, strings or intrinsics are not supported.", s, where))
				}
			}
		}
	}
	return nil
}

// conditional is BaseEditor.get_conditional_contents: the branches of an Fn::If but
// AWS::NoValue, or the item itself.
func conditional(n string, item any) ([]any, error) {
	m, ok := item.(map[string]any)
	if !ok || m["Fn::If"] == nil {
		return []any{item}, nil
	}
	branches, ok := m["Fn::If"].([]any)
	if !ok {
		return nil, docErr(n, "Value of Fn::If must be a list.")
	}
	var out []any
	for _, b := range branches[min(1, len(branches)):] {
		if object(b)["Ref"] != "AWS::NoValue" {
			out = append(out, b)
		}
	}
	return out, nil
}

// methodMaps refuses, as the translator's editor does when it walks every method of a
// definition (to set a DefaultAuthorizer on each), a method whose definition is not a map;
// excluded are the keys of a Swagger path item that are no methods.
func methodMaps(n string, body map[string]any, excluded ...string) error {
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
				if slices.Contains(excluded, method) {
					continue
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

// httpAuthKeys are the keys of an HttpApi's Auth.
var httpAuthKeys = []string{"Authorizers", "DefaultAuthorizer", "EnableIamAuthorizer"}

// corsKeys are the keys of an Api's Cors and of an HttpApi's CorsConfiguration (each
// generator's CorsProperties).
var (
	restCorsKeys = []string{"AllowMethods", "AllowHeaders", "AllowOrigin", "MaxAge", "AllowCredentials"}
	httpCorsKeys = []string{"AllowMethods", "AllowHeaders", "AllowOrigins", "MaxAge", "ExposeHeaders", "AllowCredentials"}
)

// corsSettings refuses, as ApiGenerator._add_cors and HttpApiGenerator._add_cors do, a CORS
// setting that is neither text nor an intrinsic function nor a map (a boolean for an
// HttpApi), and a map with a key CORS does not take.
func corsSettings(n string, cors any, http bool) error {
	if !truthy(cors) || isIntrinsic(cors) {
		return nil
	}
	keys := restCorsKeys
	if http {
		keys = httpCorsKeys
	}
	switch c := cors.(type) {
	case string:
		if !http {
			return nil
		}
	case bool:
		if http {
			return nil
		}
	case map[string]any:
		for _, k := range sortedKeys(c) {
			if !slices.Contains(keys, k) {
				return samErr(n, "Invalid key '%s' for 'Cors' property.", k)
			}
		}
		return nil
	}
	if http {
		return samErr(n, "Invalid value for 'Cors' property.")
	}
	return samErr(n, "Invalid value for 'Cors' property")
}
