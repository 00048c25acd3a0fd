package sam

import (
	"regexp"
	"strings"
)

// layer expands AWS::Serverless::LayerVersion: an AWS::Lambda::LayerVersion, retained on
// deletion unless its DeletionPolicy or RetentionPolicy says otherwise.
func (t *sam) layer(name string) error {
	r := object(t.resources[name])
	props := t.props(name, "LayerVersion")
	for _, k := range []string{"LayerName", "LicenseInfo", "Description", "RetentionPolicy"} {
		if v, ok := props[k]; ok {
			props[k] = t.resolveParamRef(v)
		}
	}
	attrs := passthrough(r)
	if _, ok := attrs["DeletionPolicy"]; !ok {
		attrs["DeletionPolicy"] = "Retain"
	}
	if rp, ok := props["RetentionPolicy"]; ok {
		s, isStr := rp.(string)
		switch {
		case !isStr:
			return samErr(name, "'RetentionPolicy' does not accept intrinsic functions, please use one of the following options: ['Retain', 'Delete']")
		case strings.EqualFold(s, "Retain"):
			attrs["DeletionPolicy"] = "Retain"
		case strings.EqualFold(s, "Delete"):
			attrs["DeletionPolicy"] = "Delete"
		default:
			return samErr(name, "'RetentionPolicy' must be one of the following options: ['Retain', 'Delete'].")
		}
	}
	// the hash is of the Serverless resource as written (attributes other than the
	// policies and Metadata included), with the properties SAM resolved
	hashed := map[string]any{"Type": r["Type"]}
	if len(props) > 0 {
		hashed["Properties"] = props
	}
	for k, v := range r {
		if k != "Type" && k != "Properties" && k != "DeletionPolicy" && k != "UpdateReplacePolicy" && k != "Metadata" {
			hashed[k] = v
		}
	}
	id := name + logicalHash(map[string]any{name: hashed})
	content, err := s3Location(id, "ContentUri", props["ContentUri"])
	if err != nil {
		return err
	}
	lp := map[string]any{"Content": content, "LayerName": orAny(props["LayerName"], name)}
	for _, k := range []string{"Description", "CompatibleRuntimes", "CompatibleArchitectures", "LicenseInfo"} {
		if v, ok := props[k]; ok {
			lp[k] = v
		}
	}
	if d, ok := r["DependsOn"]; ok {
		attrs["DependsOn"] = d
	}
	delete(t.resources, name)
	t.put(id, "AWS::Lambda::LayerVersion", lp, attrs)
	t.renames[name] = id
	return nil
}

// application is AWS::Serverless::Application: a nested stack of the template at Location.
// An application of the Serverless Application Repository ({ApplicationId,
// SemanticVersion}) needs the repository to find its template, which the emulator does not
// have.
func (t *sam) application(name string) error {
	r := object(t.resources[name])
	props := object(r["Properties"])
	url, ok := props["Location"].(string)
	if !ok {
		if loc := object(props["Location"]); loc["ApplicationId"] != nil {
			// the translator's own checks, before it asks the repository
			if id, ok := t.resolveParamRefs(loc["ApplicationId"]).(string); ok && appDynamicRef.MatchString(id) {
				return samErr(name, "Serverless Application Repository does not support dynamic reference in 'ApplicationId' property.")
			}
			if _, ok := loc["SemanticVersion"]; !ok {
				return samErr(name, "Resource is missing the required [SemanticVersion] property.")
			}
			if !truthy(loc["SemanticVersion"]) {
				return samErr(name, "Property 'SemanticVersion' cannot be blank.")
			}
			for _, k := range []string{"ApplicationId", "SemanticVersion"} {
				if !t.resolvable(loc[k]) {
					return samErr(name, "Property '%s' cannot be resolved. Only FindInMap and Ref intrinsic functions are supported.", k)
				}
			}
			return unsupported(name, "the local emulator's Serverless translator does not reach the Serverless Application Repository: give the application's template as Location (an S3 URL)")
		}
		return samErr(name, "Property 'Location' should be a string or a map with ApplicationId and SemanticVersion.")
	}
	sp := map[string]any{"TemplateURL": url, "Tags": tagList(props["Tags"])}
	copyKeys(sp, props, "Parameters", "NotificationARNs", "TimeoutInMinutes")
	t.put(name, "AWS::CloudFormation::Stack", sp, mainAttrs(r))
	return nil
}

// resolvable reports whether the translator resolves v to a value before it looks an
// application up: text, a Ref of a parameter or a pseudo parameter, or an Fn::FindInMap
// whose keys it resolves and whose map holds a scalar there. A second-level key under an
// unresolved top key (AWS::Region, known only at deploy) counts when some entry holds a
// scalar under it.
func (t *sam) resolvable(v any) bool {
	v = t.resolveParamRefs(v)
	m, isMap := v.(map[string]any)
	if !isMap {
		return true
	}
	if r, ok := m["Ref"].(string); ok && len(m) == 1 {
		return strings.HasPrefix(r, "AWS::")
	}
	args, ok := m["Fn::FindInMap"].([]any)
	if !ok || len(m) != 1 || len(args) != 3 {
		return false
	}
	name, ok1 := args[0].(string)
	second, ok2 := args[2].(string)
	table, ok3 := t.mappings[name].(map[string]any)
	if !ok1 || !ok2 || !ok3 {
		return false
	}
	tops := []string{}
	if top, ok := args[1].(string); ok {
		tops = append(tops, top)
	} else if !t.resolvable(args[1]) {
		return false
	} else {
		tops = sortedKeys(table)
	}
	for _, top := range tops {
		switch object(table[top])[second].(type) {
		case string, float64, int, bool:
			return true
		}
	}
	return false
}

// appDynamicRef is the translator's pattern of an SSM dynamic reference in an
// application's id (ServerlessAppPlugin).
var appDynamicRef = regexp.MustCompile(`{{resolve:ssm:[a-zA-Z0-9_.\-/]+(:\d+)?}}`)

// simpleTable expands AWS::Serverless::SimpleTable: a DynamoDB table.
func (t *sam) simpleTable(name string) error {
	r := object(t.resources[name])
	props := t.props(name, "SimpleTable")
	key, _ := props["PrimaryKey"].(map[string]any)
	attrName, attrType := any("id"), "S"
	if key != nil {
		if key["Name"] == nil {
			return samErr(name, "Property 'PrimaryKey.Name' is required.")
		}
		attrName = key["Name"]
		switch key["Type"] {
		case "String":
			attrType = "S"
		case "Number":
			attrType = "N"
		case "Binary":
			attrType = "B"
		default:
			return samErr(name, "Invalid 'Type' \"%v\".", key["Type"])
		}
	}
	tp := map[string]any{
		"AttributeDefinitions": []any{map[string]any{"AttributeName": attrName, "AttributeType": attrType}},
		"KeySchema":            []any{map[string]any{"AttributeName": attrName, "KeyType": "HASH"}},
	}
	if pt, ok := props["ProvisionedThroughput"]; ok {
		tp["ProvisionedThroughput"] = pt
	} else {
		tp["BillingMode"] = "PAY_PER_REQUEST"
	}
	if v, ok := props["TableName"]; ok {
		tp["TableName"] = v
	}
	if v, ok := props["SSESpecification"]; ok {
		tp["SSESpecification"] = v
	}
	if v, ok := props["PointInTimeRecoverySpecification"]; ok {
		tp["PointInTimeRecoverySpecification"] = v
	}
	if tags, ok := props["Tags"].(map[string]any); ok && len(tags) > 0 {
		var l []any
		for _, k := range sortedKeys(tags) {
			l = append(l, keyValue(k, tags[k]))
		}
		tp["Tags"] = l
	}
	t.put(name, "AWS::DynamoDB::Table", tp, mainAttrs(r))
	return nil
}
