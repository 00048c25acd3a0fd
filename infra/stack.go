package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/target"
)

// Names other tools rely on: the CLI finds the bucket through the export, and
// templates of managed stacks import the ports ServiceToken.
const (
	ExportBucketName          = "cairn-bucket-name"
	ExportPortsServiceToken   = "cairn-ports-service-token"
	ExportNotificationsTopic  = "cairn-notifications-topic-arn"
	ExportPolicyRole          = "cairn-policy-role-arn"
	uploadEvent               = "s3:ObjectCreated:*"
	cloudFormationServiceName = "cloudformation.amazonaws.com"
	stackStatusChange         = "CloudFormation Stack Status Change"
	driftStatusChange         = "CloudFormation Drift Detection Status Change"
)

// Bucket prefixes each function may touch. Everything else in the bucket is
// out of reach of that function's role.
var (
	deployerReadPrefixes  = []string{layout.DeploymentsPrefix, layout.ApprovalsPrefix, layout.PoliciesPrefix, layout.PolicyOverridesPrefix}
	deployerWritePrefixes = []string{layout.PlansPrefix, layout.StatePrefix, layout.LocksPrefix, layout.RunsPrefix, layout.TemplatesPrefix, layout.AssetsPrefix}
	portsWritePrefixes    = []string{layout.PortsPrefix}
	// The drift function reads the graphs, their locks, and the bundle each
	// graph applied (deployments/NAME.zip at its version, for drift.ignore).
	driftReadPrefixes  = []string{layout.DeploymentsPrefix, layout.StatePrefix, layout.LocksPrefix}
	driftWritePrefixes = []string{layout.DriftPrefix}
)

// S3 actions. They are spelled out: a wildcard like s3:GetObject* would also
// grant ACL and tagging reads cairn never makes.
var (
	// objectRead reads current and earlier versions (state history, rollback,
	// the bundle a graph applied).
	objectRead = []string{"s3:GetObject", "s3:GetObjectVersion"}
	// objectWrite adds deletes: locks are released by deleting them, with
	// If-Match on their ETag.
	objectWrite = []string{"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject"}
	// listVersions lists keys and their versions (ListObjectsV2,
	// ListObjectVersions for `cairn state history` and generations).
	listVersions = []string{"s3:ListBucket", "s3:ListBucketVersions"}
	// The ports function only reads and conditionally writes its pool
	// documents, and lists them.
	portsObjects = []string{"s3:GetObject", "s3:PutObject"}
	portsList    = []string{"s3:ListBucket"}
)

// sealKeyAdminActions are what the account may do with the seal key: administer it
// (describe, tag, change its policy, schedule its deletion), never use it. The key's own
// policy grants its use (kms:GenerateMac) to the deployer's role alone, so no identity
// policy of the account, however broad, lets anyone else confirm a guessed secret
// against a seal. Changing the key policy would, and CloudTrail records it.
var sealKeyAdminActions = []string{
	"kms:DescribeKey", "kms:GetKeyPolicy", "kms:PutKeyPolicy", "kms:GetKeyRotationStatus", "kms:ListResourceTags", "kms:TagResource",
	"kms:UntagResource", "kms:UpdateKeyDescription", "kms:EnableKey", "kms:DisableKey", "kms:ListGrants", "kms:RevokeGrant",
	"kms:ScheduleKeyDeletion", "kms:CancelKeyDeletion",
}

// CloudFormation actions, split by the resource they can be limited to.
var (
	// deployerStackActions act on one named stack (or its change sets) and are
	// limited to stacks named NAMESPACE-*.
	deployerStackActions = []string{
		"cloudformation:CreateChangeSet",
		"cloudformation:DescribeChangeSet",
		"cloudformation:ExecuteChangeSet",
		"cloudformation:DeleteChangeSet",
		"cloudformation:ListChangeSets",
		"cloudformation:DescribeStackEvents",
		"cloudformation:DescribeStackResource",
		"cloudformation:DescribeStackResources",
		"cloudformation:ListStackResources",
		"cloudformation:GetTemplate",
		"cloudformation:DeleteStack",
		"cloudformation:UpdateTerminationProtection",
		"cloudformation:ContinueUpdateRollback",
		"cloudformation:RollbackStack",
		"cloudformation:CancelUpdateStack",
		"cloudformation:TagResource",
		"cloudformation:UntagResource",
		// A plan detects the drift of a stack no recent drift report covers.
		"cloudformation:DetectStackDrift",
		"cloudformation:DescribeStackResourceDrifts",
	}
	// deployerAccountActions support no resource-level permissions (or are
	// called without a stack name, like the one paginated DescribeStacks per
	// run), so IAM only accepts them on "*". All are read-only.
	deployerAccountActions = []string{
		"cloudformation:DescribeStacks",
		"cloudformation:ListStacks",
		"cloudformation:ListExports",
		"cloudformation:ListImports",
		"cloudformation:ValidateTemplate",
		"cloudformation:GetTemplateSummary",
		"cloudformation:DescribeStackDriftDetectionStatus",
	}
	// GetTemplate reads the template of a drifted stack whose applied template the drift
	// function cannot read, to tell which of its properties hold secrets (masked in
	// reports).
	driftStackActions = []string{
		"cloudformation:DetectStackDrift",
		"cloudformation:GetTemplate",
		"cloudformation:DetectStackResourceDrift",
		"cloudformation:DescribeStackResourceDrifts",
		"cloudformation:DescribeStackResources",
		"cloudformation:ListStackResources",
	}
	driftAccountActions = []string{
		"cloudformation:DescribeStacks",
		"cloudformation:ListStacks",
		"cloudformation:DescribeStackDriftDetectionStatus",
	}
	// ReadOnlyAccountActions is every CloudFormation action cairn is allowed on
	// Resource "*"; tests hold the template to it.
	ReadOnlyAccountActions = append(append([]string{}, deployerAccountActions...), driftAccountActions...)
)

// CairnStackProps configures NewCairnStack. Everything else comes from CDK
// context (see LoadConfig), so `cdk deploy -c ...` and cdk.json are the only
// knobs a user needs.
type CairnStackProps struct {
	awscdk.StackProps
}

// fn describes one Lambda: sizes are chosen per function, see NewCairnStack.
type fn struct {
	name, id string // id: the construct id, when not exportedID(name)
	memory   float64
	timeout  awscdk.Duration
	desc     string
	// roleName names the function's role after the region (nil: CloudFormation names it),
	// for roles that target deploy roles trust by name.
	roleName func(region string) string
}

// NewCairnStack builds cairn's own stack: the bucket, queues, topics, rules,
// the four Lambdas and their least-privilege roles. It fails, without
// building anything, when the context is invalid or a Lambda binary is missing.
func NewCairnStack(scope constructs.Construct, id string, props *CairnStackProps) (awscdk.Stack, error) {
	cfg, err := LoadConfig(scope.Node())
	if err != nil {
		return nil, err
	}
	if err := checkLambdaBinaries(cfg); err != nil {
		return nil, err
	}

	var sprops awscdk.StackProps
	if props != nil {
		sprops = props.StackProps
	}
	if sprops.Description == nil {
		sprops.Description = jsii.String("cairn: event-driven deployer of CloudFormation stacks (bucket, queues, topics, deployer/ports/drift/policy Lambdas)")
	}
	stack := awscdk.NewStack(scope, jsii.String(id), &sprops)
	account, region, partition := awscdk.Aws_ACCOUNT_ID(), awscdk.Aws_REGION(), awscdk.Aws_PARTITION()

	portsTopic, notifications := cairnTopics(stack, account)

	q := cairnQueues(stack)
	portsTopic.AddSubscription(awssnssubscriptions.NewSqsSubscription(q.ports, &awssnssubscriptions.SqsSubscriptionProps{
		// The ports Lambda unwraps the SNS envelope itself.
		RawMessageDelivery: jsii.Bool(false),
	}))

	// The bucket. Its name is fixed per account and region so the deploy
	// queue's policy can name it before the bucket exists: S3 checks that it
	// may send to the queue when the notification configuration is created.
	bucketName := fmt.Sprintf("cairn-%s-%s", *account, *region)
	bucketARN := fmt.Sprintf("arn:%s:s3:::%s", *partition, bucketName)
	bucket := cairnBucket(stack, bucketName)
	notifyUploads(bucket, q.deploy, bucketARN, account)

	stackEventRules(stack, cfg, account, q)
	// The bucket's notification configuration is validated against the
	// queue policy, so the policy (now holding every statement) comes first.
	bucket.Node().AddDependency(q.deploy.Node().FindChild(jsii.String("Policy")))

	// The Lambdas. Go on arm64 starts in tens of milliseconds; memory buys
	// CPU, so it is sized by the work each function does.
	common := map[string]*string{
		"CAIRN_BUCKET":              bucket.BucketName(),
		"CAIRN_NOTIFICATIONS_TOPIC": notifications.TopicArn(),
		"CAIRN_NAMESPACES":          jsii.String(cfg.NamespacesEnv()),
		"CAIRN_PORT_POOLS":          jsii.String(cfg.PortPoolsEnv()),
	}
	if cfg.CfnServiceRole != "" {
		common["CAIRN_CFN_ROLE_ARN"] = jsii.String(cfg.CfnServiceRole)
	}

	sealKey := newSealKey(stack)

	policy := newPolicy(stack, cfg, common, bucket)
	deployer := newDeployer(stack, cfg, withEnv(common, "CAIRN_POLICY_FUNCTION", policy.FunctionName()), q.deploy, sealKey, bucket, notifications)
	deployerRole := deployer.Role()
	deployerRole.AddToPrincipalPolicy(allow("DeployerJudges", []string{"lambda:InvokeFunction"}, []*string{policy.FunctionArn()}))
	ports := newPorts(stack, cfg, common, q.ports, bucket)
	drift := newDrift(stack, cfg, common, q.drift, bucket, notifications)

	cairnAlarms(stack, notifications, q, drift)

	// Before the targets, whose statements local mode appends to the bucket policy last.
	wirePolicyRole(stack, cfg, bucket)
	wireTargets(stack, cfg, bucket, q.ports, deployerRole, drift.Role())
	wireCDK(stack, cfg, deployerRole, drift.Role())
	wireGitHub(stack, cfg, bucket)

	output(stack, "BucketName", bucket.BucketName(), ExportBucketName, "cairn's bucket: push bundles to deployments/NAME.zip")
	output(stack, "PortsServiceToken", portsTopic.TopicArn(), ExportPortsServiceToken, "ServiceToken of Custom::PortAllocation")
	output(stack, "NotificationsTopicArn", notifications.TopicArn(), ExportNotificationsTopic, "subscribe here for run summaries, drift reports and alarms")
	output(stack, "DeployerRoleArn", deployerRole.RoleArn(), "", "role of the deployer Lambda: without cairn:cfnServiceRole, stacks create resources with its rights")
	output(stack, "SealKeyArn", sealKey.KeyArn(), "", "KMS HMAC key of the seals of secrets in cairn's bucket: only the deployer's role may use it")
	output(stack, "DriftRoleArn", drift.Role().RoleArn(), "", "role of the drift Lambda: attach read access to your stacks' resource types, drift detection reads them with it")

	suppress(stack, cfg, bucket, map[string]awslambda.Function{"deployer": deployer, "ports": ports, "drift": drift, "policy": policy})
	return stack, nil
}

// checkLambdaBinaries fails when a function's bootstrap binary is missing from cfg.LambdaDir.
func checkLambdaBinaries(cfg Config) error {
	for _, name := range Functions {
		p := filepath.Join(cfg.LambdaDir, name, "bootstrap")
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return fmt.Errorf("lambda binary %s is missing: run `make build` from the repository root (it compiles functions/%s), or point context %s at the folder holding %s/bootstrap", p, name, ctxLambdaDir, name)
		}
	}
	return nil
}

// cairnTopics makes cairn's two topics: the ports topic, and the notifications topic.
func cairnTopics(stack awscdk.Stack, account *string) (awssns.Topic, awssns.Topic) {
	// Topics. The ports topic is the ServiceToken of Custom::PortAllocation;
	// the notifications topic carries run summaries, drift reports and alarms.
	// Both deny publishing without TLS. A topic policy replaces SNS's default
	// one, so the AWS services that publish here are allowed explicitly, each
	// only on behalf of this account.
	portsTopic := awssns.NewTopic(stack, jsii.String("PortsTopic"), &awssns.TopicProps{
		DisplayName: jsii.String("cairn Custom::PortAllocation requests"),
		EnforceSSL:  jsii.Bool(true),
	})
	portsTopic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudFormationCustomResourceRequests"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String(cloudFormationServiceName), nil)},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  &[]*string{portsTopic.TopicArn()},
		Conditions: &map[string]interface{}{"StringEquals": map[string]interface{}{"aws:SourceAccount": account}},
	}))
	notifications := awssns.NewTopic(stack, jsii.String("NotificationsTopic"), &awssns.TopicProps{
		DisplayName: jsii.String("cairn notifications"),
		EnforceSSL:  jsii.Bool(true),
	})
	notifications.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarms"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  &[]*string{notifications.TopicArn()},
		Conditions: &map[string]interface{}{
			"StringEquals": map[string]interface{}{"aws:SourceAccount": account},
			"ArnLike":      map[string]interface{}{"aws:SourceArn": stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("cloudwatch"), Resource: jsii.String("alarm"), ResourceName: jsii.String("*"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})},
		},
	}))
	return portsTopic, notifications
}

// cairnQueueSet are cairn's queues, each with its dead-letter queue.
type cairnQueueSet struct {
	deploy, deployDLQ, ports, portsDLQ, drift, driftDLQ awssqs.Queue
}

// cairnQueues makes cairn's queues.
func cairnQueues(stack awscdk.Stack) cairnQueueSet {
	// Queues: SSE with SQS-managed keys (S3, SNS and EventBridge can deliver
	// to them without a KMS key policy), TLS only, and a DLQ each.
	deployDLQ := newQueue(stack, "DeployDLQ", awscdk.Duration_Days(jsii.Number(14)), awscdk.Duration_Seconds(jsii.Number(30)), nil)
	deployQueue := newQueue(stack, "DeployQueue",
		awscdk.Duration_Days(jsii.Number(4)),
		// Longer than the deployer's timeout, so a message is never handed to
		// a second invocation while the first still works on it.
		awscdk.Duration_Minutes(jsii.Number(5)),
		&awssqs.DeadLetterQueue{
			Queue: deployDLQ,
			// Generous: an upload that arrives during an open run is returned
			// to the queue to wait, and each return counts as a receive.
			MaxReceiveCount: jsii.Number(10),
		})
	portsDLQ := newQueue(stack, "PortsDLQ", awscdk.Duration_Days(jsii.Number(14)), awscdk.Duration_Seconds(jsii.Number(30)), nil)
	portsQueue := newQueue(stack, "PortsQueue",
		awscdk.Duration_Days(jsii.Number(4)),
		awscdk.Duration_Minutes(jsii.Number(2)),
		// A request that fails this often (malformed, or its ResponseURL is
		// unreachable) is parked in the DLQ instead of looping.
		&awssqs.DeadLetterQueue{Queue: portsDLQ, MaxReceiveCount: jsii.Number(5)})
	// The drift queue carries drift status change events and the drift
	// function's own continuations (delayed messages {"cairn":"drift-continue"}).
	// Its visibility exceeds the drift function's 5-minute timeout.
	driftDLQ := newQueue(stack, "DriftDLQ", awscdk.Duration_Days(jsii.Number(14)), awscdk.Duration_Seconds(jsii.Number(30)), nil)
	driftQueue := newQueue(stack, "DriftQueue",
		awscdk.Duration_Days(jsii.Number(4)),
		awscdk.Duration_Minutes(jsii.Number(6)),
		&awssqs.DeadLetterQueue{Queue: driftDLQ, MaxReceiveCount: jsii.Number(5)})
	return cairnQueueSet{deployQueue, deployDLQ, portsQueue, portsDLQ, driftQueue, driftDLQ}
}

// cairnBucket makes cairn's bucket, named bucketName, with its lifecycle rules.
func cairnBucket(stack awscdk.Stack, bucketName string) awss3.Bucket {
	// The bucket holds the persistent graphs and locks: never delete it with the stack.
	return securedBucket(stack, "Bucket", jsii.String(bucketName), []*awss3.LifecycleRule{
		{
			Id: jsii.String("expire-old-versions"),
			// Rollback (`cairn rollback`) reads earlier bundle versions:
			// keep the newest 20 noncurrent versions of every key, and any
			// version younger than 90 days.
			NoncurrentVersionExpiration:         awscdk.Duration_Days(jsii.Number(90)),
			NoncurrentVersionsToRetain:          jsii.Number(20),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(7)),
			ExpiredObjectDeleteMarker:           jsii.Bool(true),
		},
		{
			Id: jsii.String("expire-old-lock-versions"),
			// Every lock round (acquire, renew, release) leaves a noncurrent
			// version or a delete marker, and nobody reads old locks. Where
			// rules overlap S3 applies the shorter expiry, so this one wins
			// over the 90 days above.
			Prefix:                      jsii.String(layout.LocksPrefix),
			NoncurrentVersionExpiration: awscdk.Duration_Days(jsii.Number(1)),
			ExpiredObjectDeleteMarker:   jsii.Bool(true),
		},
		{
			Id:         jsii.String("expire-old-run-reports"),
			Prefix:     jsii.String(layout.RunsPrefix),
			Expiration: awscdk.Duration_Days(jsii.Number(180)),
		},
		{
			Id:         jsii.String("expire-old-drift-reports"),
			Prefix:     jsii.String(layout.DriftPrefix),
			Expiration: awscdk.Duration_Days(jsii.Number(90)),
		},
		assetsLifecycle(),
	})
}

// notifyUploads sends the bucket's uploads (bucket.UploadFilters) to the deploy queue.
func notifyUploads(bucket awss3.Bucket, deployQueue awssqs.Queue, bucketARN string, account *string) {
	// S3 notifications are set on the bucket resource itself rather than with
	// bucket.AddEventNotification, which would add a custom resource backed by
	// a CDK-provided Lambda: the template stays plain CloudFormation.
	deployQueue.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("BucketUploads"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("s3.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sqs:SendMessage"),
		Resources:  &[]*string{deployQueue.QueueArn()},
		Conditions: &map[string]interface{}{
			"ArnEquals":    map[string]interface{}{"aws:SourceArn": bucketARN},
			"StringEquals": map[string]interface{}{"aws:SourceAccount": account},
		},
	}))
	var queueConfigs []interface{}
	// New bundles and approvals start work in the deployer (bucket.UploadFilters).
	for _, f := range layout.UploadFilters() {
		rules := []interface{}{&awss3.CfnBucket_FilterRuleProperty{Name: jsii.String("prefix"), Value: jsii.String(f.Prefix)}}
		if f.Suffix != "" {
			rules = append(rules, &awss3.CfnBucket_FilterRuleProperty{Name: jsii.String("suffix"), Value: jsii.String(f.Suffix)})
		}
		queueConfigs = append(queueConfigs, &awss3.CfnBucket_QueueConfigurationProperty{
			Event: jsii.String(uploadEvent),
			Queue: deployQueue.QueueArn(),
			Filter: &awss3.CfnBucket_NotificationFilterProperty{
				S3Key: &awss3.CfnBucket_S3KeyFilterProperty{Rules: &rules},
			},
		})
	}
	cfnBucket := bucket.Node().DefaultChild().(awss3.CfnBucket)
	cfnBucket.SetNotificationConfiguration(&awss3.CfnBucket_NotificationConfigurationProperty{QueueConfigurations: &queueConfigs})
}

// stackEventRules sends the status changes and drift detection status changes of the
// stacks cairn manages to the deploy and drift queues.
func stackEventRules(stack awscdk.Stack, cfg Config, account *string, q cairnQueueSet) {
	deployQueue, driftQueue := q.deploy, q.drift
	// CloudFormation Stack Status Change events of the managed stacks (stack
	// ids start with arn:...:stack/NAMESPACE-) advance the run that owns them.
	// With targets, their stacks' events reach cairn's bus through the target stacks'
	// forwarding rules (the bus policy below admits their accounts), so the rules select
	// them too.
	var stackIDPrefixes []interface{}
	for _, ns := range cfg.Namespaces {
		stackIDPrefixes = append(stackIDPrefixes, map[string]interface{}{"prefix": stackIDPrefix(stack, ns)})
		for _, t := range cfg.Targets {
			stackIDPrefixes = append(stackIDPrefixes, map[string]interface{}{"prefix": targetStackIDPrefix(stack, t.Target, ns)})
		}
	}
	eventAccounts := []*string{account}
	for _, a := range cfg.TargetAccounts() {
		eventAccounts = append(eventAccounts, jsii.String(a))
	}
	awsevents.NewRule(stack, jsii.String("StackEvents"), &awsevents.RuleProps{
		Description: jsii.String("cairn: status changes of the stacks cairn manages, to the deploy queue"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings("aws.cloudformation"),
			DetailType: jsii.Strings(stackStatusChange),
			Account:    &eventAccounts,
			Detail:     &map[string]interface{}{"stack-id": stackIDPrefixes},
		},
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewSqsQueue(deployQueue, nil)},
	})
	// Drift detection status changes of the same stacks continue the drift
	// sweeps waiting for them. They go to the drift queue only: the deployer
	// dead-letters messages it does not know.
	awsevents.NewRule(stack, jsii.String("DriftEvents"), &awsevents.RuleProps{
		Description: jsii.String("cairn: drift detection status changes of the stacks cairn manages, to the drift queue"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings("aws.cloudformation"),
			DetailType: jsii.Strings(driftStatusChange),
			Account:    &eventAccounts,
			Detail:     &map[string]interface{}{"stack-id": stackIDPrefixes},
		},
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewSqsQueue(driftQueue, nil)},
	})
}

// newDeployer makes the deployer function, fed by the deploy queue, and grants its role.
func newDeployer(stack awscdk.Stack, cfg Config, common map[string]*string, deployQueue awssqs.Queue, sealKey awskms.Key, bucket awss3.Bucket, notifications awssns.Topic) awslambda.Function {
	// Deployer: each trigger loads a run, observes the stacks in flight,
	// starts what became ready and returns; it never waits on CloudFormation.
	// 2 minutes covers unzipping a bundle, hashing templates and backing off
	// on throttling under the run's API budget; 512 MB gives the CPU for that.
	// No reserved concurrency: it would carve capacity out of the account and,
	// with an SQS source, throttled invocations count as receives and push
	// messages into the DLQ. Concurrency is capped on the event source
	// mapping instead, which the SQS poller respects without throttling;
	// runs of one graph are serialised by the lock in the bucket anyway.
	deployer := newFunction(stack, cfg, fn{
		name: "deployer", memory: 512, timeout: awscdk.Duration_Minutes(jsii.Number(2)), roleName: target.DeployerRoleName,
		desc: "cairn deployer: runs deployments, plans and approvals as a persisted state machine",
	}, withEnv(withEnv(withEnv(common, "CAIRN_DEPLOY_QUEUE_URL", deployQueue.QueueUrl()),
		"CAIRN_SEAL_KEY_ID", sealKey.KeyArn()), "CAIRN_SSM_PATHS", jsii.String(cfg.SSMPathsOf.Env())))
	deployer.AddEventSource(awslambdaeventsources.NewSqsEventSource(deployQueue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(10),
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(5),
	}))
	deployerRole := deployer.Role()
	sealKey.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("DeployerSeals"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewArnPrincipal(deployerRole.RoleArn())},
		Actions:    jsii.Strings("kms:GenerateMac"),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]interface{}{"StringEquals": map[string]interface{}{"kms:MacAlgorithm": "HMAC_SHA_256"}},
	}), jsii.Bool(false))
	grantObjects(deployerRole, bucket, "DeployerReadUploads", deployerReadPrefixes, objectRead)
	grantObjects(deployerRole, bucket, "DeployerWriteState", deployerWritePrefixes, objectWrite)
	grantList(deployerRole, bucket, "DeployerList", append(append([]string{}, deployerReadPrefixes...), deployerWritePrefixes...), listVersions)
	// The state store warns in run reports when versioning is off (the graph
	// then has no history). GetBucketVersioning has no prefix to limit it to.
	deployerRole.AddToPrincipalPolicy(allow("DeployerBucketVersioning", []string{"s3:GetBucketVersioning"}, []*string{bucket.BucketArn()}))
	deployerRole.AddToPrincipalPolicy(allow("DeployerManagedStacks", deployerStackActions, stackARNs(stack, cfg.Namespaces)))
	deployerRole.AddToPrincipalPolicy(allow("DeployerReadStacks", deployerAccountActions, []*string{jsii.String("*")}))
	deployerRole.AddToPrincipalPolicy(allow("DeployerHeartbeats", []string{"sqs:SendMessage"}, []*string{deployQueue.QueueArn()}))
	deployerRole.AddToPrincipalPolicy(allow("DeployerNotify", []string{"sns:Publish"}, []*string{notifications.TopicArn()}))
	grantParameters(stack, deployerRole, cfg.SSMPaths)
	if cfg.CfnServiceRole != "" {
		st := allow("PassCloudFormationServiceRole", []string{"iam:PassRole"}, []*string{jsii.String(cfg.CfnServiceRole)})
		st.AddCondition(jsii.String("StringEquals"), map[string]interface{}{"iam:PassedToService": cloudFormationServiceName})
		deployerRole.AddToPrincipalPolicy(st)
	}
	return deployer
}

// newPorts makes the ports function, fed by the ports queue, and grants its role.
func newPorts(stack awscdk.Stack, cfg Config, common map[string]*string, portsQueue awssqs.Queue, bucket awss3.Bucket) awslambda.Function {
	// Ports: a custom resource request must be answered well inside
	// CloudFormation's wait; the work is a few conditional S3 writes and one
	// HTTPS PUT, so 30 s is ample and 256 MB is enough. The SQS source uses
	// the minimum concurrency: allocations in one pool conflict on ports/POOL.json.
	ports := newFunction(stack, cfg, fn{
		name: "ports", memory: 256, timeout: awscdk.Duration_Seconds(jsii.Number(30)),
		desc: "cairn ports: serves Custom::PortAllocation requests",
	}, common)
	ports.AddEventSource(awslambdaeventsources.NewSqsEventSource(portsQueue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(10),
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(2),
	}))
	// CAIRN_RESPONSE_URL_HOSTS stays unset: in AWS every ResponseURL is an
	// https URL on amazonaws.com, which the handler accepts without it; any
	// other host would be a request to refuse.
	grantObjects(ports.Role(), bucket, "PortsAllocations", portsWritePrefixes, portsObjects)
	grantList(ports.Role(), bucket, "PortsList", portsWritePrefixes, portsList)
	return ports
}

// newDrift makes the drift function, fed by the drift queue and its schedule, and grants
// its role.
func newDrift(stack awscdk.Stack, cfg Config, common map[string]*string, driftQueue awssqs.Queue, bucket awss3.Bucket, notifications awssns.Topic) awslambda.Function {
	// Drift: starts detections under a concurrency limit, waits at most
	// 2 minutes for them (stopping 15 s before its deadline), then saves the
	// sweep and sends itself a delayed continuation through the drift queue.
	// The timeout must exceed those 2m15s; 5 minutes leaves room for writing
	// reports and backing off on throttling, and 512 MB parses large drift
	// results. Concurrency 2 (the minimum) on the queue: sweeps are saved with
	// If-Match, so a second invocation is safe but rarely useful.
	drift := newFunction(stack, cfg, fn{
		name: "drift", memory: 512, timeout: awscdk.Duration_Minutes(jsii.Number(5)), roleName: target.DriftRoleName,
		desc: "cairn drift: detects drift of the stacks in every persistent graph",
	}, withEnv(common, "CAIRN_DRIFT_QUEUE_URL", driftQueue.QueueUrl()))
	drift.AddEventSource(awslambdaeventsources.NewSqsEventSource(driftQueue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(10),
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(2),
	}))
	grantObjects(drift.Role(), bucket, "DriftReadState", driftReadPrefixes, objectRead)
	grantObjects(drift.Role(), bucket, "DriftReports", driftWritePrefixes, objectWrite)
	grantList(drift.Role(), bucket, "DriftList", append(append([]string{}, driftReadPrefixes...), driftWritePrefixes...), listVersions)
	drift.Role().AddToPrincipalPolicy(allow("DriftContinuations", []string{"sqs:SendMessage"}, []*string{driftQueue.QueueArn()}))
	drift.Role().AddToPrincipalPolicy(allow("DriftManagedStacks", driftStackActions, stackARNs(stack, cfg.Namespaces)))
	drift.Role().AddToPrincipalPolicy(allow("DriftReadStacks", driftAccountActions, []*string{jsii.String("*")}))
	drift.Role().AddToPrincipalPolicy(allow("DriftNotify", []string{"sns:Publish"}, []*string{notifications.TopicArn()}))
	awsevents.NewRule(stack, jsii.String("DriftSchedule"), &awsevents.RuleProps{
		Description: jsii.String("cairn: scheduled drift detection"),
		Schedule:    awsevents.Schedule_Expression(jsii.String(cfg.DriftSchedule)),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(drift, &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(2),
			MaxEventAge:   awscdk.Duration_Hours(jsii.Number(1)),
		})},
	})
	return drift
}

// cairnAlarms makes the alarms, which notify the notifications topic.
func cairnAlarms(stack awscdk.Stack, notifications awssns.Topic, q cairnQueueSet, drift awslambda.Function) {
	deployDLQ, portsDLQ, driftDLQ := q.deployDLQ, q.portsDLQ, q.driftDLQ
	// Alarms: anything in a DLQ is work cairn gave up on, and a failing drift
	// run has no queue to park in; all of them notify the notifications topic.
	alarmAction := awscloudwatchactions.NewSnsAction(notifications)
	for _, q := range []struct {
		id  string
		dlq awssqs.Queue
	}{{"DeployDLQNotEmpty", deployDLQ}, {"PortsDLQNotEmpty", portsDLQ}, {"DriftDLQNotEmpty", driftDLQ}} {
		a := awscloudwatch.NewAlarm(stack, jsii.String(q.id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String("cairn: messages in a dead-letter queue; inspect them, fix the cause, then redrive"),
			Metric:             q.dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Maximum")}),
			Threshold:          jsii.Number(1),
			EvaluationPeriods:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		a.AddAlarmAction(alarmAction)
	}
	driftErrors := awscloudwatch.NewAlarm(stack, jsii.String("DriftErrors"), &awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String("cairn: the drift Lambda failed; see its log group"),
		Metric:             drift.MetricErrors(&awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum")}),
		Threshold:          jsii.Number(1),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	driftErrors.AddAlarmAction(alarmAction)
}
