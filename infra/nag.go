package main

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// suppress records, with its reason, every cdk-nag AwsSolutions finding cairn
// accepts. Each suppression sits on the one resource it is about and, for
// IAM5, lists the exact wildcard resources it covers, so a new wildcard fails
// the infra tests until someone writes down why it is needed.
func suppress(stack awscdk.Stack, cfg Config, bucket awss3.Bucket, fns map[string]awslambda.Function) {
	cdknag.NagSuppressions_AddResourceSuppressions(bucket, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-S1"),
		Reason: jsii.String("Server access logs would need a second bucket that itself cannot log; " +
			"every object cairn reads or writes is already recorded by the run reports, versioning keeps every change, " +
			"and accounts that need request-level audit enable CloudTrail S3 data events for this bucket."),
	}}, jsii.Bool(false))

	bucketID := *stack.GetLogicalId(bucket.Node().DefaultChild().(awscdk.CfnElement))
	objects := func(prefixes ...[]string) []interface{} {
		var out []interface{}
		for _, ps := range prefixes {
			for _, p := range ps {
				out = append(out, fmt.Sprintf("Resource::<%s.Arn>/%s*", bucketID, p))
			}
		}
		return out
	}
	var stacks []interface{}
	for _, ns := range cfg.Namespaces {
		stacks = append(stacks, fmt.Sprintf("Resource::arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/%s-*/*", ns))
	}

	var parameters []interface{}
	for _, p := range cfg.SSMPaths {
		if strings.HasSuffix(p, "/*") {
			parameters = append(parameters, "Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:parameter"+p)
		}
	}

	const (
		parameterReason = "${ssm} lookups read the Parameter Store paths configured in cairn:ssmPaths (default /NAMESPACE/*, " +
			"each namespace's own); the parameters below a path are the teams' to name, so each path ends in a wildcard."
		keyReason = "SecureStrings of the configured paths may be encrypted with any customer managed key the teams choose, " +
			"so the key is a wildcard; kms:Decrypt is allowed only through Parameter Store in this region (kms:ViaService) " +
			"and only for those parameters (the encryption context PARAMETER_ARN)."
		prefixReason = "S3 access is limited to the key prefixes this function owns (internal/bucket names every key); " +
			"object names under a prefix are chosen at run time (deployment, plan, namespace, run id), so the prefix ends in a wildcard."
		stackReason = "CloudFormation actions are limited to the stacks of the namespaces configured in cairn:namespaces " +
			"(stack names NAMESPACE-*); the trailing /* is the stack's unique id, unknown until CloudFormation creates it."
		accountReason = "Only read-only CloudFormation actions that support no resource-level permissions, or are called without " +
			"a stack name (one paginated DescribeStacks/ListStacks per run instead of one call per stack), are allowed on '*'."
	)
	perFunction := map[string][]*cdknag.NagPackSuppression{
		"deployer": {
			{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(prefixReason), AppliesTo: ptr(objects(deployerReadPrefixes, deployerWritePrefixes))},
			{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(stackReason), AppliesTo: ptr(stacks)},
			{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(accountReason), AppliesTo: &[]interface{}{"Resource::*"}},
		},
		"ports": {
			{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(prefixReason), AppliesTo: ptr(objects(portsWritePrefixes))},
		},
		"policy": {
			{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(prefixReason), AppliesTo: ptr(objects(policyReadPrefixes))},
		},
		"drift": {
			{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(prefixReason), AppliesTo: ptr(objects(driftReadPrefixes, driftWritePrefixes))},
			{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(stackReason), AppliesTo: ptr(stacks)},
			{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(accountReason), AppliesTo: &[]interface{}{"Resource::*"}},
		},
	}
	if len(cfg.SSMPaths) > 0 {
		perFunction["deployer"] = append(perFunction["deployer"],
			&cdknag.NagPackSuppression{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(keyReason),
				AppliesTo: &[]interface{}{"Resource::arn:<AWS::Partition>:kms:<AWS::Region>:<AWS::AccountId>:key/*"}})
	}
	if len(parameters) > 0 {
		perFunction["deployer"] = append(perFunction["deployer"],
			&cdknag.NagPackSuppression{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(parameterReason), AppliesTo: ptr(parameters)})
	}
	for name, f := range fns {
		s := perFunction[name]
		// The findings are on the role's default policy, a child of the role.
		cdknag.NagSuppressions_AddResourceSuppressions(f.Role(), &s, jsii.Bool(true))
	}
}

func ptr(v []interface{}) *[]interface{} { return &v }
