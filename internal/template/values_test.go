package template

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestSchemaKeywords: each keyword of the resource provider schemas, with CloudFormation's
// conversions of single values, and what cairn cannot know before deployment left alone.
func TestSchemaKeywords(t *testing.T) {
	res := func(typ, props string) string {
		return head + "Resources:\n  R:\n    Type: " + typ + "\n    Properties:\n" + props
	}
	tests := []struct {
		name, body string
		want       []string
	}{
		{"enum", res("AWS::EC2::VPC", "      CidrBlock: 10.0.0.0/16\n      InstanceTenancy: shared\n"), []string{
			`7:24: Resources.R.Properties.InstanceTenancy: "shared" is not one of the values it takes: dedicated, default, host`}},
		{"enum in any case (cfn-lint's patch of a schema known wrong)", res("AWS::AmazonMQ::Broker", "      BrokerName: b\n      DeploymentMode: single_instance\n      EngineType: ActiveMQ\n      HostInstanceType: mq.t3.micro\n      PubliclyAccessible: false\n      Users: [{Username: admin, Password: long-enough-password}]\n      AutoMinorVersionUpgrade: true\n"), nil},
		{"pattern", res("AWS::Lambda::Function", "      Runtime: python3.12\n      Handler: index.handler\n      Role: my-role\n      Code: {ZipFile: x}\n"), []string{
			`8:13: Resources.R.Properties.Role: "my-role" does not match the pattern ^arn:(aws[a-zA-Z-]*)?:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+$`}},
		{"format", res("AWS::EC2::Subnet", "      VpcId: vpc-1234567\n      CidrBlock: 10.0.0.0/24\n"), []string{
			`6:14: Resources.R.Properties.VpcId: "vpc-1234567" is not a VPC id: vpc- and 8 or 17 hex digits`}},
		{"a network with host bits set, as EC2 takes it", res("AWS::EC2::Subnet", "      VpcId: vpc-12345678\n      CidrBlock: 10.0.0.7/24\n"), nil},
		{"lengths", res("AWS::SNS::Topic", "      TopicName: \""+strings.Repeat("t", 257)+"\"\n"), []string{
			`6:18: Resources.R.Properties.TopicName: "ttttttttttttttttttttttttttttttttttttt..." is 257 characters long, more than the 256 it takes`}},
		{"range", res("AWS::SQS::Queue", "      DelaySeconds: 901\n      MaximumMessageSize: \"1000\"\n"), []string{
			`6:21: Resources.R.Properties.DelaySeconds: 901 is more than the maximum 900`,
			`7:27: Resources.R.Properties.MaximumMessageSize: 1000 is less than the minimum 1024`}},
		{"kinds, with CloudFormation's conversions", res("AWS::EC2::VPC", "      CidrBlock: 10.0.0.0/16\n      EnableDnsSupport: \"true\"\n      EnableDnsHostnames: maybe\n"), []string{
			`8:27: Resources.R.Properties.EnableDnsHostnames: must be a boolean (true or false), not "maybe"`}},
		{"integers given as strings and the reverse", res("AWS::SQS::Queue", "      DelaySeconds: \"5\"\n      VisibilityTimeout: 5.0\n      MessageRetentionPeriod: \"sixty\"\n      QueueName: 12\n"), []string{
			`8:31: Resources.R.Properties.MessageRetentionPeriod: must be an integer, not "sixty"`}},
		{"items", res("AWS::IAM::Role", "      AssumeRolePolicyDocument: {}\n      ManagedPolicyArns: [arn:aws:iam::aws:policy/A, arn:aws:iam::aws:policy/A]\n"), []string{
			`7:7: Resources.R.Properties.ManagedPolicyArns: has repeated items (item 1 repeats item 0): the items must be unique`}},
		{"at least one of (anyOf)", res("AWS::IAM::Policy", "      PolicyName: p\n      PolicyDocument: {}\n"), []string{
			`5:5: Resources.R.Properties: AWS::IAM::Policy needs at least one of Users, Groups, Roles`}},
		{"exactly one of (requiredXor), too many at the second", res("AWS::EC2::VPC", "      CidrBlock: 10.0.0.0/16\n      Ipv4IpamPoolId: ipam-pool-1\n      Ipv4NetmaskLength: 16\n"), []string{
			`7:7: Resources.R.Properties: AWS::EC2::VPC takes exactly one of CidrBlock, Ipv4IpamPoolId, and has CidrBlock and Ipv4IpamPoolId`}},
		{"excluded and required together", res("AWS::DynamoDB::Table", "      KeySchema: [{AttributeName: id, KeyType: HASH}]\n      AttributeDefinitions: [{AttributeName: id, AttributeType: S}]\n      BillingMode: PAY_PER_REQUEST\n      SSESpecification: {SSEEnabled: true, KMSMasterKeyId: alias/k}\n"), []string{
			`9:7: Resources.R.Properties.SSESpecification: SSESpecification of AWS::DynamoDB::Table: KMSMasterKeyId requires SSEType`}},
		{"excluded", res("AWS::EC2::Instance", "      ImageId: ami-12345678\n      NetworkInterfaces:\n        - {DeviceIndex: \"0\", NetworkInterfaceId: eni-1, AssociatePublicIpAddress: true}\n"), []string{
			`8:57: Resources.R.Properties.NetworkInterfaces[0]: NetworkInterfaces[0] of AWS::EC2::Instance: AssociatePublicIpAddress and NetworkInterfaceId exclude each other: give one of them`}},
		{"a key that may be AWS::NoValue is not counted against", head + "Conditions:\n  C: !Equals [a, b]\nResources:\n  R:\n    Type: AWS::EC2::VPC\n    Properties:\n      CidrBlock: !If [C, 10.0.0.0/16, !Ref AWS::NoValue]\n      Ipv4IpamPoolId: !If [C, !Ref AWS::NoValue, ipam-pool-1]\n      Ipv4NetmaskLength: 16\n", nil},
		{"intrinsics: unknown values, known kinds", head + "Parameters:\n  Subnets: {Type: List<AWS::EC2::Subnet::Id>}\nResources:\n  S:\n    Type: AWS::EC2::SecurityGroup\n    Properties:\n      GroupDescription: !Join [\"\", [a, b]]\n      SecurityGroupIngress: !Ref Subnets\n  R:\n    Type: AWS::EC2::VPC\n    Properties:\n      CidrBlock: !Ref Subnets\n      EnableDnsSupport: !Sub \"${AWS::Region}\"\n      InstanceTenancy: !GetAZs \"\"\n", []string{
			`9:7: Resources.S.Properties.SecurityGroupIngress: must be a list of mappings, but parameter Subnets (List<AWS::EC2::Subnet::Id>) is a list of single values`,
			`13:7: Resources.R.Properties.CidrBlock: must be a single value, but parameter Subnets (List<AWS::EC2::Subnet::Id>) is a list: select an item with Fn::Select or join them with Fn::Join`,
			`15:7: Resources.R.Properties.InstanceTenancy: must be a single value, but Fn::GetAZs gives a list: select an item with Fn::Select or join them with Fn::Join`}},
		{"a parameter's Default and AllowedValues where its value goes", head + "Parameters:\n  Tenancy: {Type: String, Default: shared, AllowedValues: [shared, dedicated]}\nResources:\n  R:\n    Type: AWS::EC2::VPC\n    Properties:\n      CidrBlock: 10.0.0.0/16\n      InstanceTenancy: !Ref Tenancy\n", []string{
			`warning: 9:24: Resources.R.Properties.InstanceTenancy: parameter Tenancy flows here, and its Default is refused: "shared" is not one of the values it takes: dedicated, default, host`}},
		{"$ matches before a block value's final newline, as in Java", res("AWS::Lambda::Function", "      Runtime: python3.12\n      Handler: index.handler\n      Role: |\n        arn:aws:iam::123456789012:role/r\n      Code: {ZipFile: x}\n"), nil},
		{"a macro anywhere (Fn::Transform) leaves the rest unchecked", res("AWS::SQS::Queue", "      DelaySeconds: soon\n      Fn::Transform: {Name: AWS::Include, Parameters: {Location: s3://b/k}}\n"), nil},
		{"a dynamic reference with Fn::Sub variables", res("AWS::SSM::Parameter", "      Type: String\n      Value: !Sub \"{{resolve:secretsmanager:arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:app:SecretString:key:AWSCURRENT}}\"\n"), nil},
		{"a dynamic reference an Fn::Join completes", res("AWS::RDS::DBCluster", "      Engine: aurora-mysql\n      MasterUsername: !Join [\"\", [\"{{resolve:secretsmanager:\", !Ref AWS::StackName, \":SecretString:username}}\"]]\n"), nil},
		{"dynamic references are known at deployment", res("AWS::SQS::Queue", "      DelaySeconds: \"{{resolve:ssm:/app/delay}}\"\n"), nil},
		{"a packaged property takes a local path", res("AWS::Lambda::Function", "      Role: arn:aws:iam::123456789012:role/r\n      Code: ./src\n      PackageType: Image\n"), nil},
		{"Fn::Sub with spaces inside ${ }", res("AWS::SNS::Topic", "      TopicName: !Sub \"t-${ AWS::Region }-${ Nope}\"\n"), []string{
			`6:18: Resources.R.Properties.TopicName: Ref names nothing: "Nope" is not a parameter, resource or pseudo parameter of the template`}},
		{"a module of four parts", head + "Resources:\n  M:\n    Type: My::Organization::Custom::MODULE\n    Properties: {Anything: 1}\n", []string{
			`warning: 4:5: Resources.M.Type: My::Organization::Custom::MODULE is a CloudFormation module, which CloudFormation expands into its resources: cairn does not check them`}},
		{"unknown and rain functions", res("AWS::SNS::Topic", "      TopicName: {\"Fn::Ref\": x}\n      DisplayName: !Rain::Embed name.txt\n"), []string{
			`6:19: Resources.R.Properties.TopicName: unknown intrinsic function Fn::Ref (did you mean "Fn::If"?)`,
			`7:20: Resources.R.Properties.DisplayName: Rain::Embed is a directive of rain's packager, not a CloudFormation function: CloudFormation refuses it; run rain pkg on the template first, or write the value out`}},
		{"duplicate keys are a warning: CloudFormation keeps the last", res("AWS::SQS::Queue", "      DelaySeconds: 5\n      DelaySeconds: 6\n"), []string{
			`warning: 7:7: DelaySeconds: duplicate key "DelaySeconds" (first at line 6): CloudFormation keeps the last one; remove one`}},
		{"bucket ACL without ownership controls", res("AWS::S3::Bucket", "      AccessControl: PublicRead\n"), []string{
			`6:22: Resources.R.Properties.AccessControl: AccessControl PublicRead needs OwnershipControls that allow ACLs: S3 creates buckets with ACLs disabled (BucketOwnerEnforced) and refuses the ACL; add OwnershipControls: {Rules: [{ObjectOwnership: ObjectWriter}]} (or BucketOwnerPreferred), or drop AccessControl`}},
		{"bucket ACL with ownership controls", res("AWS::S3::Bucket", "      AccessControl: PublicRead\n      OwnershipControls: {Rules: [{ObjectOwnership: ObjectWriter}]}\n"), nil},
		{"dynamic references", head + "Resources:\n  P:\n    Type: AWS::SSM::Parameter\n    Properties: {Type: String, Value: \"{{resolve:ssmm:/x}}\"}\n  Q:\n    Type: AWS::SSM::Parameter\n    Properties: {Type: String, Value: \"{{resolve:ssm-secure:/x:1}}\"}\nOutputs:\n  S: {Value: \"{{resolve:secretsmanager:app:SecretString:key}}\"}\n", []string{
			`5:39: Resources.P.Properties.Value: {{resolve:ssmm:/x}}: unknown service "ssmm": use ssm, ssm-secure or secretsmanager`,
			`8:39: Resources.Q.Properties.Value: {{resolve:ssm-secure:/x:1}}: CloudFormation resolves ssm-secure references only in the few properties that take a password, such as MasterUserPassword of AWS::RDS::DBInstance (AWS's dynamic references guide lists them)`,
			`10:14: Outputs.S.Value: {{resolve:secretsmanager:app:SecretString:key}}: CloudFormation resolves secretsmanager references only in resource properties`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := problems(t, tt.body); !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestAttributesAndConditions: resource attributes have shapes, and what a resource
// depends on or references must exist under its conditions (as cfn-lint decides it).
func TestAttributesAndConditions(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"attributes", head + "Parameters:\n  P: {Type: String, Default: Retain}\nResources:\n  W:\n    Type: AWS::CloudFormation::WaitCondition\n    CreationPolicy: !Ref P\n  B:\n    Type: AWS::S3::Bucket\n    DeletionPolicy: Snapshot\n    UpdateReplacePolicy: !Ref P\n  G:\n    Type: AWS::AutoScaling::AutoScalingGroup\n    UpdatePolicy: {AutoScalingRollingUpdate: {MaxBatchSize: two}}\n    Properties: {MinSize: \"1\", MaxSize: \"2\", AvailabilityZones: [us-east-1a], LaunchConfigurationName: lc}\n  Q:\n    Type: AWS::SQS::Queue\n    UpdatePolicy: {}\n    DeletionPolicy: {\"Fn::Equals\": [a, b]}\n", []string{
			`7:5: Resources.W.CreationPolicy: must be a mapping, but parameter P (String) is not`,
			`10:21: Resources.B.DeletionPolicy: "Snapshot" is not one of Delete, Retain, RetainExceptOnCreate: AWS::S3::Bucket keeps no snapshots`,
			`14:61: Resources.G.UpdatePolicy.AutoScalingRollingUpdate.MaxBatchSize: must be an integer, not "two"`,
			`warning: 18:5: Resources.Q.UpdatePolicy: AWS::SQS::Queue takes no UpdatePolicy: CloudFormation applies one only to AWS::AppStream::Fleet, AWS::AutoScaling::AutoScalingGroup, AWS::ElastiCache::ReplicationGroup, AWS::Elasticsearch::Domain, AWS::Lambda::Alias, AWS::OpenSearchService::Domain`,
			`19:21: Resources.Q.DeletionPolicy: DeletionPolicy cannot be computed with Fn::Equals: use a literal, or Ref, Fn::If, Fn::Sub, Fn::Select, Fn::FindInMap`}},
		{"conditions", head + "Parameters:\n  Env: {Type: String, AllowedValues: [dev, prod]}\nConditions:\n  IsProd: !Equals [!Ref Env, prod]\n  IsDev: !Equals [dev, !Ref Env]\n  NotDev: !Not [!Condition IsDev]\nResources:\n  P:\n    Type: AWS::SQS::Queue\n    Condition: IsProd\n  D:\n    Type: AWS::SNS::Topic\n    Condition: IsDev\n    DependsOn: P\n  N:\n    Type: AWS::SNS::Topic\n    Condition: NotDev\n    DependsOn: P\n    Properties: {DisplayName: !GetAtt P.QueueName}\n  A:\n    Type: AWS::SNS::Topic\n    Properties:\n      DisplayName: !If [IsProd, !GetAtt P.QueueName, !Ref P]\nOutputs:\n  O: {Value: !Ref P, Condition: IsProd}\n", []string{
			`15:16: Resources.D.DependsOn: DependsOn names P, which exists only when condition IsProd is true, and it may be false here: CloudFormation refuses the template when D exists and P does not; give D the same Condition or drop the dependency`,
			`warning: 24:54: Resources.A.Properties.DisplayName[2]: Ref to P, which exists only when condition IsProd is true, and it may be false here: CloudFormation refuses the template when P does not exist; use Fn::If [IsProd, ...] here`}},
		{"malformed conditions", head + "Conditions:\n  A: !Equals [a]\n  B: !Or [!Condition A]\n  C: !Ref X\n  D: !And [!Condition D, !Condition A]\nResources:\n  T: {Type: AWS::SNS::Topic}\n", []string{
			`3:6: Conditions.A: Fn::Equals takes a list of two values`,
			`4:6: Conditions.B: Fn::Or takes a list of 2 to 10 conditions`,
			`5:6: Conditions.C: Ref cannot make a condition: use Fn::Equals, Fn::And, Fn::Or, Fn::Not or Condition`,
			`5:6: Conditions.C: Ref names nothing: "X" is not a parameter, resource or pseudo parameter of the template (did you mean "T"?)`,
			`6:3: Conditions.D: condition D depends on itself through Condition`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := problems(t, tt.body); !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestParameterUses: the places a parameter's value goes as it is, which a stack's value
// must suit; one an Fn::If may leave unused is not among them.
func TestParameterUses(t *testing.T) {
	tmpl, err := Parse([]byte(head + "Parameters:\n  T: {Type: String}\n  Zones: {Type: CommaDelimitedList}\nConditions:\n  C: !Equals [a, b]\nResources:\n  V:\n    Type: AWS::EC2::VPC\n    Properties:\n      CidrBlock: 10.0.0.0/16\n      InstanceTenancy: !Ref T\n  W:\n    Type: AWS::EC2::VPC\n    Properties:\n      CidrBlock: 10.0.0.0/16\n      InstanceTenancy: !If [C, !Ref T, default]\n  G:\n    Type: AWS::AutoScaling::AutoScalingGroup\n    Properties: {MinSize: \"1\", MaxSize: \"1\", LaunchConfigurationName: lc, AvailabilityZones: !Ref Zones}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range tmpl.Inspect().Uses {
		got = append(got, fmt.Sprintf("%s %s %d:%d shared=%q dedicate=%q", u.Parameter, u.Path, u.Line, u.Col, u.Check("shared"), u.Check("dedicated")))
	}
	want := []string{
		`T Resources.V.Properties.InstanceTenancy 12:24 shared="\"shared\" is not one of the values it takes: dedicated, default, host" dedicate=""`,
		`Zones Resources.G.Properties.AvailabilityZones 20:94 shared="" dedicate=""`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("uses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
