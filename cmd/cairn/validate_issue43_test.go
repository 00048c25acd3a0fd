package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// validateFixtures is the directory of the minimal templates of issue 43, one per rule.
const validateFixtures = "../../testdata/validate"

// validateTemplate runs cairn validate on a bundle of one stack whose template is the
// fixture file, and returns the exit code and stderr with the bundle's directory cut.
func validateTemplate(t *testing.T, fixture string) (int, string) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(validateFixtures, fixture))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "templates", fixture), body, 0o644); err != nil {
		t.Fatal(err)
	}
	config := "namespace: t43\nstacks:\n  - name: s\n    template_path: templates/" + fixture + "\n"
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"validate", dir}, &out, &errOut)
	return code, strings.ReplaceAll(errOut.String(), dir+string(filepath.Separator), "")
}

// issue43Fixtures is every fixture of testdata/validate with what cairn validate says of it:
// "" when it accepts it, else a fragment of each error it must report.
var issue43Fixtures = map[string][]string{
	// 1. AllowedPattern is Java's syntax: its POSIX classes, \Q..\E and possessive quantifiers
	"allowedpattern-java-classes.yaml":  nil,
	"allowedpattern-java-mismatch.yaml": {`templates/allowedpattern-java-mismatch.yaml:5:14: Parameters.Letters.Default: the Default is refused: parameter Letters: value "abc1" does not match its AllowedPattern \p{Alpha}+`},
	"allowedpattern-unterminated.yaml":  {`Parameters.Code.AllowedPattern: AllowedPattern "[\\p{Alpha}" is not a valid regular expression`},
	// 2. AWS::LanguageExtensions resolves Fn::Sub of pseudo parameters before SAM reads CodeUri
	"sam-langext-sub-codeuri.yaml":         nil,
	"sam-sub-codeuri-without-langext.yaml": {"Resources.Fn: the Serverless transform refuses it: 'CodeUri' requires Bucket and Key properties to be specified."},
	// 3. SAM rewrites a DependsOn naming a layer to the layer's hashed logical id
	"sam-depends-on-layer.yaml":      nil,
	"sam-depends-on-layer-list.yaml": nil,
	// 4. "\/" is a JSON escape
	"json-escaped-solidus.json": nil,
	// 5. DynamoDB: every key attribute defined, every attribute defined a key
	"dynamodb-keys-ok.yaml":               nil,
	"dynamodb-key-not-defined.yaml":       {`dynamodb-key-not-defined.yaml:11:27: Resources.Table.Properties.AttributeDefinitions: key attribute "sk" is not in AttributeDefinitions`},
	"dynamodb-attribute-unused.yaml":      {`dynamodb-attribute-unused.yaml:9:27: Resources.Table.Properties.AttributeDefinitions: attribute "extra" is in AttributeDefinitions but no key schema`},
	"dynamodb-index-key-not-defined.yaml": {`:16:31: Resources.Table.Properties.AttributeDefinitions: key attribute "owner" is not`, `:22:31: Resources.Table.Properties.AttributeDefinitions: key attribute "created" is not`},
	// 6. a policy's Effect is Allow or Deny, in that case
	"iam-effect-invalid.yaml": {
		`:12:21: Resources.QueuePolicy.Properties.PolicyDocument.Statement[0].Effect: Effect "Permit" is neither Allow nor Deny`,
		`:22:21: Resources.Role.Properties.AssumeRolePolicyDocument.Statement[0].Effect: Effect "allow" is neither Allow nor Deny (the values are case-sensitive)`,
		`:30:25: Resources.Role.Properties.Policies[0].PolicyDocument.Statement[0].Effect: Effect "Allowed" is neither`,
	},
	// 7. a function of a .zip package needs a Runtime and a Handler; an image needs neither
	"lambda-zip-no-runtime-handler.yaml": {`:5:5: Resources.NoRuntime.Properties: function NoRuntime needs Runtime`, `:11:5: Resources.NoHandler.Properties: function NoHandler needs Handler`},
	"lambda-image-ok.yaml":               nil,
	// 8. a role's name or path where its ARN is needed
	"lambda-role-name.yaml":        {`:8:13: Resources.Fn.Properties.Role: "my-role" does not match the pattern`, `:15:13: Resources.PathFn.Properties.Role: "/service-role/my-role" does not match`},
	"sam-role-name.yaml":           {`:10:13: Resources.Fn.Properties.Role: "my-role" does not match`, `:14:13: Resources.Machine.Properties.RoleArn: "/service-role/machine-role" is not an IAM role ARN`},
	"role-name-via-parameter.yaml": {`:17:7: Resources.Machine.Properties.RoleArn: "arn:aws:iam::123456789012:/service-role/machine" is not an IAM role ARN (arn:aws:iam::123456789012:role/NAME) (Fn::Sub, the account and region filled in)`},
	// 9. a type of a service AWS shut down (cfn-lint's E3710); SimpleDB runs on
	// 10. what AWS's SAM translator refuses: a property a Serverless type does not take, or
	// of a kind it does not take; IgnoreGlobals naming what Globals lack; Models of an Api
	// without an inline DefinitionBody
	"sam-property-misspelled.yaml":       {`:4:3: Resources.Fn: the Serverless transform refuses it: property MemorySise not defined for resource of type AWS::Serverless::Function`},
	"sam-property-mistyped.yaml":         {`:4:3: Resources.Fn: the Serverless transform refuses it: Type of property 'Events' is invalid.`},
	"sam-ignoreglobals-missing-key.yaml": {`:7:3: Resources.Fn: the Serverless transform refuses it: Resource Fn has invalid resource attribute 'IgnoreGlobals' on item 'MemorySize'.`},
	"sam-ignoreglobals-ok.yaml":          nil,
	"sam-api-models-without-body.yaml":   {`:4:3: Resources.Api: the Serverless transform refuses it: Models works only with inline Swagger specified in 'DefinitionBody' property.`},
	// 11. the translator's capacity provider and tenancy rules
	"sam-capacity-provider-rules.yaml":           {`:3:3: Resources.Provider: the Serverless transform refuses it: Property 'VpcConfig.SubnetIds' is required.`},
	"sam-capacity-provider-ok.yaml":              nil,
	"sam-function-scaling-without-provider.yaml": {`:3:3: Resources.Fn: the Serverless transform refuses it: 'FunctionScalingConfig' requires 'CapacityProviderConfig'.`},
	"sam-tenancy-sqs-event.yaml":                 {`:5:3: Resources.Fn: the Serverless transform refuses it: Event source 'SQS' is not supported for functions enabled with tenancy configuration.`},
	"sam-tenancy-function-url.yaml":              {`:3:3: Resources.Fn: the Serverless transform refuses it: Function URL is not supported for functions enabled with tenancy configuration.`},
	"sam-tenancy-api-ok.yaml":                    nil,
	"sam-websocket-auth-without-connect.yaml":    {`:3:3: Resources.Chat: the Serverless transform refuses it: Authorization is only available if there is a $connect route.`},
	// 12. AWS Backup's lifecycle arithmetic; CloudFront's alternate domain names
	"backup-lifecycle-too-short.yaml": {`:12:32: Resources.Plan.Properties.BackupPlan.BackupPlanRule[0].Lifecycle.DeleteAfterDays: DeleteAfterDays 60 is less than 90 days after MoveToColdStorageAfterDays 30`, `:17:36: Resources.Plan.Properties.BackupPlan.BackupPlanRule[0].CopyActions[0].Lifecycle.DeleteAfterDays: DeleteAfterDays 99`},
	"backup-lifecycle-ok.yaml":        nil,
	"cloudfront-alias-invalid.yaml":   {`:10:13: Resources.Site.Properties.DistributionConfig.Aliases[2]: alias "shop_example.com" is no domain name`, `:11:13: Resources.Site.Properties.DistributionConfig.Aliases[3]: alias "api.*.example.com"`},
	// 13. a role's name from a Ref where CodeBuild looks it up at the path / (E3050); a
	// resource named as a parameter (E3007)
	"codebuild-role-with-path.yaml":        {`:5:20: Resources.Build.Properties.ServiceRole: Ref BuildRole gives the role's name, which CodeBuild looks up at the path /, but the role's Path is /builds/`},
	"parameter-resource-same-name.yaml":    {`:6:3: Resources.Alerts: resource Alerts has the name of a parameter`},
	"iam-resource-not-arn.yaml":            {`:12:17: Resources.Reader.Properties.PolicyDocument.Statement[0].Resource[1]: Resource "reports-bucket" is neither "*" nor an ARN`},
	"condition-import-value.yaml":          {`:2:49: Conditions.InPrimaryRegion.Fn::Equals[1]: Fn::ImportValue cannot be used in a condition`},
	"stack-output-without-name.yaml":       {`:6:9: Resources.Alerts.Properties.DisplayName: Fn::GetStackOutput needs OutputName`},
	"bucket-policy-without-principal.yaml": {`:11:13: Resources.LogsPolicy.Properties.PolicyDocument.Statement[0]: the statement names no Principal`},
	"route53-record-values.yaml": {
		`:16:15: Resources.Records.Properties.RecordSets[0].ResourceRecords[1]: "www.example.net" is not an IPv4 address`,
		`:21:15: Resources.Records.Properties.RecordSets[1].ResourceRecords[0]: "site-verification=abc123" is not quoted strings`,
		`:24:11: Resources.Records.Properties.RecordSets[2].TTL: an alias record takes no TTL`,
	},
	// 14. the cfn-lint corpus's open ones: a module's attributes (E5001); a statement
	// chosen by a condition is checked as any other (E3510)
	"module-attributes.yaml": {
		`:4:5: Resources.Network.CreationPolicy: module Network sets CreationPolicy, which a module does not take`,
		`:7:5: Resources.Network.UpdatePolicy: module Network sets UpdatePolicy`,
		`:11:7: Resources.Network.Metadata.AWS::CloudFormation::Module: module Network sets the Metadata key AWS::CloudFormation::Module, which CloudFormation keeps for itself`,
		`:14:7: Resources.Network.Properties.Tags: module Network sets Tags`,
	},
	"iam-statement-by-condition.yaml": {`:22:19: Resources.Writer.Properties.PolicyDocument.Statement[1].Resource[0]: Resource "UploadsBucket" is neither "*" nor an ARN`},
	// rules between two resources (E3052, E3054, E3502, E3698, E3705, E3707, E3708)
	"cross-resource-rules.yaml": {
		`:13:5: Resources.Web.Properties: service Web runs task definition WebTask of the awsvpc network mode, so it needs a NetworkConfiguration`,
		`:15:23: Resources.Web.Properties.TaskDefinition: service Web runs on FARGATE, but task definition WebTask requires EC2`,
		`:21:38: Resources.Orders.Properties.RedrivePolicy.deadLetterTargetArn: queue Orders is FIFO, but its dead-letter queue OrdersDead is standard`,
		`:30:18: Resources.OrdersWorker.Properties.BatchSize: BatchSize 50 is above 10, the most Lambda takes from FIFO queue Orders`,
		`:53:26: Resources.GetRoot.Properties.AuthorizationType: AuthorizationType CUSTOM does not fit authorizer Users of Type COGNITO_USER_POOLS`,
		`:66:21: Resources.Live.Properties.DeploymentId: deployment Release is of API Api, but the stage is of API OtherApi`,
		`:79:15: Resources.DbWriter.Properties.Engine: Engine aurora-mysql is not the engine of its cluster Db (aurora-postgresql)`,
	},
	"cross-resource-ok.yaml": nil,
	// a Ref of a resource of another type where an EC2 id goes (E1041)
	"ref-wrong-id.yaml": {
		`:24:7: Resources.Private.Properties.VpcId: Ref AppRole gives the identifier of that AWS::IAM::Role, but VpcId of AWS::EC2::Subnet takes the id of an AWS::EC2::VPC`,
		`:29:7: Resources.Web.Properties.VpcId: Ref Public gives the identifier of that AWS::EC2::Subnet`,
	},
	// an attribute that is a number or a boolean where text goes (E1010, E6101)
	"getatt-number-as-text.yaml": {
		`:18:7: Resources.CountParameter.Properties.Value: Fn::GetAtt Reserved.InstanceCount gives an integer, but Value of AWS::SSM::Parameter takes text`,
		`:21:5: Outputs.Count.Value: Fn::GetAtt Reserved.InstanceCount gives an integer, but Value of output Count takes text`,
		`:23:12: Outputs.Summary.Value: Fn::GetAtt Reserved.InstanceCount gives an integer, but Fn::Sub's ${Reserved.InstanceCount} must be text`,
		`:25:24: Outputs.Joined.Value: Fn::GetAtt Reserved.EphemeralStorage gives a boolean, but an item of Fn::Join must be text`,
	},
	"elasticache-cluster-mode.yaml": {
		`:30:49: Resources.Sessions.Properties.AutomaticFailoverEnabled: replication group Sessions has parameter group Sharding of cluster mode (cluster-enabled: yes) when IsSharded is true, which requires AutomaticFailoverEnabled: true`,
		`:40:25: Resources.Carts.Properties.NumCacheClusters: replication group Carts has parameter group Sharding of cluster mode (cluster-enabled: yes), whose automatic failover needs a replica, but NumCacheClusters is 1`,
	},
	// 15. the translator's rules of an Api's Auth, GatewayResponses, UsagePlan and Domain,
	// and of an Api event's RestApiId (its messages)
	"sam-api-auth-ok.yaml":                           nil,
	"sam-api-gateway-response-parameter.yaml":        {`:3:3: Resources.Shop: the Serverless transform refuses it: Invalid gateway response parameter 'Footers'`},
	"sam-api-request-authorizer-without-source.yaml": {`:3:3: Resources.Shop: the Serverless transform refuses it: Request Authorizer must specify Identity with at least one of Headers, QueryStrings, StageVariables, or Context.`},
	"sam-api-default-authorizer-undefined.yaml":      {`:3:3: Resources.Shop: the Serverless transform refuses it: Unable to set DefaultAuthorizer because 'Tokens' was not defined in 'Authorizers'.`},
	"sam-api-usage-plan-property.yaml":               {`:3:3: Resources.Shop: the Serverless transform refuses it: Invalid property for 'UsagePlan'`},
	"sam-api-domain-mtls-field.yaml":                 {`:3:3: Resources.Shop: the Serverless transform refuses it: Available Domain.MutualTlsAuthentication fields are ['TruststoreUri', 'TruststoreVersion'].`},
	"sam-api-event-restapiid-missing.yaml":           {`:44:3: Resources.Orders: the Serverless transform refuses it: Event with id [List] is invalid. RestApiId must be a valid reference to an 'AWS::Serverless::Api' resource in same template.`},
	"sam-api-event-authorizer-undefined.yaml":        {`:44:3: Resources.Orders: the Serverless transform refuses it: Event with id [List] is invalid. Unable to set Authorizer [Session] on API method [get] for path [/orders] because it wasn't defined in the API's Authorizers.`},
	"sam-api-event-request-model-validator.yaml":     {`:47:3: Resources.Orders: the Serverless transform refuses it: Event with id [List] is invalid. Unable to set Validator to RequestModel [Order] on API method [post] for path [/orders] ValidateBody and ValidateParameters must be a boolean type`},
	// the translator's checks of a Function's settings
	"sam-function-settings-ok.yaml":       nil,
	"sam-function-url-cors-key.yaml":      {`:5:3: Resources.Thumbnails: the Serverless transform refuses it: AllowOrigin is not a valid property for configuring Cors.`},
	"sam-function-dlq-type.yaml":          {`:5:3: Resources.Thumbnails: the Serverless transform refuses it: 'DeadLetterQueue' requires Type of ['SQS', 'SNS']`},
	"sam-function-deployment-alarms.yaml": {`:5:3: Resources.Thumbnails: the Serverless transform refuses it: Alarms must be a list`},
	// an HttpApi's authorizers; a DefaultAuthorizer set on every method of the definition
	"sam-httpapi-auth-ok.yaml":                       nil,
	"sam-httpapi-lambda-authorizer-version.yaml":     {`:3:3: Resources.Shop: the Serverless transform refuses it: Partners Lambda Authorizer must define 'AuthorizerPayloadFormatVersion'.`},
	"sam-api-default-authorizer-method-not-map.yaml": {`:3:3: Resources.Shop: the Serverless transform refuses it: Structure of the SAM template is invalid. Definition of method 'get' for path '/health' should be a map.`},
	// the translator's checks of pull events: FilterCriteria, self-managed Kafka access
	"sam-pull-events-ok.yaml":             nil,
	"sam-kafka-two-auth.yaml":             {`:7:3: Resources.Ledger: the Serverless transform refuses it: Event with id [Payments] is invalid. Multiple auth mechanism properties specified in SourceAccessConfigurations for self managed kafka event.`},
	"sam-kafka-subnet-without-group.yaml": {`:7:3: Resources.Ledger: the Serverless transform refuses it: Event with id [Payments] is invalid. VPC_SUBNET and VPC_SECURITY_GROUP in SourceAccessConfigurations for SelfManagedKafka must be both provided.`},
	"sam-kafka-own-role-two-auth.yaml":    {`:3:3: Resources.Ledger: the Serverless transform refuses it: Event with id [Payments] is invalid. Multiple auth mechanism properties specified in SourceAccessConfigurations for self managed kafka event.`},
	"sam-event-filter-format.yaml":        {`:7:3: Resources.Ledger: the Serverless transform refuses it: Event with id [Stream] is invalid. FilterCriteria field has a wrong format`},
	"sam-httpapi-cors-key.yaml":           {`:3:3: Resources.Shop: the Serverless transform refuses it: Invalid key 'AllowOrigin' for 'Cors' property.`},
	// an event's Auth is written into an inline definition only with OverrideApiAuth
	"sam-api-event-auth-inline-body.yaml":            nil,
	"sam-api-event-override-without-authorizer.yaml": {`:50:3: Resources.Orders: the Serverless transform refuses it: Event with id [List] is invalid. Must define one of: Authorizer, ApiKeyRequired or ResourcePolicy when using the OverrideApiAuth property.`},
	// the definitions SAM edits: what the translator refuses of each edit it makes
	"sam-api-definition-edits-ok.yaml":        nil,
	"sam-api-endpoint-extension-not-map.yaml": {`:3:3: Resources.Shop: the Serverless transform refuses it: Structure of the SAM template is invalid. Invalid OpenAPI definition of 'servers[0]': The value of 'x-amazon-apigateway-endpoint-configuration' should be a map.`},
	"sam-api-options-headers-not-map.yaml":    {`:3:3: Resources.Shop: the Serverless transform refuses it: Structure of the SAM template is invalid. Value of response's headers in options method for path /orders must be a dictionary according to Swagger spec.`},
	"sam-api-security-not-list-of-maps.yaml":  {`:3:3: Resources.Shop: the Serverless transform refuses it: Structure of the SAM template is invalid. Token in Security for path /orders method get is not a valid dictionary.`},
	"sam-httpapi-body-not-openapi.yaml":       {`:3:3: Resources.Storefront: the Serverless transform refuses it: Unable to add ` + "`Tags`" + ` because 'DefinitionBody' does not contain a valid OpenApi definition.`},
	"sam-httpapi-event-body-not-openapi.yaml": {`:3:3: Resources.Storefront: the Serverless transform refuses it: Structure of the SAM template is invalid. Invalid OpenApi document. Invalid values or missing keys for 'openapi' or 'paths' in 'DefinitionBody'.`},
	"sam-httpapi-any-method.yaml":             {`:3:3: Resources.Storefront: the Serverless transform refuses it: Structure of the SAM template is invalid. Could not find x-amazon-apigateway-any-method in /{item} within DefinitionBody.`},
	"sam-destination-if-two-arguments.yaml":   {`:11:3: Resources.Orders: the Serverless transform refuses it: Malformed 'Destination' property (EventInvokeConfig.DestinationConfig.OnFailure): Fn::If requires 3 arguments`},
	"sam-function-role-if-two-arguments.yaml": {`:18:3: Resources.Orders: the Serverless transform refuses it: Malformed 'Role' property: Fn::If requires 3 arguments`},
	// the kinds the translator requires of what a push event writes into its source
	"sam-push-events-ok.yaml":                    nil,
	"sam-cognito-trigger-intrinsic.yaml":         {`:5:3: Resources.Intake: the Serverless transform refuses it: Event with id [SignUp] is invalid. Type of property 'Trigger' is invalid`},
	"sam-s3-lambda-configurations-not-list.yaml": {`:3:3: Resources.Uploads: the Serverless transform refuses it: Invalid type for LambdaConfigurations. Must be a list.`},
	"sam-httpapi-event-properties-not-map.yaml":  {`:3:3: Resources.Intake: the Serverless transform refuses it: Event with id [Browse] is invalid. Properties should be a map.`},
	// the implicit API takes every Globals property; a resource policy's source VPC lists
	"sam-implicit-api-globals-ok.yaml":              nil,
	"sam-implicit-api-globals-resource-policy.yaml": {`:1:1: Transform: the Serverless transform refuses it: Structure of the SAM template is invalid. ResourcePolicy must be a map (ResourcePolicyStatement).`},
	"sam-api-source-vpc-intrinsic.yaml":             {`:3:3: Resources.Shop: the Serverless transform refuses it: Structure of the SAM template is invalid. SourceVpcWhitelist must be a list of strings. Use IntrinsicVpcWhitelist instead`},
	"sam-api-domain-access-association-text.yaml":   {`:3:3: Resources.Shop: the Serverless transform refuses it: Property 'Domain.AccessAssociation' should be a map (VpcEndpointId).`},
	// code locations and applications the translator refuses before CloudFormation resolves them
	"sam-codeuri-ok.yaml":                        nil,
	"sam-codeuri-dynamic-reference.yaml":         {`:3:3: Resources.Intake: the Serverless transform refuses it: Unsupported dynamic reference detected in 'CodeUri'.`},
	"sam-application-id-dynamic-reference.yaml":  {`:3:3: Resources.Notifier: the Serverless transform refuses it: Serverless Application Repository does not support dynamic reference in 'ApplicationId' property.`},
	"sam-application-version-blank.yaml":         {`:3:3: Resources.Auditor: the Serverless transform refuses it: Property 'SemanticVersion' cannot be blank.`},
	"sam-api-cors-empty-origin.yaml":             {`:3:3: Resources.Shop: the Serverless transform refuses it: Structure of the SAM template is invalid. Invalid input. Value for AllowedOrigins is required`},
	"sam-statemachine-unescape-intrinsic.yaml":   {`:5:3: Resources.Checkout: the Serverless transform refuses it: Event with id [Start] is invalid. Type of property 'UnescapeMappingTemplate' is invalid.`},
	"sam-websocket-basepath-not-text.yaml":       {`:7:3: Resources.Chat: the Serverless transform refuses it: Basepath must be a string.`},
	"sam-stream-destination-type.yaml":           {`:9:3: Resources.Reader: the Serverless transform refuses it: Event with id [Stream] is invalid. The only valid values for 'Type' are 'SQS', 'SNS', 'S3', and 'Kafka'`},
	"sam-simpletable-key-without-name.yaml":      {`:3:3: Resources.Carts: the Serverless transform refuses it: Property 'PrimaryKey.Name' is required.`},
	"sam-httpapi-body-tags-not-list.yaml":        {`:3:3: Resources.Storefront: the Serverless transform refuses it: Structure of the SAM template is invalid. Tags in OpenApi DefinitionBody needs to be a list. It is a dict.`},
	"sam-statemachine-definitionuri-no-key.yaml": {`:3:3: Resources.Checkout: the Serverless transform refuses it: 'DefinitionUri' requires Bucket and Key properties to be specified.`},
	"sam-codeuri-unresolved-token.yaml":          {`:3:3: Resources.Intake: the Serverless transform refuses it: 'CodeUri' is not a valid S3 Uri of the form 's3://bucket/key' with optional versionId query parameter.`},
	"sam-application-findinmap.yaml":             {`:9:3: Resources.Auditor: the Serverless transform refuses it: Property 'ApplicationId' cannot be resolved. Only FindInMap and Ref intrinsic functions are supported.`},
	"sam-graphqlapi-two-schemas.yaml":            {`:3:3: Resources.Catalog: the Serverless transform refuses it: Both 'SchemaInline' and 'SchemaUri' cannot be defined at the same time.`},
	"deprecated-types.yaml":                      {`:4:5: Resources.Stack.Type: AWS::OpsWorks::Stack is a type of a service AWS shut down on 2024-05-01`},
}

func TestValidateIssue43(t *testing.T) {
	entries, err := os.ReadDir(validateFixtures)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); ext != ".yaml" && ext != ".json" {
			continue
		}
		if _, ok := issue43Fixtures[e.Name()]; !ok {
			t.Errorf("fixture %s has no expectation in issue43Fixtures", e.Name())
		}
	}
	for fixture, want := range issue43Fixtures {
		t.Run(fixture, func(t *testing.T) {
			code, stderr := validateTemplate(t, fixture)
			if len(want) == 0 {
				if code != 0 {
					t.Fatalf("exit %d, want 0:\n%s", code, stderr)
				}
				return
			}
			if code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", code, stderr)
			}
			for _, w := range want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestValidateFixturesAgainstCfnLint: on each fixture of testdata/validate, cairn validate
// and cfn-lint (its errors, E rules, only) agree whether the template is refused, or the
// disagreement is listed, judged, in testdata/validate/disagreements.md. A listed
// disagreement that is gone fails too, so the list stays true.
func TestValidateFixturesAgainstCfnLint(t *testing.T) {
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Skip("cfn-lint is not installed (pip install cfn-lint): the differential check is skipped")
	}
	listed := map[string]string{}
	md, err := os.ReadFile(filepath.Join(validateFixtures, "disagreements.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(md), "\n") {
		if rest, ok := strings.CutPrefix(line, "- `"); ok {
			name, why, _ := strings.Cut(rest, "`: ")
			listed[name] = why
		}
	}
	var fixtures []string
	for f := range issue43Fixtures {
		fixtures = append(fixtures, f)
	}
	sort.Strings(fixtures)
	cmd := exec.Command(lint, append([]string{"--format", "parseable", "--"}, fixtures...)...)
	cmd.Dir = validateFixtures
	out, err := cmd.Output()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatalf("cfn-lint: %v", err)
	}
	lintRefuses := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		// FILE:LINE:COL:ENDLINE:ENDCOL:RULE:MESSAGE
		if parts := strings.SplitN(line, ":", 7); len(parts) == 7 && strings.HasPrefix(parts[5], "E") {
			lintRefuses[parts[0]] = true
		}
	}
	agree, known := 0, 0
	for _, f := range fixtures {
		code, stderr := validateTemplate(t, f)
		cairnRefuses := code != 0
		why, isListed := listed[f]
		switch {
		case cairnRefuses == lintRefuses[f] && isListed:
			t.Errorf("%s: listed in disagreements.md, but both %s it now: remove it", f, verdictWord(cairnRefuses))
		case cairnRefuses == lintRefuses[f]:
			agree++
		case isListed:
			known++
			t.Logf("%s: cairn %s, cfn-lint %s; known: %s", f, verdictWord(cairnRefuses), verdictWord(lintRefuses[f]), why)
		default:
			t.Errorf("%s: cairn %s, cfn-lint %s, and disagreements.md does not say why:\n%s", f, verdictWord(cairnRefuses), verdictWord(lintRefuses[f]), stderr)
		}
	}
	for name := range listed {
		if _, ok := issue43Fixtures[name]; !ok {
			t.Errorf("disagreements.md lists %s, which is no fixture", name)
		}
	}
	t.Logf("%d fixtures: %d agreements, %d judged disagreements", len(fixtures), agree, known)
}

func verdictWord(refuses bool) string {
	if refuses {
		return "refuses"
	}
	return "accepts"
}
