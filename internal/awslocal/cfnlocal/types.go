package cfnlocal

import (
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/internal/resourcespec"
)

// idCtx is what a resource type needs to invent realistic identifiers.
type idCtx struct {
	region, account, stack, logicalID, seed string
	props                                   map[string]any
	physical                                string
}

func (c idCtx) prop(name string) string {
	if v, ok := c.props[name]; ok {
		switch v.(type) {
		case map[string]any, []any:
			return ""
		}
		return scalarString(v)
	}
	return ""
}

// name is the given name property or a CloudFormation-style generated one.
func (c idCtx) name(prop string, max int) string {
	if n := c.prop(prop); n != "" {
		return n
	}
	suffix := hashUpper(12, c.seed)
	base := c.stack + "-" + c.logicalID
	if len(base)+13 > max {
		base = base[:max-13]
	}
	return base + "-" + suffix
}

func (c idCtx) hex(prefix string, n int) string { return prefix + hashHex(n, c.seed) }

func (c idCtx) arn(service, resource string) string {
	return fmt.Sprintf("arn:aws:%s:%s:%s:%s", service, c.region, c.account, resource)
}

// resourceType describes a well-known resource type: its physical id (which is what Ref
// returns for all types in the table), its attributes and its create-only properties.
type resourceType struct {
	phys       func(c idCtx) string
	attrs      map[string]func(c idCtx) any
	createOnly []string // "*" means every property
}

func (t resourceType) requiresReplacement(prop string) bool {
	for _, p := range t.createOnly {
		if p == "*" || p == prop {
			return true
		}
	}
	return false
}

func physOnly(c idCtx) any { return c.physical }

var resourceTypes = map[string]resourceType{
	"AWS::S3::Bucket": {
		phys: func(c idCtx) string { return strings.ToLower(c.name("BucketName", 63)) },
		attrs: map[string]func(c idCtx) any{
			"Arn":                 func(c idCtx) any { return "arn:aws:s3:::" + c.physical },
			"DomainName":          func(c idCtx) any { return c.physical + ".s3.amazonaws.com" },
			"RegionalDomainName":  func(c idCtx) any { return c.physical + ".s3." + c.region + ".amazonaws.com" },
			"DualStackDomainName": func(c idCtx) any { return c.physical + ".s3.dualstack." + c.region + ".amazonaws.com" },
			"WebsiteURL":          func(c idCtx) any { return "http://" + c.physical + ".s3-website-" + c.region + ".amazonaws.com" },
			"MetadataTableConfiguration.S3TablesDestination.TableArn": func(c idCtx) any { return c.arn("s3tables", "bucket/"+c.physical) },
		},
		createOnly: []string{"BucketName", "ObjectLockEnabled"},
	},
	"AWS::S3::BucketPolicy": {phys: func(c idCtx) string { return c.name("", 128) }},
	"AWS::SQS::Queue": {
		phys: func(c idCtx) string {
			n := c.name("QueueName", 80)
			if c.prop("FifoQueue") == "true" && !strings.HasSuffix(n, ".fifo") {
				n += ".fifo"
			}
			return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", c.region, c.account, n)
		},
		attrs: map[string]func(c idCtx) any{
			"Arn":       func(c idCtx) any { return c.arn("sqs", lastSegment(c.physical)) },
			"QueueName": func(c idCtx) any { return lastSegment(c.physical) },
			"QueueUrl":  physOnly,
		},
		createOnly: []string{"QueueName", "FifoQueue"},
	},
	"AWS::SQS::QueuePolicy": {phys: func(c idCtx) string { return c.name("", 128) }},
	"AWS::SNS::Topic": {
		phys: func(c idCtx) string {
			n := c.name("TopicName", 256)
			if c.prop("FifoTopic") == "true" && !strings.HasSuffix(n, ".fifo") {
				n += ".fifo"
			}
			return c.arn("sns", n)
		},
		attrs: map[string]func(c idCtx) any{
			"TopicArn":  physOnly,
			"TopicName": func(c idCtx) any { return lastColon(c.physical) },
		},
		createOnly: []string{"TopicName", "FifoTopic"},
	},
	"AWS::SNS::Subscription": {
		phys: func(c idCtx) string {
			t := c.prop("TopicArn")
			if t == "" {
				t = c.arn("sns", "topic")
			}
			return t + ":" + hashUUID(c.seed)
		},
		attrs:      map[string]func(c idCtx) any{"Arn": physOnly},
		createOnly: []string{"Endpoint", "Protocol", "TopicArn"},
	},
	"AWS::SNS::TopicPolicy": {phys: func(c idCtx) string { return c.name("", 128) }},
	"AWS::EC2::VPC": {
		phys: func(c idCtx) string { return c.hex("vpc-", 17) },
		attrs: map[string]func(c idCtx) any{
			"VpcId":                 physOnly,
			"CidrBlock":             func(c idCtx) any { return c.prop("CidrBlock") },
			"CidrBlockAssociations": func(c idCtx) any { return []any{c.hex("vpc-cidr-assoc-", 17)} },
			"DefaultNetworkAcl":     func(c idCtx) any { return "acl-" + hashHex(17, c.seed, "acl") },
			"DefaultSecurityGroup":  func(c idCtx) any { return "sg-" + hashHex(17, c.seed, "sg") },
			"Ipv6CidrBlocks":        func(c idCtx) any { return listAttribute("Ipv6CidrBlocks", c) },
		},
		createOnly: []string{"CidrBlock", "InstanceTenancy", "Ipv4IpamPoolId", "Ipv4NetmaskLength"},
	},
	"AWS::EC2::Subnet": {
		phys: func(c idCtx) string { return c.hex("subnet-", 17) },
		attrs: map[string]func(c idCtx) any{
			"SubnetId":           physOnly,
			"AvailabilityZone":   func(c idCtx) any { return orDefault(c.prop("AvailabilityZone"), c.region+"a") },
			"AvailabilityZoneId": func(c idCtx) any { return "use1-az1" },
			"CidrBlock":          func(c idCtx) any { return c.prop("CidrBlock") },
			"VpcId":              func(c idCtx) any { return c.prop("VpcId") },
			"NetworkAclAssociationId": func(c idCtx) any {
				return "aclassoc-" + hashHex(17, c.seed, "acl")
			},
			"Ipv6CidrBlocks": func(c idCtx) any { return listAttribute("Ipv6CidrBlocks", c) },
		},
		createOnly: []string{"AvailabilityZone", "AvailabilityZoneId", "CidrBlock", "VpcId", "Ipv6CidrBlock"},
	},
	"AWS::EC2::NetworkInterface": {
		phys: func(c idCtx) string { return c.hex("eni-", 17) },
		attrs: map[string]func(c idCtx) any{
			"Id":                          physOnly,
			"PrimaryPrivateIpAddress":     func(c idCtx) any { return primaryAddress(c) },
			"SecondaryPrivateIpAddresses": func(c idCtx) any { return secondaryAddresses(c) },
			"VpcId":                       func(c idCtx) any { return "vpc-" + hashHex(17, c.seed, "vpc") },
		},
		createOnly: []string{"SubnetId", "InterfaceType", "PrivateIpAddress"},
	},
	"AWS::EC2::SecurityGroup": {
		phys: func(c idCtx) string { return c.hex("sg-", 17) },
		attrs: map[string]func(c idCtx) any{
			"GroupId": physOnly,
			"VpcId":   func(c idCtx) any { return c.prop("VpcId") },
		},
		createOnly: []string{"GroupDescription", "GroupName", "VpcId"},
	},
	"AWS::EC2::SecurityGroupIngress": {phys: func(c idCtx) string { return c.hex("sgr-", 17) }, attrs: map[string]func(c idCtx) any{"Id": physOnly}, createOnly: []string{"*"}},
	"AWS::EC2::SecurityGroupEgress":  {phys: func(c idCtx) string { return c.hex("sgr-", 17) }, attrs: map[string]func(c idCtx) any{"Id": physOnly}, createOnly: []string{"*"}},
	"AWS::EC2::Instance": {
		phys: func(c idCtx) string { return c.hex("i-", 17) },
		attrs: map[string]func(c idCtx) any{
			"InstanceId":       physOnly,
			"AvailabilityZone": func(c idCtx) any { return orDefault(c.prop("AvailabilityZone"), c.region+"a") },
			"PrivateDnsName":   func(c idCtx) any { return "ip-10-0-0-10." + c.region + ".compute.internal" },
			"PrivateIp":        func(c idCtx) any { return "10.0.0.10" },
			"PublicDnsName":    func(c idCtx) any { return "ec2-203-0-113-10." + c.region + ".compute.amazonaws.com" },
			"PublicIp":         func(c idCtx) any { return "203.0.113.10" },
		},
		createOnly: []string{"AvailabilityZone", "ImageId", "KeyName", "SubnetId", "NetworkInterfaces", "PrivateIpAddress", "SecurityGroups"},
	},
	"AWS::EC2::InternetGateway": {
		phys:  func(c idCtx) string { return c.hex("igw-", 17) },
		attrs: map[string]func(c idCtx) any{"InternetGatewayId": physOnly},
	},
	"AWS::EC2::VPCGatewayAttachment": {
		phys:       func(c idCtx) string { return "IGW|" + c.prop("VpcId") },
		createOnly: []string{"VpcId"},
	},
	"AWS::EC2::RouteTable": {
		phys:       func(c idCtx) string { return c.hex("rtb-", 17) },
		attrs:      map[string]func(c idCtx) any{"RouteTableId": physOnly},
		createOnly: []string{"VpcId"},
	},
	"AWS::EC2::Route": {
		phys:       func(c idCtx) string { return c.prop("RouteTableId") + "|" + c.prop("DestinationCidrBlock") },
		createOnly: []string{"RouteTableId", "DestinationCidrBlock", "DestinationIpv6CidrBlock"},
	},
	"AWS::EC2::SubnetRouteTableAssociation": {
		phys:       func(c idCtx) string { return c.hex("rtbassoc-", 17) },
		attrs:      map[string]func(c idCtx) any{"Id": physOnly},
		createOnly: []string{"SubnetId"},
	},
	"AWS::EC2::EIP": {
		phys: func(c idCtx) string { return "203.0.113." + fmt.Sprint(int(hashHex(2, c.seed)[0])%200+20) },
		attrs: map[string]func(c idCtx) any{
			"AllocationId": func(c idCtx) any { return "eipalloc-" + hashHex(17, c.seed) },
			"PublicIp":     physOnly,
		},
		createOnly: []string{"Domain"},
	},
	"AWS::EC2::NatGateway": {
		phys:       func(c idCtx) string { return c.hex("nat-", 17) },
		attrs:      map[string]func(c idCtx) any{"NatGatewayId": physOnly},
		createOnly: []string{"SubnetId", "AllocationId", "ConnectivityType"},
	},
	"AWS::EC2::NetworkAcl": {phys: func(c idCtx) string { return c.hex("acl-", 17) }, attrs: map[string]func(c idCtx) any{"Id": physOnly}, createOnly: []string{"VpcId"}},
	"AWS::EC2::KeyPair":    {phys: func(c idCtx) string { return c.name("KeyName", 255) }, attrs: map[string]func(c idCtx) any{"KeyPairId": func(c idCtx) any { return c.hex("key-", 17) }}, createOnly: []string{"*"}},
	"AWS::EC2::LaunchTemplate": {
		phys: func(c idCtx) string { return c.hex("lt-", 17) },
		attrs: map[string]func(c idCtx) any{
			"LaunchTemplateId":     physOnly,
			"DefaultVersionNumber": func(c idCtx) any { return "1" },
			"LatestVersionNumber":  func(c idCtx) any { return "1" },
		},
	},
	"AWS::IAM::Role": {
		phys: func(c idCtx) string { return c.name("RoleName", 64) },
		attrs: map[string]func(c idCtx) any{
			"Arn": func(c idCtx) any {
				return "arn:aws:iam::" + c.account + ":role" + orDefault(c.prop("Path"), "/") + c.physical
			},
			"RoleId": func(c idCtx) any { return "AROA" + hashUpper(17, c.seed) },
		},
		createOnly: []string{"RoleName", "Path"},
	},
	"AWS::IAM::Policy":     {phys: func(c idCtx) string { return c.hex("Polic-", 12) }},
	"AWS::IAM::RolePolicy": {phys: func(c idCtx) string { return c.name("PolicyName", 128) }, createOnly: []string{"PolicyName", "RoleName"}},
	"AWS::IAM::ManagedPolicy": {
		phys: func(c idCtx) string {
			return "arn:aws:iam::" + c.account + ":policy/" + c.name("ManagedPolicyName", 128)
		},
		attrs:      map[string]func(c idCtx) any{"PolicyArn": physOnly},
		createOnly: []string{"ManagedPolicyName", "Path"},
	},
	"AWS::IAM::InstanceProfile": {
		phys:       func(c idCtx) string { return c.name("InstanceProfileName", 128) },
		attrs:      map[string]func(c idCtx) any{"Arn": func(c idCtx) any { return "arn:aws:iam::" + c.account + ":instance-profile/" + c.physical }},
		createOnly: []string{"InstanceProfileName", "Path"},
	},
	"AWS::IAM::User": {
		phys:       func(c idCtx) string { return c.name("UserName", 64) },
		attrs:      map[string]func(c idCtx) any{"Arn": func(c idCtx) any { return "arn:aws:iam::" + c.account + ":user/" + c.physical }},
		createOnly: []string{"UserName"},
	},
	"AWS::Lambda::Function": {
		phys: func(c idCtx) string { return c.name("FunctionName", 64) },
		attrs: map[string]func(c idCtx) any{
			"Arn":                       func(c idCtx) any { return c.arn("lambda", "function:"+c.physical) },
			"SnapStartResponse.ApplyOn": func(c idCtx) any { return "None" },
		},
		createOnly: []string{"FunctionName"},
	},
	"AWS::Lambda::Permission":         {phys: func(c idCtx) string { return c.name("", 128) }, createOnly: []string{"*"}},
	"AWS::Lambda::EventSourceMapping": {phys: func(c idCtx) string { return hashUUID(c.seed) }, attrs: map[string]func(c idCtx) any{"Id": physOnly}, createOnly: []string{"EventSourceArn", "StartingPosition"}},
	"AWS::Lambda::Version": {
		phys:  func(c idCtx) string { return c.prop("FunctionName") + ":1" },
		attrs: map[string]func(c idCtx) any{"Version": func(c idCtx) any { return "1" }},
	},
	"AWS::Lambda::Alias": {
		phys: func(c idCtx) string {
			fn := c.prop("FunctionName")
			if !strings.HasPrefix(fn, "arn:") {
				fn = c.arn("lambda", "function:"+fn)
			}
			return fn + ":" + c.prop("Name")
		},
		attrs:      map[string]func(c idCtx) any{"AliasArn": physOnly},
		createOnly: []string{"Name", "FunctionName"},
	},
	"AWS::Lambda::LayerVersion": {
		phys: func(c idCtx) string {
			return c.arn("lambda", "layer:"+orDefault(c.prop("LayerName"), c.logicalID)+":1")
		},
		attrs:      map[string]func(c idCtx) any{"LayerVersionArn": physOnly},
		createOnly: []string{"*"},
	},
	"AWS::ApiGateway::RestApi": {
		phys:  func(c idCtx) string { return strings.ToLower(hashUpper(10, c.seed)) },
		attrs: map[string]func(c idCtx) any{"RestApiId": physOnly, "RootResourceId": func(c idCtx) any { return strings.ToLower(hashUpper(10, c.seed, "root")) }},
	},
	"AWS::ApiGateway::Deployment": {
		phys:       func(c idCtx) string { return strings.ToLower(hashUpper(6, c.seed)) },
		attrs:      map[string]func(c idCtx) any{"DeploymentId": physOnly},
		createOnly: []string{"RestApiId"},
	},
	"AWS::ApiGateway::Stage": {phys: func(c idCtx) string { return c.prop("StageName") }, createOnly: []string{"RestApiId", "StageName"}},
	"AWS::ApiGatewayV2::Api": {
		phys: func(c idCtx) string { return strings.ToLower(hashUpper(10, c.seed)) },
		attrs: map[string]func(c idCtx) any{
			"ApiId":       physOnly,
			"ApiEndpoint": func(c idCtx) any { return "https://" + c.physical + ".execute-api." + c.region + ".amazonaws.com" },
		},
	},
	"AWS::ApiGatewayV2::Stage": {phys: func(c idCtx) string { return c.prop("StageName") }, createOnly: []string{"ApiId", "StageName"}},
	"AWS::DynamoDB::Table": {
		phys: func(c idCtx) string { return c.name("TableName", 255) },
		attrs: map[string]func(c idCtx) any{
			"Arn":       func(c idCtx) any { return c.arn("dynamodb", "table/"+c.physical) },
			"StreamArn": func(c idCtx) any { return c.arn("dynamodb", "table/"+c.physical+"/stream/2026-01-01T00:00:00.000") },
		},
		createOnly: []string{"TableName", "KeySchema", "LocalSecondaryIndexes"},
	},
	"AWS::Kinesis::Stream": {
		phys:       func(c idCtx) string { return c.name("Name", 128) },
		attrs:      map[string]func(c idCtx) any{"Arn": func(c idCtx) any { return c.arn("kinesis", "stream/"+c.physical) }},
		createOnly: []string{"Name"},
	},
	"AWS::RDS::DBInstance": {
		phys: func(c idCtx) string { return strings.ToLower(c.name("DBInstanceIdentifier", 63)) },
		attrs: map[string]func(c idCtx) any{
			"Endpoint.Address": func(c idCtx) any {
				return c.physical + "." + hashHex(12, c.seed) + "." + c.region + ".rds.amazonaws.com"
			},
			"Endpoint.Port":         func(c idCtx) any { return orDefault(c.prop("Port"), "3306") },
			"Endpoint.HostedZoneId": func(c idCtx) any { return "Z2R2ITUGPM61AM" },
			"DBInstanceArn":         func(c idCtx) any { return c.arn("rds", "db:"+c.physical) },
			"DbiResourceId":         func(c idCtx) any { return "db-" + hashUpper(26, c.seed) },
		},
		createOnly: []string{"DBInstanceIdentifier", "DBName", "Engine", "MasterUsername", "AvailabilityZone", "DBSubnetGroupName", "KmsKeyId", "StorageEncrypted", "CharacterSetName"},
	},
	"AWS::RDS::DBParameterGroup": {phys: func(c idCtx) string { return strings.ToLower(c.name("DBParameterGroupName", 255)) }, createOnly: []string{"Family", "Description", "DBParameterGroupName"}},
	"AWS::RDS::DBSubnetGroup":    {phys: func(c idCtx) string { return strings.ToLower(c.name("DBSubnetGroupName", 255)) }, createOnly: []string{"DBSubnetGroupName"}},
	"AWS::ECS::Cluster": {
		phys:       func(c idCtx) string { return c.name("ClusterName", 255) },
		attrs:      map[string]func(c idCtx) any{"Arn": func(c idCtx) any { return c.arn("ecs", "cluster/"+c.physical) }},
		createOnly: []string{"ClusterName"},
	},
	"AWS::ECS::Service": {
		phys: func(c idCtx) string {
			cl := lastSegment(orDefault(c.prop("Cluster"), "default"))
			return c.arn("ecs", "service/"+cl+"/"+c.name("ServiceName", 255))
		},
		attrs: map[string]func(c idCtx) any{
			"Name":       func(c idCtx) any { return lastSegment(c.physical) },
			"ServiceArn": physOnly,
		},
		createOnly: []string{"Cluster", "ServiceName", "LaunchType", "Role", "SchedulingStrategy"},
	},
	"AWS::ECS::TaskDefinition": {
		phys: func(c idCtx) string {
			return c.arn("ecs", "task-definition/"+c.name("Family", 255)+":1")
		},
		attrs:      map[string]func(c idCtx) any{"TaskDefinitionArn": physOnly},
		createOnly: []string{"*"},
	},
	"AWS::ElasticLoadBalancingV2::LoadBalancer": {
		phys: func(c idCtx) string {
			return c.arn("elasticloadbalancing", "loadbalancer/app/"+lbName(c)+"/"+hashHex(16, c.seed))
		},
		attrs: map[string]func(c idCtx) any{
			"DNSName": func(c idCtx) any {
				return lbName(c) + "-" + hashHex(10, c.seed) + "." + c.region + ".elb.amazonaws.com"
			},
			"CanonicalHostedZoneID":  func(c idCtx) any { return "Z35SXDOTRQ7X7K" },
			"LoadBalancerArn":        physOnly,
			"LoadBalancerFullName":   func(c idCtx) any { return strings.SplitN(c.physical, ":loadbalancer/", 2)[1] },
			"LoadBalancerName":       func(c idCtx) any { return lbName(c) },
			"SecurityGroups":         func(c idCtx) any { return c.props["SecurityGroups"] },
			"LoadBalancerAttributes": func(c idCtx) any { return c.props["LoadBalancerAttributes"] },
		},
		createOnly: []string{"Name", "Scheme", "Type"},
	},
	"AWS::ElasticLoadBalancingV2::TargetGroup": {
		phys: func(c idCtx) string {
			return c.arn("elasticloadbalancing", "targetgroup/"+lbName(c)+"/"+hashHex(16, c.seed))
		},
		attrs: map[string]func(c idCtx) any{
			"TargetGroupArn":      physOnly,
			"TargetGroupFullName": func(c idCtx) any { return strings.SplitN(c.physical, ":", 6)[5] },
			"TargetGroupName":     func(c idCtx) any { return lbName(c) },
			"LoadBalancerArns":    func(c idCtx) any { return []any{} },
		},
		createOnly: []string{"Name", "Port", "Protocol", "TargetType", "VpcId"},
	},
	"AWS::ElasticLoadBalancingV2::Listener": {
		phys:       func(c idCtx) string { return c.arn("elasticloadbalancing", "listener/app/lb/"+hashHex(16, c.seed)) },
		attrs:      map[string]func(c idCtx) any{"ListenerArn": physOnly},
		createOnly: []string{"LoadBalancerArn"},
	},
	"AWS::ElasticLoadBalancingV2::ListenerRule": {
		phys: func(c idCtx) string {
			return c.arn("elasticloadbalancing", "listener-rule/app/lb/"+hashHex(16, c.seed))
		},
		attrs:      map[string]func(c idCtx) any{"RuleArn": physOnly},
		createOnly: []string{"ListenerArn"},
	},
	"AWS::ElasticLoadBalancing::LoadBalancer": {
		phys: func(c idCtx) string { return lbName(c) },
		attrs: map[string]func(c idCtx) any{
			"DNSName": func(c idCtx) any {
				return c.physical + "-" + hashHex(10, c.seed) + "." + c.region + ".elb.amazonaws.com"
			},
			"CanonicalHostedZoneName":        func(c idCtx) any { return c.physical + "." + c.region + ".elb.amazonaws.com" },
			"CanonicalHostedZoneNameID":      func(c idCtx) any { return "Z35SXDOTRQ7X7K" },
			"SourceSecurityGroup.GroupName":  func(c idCtx) any { return "default_elb_" + hashHex(8, c.seed) },
			"SourceSecurityGroup.OwnerAlias": func(c idCtx) any { return "amazon-elb" },
		},
		createOnly: []string{"LoadBalancerName", "Scheme"},
	},
	"AWS::Logs::LogGroup": {
		phys:       func(c idCtx) string { return c.name("LogGroupName", 512) },
		attrs:      map[string]func(c idCtx) any{"Arn": func(c idCtx) any { return c.arn("logs", "log-group:"+c.physical+":*") }},
		createOnly: []string{"LogGroupName", "LogGroupClass"},
	},
	"AWS::ECR::Repository": {
		phys: func(c idCtx) string { return strings.ToLower(c.name("RepositoryName", 256)) },
		attrs: map[string]func(c idCtx) any{
			"Arn":           func(c idCtx) any { return c.arn("ecr", "repository/"+c.physical) },
			"RepositoryUri": func(c idCtx) any { return c.account + ".dkr.ecr." + c.region + ".amazonaws.com/" + c.physical },
		},
		createOnly: []string{"RepositoryName", "EncryptionConfiguration"},
	},
	"AWS::SSM::Parameter": {
		phys: func(c idCtx) string { return c.name("Name", 2048) },
		attrs: map[string]func(c idCtx) any{
			"Type":  func(c idCtx) any { return c.prop("Type") },
			"Value": func(c idCtx) any { return c.prop("Value") },
		},
		createOnly: []string{"Name"},
	},
	"AWS::KMS::Key": {
		phys: func(c idCtx) string { return hashUUID(c.seed) },
		attrs: map[string]func(c idCtx) any{
			"Arn":   func(c idCtx) any { return c.arn("kms", "key/"+c.physical) },
			"KeyId": physOnly,
		},
	},
	"AWS::Events::Rule": {
		phys:       func(c idCtx) string { return c.name("Name", 64) },
		attrs:      map[string]func(c idCtx) any{"Arn": func(c idCtx) any { return c.arn("events", "rule/"+c.physical) }},
		createOnly: []string{"Name", "EventBusName"},
	},
	"AWS::CloudFormation::WaitConditionHandle": {
		phys: func(c idCtx) string {
			return "https://cloudformation-waitcondition-" + c.region + ".s3.amazonaws.com/" + hashHex(20, c.seed)
		},
	},
	"AWS::CloudFormation::WaitCondition": {phys: func(c idCtx) string { return c.arn("cloudformation", "waitcondition/"+hashHex(12, c.seed)) }, attrs: map[string]func(c idCtx) any{"Data": func(c idCtx) any { return "{}" }}},
	"AWS::AutoScaling::AutoScalingGroup": {
		phys:       func(c idCtx) string { return c.name("AutoScalingGroupName", 255) },
		createOnly: []string{"AutoScalingGroupName", "InstanceId"},
	},
	"AWS::AutoScaling::LaunchConfiguration": {phys: func(c idCtx) string { return c.name("LaunchConfigurationName", 255) }, createOnly: []string{"*"}},
	// Ref of a state machine or an activity is its ARN.
	"AWS::StepFunctions::StateMachine": {
		phys: func(c idCtx) string { return c.arn("states", "stateMachine:"+c.name("StateMachineName", 80)) },
		attrs: map[string]func(c idCtx) any{
			"Arn": physOnly, "Name": func(c idCtx) any { return lastColon(c.physical) },
			"StateMachineRevisionId": physOnly,
		},
		createOnly: []string{"StateMachineName", "StateMachineType"},
	},
	"AWS::StepFunctions::Activity": {
		phys:       func(c idCtx) string { return c.arn("states", "activity:"+c.name("Name", 80)) },
		attrs:      map[string]func(c idCtx) any{"Arn": physOnly, "Name": func(c idCtx) any { return lastColon(c.physical) }},
		createOnly: []string{"Name"},
	},
	// Ref of a schedule or a schedule group is its Name; a schedule's Arn names its group.
	"AWS::Scheduler::Schedule": {
		phys: func(c idCtx) string { return c.name("Name", 64) },
		attrs: map[string]func(c idCtx) any{"Arn": func(c idCtx) any {
			return c.arn("scheduler", "schedule/"+orDefault(c.prop("GroupName"), "default")+"/"+c.physical)
		}},
		createOnly: []string{"Name", "GroupName"},
	},
	"AWS::Scheduler::ScheduleGroup": {
		phys:       func(c idCtx) string { return c.name("Name", 64) },
		attrs:      map[string]func(c idCtx) any{"Arn": func(c idCtx) any { return c.arn("scheduler", "schedule-group/"+c.physical) }},
		createOnly: []string{"Name"},
	},
	// Ref of a user pool domain is its Domain (the prefix, or the custom domain name).
	"AWS::Cognito::UserPoolDomain": {
		phys:       func(c idCtx) string { return orDefault(c.prop("Domain"), c.name("", 63)) },
		attrs:      map[string]func(c idCtx) any{"CloudFrontDistribution": func(c idCtx) any { return "d" + hashHex(13, c.seed) + ".cloudfront.net" }},
		createOnly: []string{"Domain", "UserPoolId"},
	},
}

func lbName(c idCtx) string {
	if n := c.prop("Name"); n != "" {
		return n
	}
	if n := c.prop("LoadBalancerName"); n != "" {
		return n
	}
	n := c.stack + "-" + c.logicalID
	if len(n) > 18 {
		n = n[:18]
	}
	return strings.Trim(n, "-") + "-" + hashUpper(12, c.seed)
}

func lastSegment(s string) string {
	if i := strings.LastIndex(s, "/"); i >= 0 {
		return s[i+1:]
	}
	return s
}

func lastColon(s string) string {
	if i := strings.LastIndex(s, ":"); i >= 0 {
		return s[i+1:]
	}
	return s
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func isCustomType(t string) bool {
	return strings.HasPrefix(t, "Custom::") || t == "AWS::CloudFormation::CustomResource"
}

// physicalID invents the physical id of a new resource.
func physicalID(typ string, c idCtx) string {
	if rt, ok := resourceTypes[typ]; ok && rt.phys != nil {
		return rt.phys(c)
	}
	return c.name("", 128)
}

// attribute returns a resource attribute: the type table's value, else a deterministic
// string so unknown types and attributes still evaluate.
func attribute(typ, attr string, c idCtx) any {
	if rt, ok := resourceTypes[typ]; ok {
		if f, ok := rt.attrs[attr]; ok {
			if v := f(c); v != nil {
				return v
			}
		}
		if attr == "Arn" {
			svc := strings.ToLower(strings.Split(typ, "::")[1])
			return c.arn(svc, c.physical)
		}
	}
	if st := resourcespec.Lookup(typ); st != nil && st.ListAttribute(attr) {
		return listAttribute(attr, c)
	}
	return fmt.Sprintf("%s-%s-%s", c.logicalID, strings.ReplaceAll(attr, ".", ""), hashHex(8, c.seed, attr))
}
