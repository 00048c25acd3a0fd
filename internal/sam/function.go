package sam

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// managedPolicyARN is the ARN of a managed policy named in Policies, as the translator
// finds it: an AWS managed policy it knows by name, an ARN as given, anything else as
// given too (the translator would ask IAM, which knows no more than its list of AWS
// managed policies: a name it does not know fails when the role is made).
func managedPolicyARN(name string) string {
	if path, ok := data().ManagedPolicies[name]; ok {
		return managedPolicy(path)
	}
	return name
}

// lambdaFunctionProps are the Function properties SAM copies to the AWS::Lambda::Function.
var lambdaFunctionProps = []string{"FunctionName", "Handler", "Runtime", "Description", "MemorySize", "Timeout", "VpcConfig",
	"Environment", "KmsKeyArn", "ReservedConcurrentExecutions", "Layers", "FileSystemConfigs", "ImageConfig", "PackageType",
	"Architectures", "SnapStart", "EphemeralStorage", "CodeSigningConfigArn", "RuntimeManagementConfig", "LoggingConfig",
	"RecursiveLoop", "TenancyConfig", "DurableConfig"}

// fnRefs is how a function's event sources name it: the function, or its alias.
type fnRefs struct {
	name string // the function's logical id
	ref  any    // FunctionName of permissions and mappings
	arn  any    // targets, subscriptions, notifications
}

func (t *sam) function(name string) error {
	r := object(t.resources[name])
	props := t.props(name, "Function")
	if events, ok := object(r["Properties"])["Events"]; ok {
		props["Events"] = events // never global
	}
	if err := functionRules(name, props); err != nil {
		return err
	}
	if err := t.functionProperties(name, props); err != nil {
		return err
	}
	fp := map[string]any{}
	for _, k := range lambdaFunctionProps {
		if v, ok := props[k]; ok {
			fp[k] = v
		}
	}
	code, err := t.code(name, props)
	if err != nil {
		return err
	}
	fp["Code"] = code
	if dp, ok := props["DeploymentPreference"].(map[string]any); ok && !disabled(t.resolveParamRef(dp["Enabled"])) {
		if a := props["AutoPublishAlias"]; a == nil || a == "" {
			return samErr(name, "'DeploymentPreference' requires AutoPublishAlias property to be specified.")
		}
		return unsupported(name, "DeploymentPreference (a gradual deployment through CodeDeploy, and the ServerlessDeploymentApplication it makes) is not supported by the local emulator's Serverless translator")
	}
	if fp["PackageType"] != "Image" && (props["Handler"] == nil || props["Runtime"] == nil) {
		return samErr(name, "Runtime and Handler needs to be present when PackageType is of type `Zip`")
	}
	if tr, ok := props["Tracing"]; ok && t.resolveParamRef(tr) != "Disabled" {
		fp["TracingConfig"] = map[string]any{"Mode": tr}
	}
	if dlq, ok := props["DeadLetterQueue"].(map[string]any); ok {
		fp["DeadLetterConfig"] = map[string]any{"TargetArn": dlq["TargetArn"]}
	}
	fp["Tags"] = tagList(props["Tags"])
	attrs := passthrough(r)
	var role map[string]any
	roleID := name + "Role"
	if v, ok := props["Role"]; ok {
		if malformedIf(v) {
			return samErr(name, "Malformed 'Role' property: Fn::If requires 3 arguments (a condition, the value if true, the value if false).")
		}
		fp["Role"] = v
	} else {
		if role, err = t.role(name, roleID, props); err != nil {
			return err
		}
		fp["Role"] = getAtt(roleID, "Arn")
	}
	t.put(name, "AWS::Lambda::Function", fp, mainAttrs(r))
	f := fnRefs{name: name, ref: ref(name), arn: getAtt(name, "Arn")}
	if alias, ok := props["AutoPublishAlias"]; ok {
		vfp := copyProps(fp)
		if d, ok := props["VersionDescription"]; ok {
			vfp["VersionDescription"] = d
		}
		aliasID, err := t.alias(name, alias, code, vfp, attrs)
		if err != nil {
			return err
		}
		f.ref, f.arn = ref(aliasID), ref(aliasID)
	}
	aliasName := ""
	if a, ok := t.resolveParamRef(props["AutoPublishAlias"]).(string); ok {
		aliasName = a
	}
	if err := t.eventInvokeConfig(f, aliasName, props, role); err != nil {
		return err
	}
	if err := t.functionURL(f, props); err != nil {
		return err
	}
	events, _ := props["Events"].(map[string]any)
	for _, ev := range sortedKeys(events) {
		if err := t.event(f, ev, object(events[ev]), role, attrs); err != nil {
			return err
		}
	}
	if role != nil {
		t.put(roleID, "AWS::IAM::Role", role, copyAttrs(attrs))
	}
	return nil
}

// disabled reports whether an Enabled value is false (a boolean, or its text).
func disabled(v any) bool {
	return v == false || v == "false" || v == "False"
}

// code is the function's Code: InlineCode, CodeUri or ImageUri.
func (t *sam) code(name string, props map[string]any) (map[string]any, error) {
	if props["PackageType"] == "Image" {
		if props["ImageUri"] == nil {
			return nil, samErr(name, "'ImageUri' must be set.")
		}
		return map[string]any{"ImageUri": props["ImageUri"]}, nil
	}
	inline, hasInline := props["InlineCode"]
	uri, hasURI := props["CodeUri"]
	var code map[string]any
	switch {
	case hasInline: // it takes precedence over CodeUri
		code = map[string]any{"ZipFile": inline}
	case hasURI:
		var err error
		if code, err = s3Location(name, "CodeUri", uri); err != nil {
			return nil, err
		}
	default:
		return nil, samErr(name, "Only one of 'InlineCode' or 'CodeUri' can be set.")
	}
	if v, ok := props["SourceKMSKeyArn"]; ok {
		code["SourceKMSKeyArn"] = v
	}
	return code, nil
}

// role is the execution role SAM makes for a function with no Role.
func (t *sam) role(fn, roleID string, props map[string]any) (map[string]any, error) {
	assume := props["AssumeRolePolicyDocument"]
	if assume == nil {
		assume = map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
			"Action": []any{"sts:AssumeRole"}, "Effect": "Allow", "Principal": map[string]any{"Service": []any{"lambda.amazonaws.com"}}}}}
	}
	managed := []any{managedPolicyARN("AWSLambdaBasicExecutionRole")}
	if _, ok := props["DurableConfig"]; ok {
		managed = []any{managedPolicy("service-role/AWSLambdaBasicDurableExecutionRolePolicy")}
	}
	if tr, ok := props["Tracing"]; ok && t.resolveParamRef(tr) != "Disabled" {
		managed = append(managed, managedPolicyARN("AWSXrayWriteOnlyAccess"))
	}
	if _, ok := props["VpcConfig"]; ok {
		managed = append(managed, managedPolicyARN("AWSLambdaVPCAccessExecutionRole"))
	}
	managed, inline, err := rolePolicies(fn, roleID, props["Policies"], managed)
	if err != nil {
		return nil, err
	}
	role := map[string]any{"AssumeRolePolicyDocument": assume, "ManagedPolicyArns": managed, "Tags": tagList(props["Tags"])}
	if len(inline) > 0 {
		role["Policies"] = inline
	}
	if v, ok := props["RolePath"]; ok {
		role["Path"] = v
	}
	if v, ok := props["PermissionsBoundary"]; ok {
		role["PermissionsBoundary"] = v
	}
	return role, nil
}

// rolePolicies sorts a resource's Policies into the managed policy ARNs of its role (after
// those given) and its inline policies, as the translator's construct_role_for_resource
// does: policy documents and policy templates become inline policies named
// ROLEPolicyINDEX, names managed policy ARNs, and Fn::If picks between either kind.
func rolePolicies(id, roleID string, policies any, managed []any) ([]any, []any, error) {
	var inline []any
	list, isList := policies.([]any)
	if policies != nil && !isList {
		list = []any{policies}
	}
	for i, p := range list {
		named := func(doc any) any {
			return map[string]any{"PolicyName": fmt.Sprintf("%sPolicy%d", roleID, i), "PolicyDocument": doc}
		}
		// document is an inline policy's document: a statement, or a policy template's
		document := func(v any) (map[string]any, bool, error) {
			m, ok := v.(map[string]any)
			switch {
			case !ok || isIntrinsic(m):
				return nil, false, nil
			case m["Statement"] != nil:
				return m, true, nil
			case len(m) == 1:
				doc, err := policyTemplate(id, i, m)
				return doc, err == nil, err
			}
			return nil, false, nil
		}
		pm, isMap := p.(map[string]any)
		switch {
		case isMap && pm["Fn::If"] != nil:
			l, _ := pm["Fn::If"].([]any)
			if len(l) != 3 {
				return nil, nil, samErr(id, "Policy at index %d in the 'Policies' property is not valid", i)
			}
			statement := false
			for j := 1; j < 3; j++ {
				doc, ok, err := document(l[j])
				switch {
				case err != nil:
					return nil, nil, err
				case ok:
					statement = true
					l[j] = named(doc)
				default:
					if s, ok := l[j].(string); ok {
						l[j] = managedPolicyARN(s)
					}
				}
			}
			if statement {
				inline = append(inline, pm)
			} else {
				managed = appendNew(managed, pm)
			}
		case isMap && !isIntrinsic(pm):
			doc, ok, err := document(pm)
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				return nil, nil, samErr(id, "Policy at index %d in the 'Policies' property is not valid", i)
			}
			inline = append(inline, named(doc))
		case isMap:
			managed = appendNew(managed, pm)
		default:
			s, ok := p.(string)
			if !ok {
				return nil, nil, samErr(id, "Policy at index %d in the 'Policies' property is not valid", i)
			}
			managed = appendNew(managed, managedPolicyARN(s))
		}
	}
	return managed, inline, nil
}

func appendNew(l []any, v any) []any {
	for _, x := range l {
		if equalJSON(x, v) {
			return l
		}
	}
	return append(l, v)
}

// policyTemplate expands a policy template ({Name: {Parameter: value}}) into its policy
// document, as the translator's policy template processor does: every {"Ref": P} of the
// template's definition, P one of its parameters, becomes the value given for P.
func policyTemplate(fn string, i int, pm map[string]any) (map[string]any, error) {
	var name string
	for k := range pm {
		name = k
	}
	pt, ok := data().PolicyTemplates[name]
	if !ok {
		return nil, samErr(fn, "Policy at index %d in the 'Policies' property is not valid", i)
	}
	given, ok := pm[name].(map[string]any)
	if !ok {
		return nil, samErr(fn, "Must specify valid parameter values for policy template '%s'", name)
	}
	var missing []string
	for _, p := range pt.Parameters {
		if _, ok := given[p]; !ok {
			missing = append(missing, "'"+p+"'")
		}
	}
	if len(missing) > 0 {
		return nil, samErr(fn, "Following required parameters of template '%s' don't have values: [%s]", name, strings.Join(missing, ", "))
	}
	var resolve func(v any) any
	resolve = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			if r, ok := x["Ref"].(string); ok && len(x) == 1 && slices.Contains(pt.Parameters, r) {
				return given[r]
			}
			out := make(map[string]any, len(x))
			for k, vv := range x {
				out[k] = resolve(vv)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for j, vv := range x {
				out[j] = resolve(vv)
			}
			return out
		}
		return v
	}
	return resolve(pt.Definition).(map[string]any), nil
}

var aliasName = regexp.MustCompile(`^(?:[a-zA-Z0-9\-_]*[a-zA-Z\-_][a-zA-Z0-9\-_]*)$`)

// alias makes AutoPublishAlias's version and alias and returns the alias's logical id.
func (t *sam) alias(fn string, alias any, code, fp, attrs map[string]any) (string, error) {
	name, ok := t.resolveParamRef(alias).(string)
	if !ok || !aliasName.MatchString(name) {
		return "", samErr(fn, "AutoPublishAlias name ('%v') must contain only alphanumeric characters, hyphens, or underscores matching (?!^[0-9]+$)([a-zA-Z0-9-_]+) pattern.", alias)
	}
	data := copyProps(code)
	if env, ok := fp["Environment"].(map[string]any); ok {
		for k, v := range env {
			data[k] = v
		}
	}
	if v, ok := fp["MemorySize"]; ok {
		data["MemorySize"] = v
	}
	if ss, ok := fp["SnapStart"].(map[string]any); ok && ss["ApplyOn"] != nil && ss["ApplyOn"] != "None" {
		data["SnapStart"] = ss
	}
	versionID := fn + "Version" + logicalHash(data)
	t.referable(fn, "Version", versionID)
	va := copyAttrs(attrs)
	if _, ok := va["DeletionPolicy"]; !ok {
		va["DeletionPolicy"] = "Retain"
	}
	vp := map[string]any{"FunctionName": ref(fn)}
	if d, ok := fp["VersionDescription"]; ok {
		vp["Description"] = d
	}
	t.put(versionID, "AWS::Lambda::Version", vp, va)
	aliasID := fn + "Alias" + strings.NewReplacer("-", "D", "_", "U").Replace(name)
	t.referable(fn, "Alias", aliasID)
	t.put(aliasID, "AWS::Lambda::Alias", map[string]any{"Name": name, "FunctionName": ref(fn), "FunctionVersion": getAtt(versionID, "Version")}, copyAttrs(attrs))
	return aliasID, nil
}

func (t *sam) event(f fnRefs, name string, ev map[string]any, role, attrs map[string]any) error {
	typ, _ := ev["Type"].(string)
	// the translator's API plugins read an Api or HttpApi event's Properties as a map
	if v, set := ev["Properties"]; set && (typ == "Api" || typ == "HttpApi") {
		if _, ok := v.(map[string]any); !ok {
			return eventErr(f.name, name, "Properties should be a map.")
		}
	}
	p := object(ev["Properties"])
	if p == nil {
		p = map[string]any{}
	}
	id := f.name + name
	permission := func(suffix string, extra map[string]any) { t.permission(id, suffix, f.ref, extra, attrs) }
	need := func(prop string) error { return needEventProperty(f, name, p, prop) }
	switch typ {
	case "SQS", "Kinesis", "DynamoDB", "MSK", "MQ", "SelfManagedKafka", "DocumentDB":
		return t.pullEvent(f, name, typ, p, role, attrs)
	case "SNS":
		if err := need("Topic"); err != nil {
			return err
		}
		if sq, ok := p["SqsSubscription"]; ok && sq != false {
			return t.snsToSQS(f, name, p, sq, role, attrs)
		}
		sp := map[string]any{"Endpoint": f.arn, "Protocol": "lambda", "TopicArn": p["Topic"]}
		for _, k := range []string{"FilterPolicy", "FilterPolicyScope", "Region", "RedrivePolicy"} {
			if v, ok := p[k]; ok {
				sp[k] = v
			}
		}
		t.put(id, "AWS::SNS::Subscription", sp, copyAttrs(attrs))
		permission("", map[string]any{"Principal": "sns.amazonaws.com", "SourceArn": p["Topic"]})
	case "S3":
		return t.s3Event(f, name, id, p, attrs)
	case "Schedule", "EventBridgeRule", "CloudWatchEvent":
		return t.ruleEvent(f, name, id, typ, p, attrs)
	case "ScheduleV2":
		return t.scheduleV2(f.name, id, name, f.arn, "LambdaPolicy", "lambda:InvokeFunction", p, attrs)
	case "CloudWatchLogs":
		if err := need("LogGroupName"); err != nil {
			return err
		}
		if err := need("FilterPattern"); err != nil {
			return err
		}
		permission("", map[string]any{"Principal": "logs.amazonaws.com",
			"SourceArn": sub("arn:aws:logs:${AWS::Region}:${AWS::AccountId}:log-group:${__LogGroupName__}:*", map[string]any{"__LogGroupName__": p["LogGroupName"]})})
		sa := copyAttrs(attrs)
		sa["DependsOn"] = []any{id + "Permission"}
		t.put(id, "AWS::Logs::SubscriptionFilter", map[string]any{"LogGroupName": p["LogGroupName"], "FilterPattern": p["FilterPattern"], "DestinationArn": f.arn}, sa)
	case "IoTRule":
		if err := need("Sql"); err != nil {
			return err
		}
		permission("", map[string]any{"Principal": "iot.amazonaws.com", "SourceAccount": map[string]any{"Fn::Sub": "${AWS::AccountId}"},
			"SourceArn": sub("arn:aws:iot:${AWS::Region}:${AWS::AccountId}:rule/${RuleName}", map[string]any{"RuleName": ref(id)})})
		payload := map[string]any{"Sql": p["Sql"], "RuleDisabled": false, "Actions": []any{map[string]any{"Lambda": map[string]any{"FunctionArn": f.arn}}}}
		copyKeys(payload, p, "AwsIotSqlVersion")
		t.put(id, "AWS::IoT::TopicRule", map[string]any{"TopicRulePayload": payload}, copyAttrs(attrs))
	case "AlexaSkill":
		extra := map[string]any{"Principal": "alexa-appkit.amazon.com"}
		if v, ok := p["SkillId"]; ok {
			extra["EventSourceToken"] = v
		}
		permission("", extra)
	case "Cognito":
		return t.cognitoEvent(f, name, p, attrs)
	case "Api":
		return t.apiEvent(f, name, p, attrs)
	case "HttpApi":
		return t.httpAPIEvent(f, name, p, attrs)
	default:
		supported := []string{"AlexaSkill", "Api", "CloudWatchEvent", "CloudWatchLogs", "Cognito", "DocumentDB", "DynamoDB", "EventBridgeRule", "HttpApi",
			"IoTRule", "Kinesis", "MQ", "MSK", "S3", "SNS", "SQS", "Schedule", "ScheduleV2", "SelfManagedKafka"}
		if !slices.Contains(supported, typ) {
			return samErr(f.name, "Event with id [%s] is invalid. Event type %q is not supported by the local emulator's Serverless translator (it expands %s).", name, typ, strings.Join(supported, ", "))
		}
	}
	return nil
}

// needEventProperty is the error of event name of function f when its properties p lack
// prop, or nil.
func needEventProperty(f fnRefs, name string, p map[string]any, prop string) error {
	if p[prop] == nil {
		return samErr(f.name, "Event with id [%s] is invalid. Missing required property '%s'.", name, prop)
	}
	return nil
}

// s3Event is an S3 event (id) of function f: the bucket of the same template notifies the
// function, once allowed to.
func (t *sam) s3Event(f fnRefs, name, id string, p, attrs map[string]any) error {
	if err := needEventProperty(f, name, p, "Bucket"); err != nil {
		return err
	}
	if err := needEventProperty(f, name, p, "Events"); err != nil {
		return err
	}
	bucket, _ := object(p["Bucket"])["Ref"].(string)
	br := object(t.resources[bucket])
	if bucket == "" || typeOfRaw(br) != "AWS::S3::Bucket" {
		return samErr(f.name, "Event with id [%s] is invalid. S3 events must reference an S3 bucket in the same template.", name)
	}
	t.permission(id, "", f.ref, map[string]any{"Principal": "s3.amazonaws.com", "SourceAccount": ref("AWS::AccountId")}, attrs)
	events := p["Events"]
	if s, ok := events.(string); ok {
		events = []any{s}
	}
	if _, ok := events.([]any); !ok {
		return samErr(f.name, "Event with id [%s] is invalid. Property 'Events' should be a string or a list of strings.", name)
	}
	// the translator adds the function to the bucket's own notifications, each level of
	// the kind it writes into
	if v, set := br["Properties"]; set {
		if _, ok := v.(map[string]any); !ok {
			return samErr(bucket, "Properties should be a map.")
		}
	}
	bp := object(br["Properties"])
	if bp == nil {
		bp = map[string]any{}
		br["Properties"] = bp
	}
	if v := bp["NotificationConfiguration"]; v != nil {
		if _, ok := v.(map[string]any); !ok {
			return samErr(bucket, "Property 'NotificationConfiguration' should be a map.")
		}
	}
	nc := object(bp["NotificationConfiguration"])
	if nc == nil {
		nc = map[string]any{}
		bp["NotificationConfiguration"] = nc
	}
	if v := nc["LambdaConfigurations"]; v != nil {
		if _, ok := v.([]any); !ok {
			return samErr(bucket, "Invalid type for LambdaConfigurations. Must be a list.")
		}
	}
	lc, _ := nc["LambdaConfigurations"].([]any)
	for _, e := range events.([]any) {
		c := map[string]any{"Event": e, "Function": f.arn}
		if fl, ok := p["Filter"]; ok {
			c["Filter"] = fl
		}
		lc = append(lc, c)
	}
	nc["LambdaConfigurations"] = lc
	deps := []any{}
	switch d := br["DependsOn"].(type) {
	case string:
		deps = append(deps, d)
	case []any:
		deps = append(deps, d...)
	}
	br["DependsOn"] = append(deps, id+"Permission")
	return nil
}

// ruleEvent is a Schedule, EventBridgeRule or CloudWatchEvent event (id) of function f: an
// EventBridge rule targeting the function, allowed to invoke it.
func (t *sam) ruleEvent(f fnRefs, name, id, typ string, p, attrs map[string]any) error {
	rule := map[string]any{}
	target := map[string]any{"Arn": f.arn, "Id": targetID(id, "LambdaTarget", p)}
	if typ == "Schedule" {
		if err := needEventProperty(f, name, p, "Schedule"); err != nil {
			return err
		}
		rule["ScheduleExpression"] = p["Schedule"]
	} else {
		if err := needEventProperty(f, name, p, "Pattern"); err != nil {
			return err
		}
		rule["EventPattern"] = p["Pattern"]
		if v, ok := p["EventBusName"]; ok {
			rule["EventBusName"] = v
		}
		if v, ok := p["InputPath"]; ok {
			target["InputPath"] = v
		}
	}
	if p["State"] != nil && p["Enabled"] != nil {
		return samErr(f.name, "Event with id [%s] is invalid. State and Enabled Properties cannot both be specified.", name)
	}
	if v, ok := p["State"]; ok {
		rule["State"] = v
	}
	if v, ok := p["Enabled"].(bool); ok {
		rule["State"] = map[bool]string{true: "ENABLED", false: "DISABLED"}[v]
	}
	for _, k := range []string{"Name", "Description"} {
		if v, ok := p[k]; ok {
			rule[k] = v
		}
	}
	for _, k := range []string{"Input", "RetryPolicy", "InputTransformer"} {
		if v, ok := p[k]; ok {
			target[k] = v
		}
	}
	if v, ok := p["RuleName"]; ok && typ != "Schedule" {
		rule["Name"] = v
	}
	if err := t.ruleDeadLetter(f.name, name, id, p, target, attrs); err != nil {
		return err
	}
	rule["Targets"] = []any{target}
	t.put(id, "AWS::Events::Rule", rule, copyAttrs(attrs))
	t.permission(id, "", f.ref, map[string]any{"Principal": "events.amazonaws.com", "SourceArn": getAtt(id, "Arn")}, attrs)
	return nil
}
