package sam

import (
	"crypto/sha1"
	"encoding/hex"
	"regexp"
	"strings"
)

// APIs of the Serverless transform: the REST API (AWS::ApiGateway::RestApi with a
// Deployment and a Stage) and HTTP API (AWS::ApiGatewayV2::Api with a Stage) that Api and
// HttpApi events and AWS::Serverless::Api and ::HttpApi resources make. The emulator
// records them (API Gateway itself is not emulated), with the logical ids SAM gives them.

const (
	implicitREST = "ServerlessRestApi"
	implicitHTTP = "ServerlessHttpApi"
)

func (t *sam) paths(api string) map[string]any {
	if t.restAPI == nil {
		t.restAPI = map[string]any{}
	}
	p, _ := t.restAPI[api].(map[string]any)
	if p == nil {
		p = map[string]any{}
		t.restAPI[api] = p
	}
	return p
}

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// addRoute adds a function's aws_proxy integration at path and method to api.
func (t *sam) addRoute(api, fn, event, path, method string, http bool) error {
	if t.apiOrigins == nil {
		t.apiOrigins = map[string]string{}
	}
	if _, ok := t.apiOrigins[api]; !ok {
		t.apiOrigins[api] = fn
	}
	paths := t.paths(api)
	key := strings.ToLower(method)
	if key == "any" {
		key = "x-amazon-apigateway-any-method"
	}
	item, _ := paths[path].(map[string]any)
	if item == nil {
		item = map[string]any{}
		paths[path] = item
	}
	if _, dup := item[key]; dup {
		return samErr(fn, "Event with id [%s] is invalid. Lambda integration already exists on Path=%s, Method=%s", event, path, method)
	}
	uri := "arn:aws:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/${" + fn + ".Arn}/invocations"
	integration := map[string]any{"type": "aws_proxy", "httpMethod": "POST"}
	if http {
		uri = "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/${" + fn + ".Arn}/invocations"
		integration["payloadFormatVersion"] = "2.0"
	}
	integration["uri"] = map[string]any{"Fn::Sub": uri}
	op := map[string]any{"x-amazon-apigateway-integration": integration, "responses": map[string]any{}}
	if http && path == "$default" {
		op["isDefaultRoute"] = true
	}
	item[key] = op
	return nil
}

// permissionSource is the execute-api ARN a permission lets invoke the function.
func permissionSource(partition bool, api, method, path string) any {
	return permissionSourceOf(partition, ref(api), method, path)
}

// permissionSourceOf is permissionSource of an API given by id or intrinsic.
func permissionSourceOf(partition bool, api any, method, path string) any {
	m := strings.ToUpper(method)
	if m == "ANY" {
		m = "*"
	}
	prefix := "arn:aws:execute-api:"
	if partition {
		prefix = "arn:${AWS::Partition}:execute-api:"
	}
	resource := "${__ApiId__}/${__Stage__}/" + m + pathParam.ReplaceAllString(path, "*")
	if method == "" {
		resource = "${__ApiId__}/${__Stage__}/*"
	}
	return sub(prefix+"${AWS::Region}:${AWS::AccountId}:"+resource, map[string]any{"__ApiId__": api, "__Stage__": "*"})
}

func (t *sam) permission(id, suffix string, fn any, extra, attrs map[string]any) {
	pp := map[string]any{"Action": "lambda:InvokeFunction", "FunctionName": fn}
	for k, v := range extra {
		pp[k] = v
	}
	t.put(id+"Permission"+suffix, "AWS::Lambda::Permission", pp, copyAttrs(attrs))
}

// explicitAPI returns the AWS::Serverless::Api or ::HttpApi an event's RestApiId or ApiId
// names, with a Ref or by its logical id as a string (as the translator reads it), or
// fails. The translator also takes an HttpApi event naming any other resource of the
// template, and an Api event naming any but an HttpApi, which cairn's does not expand.
func (t *sam) explicitAPI(fn, event, prop, typ string, v any) (string, map[string]any, error) {
	n, isStr := v.(string)
	if !isStr {
		n, _ = object(v)["Ref"].(string)
	}
	r := object(t.resources[n])
	switch other := typeOfRaw(r); {
	case n != "" && other == typ:
		return n, r, nil
	case n != "" && r != nil && (typ == "AWS::Serverless::HttpApi" || other != "AWS::Serverless::HttpApi"):
		return "", nil, unsupported(fn, "Event with id [%s]: %s names %s, a %s: cairn's Serverless translator expands an event on an %s only", event, prop, n, other, typ)
	}
	return "", nil, samErr(fn, "Event with id [%s] is invalid. %s must be a valid reference to an '%s' resource in same template.", event, prop, typ)
}

func (t *sam) apiEvent(f fnRefs, name string, p, attrs map[string]any) error {
	path, _ := p["Path"].(string)
	method, _ := p["Method"].(string)
	if path == "" || method == "" {
		return samErr(f.name, "Event with id [%s] is invalid. Missing required property 'Path' or 'Method'.", name)
	}
	api, suffix := implicitREST, "Prod"
	if v, ok := p["RestApiId"]; ok {
		// an AWS::Serverless::Api of the template gets the route; any other API (a RestApi
		// of the template, an API id) only the permission to invoke the function
		n, _ := object(v)["Ref"].(string)
		if s, isStr := v.(string); isStr {
			n = s
		}
		r := object(t.resources[n])
		if _, isStr := v.(string); !isStr && n == "" {
			return eventErr(f.name, name, "Property 'RestApiId' should be a string.")
		}
		// the translator looks the API up in the template, and refuses one it has not,
		// or an HttpApi; a StageName of the API must not be empty
		if r == nil || typeOfRaw(r) == "AWS::Serverless::HttpApi" {
			return eventErr(f.name, name, "RestApiId must be a valid reference to an 'AWS::Serverless::Api' resource in same template.")
		}
		if s, ok := object(r["Properties"])["StageName"].(string); ok && s == "" {
			return samErr(n, "StageName cannot be empty.")
		}
		if typeOfRaw(r) != "AWS::Serverless::Api" {
			t.permission(f.name+name, "Stage", f.ref, map[string]any{"Principal": "apigateway.amazonaws.com",
				"SourceArn": permissionSourceOf(false, v, method, path)}, attrs)
			return nil
		}
		api, suffix = n, "Stage"
		if s, ok := object(r["Properties"])["StageName"].(string); ok && alnum(s) == s && s != "" {
			suffix = s
		}
	}
	apiProps := t.globals["Api"]
	if api != implicitREST {
		apiProps = t.props(api, "Api")
	}
	if err := eventAuth(f.name, name, method, path, p, apiProps); err != nil {
		return err
	}
	if err := t.addRoute(api, f.name, name, path, method, false); err != nil {
		return err
	}
	t.permission(f.name+name, suffix, f.ref, map[string]any{"Principal": "apigateway.amazonaws.com", "SourceArn": permissionSource(false, api, method, path)}, attrs)
	return nil
}

func (t *sam) httpAPIEvent(f fnRefs, name string, p, attrs map[string]any) error {
	path, _ := p["Path"].(string)
	method, _ := p["Method"].(string)
	api := implicitHTTP
	if v, ok := p["ApiId"]; ok {
		n, _, err := t.explicitAPI(f.name, name, "ApiId", "AWS::Serverless::HttpApi", v)
		if err != nil {
			return err
		}
		// the translator reads the API's own definition for the event's permission
		if body := t.props(n, "HttpApi")["DefinitionBody"]; truthy(body) {
			if err := openAPIEditor(n, body); err != nil {
				return err
			}
		}
		api = n
	}
	route, routeMethod := path, method
	if path == "" && method == "" {
		route, routeMethod = "$default", "any"
	} else if path == "" || method == "" {
		return samErr(f.name, "Event with id [%s] is invalid. Event is missing key 'Path' or 'Method'.", name)
	}
	if err := t.addRoute("http:"+api, f.name, name, route, routeMethod, true); err != nil {
		return err
	}
	t.permission(f.name+name, "", f.ref, map[string]any{"Principal": "apigateway.amazonaws.com", "SourceArn": permissionSource(true, api, method, path)}, attrs)
	return nil
}

// restAPIResource and httpAPIResource are made when every function added its routes.
func (t *sam) restAPIResource(string) error { return nil }
func (t *sam) httpAPIResource(string) error { return nil }

func (t *sam) implicitAPIs() error {
	if p, ok := t.restAPI[implicitREST].(map[string]any); ok {
		t.cur = t.apiOrigins[implicitREST]
		// the translator makes the implicit API before it merges the Globals, so it takes
		// them all, over a definition SAM writes of the events (a DefinitionUri among them
		// is refused beside it)
		props := map[string]any{}
		if g := copyProps(t.globals["Api"]); g != nil {
			props = g
		}
		props["StageName"] = "Prod"
		if truthy(props["DefinitionUri"]) {
			return samErr(implicitREST, "Specify either 'DefinitionUri' or 'DefinitionBody' property and not both.")
		}
		if err := t.makeRESTAPI(implicitREST, props, p, nil); err != nil {
			return err
		}
	}
	if p, ok := t.restAPI["http:"+implicitHTTP].(map[string]any); ok {
		t.cur = t.apiOrigins["http:"+implicitHTTP]
		if err := t.makeHTTPAPI(implicitHTTP, map[string]any{}, p, nil); err != nil {
			return err
		}
	}
	for _, n := range sortedKeys(t.resources) {
		r := object(t.resources[n])
		t.cur = n
		switch typeOfRaw(r) {
		case "AWS::Serverless::Api":
			p, _ := t.restAPI[n].(map[string]any)
			if err := t.makeRESTAPI(n, t.props(n, "Api"), p, r); err != nil {
				return err
			}
		case "AWS::Serverless::HttpApi":
			p, _ := t.restAPI["http:"+n].(map[string]any)
			if err := t.makeHTTPAPI(n, t.props(n, "HttpApi"), p, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// definition is an API's OpenAPI body: its DefinitionBody with the events' routes added,
// or one made of them.
func definition(props map[string]any, paths map[string]any, skeleton map[string]any) map[string]any {
	body, _ := props["DefinitionBody"].(map[string]any)
	if body == nil {
		body = skeleton
	}
	if len(paths) > 0 {
		have, _ := body["paths"].(map[string]any)
		if have == nil {
			have = map[string]any{}
		}
		for k, v := range paths {
			if _, ok := have[k]; !ok {
				have[k] = v
			}
		}
		body["paths"] = have
	}
	return body
}

func (t *sam) makeRESTAPI(n string, props, paths map[string]any, r map[string]any) error {
	if err := inlineOnly(n, props, true); err != nil {
		return err
	}
	if err := swaggerPaths(n, props, paths); err != nil {
		return err
	}
	if a, ok := props["Auth"]; ok { // the translator resolves Refs of parameters in it first
		props["Auth"] = t.resolveParamRefs(a)
	}
	if err := restAuth(n, props, paths); err != nil {
		return err
	}
	cors := props["Cors"]
	if err := corsSettings(n, cors, false); err != nil {
		return err
	}
	if err := restDefinitionEdits(n, props); err != nil {
		return err
	}
	// CORS is added to each path: an origin it allows is required (SwaggerEditor.add_cors)
	if c, ok := cors.(map[string]any); ok && !isIntrinsic(c) {
		bodyPaths, _ := object(props["DefinitionBody"])["paths"].(map[string]any)
		if origin, set := c["AllowOrigin"]; set && !truthy(origin) && (len(bodyPaths) > 0 || props["DefinitionBody"] == nil && len(paths) > 0) {
			return samErr(n, "Structure of the SAM template is invalid. Invalid input. Value for AllowedOrigins is required")
		}
	}
	title := props["Name"]
	if title == nil {
		title = ref("AWS::StackName")
	}
	body := definition(props, paths, map[string]any{"swagger": "2.0", "info": map[string]any{"version": "1.0", "title": title}, "paths": map[string]any{}})
	ap := map[string]any{"Body": body}
	if uri, ok := props["DefinitionUri"].(string); ok && props["DefinitionBody"] == nil && paths == nil {
		if loc, err := s3Location(n, "DefinitionUri", uri); err == nil {
			ap = map[string]any{"BodyS3Location": map[string]any{"Bucket": loc["S3Bucket"], "Key": loc["S3Key"]}}
		}
	}
	for _, k := range []string{"Name", "Description", "BinaryMediaTypes", "MinimumCompressionSize", "ApiKeySourceType", "DisableExecuteApiEndpoint", "Mode", "FailOnWarnings"} {
		if v, ok := props[k]; ok {
			ap[k] = v
		}
	}
	if ec, ok := props["EndpointConfiguration"]; ok {
		// SAM's {Type, VPCEndpointIds} (or a type alone) in RestApi's words, and the
		// endpointConfigurationTypes parameter the import of the body needs
		m, isMap := ec.(map[string]any)
		if typ := m["Type"]; isMap && typ != nil {
			out := map[string]any{"Types": []any{typ}}
			if m["VPCEndpointIds"] != nil && m["VpcEndpointIds"] != nil {
				return samErr(n, "'VPCEndpointIds' and 'VpcEndpointIds' cannot be used together in EndpointConfiguration.")
			}
			if ids := orAny(m["VPCEndpointIds"], ""); ids != "" {
				out["VpcEndpointIds"] = ids
			} else if ids, ok := m["VpcEndpointIds"]; ok {
				out["VpcEndpointIds"] = ids
			}
			copyKeys(out, m, "IpAddressType")
			ap["EndpointConfiguration"], ap["Parameters"] = out, map[string]any{"endpointConfigurationTypes": typ}
		} else {
			ap["EndpointConfiguration"], ap["Parameters"] = map[string]any{"Types": []any{ec}}, map[string]any{"endpointConfigurationTypes": ec}
		}
	}
	attrs := map[string]any{}
	if r != nil {
		attrs = passthrough(r)
		t.put(n, "AWS::ApiGateway::RestApi", ap, mainAttrs(r))
	} else {
		t.put(n, "AWS::ApiGateway::RestApi", ap, nil)
	}
	sum := sha1.Sum([]byte(pyJSON(ap)))
	digest := hex.EncodeToString(sum[:])
	deployment := n + "Deployment" + digest[:10]
	t.put(deployment, "AWS::ApiGateway::Deployment", map[string]any{"Description": "RestApi deployment id: " + digest, "RestApiId": ref(n), "StageName": "Stage"}, copyAttrs(attrs))
	stageName := props["StageName"]
	stageID := n + "Stage"
	if s, ok := stageName.(string); ok {
		stageID = n + alnum(s) + "Stage"
	}
	sp := map[string]any{"DeploymentId": ref(deployment), "RestApiId": ref(n), "StageName": stageName}
	for _, k := range []string{"Variables", "MethodSettings", "TracingEnabled", "CacheClusterEnabled", "CacheClusterSize", "AccessLogSetting", "CanarySetting"} {
		if v, ok := props[k]; ok {
			sp[k] = v
		}
	}
	t.put(stageID, "AWS::ApiGateway::Stage", sp, copyAttrs(attrs))
	t.referable(n, "Stage", stageID)
	t.referable(n, "Deployment", deployment)
	if d, ok := props["Domain"].(map[string]any); ok {
		return t.restDomain(n, t.resolveParamRefs(d).(map[string]any), attrs)
	}
	return nil
}

func (t *sam) makeHTTPAPI(n string, props, paths map[string]any, r map[string]any) error {
	if err := inlineOnly(n, props, false); err != nil {
		return err
	}
	if err := httpAuth(n, props); err != nil {
		return err
	}
	cors := props["CorsConfiguration"]
	if r == nil {
		cors = t.globals["HttpApi"]["CorsConfiguration"]
	}
	if err := corsSettings(n, cors, true); err != nil {
		return err
	}
	if err := httpDefinitionEdits(n, props, cors); err != nil {
		return err
	}
	tags := map[string]any{}
	if m, ok := props["Tags"].(map[string]any); ok {
		for k, v := range m {
			tags[k] = v
		}
	}
	tags["httpapi:createdBy"] = samTag
	var openTags []any
	for _, k := range sortedKeys(tags) {
		openTags = append(openTags, map[string]any{"name": k, "x-amazon-apigateway-tag-value": tags[k]})
	}
	body := definition(props, paths, map[string]any{"openapi": "3.0.1", "info": map[string]any{"version": "1.0", "title": ref("AWS::StackName")},
		"paths": map[string]any{}, "tags": openTags})
	ap := map[string]any{"Body": body}
	for _, k := range []string{"Description", "DisableExecuteApiEndpoint", "FailOnWarnings", "CorsConfiguration"} {
		if v, ok := props[k]; ok {
			ap[k] = v
		}
	}
	if on, isBool := props["CorsConfiguration"].(bool); isBool { // true: any origin
		delete(ap, "CorsConfiguration")
		if on {
			ap["CorsConfiguration"] = map[string]any{"AllowOrigins": []any{"*"}}
		}
	}
	attrs := map[string]any{}
	if r != nil {
		attrs = passthrough(r)
		t.put(n, "AWS::ApiGatewayV2::Api", ap, mainAttrs(r))
	} else {
		t.put(n, "AWS::ApiGatewayV2::Api", ap, nil)
	}
	stageID, stageName := n+"ApiGatewayDefaultStage", any("$default")
	if v, ok := props["StageName"]; ok {
		stageName = v
		stageID = n + "Stage"
		if s, ok := v.(string); ok {
			stageID = n + alnum(s) + "Stage"
		}
	}
	sp := map[string]any{"ApiId": ref(n), "AutoDeploy": true, "StageName": stageName, "Tags": tags}
	for _, k := range []string{"StageVariables", "AccessLogSettings", "DefaultRouteSettings", "RouteSettings"} {
		if v, ok := props[k]; ok {
			sp[k] = v
		}
	}
	t.put(stageID, "AWS::ApiGatewayV2::Stage", sp, copyAttrs(attrs))
	t.referable(n, "Stage", stageID)
	if d, ok := props["Domain"].(map[string]any); ok {
		return t.httpDomain(n, t.resolveParamRefs(d).(map[string]any), attrs)
	}
	return nil
}
