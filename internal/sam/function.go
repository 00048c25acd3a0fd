package sam

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// serviceRolePolicies are the AWS managed policies SAM knows under service-role/.
var serviceRolePolicies = map[string]bool{
	"AWSLambdaBasicExecutionRole": true, "AWSLambdaVPCAccessExecutionRole": true, "AWSLambdaSQSQueueExecutionRole": true,
	"AWSLambdaKinesisExecutionRole": true, "AWSLambdaDynamoDBExecutionRole": true, "AWSLambdaRole": true,
	"AWSLambdaENIManagementAccess": true, "AWSLambdaMSKExecutionRole": true,
}

func managedPolicyARN(name string) string {
	if strings.HasPrefix(name, "arn:") {
		return name
	}
	if serviceRolePolicies[name] {
		return managedPolicy("service-role/" + name)
	}
	return managedPolicy(name)
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
	var inline []any
	policies, isList := props["Policies"].([]any)
	if p, ok := props["Policies"]; ok && !isList {
		policies = []any{p}
	}
	for i, p := range policies {
		named := func(doc any) any {
			return map[string]any{"PolicyName": fmt.Sprintf("%sPolicy%d", roleID, i), "PolicyDocument": doc}
		}
		pm, isMap := p.(map[string]any)
		switch {
		case isMap && pm["Fn::If"] != nil:
			l, _ := pm["Fn::If"].([]any)
			if len(l) != 3 {
				return nil, samErr(fn, "Policy at index %d in the 'Policies' property is not valid", i)
			}
			statement := false
			for j := 1; j < 3; j++ {
				if m, ok := l[j].(map[string]any); ok && m["Statement"] != nil {
					statement = true
					l[j] = named(m)
				} else if s, ok := l[j].(string); ok {
					l[j] = managedPolicyARN(s)
				}
			}
			if statement {
				inline = append(inline, pm)
			} else {
				managed = appendNew(managed, pm)
			}
		case isMap && pm["Statement"] != nil:
			inline = append(inline, named(pm))
		case isMap && len(pm) == 1 && !isIntrinsic(pm):
			doc, err := policyTemplate(fn, i, pm)
			if err != nil {
				return nil, err
			}
			inline = append(inline, named(doc))
		case isMap:
			managed = appendNew(managed, pm)
		default:
			s, ok := p.(string)
			if !ok {
				return nil, samErr(fn, "Policy at index %d in the 'Policies' property is not valid", i)
			}
			managed = appendNew(managed, managedPolicyARN(s))
		}
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

func appendNew(l []any, v any) []any {
	for _, x := range l {
		if equalJSON(x, v) {
			return l
		}
	}
	return append(l, v)
}

// policyTemplates are the SAM policy templates the emulator expands: their actions, and
// the ARN pattern of the resource each grants them on (${p} is the template's parameter).
var policyTemplates = map[string]struct {
	param   string
	actions []string
	arns    []string
}{
	"SQSPollerPolicy": {"QueueName", []string{"sqs:ChangeMessageVisibility", "sqs:ChangeMessageVisibilityBatch", "sqs:DeleteMessage", "sqs:DeleteMessageBatch", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"},
		[]string{"arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${p}"}},
	"SQSSendMessagePolicy":    {"QueueName", []string{"sqs:SendMessage*"}, []string{"arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${p}"}},
	"SNSPublishMessagePolicy": {"TopicName", []string{"sns:Publish"}, []string{"arn:${AWS::Partition}:sns:${AWS::Region}:${AWS::AccountId}:${p}"}},
	"DynamoDBCrudPolicy": {"TableName", []string{"dynamodb:GetItem", "dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:Scan", "dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem", "dynamodb:BatchGetItem", "dynamodb:DescribeTable", "dynamodb:ConditionCheckItem"},
		[]string{"arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${p}", "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${p}/index/*"}},
	"DynamoDBReadPolicy": {"TableName", []string{"dynamodb:GetItem", "dynamodb:Scan", "dynamodb:Query", "dynamodb:BatchGetItem", "dynamodb:DescribeTable"},
		[]string{"arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${p}", "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${p}/index/*"}},
	"DynamoDBWritePolicy": {"TableName", []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem"},
		[]string{"arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${p}", "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${p}/index/*"}},
	"S3ReadPolicy": {"BucketName", []string{"s3:GetObject", "s3:ListBucket", "s3:GetBucketLocation", "s3:GetObjectVersion", "s3:GetLifecycleConfiguration"},
		[]string{"arn:${AWS::Partition}:s3:::${p}", "arn:${AWS::Partition}:s3:::${p}/*"}},
	"S3WritePolicy": {"BucketName", []string{"s3:PutObject", "s3:PutObjectAcl", "s3:PutLifecycleConfiguration"},
		[]string{"arn:${AWS::Partition}:s3:::${p}", "arn:${AWS::Partition}:s3:::${p}/*"}},
	"S3CrudPolicy": {"BucketName", []string{"s3:GetObject", "s3:ListBucket", "s3:GetBucketLocation", "s3:GetObjectVersion", "s3:PutObject", "s3:PutObjectAcl", "s3:GetLifecycleConfiguration", "s3:PutLifecycleConfiguration", "s3:DeleteObject"},
		[]string{"arn:${AWS::Partition}:s3:::${p}", "arn:${AWS::Partition}:s3:::${p}/*"}},
	"LambdaInvokePolicy":                    {"FunctionName", []string{"lambda:InvokeFunction"}, []string{"arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:${p}*"}},
	"EventBridgePutEventsPolicy":            {"EventBusName", []string{"events:PutEvents"}, []string{"arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/${p}"}},
	"KMSDecryptPolicy":                      {"KeyId", []string{"kms:Decrypt"}, []string{"arn:${AWS::Partition}:kms:${AWS::Region}:${AWS::AccountId}:key/${p}"}},
	"AWSSecretsManagerGetSecretValuePolicy": {"SecretArn", []string{"secretsmanager:GetSecretValue"}, []string{"${p}"}},
	"SSMParameterReadPolicy":                {"ParameterName", []string{"ssm:GetParameters", "ssm:GetParameter", "ssm:GetParametersByPath"}, []string{"arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/${p}"}},
	"StepFunctionsExecutionPolicy":          {"StateMachineName", []string{"states:StartExecution"}, []string{"arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:${p}"}},
	"CloudWatchPutMetricPolicy":             {"", []string{"cloudwatch:PutMetricData"}, []string{"*"}},
}

// policyTemplate expands a policy template ({Name: {Parameter: value}}) into its statement.
func policyTemplate(fn string, i int, pm map[string]any) (map[string]any, error) {
	var name string
	for k := range pm {
		name = k
	}
	pt, ok := policyTemplates[name]
	if !ok {
		return nil, samErr(fn, "Policy at index %d in the 'Policies' property is not valid (policy template %s is not one the local emulator expands: use a policy statement)", i, name)
	}
	var resources []any
	for _, a := range pt.arns {
		if pt.param == "" {
			resources = append(resources, a)
			continue
		}
		v := object(pm[name])[pt.param]
		if v == nil {
			return nil, samErr(fn, "Policy at index %d in the 'Policies' property is not valid (%s needs %s)", i, name, pt.param)
		}
		// the template's variable is its parameter's name with a lower-case first letter
		vname := strings.ToLower(pt.param[:1]) + pt.param[1:]
		resources = append(resources, sub(strings.ReplaceAll(a, "${p}", "${"+vname+"}"), map[string]any{vname: v}))
	}
	var res any = resources
	if len(resources) == 1 {
		res = resources[0]
	}
	actions := make([]any, len(pt.actions))
	for j, a := range pt.actions {
		actions[j] = a
	}
	st := []any{map[string]any{"Action": actions, "Effect": "Allow", "Resource": res}}
	if name == "SSMParameterReadPolicy" {
		st = append([]any{map[string]any{"Action": []any{"ssm:DescribeParameters"}, "Effect": "Allow", "Resource": "*"}}, st...)
	}
	return map[string]any{"Statement": st}, nil
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
	t.put(aliasID, "AWS::Lambda::Alias", map[string]any{"Name": name, "FunctionName": ref(fn), "FunctionVersion": getAtt(versionID, "Version")}, copyAttrs(attrs))
	return aliasID, nil
}

// pullPolicies are the managed policies SAM adds to a generated role per pull event source.
var pullPolicies = map[string]string{"SQS": "AWSLambdaSQSQueueExecutionRole", "Kinesis": "AWSLambdaKinesisExecutionRole", "DynamoDB": "AWSLambdaDynamoDBExecutionRole"}

func (t *sam) event(f fnRefs, name string, ev map[string]any, role, attrs map[string]any) error {
	typ, _ := ev["Type"].(string)
	p := object(ev["Properties"])
	if p == nil {
		p = map[string]any{}
	}
	id := f.name + name
	permission := func(suffix string, extra map[string]any) { t.permission(id, suffix, f.ref, extra, attrs) }
	need := func(prop string) error {
		if p[prop] == nil {
			return samErr(f.name, "Event with id [%s] is invalid. Missing required property '%s'.", name, prop)
		}
		return nil
	}
	switch typ {
	case "SQS", "Kinesis", "DynamoDB":
		source := map[string]string{"SQS": "Queue", "Kinesis": "Stream", "DynamoDB": "Stream"}[typ]
		if err := need(source); err != nil {
			return err
		}
		esm := map[string]any{"EventSourceArn": p[source], "FunctionName": f.ref}
		for _, k := range []string{"BatchSize", "Enabled", "MaximumBatchingWindowInSeconds", "FilterCriteria", "FunctionResponseTypes",
			"ScalingConfig", "MetricsConfig", "KmsKeyArn", "StartingPosition", "StartingPositionTimestamp", "MaximumRetryAttempts",
			"BisectBatchOnFunctionError", "MaximumRecordAgeInSeconds", "ParallelizationFactor", "TumblingWindowInSeconds", "DestinationConfig"} {
			if v, ok := p[k]; ok {
				esm[k] = v
			}
		}
		t.put(id, "AWS::Lambda::EventSourceMapping", esm, copyAttrs(attrs))
		if role != nil {
			role["ManagedPolicyArns"] = appendNew(role["ManagedPolicyArns"].([]any), managedPolicyARN(pullPolicies[typ]))
		}
	case "SNS":
		if err := need("Topic"); err != nil {
			return err
		}
		if _, ok := p["SqsSubscription"]; ok {
			return samErr(f.name, "Event with id [%s] is invalid. SqsSubscription is not supported by the local emulator's Serverless translator.", name)
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
		if err := need("Bucket"); err != nil {
			return err
		}
		if err := need("Events"); err != nil {
			return err
		}
		bucket, _ := object(p["Bucket"])["Ref"].(string)
		br := object(t.resources[bucket])
		if bucket == "" || typeOfRaw(br) != "AWS::S3::Bucket" {
			return samErr(f.name, "Event with id [%s] is invalid. S3 events must reference an S3 bucket in the same template.", name)
		}
		permission("", map[string]any{"Principal": "s3.amazonaws.com", "SourceAccount": ref("AWS::AccountId")})
		events := p["Events"]
		if s, ok := events.(string); ok {
			events = []any{s}
		}
		if _, ok := events.([]any); !ok {
			return samErr(f.name, "Event with id [%s] is invalid. Property 'Events' should be a string or a list of strings.", name)
		}
		bp := object(br["Properties"])
		if bp == nil {
			bp = map[string]any{}
			br["Properties"] = bp
		}
		nc := object(bp["NotificationConfiguration"])
		if nc == nil {
			nc = map[string]any{}
			bp["NotificationConfiguration"] = nc
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
	case "Schedule", "EventBridgeRule", "CloudWatchEvent":
		rule := map[string]any{}
		target := map[string]any{"Arn": f.arn, "Id": id + "LambdaTarget"}
		if typ == "Schedule" {
			if err := need("Schedule"); err != nil {
				return err
			}
			rule["ScheduleExpression"] = p["Schedule"]
		} else {
			if err := need("Pattern"); err != nil {
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
		for _, k := range []string{"Input", "RetryPolicy"} {
			if v, ok := p[k]; ok {
				target[k] = v
			}
		}
		rule["Targets"] = []any{target}
		t.put(id, "AWS::Events::Rule", rule, copyAttrs(attrs))
		permission("", map[string]any{"Principal": "events.amazonaws.com", "SourceArn": getAtt(id, "Arn")})
	case "Api":
		return t.apiEvent(f, name, p, attrs)
	case "HttpApi":
		return t.httpAPIEvent(f, name, p, attrs)
	default:
		supported := []string{"Api", "CloudWatchEvent", "DynamoDB", "EventBridgeRule", "HttpApi", "Kinesis", "S3", "SNS", "SQS", "Schedule"}
		if !slices.Contains(supported, typ) {
			return samErr(f.name, "Event with id [%s] is invalid. Event type %q is not supported by the local emulator's Serverless translator (it expands %s).", name, typ, strings.Join(supported, ", "))
		}
	}
	return nil
}
