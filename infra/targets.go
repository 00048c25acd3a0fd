package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/target"
)

// targetID is the suffix of the logical ids cairn's stack gives what it makes for one
// target: ACCOUNT and the region without hyphens, e.g. 111111111111euwest1. The ids are
// fixed (not CDK's hashed ones) so local mode adds the same resources for its targets.
func targetID(t target.Target) string { return t.Account + strings.ReplaceAll(t.Region, "-", "") }

// bucketName is cairn's bucket in its account and region (tokens or literals).
func bucketName(account, region string) string { return fmt.Sprintf("cairn-%s-%s", account, region) }

// targetStackIDPrefix is the start of the stack id of every stack of a namespace in a
// target: arn:PARTITION:cloudformation:REGION:ACCOUNT:stack/NAMESPACE-.
func targetStackIDPrefix(stack awscdk.Stack, t target.Target, namespace string) *string {
	return stack.FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("cloudformation"), Region: jsii.String(t.Region), Account: jsii.String(t.Account),
		Resource: jsii.String("stack"), ResourceName: jsii.String(namespace + "-"), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME,
	})
}

// wireTargets adds to cairn's stack what each target needs of it: a bus policy admitting
// the events of every other account, a subscription of the ports queue to each target's
// ports topic (and the queue policy admitting those topics), the right of the deployer and
// drift roles to assume each target's deploy role, and the right of other accounts' deploy
// roles to read large templates (CloudFormation fetches a TemplateURL with the caller's
// rights). The stack-event rules select the targets' stacks where they are made.
func wireTargets(stack awscdk.Stack, cfg Config, bucket awss3.Bucket, portsQueue awssqs.Queue, deployerRole, driftRole awsiam.IRole) {
	if len(cfg.Targets) == 0 {
		return
	}
	for _, a := range cfg.TargetAccounts() {
		p := awsevents.NewCfnEventBusPolicy(stack, jsii.String("TargetEvents"+a), &awsevents.CfnEventBusPolicyProps{
			StatementId:  jsii.String("cairn-target-" + a),
			EventBusName: jsii.String("default"),
			Statement: map[string]interface{}{
				"Sid": "cairn-target-" + a, "Effect": "Allow", "Action": "events:PutEvents",
				"Principal": map[string]interface{}{"AWS": fmt.Sprintf("arn:%s:iam::%s:root", *awscdk.Aws_PARTITION(), a)},
				"Resource":  stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("events"), Resource: jsii.String("event-bus"), ResourceName: jsii.String("default"), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME}),
			},
		})
		p.OverrideLogicalId(jsii.String("TargetEvents" + a))
	}
	var topics []interface{}
	var roles, foreignRoles []*string
	for _, t := range cfg.Targets {
		topic := stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("sns"), Region: jsii.String(t.Region), Account: jsii.String(t.Account),
			Resource: jsii.String(target.PortsTopicName), ArnFormat: awscdk.ArnFormat_NO_RESOURCE_NAME})
		sub := awssns.NewCfnSubscription(stack, jsii.String("TargetPorts"+targetID(t.Target)), &awssns.CfnSubscriptionProps{
			TopicArn: topic, Region: jsii.String(t.Region), Protocol: jsii.String("sqs"), Endpoint: portsQueue.QueueArn(),
		})
		sub.OverrideLogicalId(jsii.String("TargetPorts" + targetID(t.Target)))
		topics = append(topics, topic)
		role := stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("iam"), Region: jsii.String(""), Account: jsii.String(t.Account),
			Resource: jsii.String("role"), ResourceName: jsii.String(target.DeployRoleName(t.Region)), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME})
		roles = append(roles, role)
		if t.Account != cfg.Home.Account {
			foreignRoles = append(foreignRoles, role)
		}
	}
	portsQueue.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("TargetPortsTopics"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("sns.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sqs:SendMessage"),
		Resources:  &[]*string{portsQueue.QueueArn()},
		Conditions: &map[string]interface{}{"ArnEquals": map[string]interface{}{"aws:SourceArn": topics}},
	}))
	deployerRole.AddToPrincipalPolicy(allow("DeployerAssumeTargetRoles", []string{"sts:AssumeRole"}, roles))
	// Stacks of another region of cairn's own account are reached with the deployer's own
	// credentials (no role_arn): it stores their artifacts in that region's assets bucket.
	var buckets, assets []*string
	var assetFindings []interface{}
	for _, t := range cfg.Targets {
		if t.Account != cfg.Home.Account {
			continue
		}
		name := t.AssetsBucketName()
		buckets = append(buckets, stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("s3"), Region: jsii.String(""), Account: jsii.String(""), Resource: jsii.String(name), ArnFormat: awscdk.ArnFormat_NO_RESOURCE_NAME}))
		assets = append(assets, stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("s3"), Region: jsii.String(""), Account: jsii.String(""), Resource: jsii.String(name), ResourceName: jsii.String(layout.AssetsPrefix + "*"), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME}))
		assetFindings = append(assetFindings, "Resource::arn:<AWS::Partition>:s3:::"+name+"/"+layout.AssetsPrefix+"*")
	}
	if len(assets) > 0 {
		deployerRole.AddToPrincipalPolicy(allow("DeployerStoreTargetAssets", assetActions, assets))
		deployerRole.AddToPrincipalPolicy(allow("DeployerListTargetAssets", []string{"s3:ListBucket"}, buckets))
		cdknag.NagSuppressions_AddResourceSuppressions(deployerRole, &[]*cdknag.NagPackSuppression{
			{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(assetsReason), AppliesTo: ptr(assetFindings)},
		}, jsii.Bool(true))
	}
	driftRole.AddToPrincipalPolicy(allow("DriftAssumeTargetRoles", []string{"sts:AssumeRole"}, roles))
	if len(foreignRoles) > 0 {
		var principals []awsiam.IPrincipal
		for _, r := range foreignRoles {
			principals = append(principals, awsiam.NewArnPrincipal(r))
		}
		bucket.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("TargetTemplates"),
			Principals: &principals,
			Actions:    jsii.Strings("s3:GetObject"),
			Resources:  &[]*string{bucket.ArnForObjects(jsii.String(layout.TemplatesPrefix + "*"))},
		}))
	}
}

// assetActions store and refresh packaged artifacts (a refresh is a copy onto itself:
// GetObject of the source, PutObject of the copy; HeadObject is GetObject's).
var assetActions = []string{"s3:GetObject", "s3:PutObject"}

const assetsReason = "Packaged artifacts (Lambda code, definitions) are stored content-addressed under assets/ " +
	"(the file name is the artifact's SHA-256, chosen at deploy time), so the prefix ends in a wildcard."

// TargetStackProps configures NewTargetStack: where it goes (StackProps.Env) and which
// target of cairn:targets it is.
type TargetStackProps struct {
	awscdk.StackProps
	Target Target
}

// NewTargetStack builds the stack cairn needs in one target account and region: the deploy
// role cairn's deployer and drift roles assume (CloudFormation on the namespaces' stacks
// there, iam:PassRole of the target's service role only), a rule forwarding the stacks'
// status and drift events to cairn's event bus, and the regional ports topic, exported as
// cairn-ports-service-token, which cairn's ports queue subscribes to. Region and account
// are pseudo parameters in the template, so one template serves every target.
func NewTargetStack(scope constructs.Construct, id string, props *TargetStackProps) (awscdk.Stack, error) {
	cfg, err := LoadConfig(scope.Node())
	if err != nil {
		return nil, err
	}
	t := props.Target
	home := cfg.Home
	sprops := props.StackProps
	if sprops.Description == nil {
		sprops.Description = jsii.String("cairn target: the deploy role, event forwarding and ports topic cairn (" + home.String() + ") needs in this account and region")
	}
	stack := awscdk.NewStack(scope, jsii.String(id), &sprops)
	account, region, partition := awscdk.Aws_ACCOUNT_ID(), awscdk.Aws_REGION(), awscdk.Aws_PARTITION()
	here := func(service, resource, name string, format awscdk.ArnFormat) *string {
		return awscdk.Arn_Format(&awscdk.ArnComponents{Service: jsii.String(service), Region: region, Account: account, Partition: partition,
			Resource: jsii.String(resource), ResourceName: jsii.String(name), ArnFormat: format}, nil)
	}

	// The deploy role. It trusts cairn's account on the condition that the caller is
	// cairn's deployer or drift role: IAM checks a principal named in a trust policy
	// exists, a condition it does not, so target stacks deploy before cairn's.
	trusted := []interface{}{
		fmt.Sprintf("arn:%s:iam::%s:role/%s", *partition, home.Account, target.DeployerRoleName(home.Region)),
		fmt.Sprintf("arn:%s:iam::%s:role/%s", *partition, home.Account, target.DriftRoleName(home.Region)),
	}
	var externalIDs *[]*string
	if t.ExternalID != "" {
		externalIDs = &[]*string{jsii.String(t.ExternalID)}
	}
	role := awsiam.NewRole(stack, jsii.String("DeployRole"), &awsiam.RoleProps{
		RoleName: awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String(target.DeployRoleName("")), region}),
		AssumedBy: awsiam.NewPrincipalWithConditions(awsiam.NewAccountPrincipal(jsii.String(home.Account)), &map[string]interface{}{
			"ArnEquals": map[string]interface{}{"aws:PrincipalArn": trusted},
		}),
		ExternalIds: externalIDs,
		Description: jsii.String("cairn deploys the namespaces' stacks of this region with this role"),
	})
	var stacks []*string
	for _, ns := range cfg.Namespaces {
		stacks = append(stacks, here("cloudformation", "stack", ns+"-*/*", awscdk.ArnFormat_SLASH_RESOURCE_NAME))
	}
	stackActions := slices.Compact(slices.Sorted(slices.Values(append(append([]string{}, deployerStackActions...), driftStackActions...))))
	readActions := slices.Compact(slices.Sorted(slices.Values(ReadOnlyAccountActions)))
	role.AddToPrincipalPolicy(allow("ManagedStacks", stackActions, stacks))
	role.AddToPrincipalPolicy(allow("ReadStacks", readActions, []*string{jsii.String("*")}))
	templates := fmt.Sprintf("arn:%s:s3:::%s/%s*", *partition, bucketName(home.Account, home.Region), layout.TemplatesPrefix)
	role.AddToPrincipalPolicy(allow("ReadLargeTemplates", []string{"s3:GetObject"}, []*string{jsii.String(templates)}))
	// The assets bucket: the packaged artifacts (Lambda code, layers, definitions) of the
	// stacks here, which Lambda and the other services read from their own region only.
	// The deploy role stores them (HeadObject of a missing key answers 404 only to a
	// caller that may list the bucket), and CloudFormation reads them with its rights.
	// Functions keep their code, but a rollback reads the earlier artifacts: the bucket stays
	// when the target stack goes.
	assetsBucket := securedBucket(stack, "AssetsBucket",
		awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String(target.AssetsBucketPrefix), account, jsii.String("-"), region}),
		[]*awss3.LifecycleRule{assetsLifecycle(), {
			Id:                                  jsii.String("clean-up"),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(7)),
			ExpiredObjectDeleteMarker:           jsii.Bool(true),
		}})
	role.AddToPrincipalPolicy(allow("StoreAssets", assetActions, []*string{assetsBucket.ArnForObjects(jsii.String(layout.AssetsPrefix + "*"))}))
	role.AddToPrincipalPolicy(allow("ListAssets", []string{"s3:ListBucket"}, []*string{assetsBucket.BucketArn()}))
	cdknag.NagSuppressions_AddResourceSuppressions(assetsBucket, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-S1"),
		Reason: jsii.String("Server access logs would need a second bucket that itself cannot log; the objects are content-addressed " +
			"artifacts written by cairn's runs, whose reports name them, and accounts that need request-level audit enable CloudTrail S3 data events."),
	}}, jsii.Bool(false))
	if t.ServiceRole != "" {
		st := allow("PassCloudFormationServiceRole", []string{"iam:PassRole"}, []*string{jsii.String(t.ServiceRole)})
		st.AddCondition(jsii.String("StringEquals"), map[string]interface{}{"iam:PassedToService": cloudFormationServiceName})
		role.AddToPrincipalPolicy(st)
	}

	// Status and drift events of the namespaces' stacks here, to cairn's bus.
	var prefixes []interface{}
	for _, ns := range cfg.Namespaces {
		prefixes = append(prefixes, map[string]interface{}{"prefix": here("cloudformation", "stack", ns+"-", awscdk.ArnFormat_SLASH_RESOURCE_NAME)})
	}
	bus := awsevents.EventBus_FromEventBusArn(stack, jsii.String("CairnBus"),
		jsii.String(fmt.Sprintf("arn:%s:events:%s:%s:event-bus/default", *partition, home.Region, home.Account)))
	awsevents.NewRule(stack, jsii.String("ForwardStackEvents"), &awsevents.RuleProps{
		Description: jsii.String("cairn: status and drift detection changes of the stacks cairn manages here, to cairn's event bus"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings("aws.cloudformation"),
			DetailType: jsii.Strings(stackStatusChange, driftStatusChange),
			Detail:     &map[string]interface{}{"stack-id": prefixes},
		},
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewEventBus(bus, nil)},
	})

	topic := targetPortsTopic(stack, account, partition, home)

	output(stack, "PortsServiceToken", topic.TopicArn(), target.ExportPortsServiceToken, "ServiceToken of Custom::PortAllocation in this region")
	output(stack, "DeployRoleArn", role.RoleArn(), "", "role_arn of the stacks cairn deploys here")
	output(stack, "AssetsBucketName", assetsBucket.BucketName(), "", "where cairn stores the packaged artifacts of the stacks here")

	suppressTargetRole(stack, cfg, home, role, assetsBucket)
	return stack, nil
}

// targetPortsTopic makes a target's regional ports topic: a custom resource's ServiceToken
// must be in its stack's region. cairn's ports queue subscribes to it (from cairn's
// account, so the subscription needs no confirmation).
func targetPortsTopic(stack awscdk.Stack, account, partition *string, home target.Target) awssns.Topic {
	topic := awssns.NewTopic(stack, jsii.String("PortsTopic"), &awssns.TopicProps{
		TopicName:   jsii.String(target.PortsTopicName),
		DisplayName: jsii.String("cairn Custom::PortAllocation requests"),
		EnforceSSL:  jsii.Bool(true),
	})
	topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudFormationCustomResourceRequests"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String(cloudFormationServiceName), nil)},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  &[]*string{topic.TopicArn()},
		Conditions: &map[string]interface{}{"StringEquals": map[string]interface{}{"aws:SourceAccount": account}},
	}))
	topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CairnPortsQueueSubscribes"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewAccountPrincipal(jsii.String(home.Account))},
		Actions:    jsii.Strings("sns:Subscribe"),
		Resources:  &[]*string{topic.TopicArn()},
		Conditions: &map[string]interface{}{
			"StringEquals": map[string]interface{}{"sns:Protocol": "sqs"},
			"StringLike":   map[string]interface{}{"sns:Endpoint": fmt.Sprintf("arn:%s:sqs:%s:%s:*", *partition, home.Region, home.Account)},
		},
	}))
	return topic
}

// suppressTargetRole says why the deploy role's wildcards are as narrow as they can be.
func suppressTargetRole(stack awscdk.Stack, cfg Config, home target.Target, role awsiam.Role, assetsBucket awss3.Bucket) {
	const (
		stackReason = "CloudFormation actions are limited to the stacks of the namespaces in cairn:namespaces in this account and region " +
			"(stack names NAMESPACE-*); the trailing /* is the stack's unique id, unknown until CloudFormation creates it."
		readReason = "Only read-only CloudFormation actions that support no resource-level permissions, or are called without a stack " +
			"name, are allowed on '*'."
		templateReason = "Templates over 51,200 bytes are passed by TemplateURL from cairn's bucket, content-addressed under templates/ " +
			"(the file name is the template's SHA-256), and CloudFormation reads them with this role's rights."
	)
	var stackFindings []interface{}
	for _, ns := range cfg.Namespaces {
		stackFindings = append(stackFindings, "Resource::arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/"+ns+"-*/*")
	}
	assetsID := *stack.GetLogicalId(assetsBucket.Node().DefaultChild().(awscdk.CfnElement))
	cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{
		{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(assetsReason), AppliesTo: &[]interface{}{"Resource::<" + assetsID + ".Arn>/" + layout.AssetsPrefix + "*"}},
		{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(stackReason), AppliesTo: ptr(stackFindings)},
		{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(readReason), AppliesTo: &[]interface{}{"Resource::*"}},
		{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(templateReason),
			AppliesTo: &[]interface{}{"Resource::arn:<AWS::Partition>:s3:::" + bucketName(home.Account, home.Region) + "/" + layout.TemplatesPrefix + "*"}},
	}, jsii.Bool(true))
}
