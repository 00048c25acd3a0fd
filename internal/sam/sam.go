// Package sam expands the AWS::Serverless-2016-10-31 transform: a pure function of a
// template's tree and its parameter values, used by the local emulator's CloudFormation and
// by the template validator (which checks what it generates).
//
// AWS::Serverless-2016-10-31, for the resource types most templates use, expanded the way
// AWS's SAM translator (aws/serverless-application-model) expands them, with the logical
// ids it gives the resources it generates, so that a template's Refs and GetAtts of them
// (FunctionRole, ServerlessRestApi, ...) resolve as in AWS:
//
//   - Function: the AWS::Lambda::Function, its execution role FunctionRole unless Role is
//     given (managed policies, inline policy statements and common policy templates), a
//     Version and Alias for AutoPublishAlias, and its event sources: SQS, Kinesis and
//     DynamoDB (FunctionEvent event source mappings), SNS (a subscription and a
//     permission), S3 (the bucket's notification and a permission), Schedule and
//     EventBridgeRule/CloudWatchEvent (a rule and a permission), Api (the implicit
//     ServerlessRestApi, its deployment and Prod stage, a permission per event) and
//     HttpApi (the implicit ServerlessHttpApi and its $default stage);
//   - SimpleTable, LayerVersion (a content-hashed logical id, Refs renamed), Api, HttpApi;
//   - Globals for those types.
//
// Other Serverless types and event sources fail the transform with a message saying so.
// The hash suffix of an API's Deployment is of the emulator's own OpenAPI body, not AWS's.
package sam

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

const samTag = "SAM"

type sam struct {
	params    map[string]any // the template's parameter values
	mappings  map[string]any // the template's Mappings, which Fn::FindInMap reads
	resources map[string]any // the template's Resources, rewritten in place
	globals   map[string]map[string]any
	renames   map[string]string // layer logical ids to their hashed ones
	restAPI   map[string]any    // the OpenAPI paths events add, by API logical id ("http:" for HTTP APIs)
	// refs are the generated resources a template may name as LOGICALID.PROPERTY (Fn.Alias,
	// MyApi.Stage), by Serverless resource and property.
	refs map[string]map[string]string
	// original are the types the template gave its resources, by logical id.
	original map[string]string
	// cur is the Serverless resource being expanded; origins are, by logical id, the
	// Serverless resource each generated one was made for (apiOrigins for implicit APIs).
	cur                 string
	origins, apiOrigins map[string]string
	dup                 error // a generated resource under another's logical id (collides)
}

// referable records that id.prop names the generated resource gen.
func (t *sam) referable(id, prop, gen string) {
	if t.refs == nil {
		t.refs = map[string]map[string]string{}
	}
	if t.refs[id] == nil {
		t.refs[id] = map[string]string{}
	}
	t.refs[id][prop] = gen
}

// resolveResourceRefs points Ref, Fn::GetAtt and Fn::Sub of LOGICALID.PROPERTY at the
// generated resource it names, as the translator's resource reference resolver does:
// {"Ref": "Fn.Alias"} becomes {"Ref": "FnAliaslive"}, "${Fn.Version.Version}" becomes
// "${FnVersion1234567890.Version}".
func resolveResourceRefs(v any, refs map[string]map[string]string) any {
	lookup := func(s string) (string, string, bool) {
		id, rest, ok := strings.Cut(s, ".")
		if !ok {
			return "", "", false
		}
		prop, attr, _ := strings.Cut(rest, ".")
		gen, ok := refs[id][prop]
		return gen, attr, ok
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			if s, ok := x["Ref"].(string); ok {
				if gen, attr, ok := lookup(s); ok && attr == "" {
					return ref(gen)
				}
				return x
			}
			if l, ok := x["Fn::GetAtt"].([]any); ok && len(l) >= 2 {
				parts := make([]string, 0, len(l))
				for _, p := range l {
					s, isStr := p.(string)
					if !isStr {
						parts = nil
						break
					}
					parts = append(parts, s)
				}
				if gen, attr, ok := lookup(strings.Join(parts, ".")); ok && attr != "" {
					return getAtt(gen, attr)
				}
			}
			if s, ok := x["Fn::GetAtt"].(string); ok {
				if gen, attr, ok := lookup(s); ok && attr != "" {
					return getAtt(gen, attr)
				}
			}
			if sub, ok := x["Fn::Sub"]; ok {
				replace := func(s string) string {
					return subRefRE.ReplaceAllStringFunc(s, func(m string) string {
						if gen, attr, ok := lookup(m[2 : len(m)-1]); ok {
							if attr != "" {
								gen += "." + attr
							}
							return "${" + gen + "}"
						}
						return m
					})
				}
				switch s := sub.(type) {
				case string:
					x["Fn::Sub"] = replace(s)
				case []any:
					if len(s) > 0 {
						if str, ok := s[0].(string); ok {
							s[0] = replace(str)
						}
					}
					for i := 1; i < len(s); i++ {
						s[i] = resolveResourceRefs(s[i], refs)
					}
				}
				return x
			}
		}
		for k, vv := range x {
			x[k] = resolveResourceRefs(vv, refs)
		}
	case []any:
		for i := range x {
			x[i] = resolveResourceRefs(x[i], refs)
		}
	}
	return v
}

var subRefRE = regexp.MustCompile(`\$\{[^!}][^}]*\}`)

// Transform expands the Serverless resources of m, a template's tree of maps, lists and
// scalars, in place; params are the template's parameter values (a list parameter as a
// []string). The error of a template the translator refuses is an *Error.
func Transform(m map[string]any, params map[string]any) error {
	_, err := Expand(m, params)
	return err
}

// Expand is Transform, and returns for each resource it made the logical id of the
// Serverless resource it made it for (an implicit API: the first function whose event
// needs it).
func Expand(m map[string]any, params map[string]any) (origins map[string]string, err error) {
	t := &sam{params: params, origins: map[string]string{}}
	defer func() {
		if p := recover(); p != nil {
			// a shape the transform did not expect: said, rather than a crashed emulator or validator
			err = &Error{Msg: fmt.Sprintf("Transform AWS::Serverless-2016-10-31 failed in cairn's Serverless translator: %v", p), Unsupported: true}
		}
	}()
	return t.origins, t.expand(m)
}

func (t *sam) expand(m map[string]any) error {
	res, _ := m["Resources"].(map[string]any)
	t.resources, t.globals, t.renames = res, map[string]map[string]any{}, map[string]string{}
	t.mappings, _ = m["Mappings"].(map[string]any)
	if g, ok := m["Globals"]; ok {
		gm, ok := g.(map[string]any)
		if !ok {
			return samErr("", "'Globals' section is invalid. Globals must be a mapping of resource types to properties")
		}
		for _, k := range sortedKeys(gm) {
			v := gm[k]
			switch k {
			case "Function", "Api", "HttpApi", "SimpleTable", "LayerVersion", "StateMachine":
				if err := checkGlobalProperties(k, object(v)); err != nil {
					return err
				}
			case "WebSocketApi", "CapacityProvider":
				if err := checkGlobalProperties(k, object(v)); err != nil {
					return err
				}
				return unsupported("", "'Globals' section is invalid. '%s' is not supported by the local emulator's Serverless translator.", k)
			default:
				return samErr("", "'Globals' section is invalid. '%s' is not supported. Must be one of the following values - [Api, Function, HttpApi, LayerVersion, SimpleTable, StateMachine]", k)
			}
			props, _ := v.(map[string]any)
			t.globals[k] = props
		}
		delete(m, "Globals")
	}
	t.original = map[string]string{}
	for n, r := range res {
		t.original[n] = typeOfRaw(r)
	}
	if err := t.embeddedConnectors(); err != nil {
		return err
	}
	names := sortedKeys(res)
	// layers first: functions and outputs name them by their new logical ids
	for _, n := range names {
		if typeOfRaw(res[n]) == "AWS::Serverless::LayerVersion" {
			t.cur = n
			if err := t.layer(n); err != nil {
				return err
			}
		}
	}
	for _, n := range names {
		if err := t.checkProperties(n, res[n]); err != nil {
			return err
		}
		if err := typeRules(n, typeOfRaw(res[n]), object(object(res[n])["Properties"])); err != nil {
			return err
		}
	}
	for _, n := range names {
		var err error
		t.cur = n
		switch typ := typeOfRaw(res[n]); typ {
		case "AWS::Serverless::Function":
			err = t.function(n)
		case "AWS::Serverless::SimpleTable":
			err = t.simpleTable(n)
		case "AWS::Serverless::Api":
			err = t.restAPIResource(n)
		case "AWS::Serverless::HttpApi":
			err = t.httpAPIResource(n)
		case "AWS::Serverless::StateMachine":
			err = t.stateMachine(n)
		case "AWS::Serverless::Application":
			err = t.application(n)
		case "AWS::Serverless::Connector": // once everything else is expanded
		case "AWS::Serverless::LayerVersion":
		default:
			if strings.HasPrefix(typ, "AWS::Serverless::") {
				err = unsupported(n, "%s is not supported by the local emulator's Serverless translator (it expands Function, StateMachine, Connector, Application, SimpleTable, LayerVersion, Api and HttpApi)", typ)
			}
		}
		if err != nil {
			return err
		}
	}
	if err := t.implicitAPIs(); err != nil {
		return err
	}
	if t.dup != nil {
		return t.dup
	}
	for _, n := range sortedKeys(res) {
		if typeOfRaw(res[n]) == "AWS::Serverless::Connector" {
			t.cur = n
			if err := t.connector(n); err != nil {
				return err
			}
		}
	}
	if len(t.refs) > 0 {
		for k, v := range m {
			if k == "Resources" || k == "Outputs" {
				m[k] = resolveResourceRefs(v, t.refs)
			}
		}
	}
	if len(t.renames) > 0 {
		for k, v := range m {
			if k == "Resources" || k == "Outputs" || k == "Conditions" {
				m[k] = renameRefs(v, t.renames)
			}
		}
	}
	return nil
}

// samErr is a failure of the translator, in its words.
func samErr(logicalID, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if logicalID != "" {
		msg = fmt.Sprintf("Resource with id [%s] is invalid. %s", logicalID, msg)
	}
	return &Error{LogicalID: logicalID, Msg: "Transform AWS::Serverless-2016-10-31 failed with: Invalid Serverless Application Specification document. Number of errors found: 1. " + msg}
}

// unsupported is the failure of what AWS's translator expands and cairn's does not.
func unsupported(logicalID, format string, args ...any) error {
	err := samErr(logicalID, format, args...).(*Error)
	err.Unsupported = true
	return err
}

func typeOfRaw(v any) string {
	s, _ := object(v)["Type"].(string)
	return s
}

// props returns the resource's Properties merged over the Globals of kind, as SAM merges
// them: mappings key by key, lists global then local, anything else the resource's.
func (t *sam) props(name, kind string) map[string]any {
	r := object(t.resources[name])
	local := object(r["Properties"])
	if local == nil {
		local = map[string]any{}
	}
	g := t.globals[kind]
	if g == nil {
		return copyProps(local)
	}
	g = copyProps(g)
	switch ig := r["IgnoreGlobals"].(type) {
	case string: // "*": none of the Globals
		return copyProps(local)
	case []any:
		for _, k := range ig {
			if s, ok := k.(string); ok {
				delete(g, s)
			}
		}
	}
	return mergeGlobal(g, copyProps(local)).(map[string]any)
}

func isIntrinsic(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	for k := range m {
		return k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::")
	}
	return false
}

func mergeGlobal(g, l any) any {
	gm, gok := g.(map[string]any)
	lm, lok := l.(map[string]any)
	if gok && lok && !isIntrinsic(g) && !isIntrinsic(l) {
		for k, v := range lm {
			if gv, ok := gm[k]; ok {
				gm[k] = mergeGlobal(gv, v)
			} else {
				gm[k] = v
			}
		}
		return gm
	}
	gl, gok := g.([]any)
	ll, lok := l.([]any)
	if gok && lok {
		return append(gl, ll...)
	}
	return l
}

// passthrough are the attributes SAM copies from a Serverless resource to the resources it
// generates for it.
func passthrough(r map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"Condition", "DeletionPolicy", "UpdateReplacePolicy"} {
		if v, ok := r[k]; ok {
			out[k] = v
		}
	}
	return out
}

// put adds a generated resource; the Serverless resource's own attributes given in main
// (DependsOn, Metadata) go only to the resource that replaces it.
func (t *sam) put(id, typ string, props map[string]any, attrs map[string]any) {
	t.collides(id, typ)
	if t.origins != nil && t.cur != "" {
		t.origins[id] = t.cur
	}
	r := map[string]any{"Type": typ}
	if props != nil {
		r["Properties"] = props
	}
	for k, v := range attrs {
		r[k] = v
	}
	t.resources[id] = r
}

func mainAttrs(r map[string]any) map[string]any {
	out := passthrough(r)
	for _, k := range []string{"DependsOn", "Metadata"} {
		if v, ok := r[k]; ok {
			out[k] = v
		}
	}
	return out
}

func ref(n string) map[string]any               { return map[string]any{"Ref": n} }
func getAtt(n, a string) map[string]any         { return map[string]any{"Fn::GetAtt": []any{n, a}} }
func sub(s string, vars map[string]any) any     { return map[string]any{"Fn::Sub": []any{s, vars}} }
func managedPolicy(name string) string          { return "arn:aws:iam::aws:policy/" + name }
func keyValue(k string, v any) map[string]any   { return map[string]any{"Key": k, "Value": v} }
func copyAttrs(a map[string]any) map[string]any { return copyProps(a) }

// tagList is SAM's tag list: lambda:createdBy SAM first, then the resource's tags.
func tagList(tags any) []any {
	out := []any{keyValue("lambda:createdBy", samTag)}
	m, _ := tags.(map[string]any)
	for _, k := range sortedKeys(m) {
		out = append(out, keyValue(k, m[k]))
	}
	return out
}

// s3Location turns CodeUri or ContentUri (s3://bucket/key?versionId=v or {Bucket, Key,
// Version}) into a Lambda code or layer content location.
func s3Location(id, prop string, v any) (map[string]any, error) {
	switch x := v.(type) {
	case string:
		// the translator parses the URI before CloudFormation resolves a dynamic
		// reference in it, so it refuses one that spans a path
		if (prop == "CodeUri" || prop == "ContentUri") && strings.Contains(uriDynamicRef.FindString(x), "/") {
			return nil, samErr(id, "Unsupported dynamic reference detected in '%s'. Please consider using alternative 'FunctionCode' object format.", prop)
		}
		rest, ok := strings.CutPrefix(x, "s3://")
		bucket, key, found := strings.Cut(rest, "/")
		// Python's URL parser refuses a bracketed host that is no IP address (an
		// unresolved CDK token, [TOKEN.25]), so the translator sees no S3 URI
		if !ok || !found || bucket == "" || key == "" || strings.ContainsAny(bucket, "[]") {
			return nil, samErr(id, "'%s' is not a valid S3 Uri of the form 's3://bucket/key' with optional versionId query parameter.", prop)
		}
		out := map[string]any{"S3Bucket": bucket}
		key, version, hasVersion := strings.Cut(key, "?versionId=")
		out["S3Key"] = key
		if hasVersion {
			out["S3ObjectVersion"] = version
		}
		return out, nil
	case map[string]any:
		if isIntrinsic(x) || !truthy(x["Bucket"]) || !truthy(x["Key"]) {
			return nil, samErr(id, "'%s' requires Bucket and Key properties to be specified.", prop)
		}
		out := map[string]any{"S3Bucket": x["Bucket"], "S3Key": x["Key"]}
		if v, ok := x["Version"]; ok {
			out["S3ObjectVersion"] = v
		}
		return out, nil
	}
	return nil, samErr(id, "'%s' requires Bucket and Key properties to be specified.", prop)
}

// uriDynamicRef is the translator's pattern of a dynamic reference in a code URI
// (construct_s3_location_object).
var uriDynamicRef = regexp.MustCompile(`{{resolve:(ssm|ssm-secure|secretsmanager):[a-zA-Z0-9_.\-/]+(:\d+)?}}`)

// pyJSON renders v as Python's json.dumps(v, separators=(",", ":"), sort_keys=True) does,
// which SAM hashes into logical ids.
func pyJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	s := strings.TrimSuffix(b.String(), "\n")
	var out strings.Builder
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			out.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&out, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
	}
	return out.String()
}

// logicalHash is SAM's LogicalIdGenerator: the first 10 hex digits of the SHA-1 of the data
// (a string as is, anything else as pyJSON).
func logicalHash(data any) string {
	s, ok := data.(string)
	if !ok {
		s = pyJSON(data)
	}
	if s == "" {
		return ""
	}
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])[:10]
}

// resolveParamRef replaces a Ref to a parameter by its value, as SAM does for the
// properties it must read (a layer's name, a retention policy).
func (t *sam) resolveParamRef(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		if n, ok := m["Ref"].(string); ok {
			if pv, ok := t.params[n]; ok {
				if l, ok := pv.([]string); ok {
					return strings.Join(l, ",")
				}
				return pv
			}
		}
	}
	return v
}

// resolveParamRefs is resolveParamRef throughout v (a copy), as the translator resolves
// the parameters of the settings it reads (a custom domain).
func (t *sam) resolveParamRefs(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if r := t.resolveParamRef(x); !equalJSON(r, x) {
			return r
		}
		out := make(map[string]any, len(x))
		for k, vv := range x {
			out[k] = t.resolveParamRefs(vv)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, vv := range x {
			out[i] = t.resolveParamRefs(vv)
		}
		return out
	}
	return v
}

func orAny(v any, d string) any {
	if v == nil || v == "" {
		return d
	}
	return v
}

// renameRefs points Refs and GetAtts of renamed resources at their new logical ids.
func renameRefs(v any, renames map[string]string) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			if n, ok := x["Ref"].(string); ok {
				if nn, ok := renames[n]; ok {
					return ref(nn)
				}
			}
		}
		for k, vv := range x {
			x[k] = renameRefs(vv, renames)
		}
		switch d := x["DependsOn"].(type) {
		case string:
			if renames[d] != "" {
				x["DependsOn"] = renames[d]
			}
		case []any: // a list of names: each layer's is renamed too
			for i, e := range d {
				if s, ok := e.(string); ok && renames[s] != "" {
					d[i] = renames[s]
				}
			}
		}
	case []any:
		for i := range x {
			x[i] = renameRefs(x[i], renames)
		}
	}
	return v
}
