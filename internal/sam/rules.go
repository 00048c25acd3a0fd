package sam

import (
	"fmt"
	"slices"
	"strings"
)

// The rules of aws-sam-translator 1.110.0 a Function and a CapacityProvider are checked
// against before they expand (SamFunction.__validation_rules__ and
// _validate_tenancy_config_compatibility, SamCapacityProvider's property types and rules),
// each refused with the translator's message.

// present reports whether a property is set: the translator counts a null as absent.
func present(props map[string]any, k string) bool { return props[k] != nil }

// functionRules are the Function's property combinations the translator refuses: a
// capacity provider with provisioned concurrency or a VpcConfig, FunctionScalingConfig
// without a capacity provider, VersionDeletionPolicy without AutoPublishAlias (all in one
// message, as the translator collects them), then what a function with TenancyConfig may
// not have.
func functionRules(name string, props map[string]any) error {
	var msgs []string
	for _, pair := range [][2]string{{"CapacityProviderConfig", "ProvisionedConcurrencyConfig"}, {"CapacityProviderConfig", "VpcConfig"}} {
		if present(props, pair[0]) && present(props, pair[1]) {
			msgs = append(msgs, "Cannot specify '"+pair[0]+"' and '"+pair[1]+"' together.")
		}
	}
	for _, req := range [][2]string{{"FunctionScalingConfig", "CapacityProviderConfig"}, {"VersionDeletionPolicy", "AutoPublishAlias"}} {
		if present(props, req[0]) && !present(props, req[1]) {
			msgs = append(msgs, "'"+req[0]+"' requires '"+req[1]+"'.")
		}
	}
	if len(msgs) > 0 {
		return samErr(name, "%s", strings.Join(msgs, "\n"))
	}
	if !present(props, "TenancyConfig") {
		return nil
	}
	for _, p := range [][2]string{{"ProvisionedConcurrencyConfig", "Provisioned concurrency"}, {"FunctionUrlConfig", "Function URL"}, {"SnapStart", "SnapStart"}} {
		if present(props, p[0]) {
			return samErr(name, "%s is not supported for functions enabled with tenancy configuration.", p[1])
		}
	}
	events, _ := props["Events"].(map[string]any)
	for _, k := range sortedKeys(events) {
		typ := object(events[k])["Type"]
		if typ != "Api" && typ != "HttpApi" {
			return samErr(name, "Event source '%v' is not supported for functions enabled with tenancy configuration. Only Api and HttpApi event sources are supported.", typ)
		}
	}
	return nil
}

// capacityProviderRules are what the translator requires of a CapacityProvider's
// properties (their names and kinds are checkProperties'): a VpcConfig with SubnetIds,
// lists of subnets and security groups, and not both AllowedTypes and ExcludedTypes of
// InstanceRequirements.
func capacityProviderRules(name string, props map[string]any) error {
	vpc, ok := props["VpcConfig"]
	if !ok || vpc == nil {
		return samErr(name, "Missing required property 'VpcConfig'.")
	}
	var msgs []string
	if vm, ok := vpc.(map[string]any); ok {
		if !present(vm, "SubnetIds") {
			msgs = append(msgs, "Property 'VpcConfig.SubnetIds' is required.")
		}
		for _, k := range []string{"SecurityGroupIds", "SubnetIds"} {
			switch vm[k].(type) {
			case nil, []any, map[string]any:
			default:
				msgs = append(msgs, "Property 'VpcConfig."+k+"' value must be dictionary or list.")
			}
		}
	}
	ir := object(props["InstanceRequirements"])
	if present(ir, "AllowedTypes") && present(ir, "ExcludedTypes") {
		msgs = append(msgs, "Cannot specify 'InstanceRequirements.AllowedTypes' and 'InstanceRequirements.ExcludedTypes' together.")
	}
	if len(msgs) > 0 {
		return samErr(name, "%s", strings.Join(msgs, " "))
	}
	return nil
}

// typeRules are the rules of the Serverless types cairn's transform does not expand.
func typeRules(name, typ string, props map[string]any) error {
	switch typ {
	case "AWS::Serverless::CapacityProvider":
		return capacityProviderRules(name, props)
	case "AWS::Serverless::WebSocketApi":
		return websocketRules(name, props)
	case "AWS::Serverless::GraphQLApi":
		return graphQLRules(name, props)
	}
	return nil
}

// graphQLRules are the first rules of an AWS::Serverless::GraphQLApi, which cairn's
// transform does not expand (aws-sam-translator 1.110.0, SamGraphQLApi): its Auth is
// required, and its schema is inline or at a URI, one of them.
func graphQLRules(name string, props map[string]any) error {
	if props["Auth"] == nil {
		return samErr(name, "Missing required property 'Auth'.")
	}
	inline, uri := truthy(props["SchemaInline"]), truthy(props["SchemaUri"])
	if !inline && !uri {
		return samErr(name, "One of 'SchemaInline' or 'SchemaUri' must be set.")
	}
	if inline && uri {
		return samErr(name, "Both 'SchemaInline' and 'SchemaUri' cannot be defined at the same time.")
	}
	return nil
}

// sourceAccess is the translator's check of an MQ or DocumentDB event's
// SourceAccessConfigurations (PullEventSource._validate_source_access_configurations): a
// list of maps of the supported types, with exactly one of the required type, with a URI.
func sourceAccess(fn, event, typ string, p map[string]any) error {
	supported, required := []string{"BASIC_AUTH", "VIRTUAL_HOST"}, "BASIC_AUTH"
	if typ == "DocumentDB" {
		supported = []string{"BASIC_AUTH"}
	}
	configs := p["SourceAccessConfigurations"]
	if !truthy(configs) {
		return eventErr(fn, event, fmt.Sprintf("No SourceAccessConfigurations for Amazon %s event provided.", typ))
	}
	list, ok := configs.([]any)
	if !ok {
		return eventErr(fn, event, "Provided SourceAccessConfigurations cannot be parsed into a list.")
	}
	found := false
	for i, c := range list {
		m, ok := c.(map[string]any)
		if !ok {
			return eventErr(fn, event, fmt.Sprintf("Property 'SourceAccessConfigurations[%d]' should be a map.", i))
		}
		t, ok := m["Type"].(string)
		if !ok {
			return eventErr(fn, event, fmt.Sprintf("Property 'SourceAccessConfigurations[%d].Type' should be a string.", i))
		}
		if !slices.Contains(supported, t) {
			return eventErr(fn, event, fmt.Sprintf("Invalid property Type specified in SourceAccessConfigurations. The supported values are: ['%s'].", strings.Join(supported, "', '")))
		}
		if t == required {
			if found {
				return eventErr(fn, event, fmt.Sprintf("Multiple %s properties specified in SourceAccessConfigurations.", required))
			}
			if !truthy(m["URI"]) {
				return eventErr(fn, event, fmt.Sprintf("No %s URI property specified in SourceAccessConfigurations.", required))
			}
			found = true
		}
	}
	if !found {
		return eventErr(fn, event, fmt.Sprintf("No %s property specified in SourceAccessConfigurations.", required))
	}
	return nil
}

// functionProperties are the translator's checks of a Function's settings it reads before
// it expands them (SamFunction.to_cloudformation, _validate_dlq, _validate_cors_config_parameter,
// DeploymentPreference.from_dict and the collection's alarms), each with its message.
func (t *sam) functionProperties(name string, props map[string]any) error {
	if sha := props["AutoPublishCodeSha256"]; truthy(sha) {
		if _, ok := t.resolveParamRef(sha).(string); !ok {
			return samErr(name, "AutoPublishCodeSha256 must be a string")
		}
	}
	if dlq, ok := props["DeadLetterQueue"].(map[string]any); ok && truthy(dlq) {
		typ := dlq["Type"]
		if !truthy(typ) || !truthy(dlq["TargetArn"]) {
			return samErr(name, "'DeadLetterQueue' requires Type and TargetArn properties to be specified.")
		}
		if _, ok := typ.(string); !ok {
			return samErr(name, "Property 'DeadLetterQueue.Type' should be a string.")
		}
		if typ != "SQS" && typ != "SNS" {
			return samErr(name, "'DeadLetterQueue' requires Type of ['SQS', 'SNS']")
		}
	}
	if err := urlCors(name, props["FunctionUrlConfig"]); err != nil {
		return err
	}
	if dp, ok := props["DeploymentPreference"].(map[string]any); ok && !disabled(t.resolveParamRef(dp["Enabled"])) && dp["Enabled"] != false {
		return t.deploymentPreference(name, dp)
	}
	return nil
}

// urlCors checks a function URL's Cors: a map of the settings Lambda takes, each of its
// kind (an intrinsic function is judged by CloudFormation).
func urlCors(name string, cfg any) error {
	m, ok := cfg.(map[string]any)
	if !ok || isIntrinsic(cfg) {
		return nil
	}
	cors := m["Cors"]
	if !truthy(cors) || isIntrinsic(cors) {
		return nil
	}
	cm, ok := cors.(map[string]any)
	if !ok {
		return samErr(name, "Property 'FunctionUrlConfig.Cors' should be a map.")
	}
	kinds := map[string]string{"AllowOrigins": "list", "AllowMethods": "list", "AllowCredentials": "bool", "AllowHeaders": "list", "ExposeHeaders": "list", "MaxAge": "int"}
	for _, k := range sortedKeys(cm) {
		want, known := kinds[k]
		if !known {
			return samErr(name, "%s is not a valid property for configuring Cors.", k)
		}
		v := cm[k]
		got := valueKind(v)
		fits := isIntrinsic(v) || want == "list" && got == "l" || want == "bool" && got == "b" ||
			want == "int" && (got == "b" || got == "i") // Python's bool is an int
		if !fits {
			return samErr(name, "%s must be of type %s.", k, want)
		}
	}
	return nil
}

// deploymentPreference checks an enabled DeploymentPreference as the translator reads it
// before the CodeDeploy resources it makes: a Type, Hooks a map, Alarms a list (or a Fn::If
// of lists), and PassthroughCondition a boolean, its text, or a parameter's Ref to one.
func (t *sam) deploymentPreference(name string, dp map[string]any) error {
	if _, ok := dp["Type"]; !ok {
		return samErr(name, "'DeploymentPreference' is missing required Property 'Type'")
	}
	if h, ok := dp["Hooks"]; ok {
		if _, isMap := h.(map[string]any); !isMap {
			return samErr(name, "'Hooks' property of 'DeploymentPreference' must be a dictionary")
		}
	}
	if pc, ok := dp["PassthroughCondition"]; ok {
		switch v := t.resolveParamRef(pc); {
		case v == true, v == false, v == "true", v == "True", v == "false", v == "False":
		case isIntrinsic(v) && object(v)["Fn::FindInMap"] != nil: // resolved from the Mappings: not judged here
		case isIntrinsic(v):
			return samErr(name, "Unsupported intrinsic: the only intrinsic functions supported for property PassthroughCondition are FindInMap and parameter Refs.")
		default:
			return samErr(name, "Invalid value for property PassthroughCondition.")
		}
	}
	alarms := dp["Alarms"]
	if !truthy(alarms) || object(alarms)["Ref"] == "AWS::NoValue" {
		return nil
	}
	lists := []any{alarms}
	if br, ok := object(alarms)["Fn::If"].([]any); ok && len(br) == 3 {
		lists = br[1:]
	}
	for _, l := range lists {
		if _, ok := l.([]any); !ok {
			return samErr(name, "Alarms must be a list")
		}
	}
	return nil
}

// filterSources are the event types that take FilterCriteria
// (RESOURCE_TYPES_WITH_EVENT_FILTERING), and kafkaAuth the self-managed Kafka
// authentication types (AUTH_MECHANISM).
var (
	filterSources = []string{"DocumentDB", "DynamoDB", "Kinesis", "MQ", "MSK", "SelfManagedKafka", "SQS"}
	kafkaAuth     = []string{"SASL_SCRAM_256_AUTH", "SASL_SCRAM_512_AUTH", "BASIC_AUTH", "CLIENT_CERTIFICATE_TLS_AUTH"}
)

// pullRules are the translator's checks of a pull event (PullEventSource.to_cloudformation
// and get_policy_statements, which it runs for every function: it makes the execution role
// before it knows the function has a Role of its own): FilterCriteria of
// Filters only, an OnFailure destination map of a known Type, a SecretsManagerKmsKeyId
// string, a self-managed Kafka event's one topic and source access configurations, and a
// Kafka event's SchemaRegistryConfig.
func pullRules(fn, event, typ string, p map[string]any) error {
	if fc := p["FilterCriteria"]; truthy(fc) && !isIntrinsic(fc) {
		if !slices.Contains(filterSources, typ) {
			return eventErr(fn, event, "FilterCriteria is only available for "+strings.Join(filterSources, ", ")+" events.")
		}
		if m, ok := fc.(map[string]any); ok {
			if keys := sortedKeys(m); len(keys) > 1 || len(keys) == 1 && keys[0] != "Filters" {
				return eventErr(fn, event, "FilterCriteria field has a wrong format")
			}
		}
	}
	if dc, ok := p["DestinationConfig"].(map[string]any); ok && truthy(dc) {
		of, ok := dc["OnFailure"].(map[string]any)
		if !ok {
			return eventErr(fn, event, "Property 'DestinationConfig.OnFailure' should be a map.")
		}
		if typ := of["Type"]; truthy(typ) && typ != "SQS" && typ != "SNS" && typ != "S3" && typ != "Kafka" {
			return eventErr(fn, event, "The only valid values for 'Type' are 'SQS', 'SNS', 'S3', and 'Kafka'")
		}
	}
	if sac, set := p["SourceAccessConfigurations"]; set && typ == "MSK" && sac != nil {
		if _, ok := sac.([]any); !ok {
			return eventErr(fn, event, "Type of property 'SourceAccessConfigurations' is invalid (a list of Type and URI maps).")
		}
	}
	if k := p["SecretsManagerKmsKeyId"]; truthy(k) && (typ == "MQ" || typ == "SelfManagedKafka" || typ == "DocumentDB") {
		if _, ok := k.(string); !ok {
			return eventErr(fn, event, "Property 'SecretsManagerKmsKeyId' should be a string.")
		}
	}
	if typ == "SelfManagedKafka" {
		if topics, ok := p["Topics"].([]any); ok && len(topics) != 1 {
			return eventErr(fn, event, "Topics for self managed kafka only supports single configuration entry.")
		}
		if err := kafkaAccess(fn, event, p["SourceAccessConfigurations"]); err != nil {
			return err
		}
	}
	if typ == "MSK" || typ == "SelfManagedKafka" {
		return schemaRegistry(fn, event, p["SchemaRegistryConfig"])
	}
	return nil
}

// kafkaAccess is SelfManagedKafkaEventSource.get_secret_key: one authentication at most,
// each configuration with a URI, and a VPC's subnet and security group together.
func kafkaAccess(fn, event string, v any) error {
	configs, ok := v.([]any)
	if !ok {
		return eventErr(fn, event, "SourceAccessConfigurations for self managed kafka event should be a list.")
	}
	var subnet, group, auth bool
	for _, c := range configs {
		m, ok := c.(map[string]any)
		if !ok {
			return eventErr(fn, event, "Property 'SourceAccessConfigurations' should be a map.")
		}
		typ, _ := m["Type"].(string)
		what := typ
		switch {
		case typ == "VPC_SUBNET":
			subnet = true
		case typ == "VPC_SECURITY_GROUP":
			group = true
		case slices.Contains(kafkaAuth, typ):
			if auth {
				return eventErr(fn, event, "Multiple auth mechanism properties specified in SourceAccessConfigurations for self managed kafka event.")
			}
			auth, what = true, "auth mechanism"
		case typ == "SERVER_ROOT_CA_CERTIFICATE":
		default:
			return eventErr(fn, event, "Invalid SourceAccessConfigurations Type provided for self managed kafka event.")
		}
		uri := m["URI"]
		if !truthy(uri) {
			return eventErr(fn, event, "No "+what+" URI property specified in SourceAccessConfigurations for self managed kafka event.")
		}
		if _, isStr := uri.(string); !isStr && !isIntrinsic(uri) {
			return eventErr(fn, event, "Wrong Type for "+what+" URI property specified in SourceAccessConfigurations for self managed kafka event.")
		}
	}
	if subnet != group {
		return eventErr(fn, event, "VPC_SUBNET and VPC_SECURITY_GROUP in SourceAccessConfigurations for SelfManagedKafka must be both provided.")
	}
	return nil
}

// schemaRegistry is PullEventSource.validate_schema_registry_config.
func schemaRegistry(fn, event string, v any) error {
	if !truthy(v) {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return eventErr(fn, event, "Property 'SchemaRegistryConfig' should be a map.")
	}
	for _, k := range []string{"SchemaRegistryURI", "EventRecordFormat", "SchemaValidationConfigs"} {
		if _, ok := m[k]; !ok {
			return eventErr(fn, event, "Missing required field "+k+" in SchemaRegistryConfig")
		}
	}
	if f := m["EventRecordFormat"]; f != "JSON" && f != "SOURCE" {
		return eventErr(fn, event, "EventRecordFormat in SchemaRegistryConfig must be either 'JSON' or 'SOURCE'")
	}
	if _, ok := m["SchemaValidationConfigs"].([]any); !ok {
		return eventErr(fn, event, "SchemaValidationConfigs must be a list")
	}
	if ac := m["AccessConfigs"]; truthy(ac) {
		list, ok := ac.([]any)
		if !ok {
			return eventErr(fn, event, "AccessConfigs in SchemaRegistryConfig must be a list")
		}
		for _, c := range list {
			cm, ok := c.(map[string]any)
			_, hasType := cm["Type"]
			_, hasURI := cm["URI"]
			if !ok || !hasType || !hasURI {
				return eventErr(fn, event, "Each AccessConfig must be a dict with 'Type' and 'URI' fields")
			}
		}
	}
	return nil
}
