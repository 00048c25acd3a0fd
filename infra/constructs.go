package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	layout "github.com/cairn-dev/cairn/internal/bucket"
)

// newQueue is an SQS queue as cairn keeps them: encrypted (SSE-SQS), TLS only.
func newQueue(stack awscdk.Stack, id string, retention, visibility awscdk.Duration, dlq *awssqs.DeadLetterQueue) awssqs.Queue {
	return awssqs.NewQueue(stack, jsii.String(id), &awssqs.QueueProps{
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		RetentionPeriod:   retention,
		VisibilityTimeout: visibility,
		DeadLetterQueue:   dlq,
	})
}

// newFunction creates a Lambda with its own role and log group. The role is
// created here rather than by CDK so it carries no managed policy: log
// writing is granted on the function's own log group only.
func newFunction(stack awscdk.Stack, cfg Config, f fn, env map[string]*string) awslambda.Function {
	id := exportedID(f.name)
	if f.id != "" {
		id = f.id
	}
	logs := awslogs.NewLogGroup(stack, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_THREE_MONTHS,
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	var roleName *string
	if f.roleName != nil {
		roleName = awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String(f.roleName("")), awscdk.Aws_REGION()})
	}
	role := awsiam.NewRole(stack, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("cairn " + f.name + " Lambda"),
		RoleName:    roleName,
	})
	role.AddToPrincipalPolicy(allow(id+"Logs", []string{"logs:CreateLogStream", "logs:PutLogEvents"}, []*string{logs.LogGroupArn()}))
	function := awslambda.NewFunction(stack, jsii.String(id), &awslambda.FunctionProps{
		Description:  jsii.String(f.desc),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(cfg.LambdaDir, f.name)), nil),
		MemorySize:   jsii.Number(f.memory),
		Timeout:      f.timeout,
		Role:         role,
		LogGroup:     logs,
		// JSON logs: slog's JSON handler output and the platform's lines are
		// both queryable in CloudWatch Logs Insights.
		LoggingFormat:         awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel_INFO,
		SystemLogLevelV2:      awslambda.SystemLogLevel_WARN,
		Environment:           &env,
	})
	// The function and its event source mappings need the role's policy in
	// place: an SQS mapping is validated against it when it is created.
	function.Node().AddDependency(role)
	return function
}

func withEnv(base map[string]*string, key string, value *string) map[string]*string {
	out := make(map[string]*string, len(base)+1)
	for k, v := range base {
		out[k] = v
	}
	out[key] = value
	return out
}

func allow(sid string, actions []string, resources []*string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String(sid),
		Effect:    awsiam.Effect_ALLOW,
		Actions:   jsii.Strings(actions...),
		Resources: &resources,
	})
}

// grantObjects allows the object actions under the given prefixes only.
// securedBucket is a bucket as cairn keeps them: versioned, SSE-S3, public access blocked,
// ACLs disabled, TLS 1.2 or later only, with rules, and retained when its stack is deleted.
func securedBucket(stack awscdk.Stack, id string, name *string, rules []*awss3.LifecycleRule) awss3.Bucket {
	return awss3.NewBucket(stack, jsii.String(id), &awss3.BucketProps{
		BucketName:        name,
		Versioned:         jsii.Bool(true),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		EnforceSSL:        jsii.Bool(true),
		MinimumTLSVersion: jsii.Number(1.2),
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		LifecycleRules:    &rules,
	})
}

// assetsLifecycle expires the packaged artifacts (assets/, content addressed) that no
// deploy wrote for a year: a deploy naming an artifact writes it again once it is a month
// old (layout.AssetsRefreshAfter), so what live stacks keep being deployed with stays, and what
// nothing names any more goes. Lambda keeps its own copy of a function's code.
func assetsLifecycle() *awss3.LifecycleRule {
	return &awss3.LifecycleRule{
		Id:                          jsii.String("expire-unreferenced-assets"),
		Prefix:                      jsii.String(layout.AssetsPrefix),
		Expiration:                  awscdk.Duration_Days(jsii.Number(layout.AssetsExpireDays)),
		NoncurrentVersionExpiration: awscdk.Duration_Days(jsii.Number(30)),
	}
}

func grantObjects(role awsiam.IRole, bucket awss3.Bucket, sid string, prefixes, actions []string) {
	var resources []*string
	for _, p := range prefixes {
		resources = append(resources, bucket.ArnForObjects(jsii.String(p+"*")))
	}
	role.AddToPrincipalPolicy(allow(sid, actions, resources))
}

// grantList allows the list actions. s3:ListBucket is granted on the bucket without a
// prefix condition: S3 answers a read of a missing key with 404 only to a caller that may
// list the bucket (otherwise 403 AccessDenied), and the state, lock and ports stores rely
// on "not found" to create their objects. Listing reveals key names in cairn's own bucket
// only. The other list actions (versions) stay limited to the given prefixes.
func grantList(role awsiam.IRole, bucket awss3.Bucket, sid string, prefixes, actions []string) {
	var scoped []string
	for _, a := range actions {
		if a == "s3:ListBucket" {
			role.AddToPrincipalPolicy(allow(sid+"Keys", []string{a}, []*string{bucket.BucketArn()}))
			continue
		}
		scoped = append(scoped, a)
	}
	if len(scoped) == 0 {
		return
	}
	var like []interface{}
	for _, p := range prefixes {
		like = append(like, p+"*")
	}
	st := allow(sid, scoped, []*string{bucket.BucketArn()})
	st.AddCondition(jsii.String("StringLike"), map[string]interface{}{"s3:prefix": like})
	role.AddToPrincipalPolicy(st)
}

// grantParameters lets the deployer read the Parameter Store names and paths of
// cairn:ssmPaths for ${ssm} lookups, and decrypt their SecureStrings: KMS only
// through Parameter Store in this region (kms:ViaService), and only for those
// parameters (Parameter Store's encryption context names the parameter). The
// AWS managed key aws/ssm needs no grant: its key policy allows the account's
// principals through Parameter Store.
func grantParameters(stack awscdk.Stack, role awsiam.IRole, paths []string) {
	if len(paths) == 0 {
		return
	}
	arns := parameterARNs(stack, paths)
	role.AddToPrincipalPolicy(allow("DeployerReadParameters", []string{"ssm:GetParameters"}, arns))
	keys := stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("kms"), Resource: jsii.String("key"), ResourceName: jsii.String("*"),
		ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME})
	st := allow("DeployerDecryptParameters", []string{"kms:Decrypt"}, []*string{keys})
	st.AddCondition(jsii.String("StringEquals"), map[string]interface{}{"kms:ViaService": fmt.Sprintf("ssm.%s.%s", *stack.Region(), *stack.UrlSuffix())})
	var like []interface{}
	for _, a := range arns {
		like = append(like, *a)
	}
	st.AddCondition(jsii.String("StringLike"), map[string]interface{}{"kms:EncryptionContext:PARAMETER_ARN": like})
	role.AddToPrincipalPolicy(st)
}

// parameterARNs are the IAM resources of Parameter Store names and paths:
// /shop/* is arn:PARTITION:ssm:REGION:ACCOUNT:parameter/shop/*.
func parameterARNs(stack awscdk.Stack, paths []string) []*string {
	var out []*string
	for _, p := range paths {
		out = append(out, stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("ssm"), Resource: jsii.String("parameter"),
			ResourceName: jsii.String(strings.TrimPrefix(p, "/")), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME}))
	}
	return out
}

// stackIDPrefix is the start of the stack id (ARN) of every stack in a
// namespace: arn:PARTITION:cloudformation:REGION:ACCOUNT:stack/NAMESPACE-.
func stackIDPrefix(stack awscdk.Stack, namespace string) *string {
	return stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("cloudformation"),
		Resource:     jsii.String("stack"),
		ResourceName: jsii.String(namespace + "-"),
		ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
	})
}

// stackARNs are the IAM resources for every stack in the namespaces:
// arn:PARTITION:cloudformation:REGION:ACCOUNT:stack/NAMESPACE-*/* (the last
// part is the stack's unique id).
func stackARNs(stack awscdk.Stack, namespaces []string) []*string {
	var out []*string
	for _, ns := range namespaces {
		out = append(out, stack.FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("cloudformation"),
			Resource:     jsii.String("stack"),
			ResourceName: jsii.String(ns + "-*/*"),
			ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
		}))
	}
	return out
}

func output(stack awscdk.Stack, id string, value *string, export, desc string) {
	props := &awscdk.CfnOutputProps{Value: value, Description: jsii.String(desc)}
	if export != "" {
		props.ExportName = jsii.String(export)
	}
	awscdk.NewCfnOutput(stack, jsii.String(id), props)
}

// exportedID turns a function name into a construct id: "deployer" -> "Deployer".
func exportedID(name string) string {
	if name == "" {
		return name
	}
	return string(name[0]-'a'+'A') + name[1:]
}
