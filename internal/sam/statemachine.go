package sam

import (
	"fmt"
	"strconv"
	"strings"
)

// AWS::Serverless::StateMachine, as the translator's StateMachineGenerator expands it: the
// AWS::StepFunctions::StateMachine (its Definition as a readable Fn::Join of the JSON
// lines, intrinsics moved to DefinitionSubstitutions; or DefinitionUri), its execution role
// NAMERole unless Role is given (Policies, policy templates included), a version and alias
// for AutoPublishAlias, and its events: Schedule and EventBridgeRule/CloudWatchEvent (a rule
// and the role that lets it start executions), ScheduleV2 (a scheduler schedule and its
// role) and Api (a route of the REST API and the role API Gateway uses).

func assumeRole(service string) map[string]any {
	return map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
		"Action": []any{"sts:AssumeRole"}, "Effect": "Allow", "Principal": map[string]any{"Service": []any{service}}}}}
}

// inlinePolicy is a role's inline policy of one statement allowing action on resource.
func inlinePolicy(name, action string, resource any) map[string]any {
	return map[string]any{"PolicyName": name, "PolicyDocument": map[string]any{
		"Statement": []any{map[string]any{"Action": action, "Effect": "Allow", "Resource": resource}}}}
}

func (t *sam) stateMachine(name string) error {
	r := object(t.resources[name])
	props := t.props(name, "StateMachine")
	if events, ok := object(r["Properties"])["Events"]; ok {
		props["Events"] = events // never global
	}
	sm := map[string]any{}
	if err := stateMachineDefinition(name, props, sm); err != nil {
		return err
	}
	tags := []any{keyValue("stateMachine:createdBy", samTag)}
	if m, ok := props["Tags"].(map[string]any); ok {
		for _, k := range sortedKeys(m) {
			tags = append(tags, keyValue(k, m[k]))
		}
	}
	attrs := passthrough(r)
	role, hasRole := props["Role"]
	policies, hasPolicies := props["Policies"]
	switch {
	case hasRole && hasPolicies:
		return samErr(name, "Specify either 'Role' or 'Policies' (but not both at the same time) or neither of them")
	case hasRole:
		sm["RoleArn"] = role
	default:
		list, _ := policies.([]any)
		if policies != nil && list == nil {
			list = []any{policies}
		}
		if tr, ok := props["Tracing"].(map[string]any); ok && tr["Enabled"] == true {
			list = append(list, "AWSXrayWriteOnlyAccess")
		}
		roleID := name + "Role"
		managed, inline, err := rolePolicies(name, roleID, list, []any{})
		if err != nil {
			return err
		}
		rp := map[string]any{"AssumeRolePolicyDocument": assumeRole("states.amazonaws.com"), "ManagedPolicyArns": managed, "Tags": tags}
		if len(inline) > 0 {
			rp["Policies"] = inline
		}
		if v, ok := props["RolePath"]; ok {
			rp["Path"] = v
		}
		if v, ok := props["PermissionsBoundary"]; ok {
			rp["PermissionsBoundary"] = v
		}
		t.put(roleID, "AWS::IAM::Role", rp, copyAttrs(attrs))
		sm["RoleArn"] = getAtt(roleID, "Arn")
	}
	for k, p := range map[string]string{"Name": "StateMachineName", "Type": "StateMachineType", "Logging": "LoggingConfiguration", "Tracing": "TracingConfiguration"} {
		if v, ok := props[k]; ok {
			sm[p] = v
		}
	}
	sm["Tags"] = tags
	t.put(name, "AWS::StepFunctions::StateMachine", sm, mainAttrs(r))
	target := ref(name)
	alias, hasAlias := props["AutoPublishAlias"]
	if _, ok := props["DeploymentPreference"]; ok && !hasAlias {
		return samErr(name, "'DeploymentPreference' requires 'AutoPublishAlias' property to be specified.")
	}
	if hasAlias {
		va := copyAttrs(attrs)
		for _, k := range []string{"DeletionPolicy", "UpdateReplacePolicy"} {
			if _, ok := va[k]; !ok {
				va[k] = "Retain"
			}
		}
		t.put(name+"Version", "AWS::StepFunctions::StateMachineVersion",
			map[string]any{"StateMachineArn": ref(name), "StateMachineRevisionId": getAtt(name, "StateMachineRevisionId")}, va)
		dp := map[string]any{"Type": "ALL_AT_ONCE"}
		if v, ok := props["DeploymentPreference"].(map[string]any); ok {
			dp = copyProps(v)
		}
		dp["StateMachineVersionArn"] = ref(name + "Version")
		aliasID := fmt.Sprintf("%sAlias%v", name, alias)
		t.put(aliasID, "AWS::StepFunctions::StateMachineAlias", map[string]any{"Name": alias, "DeploymentPreference": dp}, copyAttrs(attrs))
		if props["UseAliasAsEventTarget"] == true {
			target = ref(aliasID)
		}
	} else if props["UseAliasAsEventTarget"] == true {
		return samErr(name, "'UseAliasAsEventTarget' requires 'AutoPublishAlias' property to be specified.")
	}
	events, _ := props["Events"].(map[string]any)
	for _, ev := range sortedKeys(events) {
		if err := t.stateMachineEvent(name, target, ev, object(events[ev]), props, attrs); err != nil {
			return err
		}
	}
	return nil
}

// stateMachineDefinition sets the definition of state machine name (sm) from its
// properties: Definition, with its intrinsic functions made substitutions, or
// DefinitionUri; and its DefinitionSubstitutions.
func stateMachineDefinition(name string, props, sm map[string]any) error {
	subs := map[string]any{}
	if v, ok := props["DefinitionSubstitutions"].(map[string]any); ok {
		for k, vv := range v {
			subs[k] = vv
		}
	}
	def, hasDef := props["Definition"]
	uri, hasURI := props["DefinitionUri"]
	switch {
	case hasDef && hasURI:
		return samErr(name, "Specify either 'Definition' or 'DefinitionUri' property and not both.")
	case hasDef:
		dm, ok := def.(map[string]any)
		if !ok {
			return samErr(name, "Type of property 'Definition' is invalid.")
		}
		processed := copyProps(dm)
		n := 0
		substitute(processed, func(v any) string {
			n++
			subs["definition_substitution_"+strconv.Itoa(n)] = v
			return "${definition_substitution_" + strconv.Itoa(n) + "}"
		})
		lines := strings.Split(pyJSONIndent(processed, ""), "\n")
		l := make([]any, len(lines))
		for i, s := range lines {
			l[i] = s
		}
		sm["DefinitionString"] = map[string]any{"Fn::Join": []any{"\n", l}}
	case hasURI:
		loc, err := s3Location(name, "DefinitionUri", uri)
		if err != nil {
			return err
		}
		s3 := map[string]any{"Bucket": loc["S3Bucket"], "Key": loc["S3Key"]}
		if v, ok := loc["S3ObjectVersion"]; ok {
			s3["Version"] = v
		}
		sm["DefinitionS3Location"] = s3
	default:
		return samErr(name, "Either 'Definition' or 'DefinitionUri' property must be specified.")
	}
	if len(subs) > 0 {
		sm["DefinitionSubstitutions"] = subs
	}
	return nil
}

// stateMachineEvent expands one event source of state machine sm, whose executions start
// on target (the state machine, or its alias).
func (t *sam) stateMachineEvent(sm string, target any, name string, ev, props, attrs map[string]any) error {
	typ, _ := ev["Type"].(string)
	p := object(ev["Properties"])
	if p == nil {
		p = map[string]any{}
	}
	id := sm + name
	boundary := props["PermissionsBoundary"]
	// startRole is the role a service assumes to start executions, ID + "Role".
	startRole := func(service string) any {
		rp := map[string]any{"AssumeRolePolicyDocument": assumeRole(service),
			"Policies": []any{inlinePolicy(id+"Role"+"StartExecutionPolicy", "states:StartExecution", target)}}
		if boundary != nil {
			rp["PermissionsBoundary"] = boundary
		}
		t.put(id+"Role", "AWS::IAM::Role", rp, copyAttrs(attrs))
		return getAtt(id+"Role", "Arn")
	}
	switch typ {
	case "Schedule", "EventBridgeRule", "CloudWatchEvent":
		rule := map[string]any{}
		tgt := map[string]any{"Arn": target, "Id": targetID(id, "StepFunctionsTarget", p)}
		if typ == "Schedule" {
			if p["Schedule"] == nil {
				return eventErr(sm, name, "Missing required property 'Schedule'.")
			}
			rule["ScheduleExpression"] = p["Schedule"]
			if p["State"] != nil && p["Enabled"] != nil {
				return eventErr(sm, name, "State and Enabled Properties cannot both be specified.")
			}
			if v, ok := p["Enabled"].(bool); ok {
				rule["State"] = map[bool]string{true: "ENABLED", false: "DISABLED"}[v]
			}
			copyKeys(rule, p, "State", "Name", "Description")
			if v, ok := p["RoleArn"]; ok {
				tgt["RoleArn"] = v
			} else {
				tgt["RoleArn"] = startRole("events.amazonaws.com")
			}
		} else {
			copyKeys(rule, p, "EventBusName", "State")
			if v, ok := p["Pattern"]; ok {
				rule["EventPattern"] = v
			}
			if v, ok := p["RuleName"]; ok {
				rule["Name"] = v
			}
			tgt["RoleArn"] = startRole("events.amazonaws.com")
			copyKeys(tgt, p, "InputPath", "InputTransformer")
		}
		copyKeys(tgt, p, "Input", "RetryPolicy")
		if err := t.ruleDeadLetter(sm, name, id, p, tgt, attrs); err != nil {
			return err
		}
		rule["Targets"] = []any{tgt}
		t.put(id, "AWS::Events::Rule", rule, copyAttrs(attrs))
	case "ScheduleV2":
		return t.scheduleV2(sm, id, name, target, "StartExecutionPolicy", "states:StartExecution", p, attrs)
	case "Api":
		path, _ := p["Path"].(string)
		method, _ := p["Method"].(string)
		if path == "" || method == "" {
			return eventErr(sm, name, "Missing required property 'Path' or 'Method'.")
		}
		// a boolean, no intrinsic function: the translator picks the mapping template by it
		if v, ok := p["UnescapeMappingTemplate"]; ok && v != nil {
			if _, isBool := v.(bool); !isBool {
				return eventErr(sm, name, "Type of property 'UnescapeMappingTemplate' is invalid.")
			}
		}
		api := implicitREST
		if v, ok := p["RestApiId"]; ok {
			n, _, err := t.explicitAPI(sm, name, "RestApiId", "AWS::Serverless::Api", v)
			if err != nil {
				return err
			}
			api = n
		}
		apiProps := t.globals["Api"]
		if api != implicitREST {
			apiProps = t.props(api, "Api")
		}
		if err := eventAuth(sm, name, method, path, p, apiProps); err != nil {
			return err
		}
		role := startRole("apigateway.amazonaws.com")
		return t.addStateMachineRoute(api, sm, name, path, method, role)
	default:
		return eventErr(sm, name, fmt.Sprintf("Event type %q is not supported by the local emulator's Serverless translator for state machines (it expands Api, CloudWatchEvent, EventBridgeRule, Schedule and ScheduleV2).", typ))
	}
	return nil
}

func eventErr(id, event, msg string) error {
	return samErr(id, "Event with id [%s] is invalid. %s", event, msg)
}

func copyKeys(dst, src map[string]any, keys ...string) {
	for _, k := range keys {
		if v, ok := src[k]; ok {
			dst[k] = v
		}
	}
}

// targetID is a rule target's Id: the event's Target.Id, else the logical id and suffix
// cut to EventBridge's 64 characters.
func targetID(id, suffix string, p map[string]any) any {
	if tg, ok := p["Target"].(map[string]any); ok && tg["Id"] != nil {
		return tg["Id"]
	}
	if len(id)+len(suffix) > 64 {
		id = id[:64-len(suffix)]
	}
	return id + suffix
}

// ruleDeadLetter sets a rule target's DeadLetterConfig: the queue given by Arn, or one
// made for it (ID + "Queue", or QueueLogicalId) with the policy that lets the rule send to it.
func (t *sam) ruleDeadLetter(owner, event, id string, p, tgt, attrs map[string]any) error {
	dlq, ok := p["DeadLetterConfig"].(map[string]any)
	if !ok {
		return nil
	}
	arn, err := t.deadLetterQueue(owner, event, id, dlq, attrs)
	if err != nil {
		return err
	}
	if _, given := dlq["Arn"]; !given {
		queue := orAny(dlq["QueueLogicalId"], id+"Queue")
		t.put(id+"QueuePolicy", "AWS::SQS::QueuePolicy", map[string]any{
			"PolicyDocument": map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
				"Action": "sqs:SendMessage", "Effect": "Allow", "Principal": map[string]any{"Service": "events.amazonaws.com"},
				"Resource": arn, "Condition": map[string]any{"ArnEquals": map[string]any{"aws:SourceArn": getAtt(id, "Arn")}}}}},
			"Queues": []any{ref(fmt.Sprint(queue))}}, copyAttrs(attrs))
	}
	tgt["DeadLetterConfig"] = map[string]any{"Arn": arn}
	return nil
}

// deadLetterQueue validates a DeadLetterConfig and returns its queue's ARN, making the
// queue (ID + "Queue", or QueueLogicalId) when the config has a Type instead of an Arn.
func (t *sam) deadLetterQueue(owner, event, id string, dlq, attrs map[string]any) (any, error) {
	arn, hasArn := dlq["Arn"]
	typ, hasType := dlq["Type"]
	switch {
	case hasArn && hasType:
		return nil, eventErr(owner, event, "You can either define 'Arn' or 'Type' property of DeadLetterConfig.")
	case hasType && typ != "SQS":
		return nil, eventErr(owner, event, "The only valid value for 'Type' property of DeadLetterConfig is 'SQS'.")
	case !hasArn && !hasType:
		return nil, eventErr(owner, event, "No 'Arn' or 'Type' property provided for DeadLetterConfig.")
	case hasArn:
		return arn, nil
	}
	queue := id + "Queue"
	if v, ok := dlq["QueueLogicalId"]; ok {
		s, isStr := v.(string)
		if !isStr {
			return nil, samErr(id, "QueueLogicalId must be a string")
		}
		queue = s
	}
	t.put(queue, "AWS::SQS::Queue", map[string]any{}, copyAttrs(attrs))
	return getAtt(queue, "Arn"), nil
}

// scheduleV2 is a ScheduleV2 event: an AWS::Scheduler::Schedule targeting target, with the
// role the scheduler assumes (allowing action on it) unless RoleArn is given.
func (t *sam) scheduleV2(owner, id, event string, target any, policySuffix, action string, p, attrs map[string]any) error {
	if p["ScheduleExpression"] == nil {
		return eventErr(owner, event, "Missing required property 'ScheduleExpression'.")
	}
	s := map[string]any{"ScheduleExpression": p["ScheduleExpression"], "FlexibleTimeWindow": map[string]any{"Mode": "OFF"}}
	copyKeys(s, p, "State", "Description", "StartDate", "EndDate", "ScheduleExpressionTimezone", "GroupName", "KmsKeyArn", "FlexibleTimeWindow")
	if p["OmitName"] == true {
		if p["Name"] != nil {
			return samErr(id, "Name cannot be set when OmitName is True")
		}
	} else {
		s["Name"] = orAny(p["Name"], id)
	}
	tgt := map[string]any{"Arn": target}
	copyKeys(tgt, p, "Input", "RetryPolicy")
	var dlqARN any
	if dlq, ok := p["DeadLetterConfig"].(map[string]any); ok {
		var err error
		if dlqARN, err = t.deadLetterQueue(owner, event, id, dlq, attrs); err != nil {
			return err
		}
		tgt["DeadLetterConfig"] = map[string]any{"Arn": dlqARN}
	}
	if v, ok := p["RoleArn"]; ok {
		tgt["RoleArn"] = v
	} else {
		policies := []any{inlinePolicy(id+policySuffix, action, target)}
		if dlqARN != nil {
			policies = append(policies, inlinePolicy(id+"SQSPolicy", "sqs:SendMessage", dlqARN))
		}
		rp := map[string]any{"AssumeRolePolicyDocument": assumeRole("scheduler.amazonaws.com"), "Policies": policies}
		if v, ok := p["PermissionsBoundary"]; ok {
			rp["PermissionsBoundary"] = v
		}
		t.put(id+"Role", "AWS::IAM::Role", rp, copyAttrs(attrs))
		tgt["RoleArn"] = getAtt(id+"Role", "Arn")
	}
	s["Target"] = tgt
	t.put(id, "AWS::Scheduler::Schedule", s, copyAttrs(attrs))
	return nil
}

// substitute replaces, in key order, every intrinsic function or dynamic reference inside
// v by the name sub gives it, as the translator moves them to DefinitionSubstitutions.
func substitute(v any, sub func(any) string) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if isIntrinsic(x[k]) || isDynamicReference(x[k]) {
				x[k] = sub(x[k])
			} else {
				substitute(x[k], sub)
			}
		}
	case []any:
		for i := range x {
			if isIntrinsic(x[i]) || isDynamicReference(x[i]) {
				x[i] = sub(x[i])
			} else {
				substitute(x[i], sub)
			}
		}
	}
}

func isDynamicReference(v any) bool {
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, "{{resolve:") && strings.HasSuffix(s, "}}")
}

// pyJSONIndent renders v as Python's json.dumps(v, sort_keys=True, indent=4,
// separators=(",", ": ")) does, which the translator splits into a definition's lines.
func pyJSONIndent(v any, indent string) string {
	inner := indent + "    "
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return "{}"
		}
		keys := sortedKeys(x)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = inner + pyJSON(k) + ": " + pyJSONIndent(x[k], inner)
		}
		return "{\n" + strings.Join(parts, ",\n") + "\n" + indent + "}"
	case []any:
		if len(x) == 0 {
			return "[]"
		}
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = inner + pyJSONIndent(e, inner)
		}
		return "[\n" + strings.Join(parts, ",\n") + "\n" + indent + "]"
	}
	return pyJSON(v)
}

// addStateMachineRoute adds an Api event's route to api: an AWS integration that starts
// an execution of state machine sm with the role API Gateway assumes.
func (t *sam) addStateMachineRoute(api, sm, event, path, method string, role any) error {
	paths := t.paths(api)
	item, _ := paths[path].(map[string]any)
	if item == nil {
		item = map[string]any{}
		paths[path] = item
	}
	key := strings.ToLower(method)
	if key == "any" {
		key = "x-amazon-apigateway-any-method"
	}
	if _, dup := item[key]; dup {
		return eventErr(sm, event, fmt.Sprintf("API method %q defined multiple times for path %q.", strings.ToLower(method), path))
	}
	item[key] = map[string]any{"responses": map[string]any{"200": map[string]any{"description": "OK"}, "400": map[string]any{"description": "Bad Request"}},
		"x-amazon-apigateway-integration": map[string]any{"type": "aws", "httpMethod": "POST", "credentials": role,
			"uri":              map[string]any{"Fn::Sub": "arn:${AWS::Partition}:apigateway:${AWS::Region}:states:action/StartExecution"},
			"responses":        map[string]any{"200": map[string]any{"statusCode": "200"}, "400": map[string]any{"statusCode": "400"}},
			"requestTemplates": map[string]any{"application/json": map[string]any{"Fn::Sub": `{"input": "$util.escapeJavaScript($input.json('$'))", "stateMachineArn": "${` + sm + `}"}`}}}}
	return nil
}
