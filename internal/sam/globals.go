package sam

import (
	"fmt"
	"slices"
	"strings"
)

// globalProperties are the properties each section of Globals takes, in the translator's
// order (aws-sam-translator 1.110.0, plugins/globals/globals.py: supported_properties).
var globalProperties = map[string][]string{
	"Function":         {"Handler", "Runtime", "CodeUri", "DeadLetterQueue", "Description", "MemorySize", "Timeout", "VpcConfig", "Environment", "Tags", "PropagateTags", "Tracing", "KmsKeyArn", "AutoPublishAlias", "AutoPublishAliasAllProperties", "Layers", "DeploymentPreference", "RolePath", "PermissionsBoundary", "ReservedConcurrentExecutions", "ProvisionedConcurrencyConfig", "AssumeRolePolicyDocument", "EventInvokeConfig", "FileSystemConfigs", "CodeSigningConfigArn", "Architectures", "SnapStart", "EphemeralStorage", "FunctionUrlConfig", "RuntimeManagementConfig", "LoggingConfig", "RecursiveLoop", "SourceKMSKeyArn", "TenancyConfig", "DurableConfig", "CapacityProviderConfig", "FunctionScalingConfig", "PublishToLatestPublished", "VersionDeletionPolicy"},
	"Api":              {"Auth", "Name", "DefinitionUri", "CacheClusterEnabled", "CacheClusterSize", "MergeDefinitions", "Variables", "EndpointConfiguration", "MethodSettings", "BinaryMediaTypes", "MinimumCompressionSize", "Cors", "GatewayResponses", "AccessLogSetting", "CanarySetting", "TracingEnabled", "OpenApiVersion", "Domain", "AlwaysDeploy", "PropagateTags", "SecurityPolicy", "EndpointAccessMode"},
	"HttpApi":          {"Auth", "AccessLogSettings", "StageVariables", "Tags", "CorsConfiguration", "DefaultRouteSettings", "Domain", "RouteSettings", "FailOnWarnings", "PropagateTags"},
	"SimpleTable":      {"SSESpecification"},
	"StateMachine":     {"PropagateTags"},
	"LayerVersion":     {"PublishLambdaVersion"},
	"CapacityProvider": {"VpcConfig", "OperatorRole", "Tags", "InstanceRequirements", "ScalingConfig", "KmsKeyArn", "PropagateTags"},
	"WebSocketApi":     {"AccessLogSettings", "ApiKeySelectionExpression", "DefaultRouteSettings", "DisableExecuteApiEndpoint", "DisableSchemaValidation", "Domain", "FailOnWarnings", "IpAddressType", "PropagateTags", "RouteSelectionExpression", "RouteSettings", "StageVariables", "Tags"},
}

// checkGlobalProperties refuses a property a section of Globals does not take, with the
// translator's message.
func checkGlobalProperties(section string, props map[string]any) error {
	supported, ok := globalProperties[section]
	if !ok {
		return nil
	}
	for _, k := range sortedKeys(props) {
		if !slices.Contains(supported, k) {
			quoted := make([]string, len(supported))
			for i, s := range supported {
				quoted[i] = fmt.Sprintf("'%s'", s)
			}
			return samErr("", "'Globals' section is invalid. '%s' is not a supported property of '%s'. Must be one of the following values - [%s]", k, section, strings.Join(quoted, ", "))
		}
	}
	return nil
}
