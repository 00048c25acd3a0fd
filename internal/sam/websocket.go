package sam

import (
	"regexp"
	"strings"
	"unicode"
)

// invalidBasePath is a character the translator refuses in a base path.
var invalidBasePath = regexp.MustCompile(`[^0-9a-zA-Z/\-_]`)

// websocketRules are the translator's rules of an AWS::Serverless::WebSocketApi, which
// cairn's transform does not expand (aws-sam-translator 1.110.0: SamWebSocketApi and
// model/api/websocket_api_generator.py), in the translator's order: required properties,
// routes, IpAddressType, mutual TLS, auth without a $connect route, the stage name, then
// each route's key, request parameters, auth and function.
func websocketRules(name string, props map[string]any) error {
	for _, p := range []string{"Routes", "RouteSelectionExpression"} {
		if props[p] == nil {
			return samErr(name, "Missing required property '%s'.", p)
		}
	}
	routes, _ := props["Routes"].(map[string]any)
	if len(routes) == 0 {
		return samErr(name, "WebSocket API must have at least one route.")
	}
	if ip, ok := props["IpAddressType"].(string); ok && ip != "ipv4" && ip != "dualstack" {
		return samErr(name, "IpAddressType must be 'ipv4' or 'dualstack'.")
	}
	if truthy(object(props["Domain"])["MutualTlsAuthentication"]) {
		return samErr(name, "Mutual TLS domain name association is not supported for Websocket APIs.")
	}
	// each base path becomes an API mapping (ApiGatewayV2Generator._construct_basepath_mappings);
	// a Ref the translator may resolve to a parameter's Default first is left to the deploy
	for _, p := range basePaths(object(props["Domain"])) {
		s, ok := p.(string)
		if _, isRef := object(p)["Ref"]; !ok && !isRef {
			return samErr(name, "Basepath must be a string.")
		}
		if ok && invalidBasePath.MatchString(s) {
			return samErr(name, "Invalid Basepath name provided.")
		}
	}
	auth := object(props["Auth"])
	if _, connect := routes["$connect"]; truthy(auth) && !connect {
		return samErr(name, "Authorization is only available if there is a $connect route.")
	}
	if props["StageName"] == "$default" {
		return samErr(name, "Stages cannot be named $default for WebSocket APIs.")
	}
	for _, key := range sortedKeys(routes) {
		if err := websocketRoute(name, key, object(routes[key]), auth); err != nil {
			return err
		}
	}
	return nil
}

func websocketRoute(name, key string, spec, auth map[string]any) error {
	switch key {
	case "$connect", "$disconnect", "$default":
	default:
		if key == "" || strings.IndexFunc(key, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) >= 0 {
			return samErr(name, "Route key '%s' must be alphanumeric. Only $connect, $disconnect, and $default special routes are supported.", key)
		}
	}
	if truthy(spec["RequestParameters"]) && key != "$connect" {
		return samErr(name, "Request parameters are only supported for the $connect route in WebSocket APIs.")
	}
	if truthy(auth) {
		typ, _ := auth["AuthType"].(string)
		switch strings.ToUpper(typ) {
		case "":
			return samErr(name, "AuthType must be specified for additional auth configurations.")
		case "CUSTOM":
			if !truthy(auth["AuthArn"]) {
				return samErr(name, "AuthArn must be specified if AuthType is CUSTOM.")
			}
		case "AWS_IAM", "NONE":
			if len(auth) > 1 {
				return samErr(name, "No additional configurations supported for AuthType %s.", strings.ToUpper(typ))
			}
		default:
			return samErr(name, "AuthType is not one of AWS_IAM, CUSTOM or NONE.")
		}
	}
	if _, ok := spec["FunctionArn"]; !ok {
		return samErr(name, "Route must have associated function.")
	}
	return nil
}
