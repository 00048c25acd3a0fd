package cfnlocal

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dlclark/regexp2/v2"

	"github.com/cairn-dev/cairn/internal/resourcespec"
)

// This file holds the emulator's checks against the CloudFormation resource specification,
// in AWS's words: unknown resource types refuse the template (CreateStack, CreateChangeSet,
// ValidateTemplate); a resource whose evaluated properties break its type's schema fails
// to create, as AWS's resource handlers fail it, and the stack rolls back. The lookup is
// cairn's spec package; the checks are the emulator's own.

// recognizedType reports whether AWS knows the type: the specification, custom resources
// and registry types (three parts, not AWS::). Serverless types are the transform's, which
// has replaced them by the time a template is parsed: one left is unrecognized, as in AWS.
func recognizedType(t string) bool {
	if isCustomType(t) || resourcespec.Lookup(t) != nil {
		return true
	}
	parts := strings.Split(t, "::")
	return len(parts) == 3 && parts[0] != "AWS" && !slices.Contains(parts, "")
}

// unrecognizedTypes refuses a template naming resource types AWS does not know.
func unrecognizedTypes(tpl *template) error {
	var bad []string
	for _, d := range tpl.Resources {
		if !recognizedType(d.Type) && !slices.Contains(bad, d.Type) {
			bad = append(bad, d.Type)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return invalidf("Template format error: Unrecognized resource types: [%s]", strings.Join(bad, ", "))
}

// propertiesError returns the failure of a resource whose evaluated properties its type's
// schema refuses, as AWS reports it, or nil.
func propertiesError(logicalID, typ string, props map[string]any) error {
	st := resourcespec.Lookup(typ)
	if st == nil {
		return nil
	}
	var msgs []string
	schemaCheck(props, st.Properties, "#", &msgs)
	if len(msgs) == 0 {
		return nil
	}
	msg := msgs[0]
	if len(msgs) > 1 {
		msg = "[" + strings.Join(msgs, ", ") + "]"
	}
	return fmt.Errorf("Properties validation failed for resource %s with message: %s", logicalID, msg)
}

func schemaCheck(v any, sh *resourcespec.Shape, path string, msgs *[]string) {
	if v == nil {
		return
	}
	switch sh.Kind {
	case resourcespec.String, resourcespec.Integer, resourcespec.Number, resourcespec.Boolean:
		switch v.(type) {
		case []any:
			*msgs = append(*msgs, fmt.Sprintf("%s: expected type: %s, found: JSONArray", path, jsonType(sh.Kind)))
		case map[string]any:
			*msgs = append(*msgs, fmt.Sprintf("%s: expected type: %s, found: JSONObject", path, jsonType(sh.Kind)))
		}
	case resourcespec.List:
		items, ok := v.([]any)
		if !ok {
			*msgs = append(*msgs, fmt.Sprintf("%s: expected type: JSONArray, found: %s", path, foundType(v)))
			return
		}
		for i, it := range items {
			schemaCheck(it, sh.Elem, fmt.Sprintf("%s/%d", path, i), msgs)
		}
	case resourcespec.Map, resourcespec.Object:
		m, ok := v.(map[string]any)
		if !ok {
			*msgs = append(*msgs, fmt.Sprintf("%s: expected type: JSONObject, found: %s", path, foundType(v)))
			return
		}
		if sh.Kind == resourcespec.Map {
			for _, k := range sortedKeys(m) {
				schemaCheck(m[k], sh.Elem, path+"/"+k, msgs)
			}
			return
		}
		for _, r := range sh.Required {
			if _, ok := m[r]; !ok {
				*msgs = append(*msgs, fmt.Sprintf("%s: required key [%s] not found", path, r))
			}
		}
		for _, k := range sortedKeys(m) {
			p := sh.Properties[k]
			if p == nil {
				if sh.Closed {
					*msgs = append(*msgs, fmt.Sprintf("%s: extraneous key [%s] is not permitted", path, k))
				}
				continue
			}
			schemaCheck(m[k], p, path+"/"+k, msgs)
		}
	}
}

func jsonType(k resourcespec.Kind) string {
	switch k {
	case resourcespec.Integer:
		return "Integer"
	case resourcespec.Number:
		return "Number"
	case resourcespec.Boolean:
		return "Boolean"
	}
	return "String"
}

func foundType(v any) string {
	switch v.(type) {
	case []any:
		return "JSONArray"
	case map[string]any:
		return "JSONObject"
	case bool:
		return "Boolean"
	case float64, int, int64:
		return "Integer"
	}
	return "String"
}

// matchAllowedPattern matches a parameter value against its AllowedPattern as AWS does:
// Java regular expressions (lookahead included), matching the whole value.
func matchAllowedPattern(pattern, value string) (bool, error) {
	re, err := regexp2.Compile(`\A(?:` + pattern + `)\z`)
	if err != nil {
		return false, err
	}
	re.MatchTimeout = 100 * time.Millisecond
	return re.MatchString(value)
}
