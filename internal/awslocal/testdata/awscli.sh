#!/usr/bin/env bash
# Drives `cairn local up` with the real AWS CLI (Debian's awscli package, v1) for the calls
# cairn relies on, and checks each result. Usage: awscli.sh PATH/TO/cairn
# Skips, successfully, when aws is not on PATH.
set -euo pipefail

cairn=${1:?usage: awscli.sh PATH/TO/cairn}
if ! command -v aws >/dev/null 2>&1; then
	echo "test-awscli: skipped: the AWS CLI is not installed (apt-get install -y awscli)"
	exit 0
fi

work=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill -INT "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

# As a script uses it: start in the background, wait for readiness, take the environment.
# Simulated durations of a nanosecond: the CLI's waiters poll every 5 to 30 s and must see the result at their first look.
"$cairn" local up --addr 127.0.0.1:0 --dir "$work/state" --resource-delay 1ns --change-set-delay 1ns >"$work/env" 2>"$work/stderr" &
pid=$!
if ! "$cairn" local wait --dir "$work/state" --timeout 60s >/dev/null; then
	echo "test-awscli: cairn local up did not get ready:"; cat "$work/stderr" "$work/state/local.log" 2>/dev/null; exit 1
fi
eval "$("$cairn" local env --dir "$work/state")"
# Only the emulator's environment: no profile, config or real credentials of the user.
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_PAGER=""
unset AWS_PROFILE AWS_SESSION_TOKEN

failures=0
awsl() { aws --endpoint-url "$AWS_ENDPOINT_URL" "$@"; }
# check NAME WANT GOT: compares one result.
check() {
	if [ "$2" = "$3" ]; then
		echo "ok   $1"
	else
		echo "FAIL $1: want [$2], got [$3]"
		failures=$((failures + 1))
	fi
}

bucket=cairn-cli
echo "bundle v1" >"$work/v1"
echo "bundle v2" >"$work/v2"

check "s3 mb" "make_bucket: $bucket" "$(awsl s3 mb "s3://$bucket" 2>&1)"
awsl s3api put-bucket-versioning --bucket "$bucket" --versioning-configuration Status=Enabled
check "s3api get-bucket-versioning" "Enabled" "$(awsl s3api get-bucket-versioning --bucket "$bucket" --query Status --output text)"
awsl s3 cp "$work/v1" "s3://$bucket/deployments/shop.zip" >/dev/null
awsl s3 cp "$work/v2" "s3://$bucket/deployments/shop.zip" >/dev/null
check "s3 cp (download)" "bundle v2" "$(awsl s3 cp "s3://$bucket/deployments/shop.zip" -)"
check "s3 ls" "shop.zip" "$(awsl s3 ls "s3://$bucket/deployments/" | awk '{print $4}')"
check "s3api list-object-versions" "2" "$(awsl s3api list-object-versions --bucket "$bucket" --prefix deployments/ --query 'length(Versions)' --output text)"

check "s3api put-object --if-none-match (new key)" "0" \
	"$(awsl s3api put-object --bucket "$bucket" --key locks/shop.lock --body "$work/v1" --if-none-match '*' >/dev/null 2>&1; echo $?)"
set +e
out=$(awsl s3api put-object --bucket "$bucket" --key locks/shop.lock --body "$work/v2" --if-none-match '*' 2>&1)
set -e
check "s3api put-object --if-none-match (existing key) refused" "PreconditionFailed" "$(grep -o PreconditionFailed <<<"$out" | head -1)"
check "lock unchanged" "bundle v1" "$(awsl s3 cp "s3://$bucket/locks/shop.lock" -)"

awsl s3api put-object-tagging --bucket "$bucket" --key deployments/shop.zip --tagging 'TagSet=[{Key=team,Value=payments}]'
check "s3api get-object-tagging" "team=payments" \
	"$(awsl s3api get-object-tagging --bucket "$bucket" --key deployments/shop.zip --query 'TagSet[0].[Key,Value]' --output text | tr '\t' '=')"

queue_url=$(awsl sqs create-queue --queue-name cli-queue --query QueueUrl --output text)
check "sqs create-queue" "$AWS_ENDPOINT_URL/000000000000/cli-queue" "$queue_url"
awsl sqs send-message --queue-url "$queue_url" --message-body "hello queue" >/dev/null
check "sqs receive-message" "hello queue" \
	"$(awsl sqs receive-message --queue-url "$queue_url" --wait-time-seconds 5 --query 'Messages[0].Body' --output text)"

topic_arn=$(awsl sns create-topic --name cli-topic --query TopicArn --output text)
check "sns create-topic" "arn:aws:sns:us-east-1:000000000000:cli-topic" "$topic_arn"
notify_url=$(awsl sqs create-queue --queue-name cli-notify --query QueueUrl --output text)
notify_arn=$(awsl sqs get-queue-attributes --queue-url "$notify_url" --attribute-names QueueArn --query Attributes.QueueArn --output text)
sub_arn=$(awsl sns subscribe --topic-arn "$topic_arn" --protocol sqs --notification-endpoint "$notify_arn" --query SubscriptionArn --output text)
check "sns subscribe" "$topic_arn:" "${sub_arn%:*}:"
awsl sns publish --topic-arn "$topic_arn" --subject greeting --message "hello topic" >/dev/null
body=$(awsl sqs receive-message --queue-url "$notify_url" --wait-time-seconds 5 --query 'Messages[0].Body' --output text)
check "sns publish -> sqs envelope" '"Message": "hello topic",' "$(grep -o '"Message": "hello topic",' <<<"$body")"

# CloudFormation: the CLI's own change-set command, twice (the second has nothing to change).
cat >"$work/stack.yaml" <<'YAML'
Parameters:
  Env: {Type: String, Default: dev}
Resources:
  Topic:
    Type: AWS::SNS::Topic
    Properties: {TopicName: !Sub "cli-${Env}"}
Outputs:
  TopicArn:
    Value: !Ref Topic
    Export: {Name: !Sub "cli-${Env}-topic"}
YAML
check "cloudformation deploy (create)" "0" \
	"$(awsl cloudformation deploy --stack-name cli-stack --template-file "$work/stack.yaml" >"$work/deploy1" 2>&1; echo $?)"
check "cloudformation describe-stacks" "CREATE_COMPLETE" \
	"$(awsl cloudformation describe-stacks --stack-name cli-stack --query 'Stacks[0].StackStatus' --output text)"
sleep 1 # the CLI names its change sets by the second
set +e
out=$(awsl cloudformation deploy --stack-name cli-stack --template-file "$work/stack.yaml" 2>&1)
code=$?
set -e
check "cloudformation deploy without changes fails" "255 No changes to deploy" "$code $(grep -o 'No changes to deploy' <<<"$out" | head -1)"
sleep 1
check "cloudformation deploy --no-fail-on-empty-changeset" "0" \
	"$(awsl cloudformation deploy --stack-name cli-stack --template-file "$work/stack.yaml" --no-fail-on-empty-changeset >/dev/null 2>&1; echo $?)"
sleep 1
check "cloudformation deploy (update)" "0" \
	"$(awsl cloudformation deploy --stack-name cli-stack --template-file "$work/stack.yaml" --parameter-overrides Env=prod >/dev/null 2>&1; echo $?)"
check "cloudformation describe-stack-events" "UPDATE_COMPLETE" \
	"$(awsl cloudformation describe-stack-events --stack-name cli-stack --query 'StackEvents[0].ResourceStatus' --output text)"
cs_name=cli-review
awsl cloudformation create-change-set --stack-name cli-stack --change-set-name "$cs_name" --template-body "file://$work/stack.yaml" \
	--parameters ParameterKey=Env,ParameterValue=dev >/dev/null
awsl cloudformation wait change-set-create-complete --stack-name cli-stack --change-set-name "$cs_name"
check "cloudformation describe-change-set" "Modify Topic True" \
	"$(awsl cloudformation describe-change-set --stack-name cli-stack --change-set-name "$cs_name" \
		--query 'Changes[0].ResourceChange.[Action,LogicalResourceId,Replacement]' --output text | tr '\t' ' ')"
check "cloudformation list-exports" "cli-prod-topic" \
	"$(awsl cloudformation list-exports --query "Exports[?Name=='cli-prod-topic'].Name" --output text)"

# check_err NAME WANT COMMAND...: the command fails and its output contains WANT.
check_err() {
	local name=$1 want=$2 out
	shift 2
	set +e
	out=$("$@" 2>&1)
	local code=$?
	set -e
	if [ "$code" -ne 0 ] && grep -qF -- "$want" <<<"$out"; then
		echo "ok   $name"
	else
		echo "FAIL $name: want a failure containing [$want], got exit $code: $out"
		failures=$((failures + 1))
	fi
}

# --- Strict where AWS is strict ---
check_err "s3 notification to a missing queue refused" "Unable to validate the following destination configurations" \
	awsl s3api put-bucket-notification-configuration --bucket "$bucket" --notification-configuration \
	'{"QueueConfigurations":[{"QueueArn":"arn:aws:sqs:us-east-1:000000000000:no-such-queue","Events":["s3:ObjectCreated:*"]}]}'
check_err "s3 notification with an unknown event refused" "is not supported for notifications" \
	awsl s3api put-bucket-notification-configuration --bucket "$bucket" --notification-configuration \
	"{\"QueueConfigurations\":[{\"QueueArn\":\"$notify_arn\",\"Events\":[\"s3:ObjectCreated:Upload\"]}]}"
etag=$(awsl s3api head-object --bucket "$bucket" --key locks/shop.lock --query ETag --output text)
check_err "s3 put-object --if-none-match ETAG refused" "NotImplemented" \
	awsl s3api put-object --bucket "$bucket" --key locks/shop.lock --body "$work/v2" --if-none-match "$etag"
latest=$(awsl s3api head-object --bucket "$bucket" --key deployments/shop.zip --query VersionId --output text)
check "s3api list-object-versions lists the newest first" "$latest True" \
	"$(awsl s3api list-object-versions --bucket "$bucket" --prefix deployments/ --query 'Versions[0].[VersionId,IsLatest]' --output text | tr '\t' ' ')"
check_err "sns publish with an invalid Number attribute refused" "InvalidParameter" \
	awsl sns publish --topic-arn "$topic_arn" --message m --message-attributes '{"n":{"DataType":"Number","StringValue":"many"}}'
check_err "cloudformation create-stack with an invalid name refused" "failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z][-a-zA-Z0-9]*" \
	awsl cloudformation create-stack --stack-name cli_stack --template-body "file://$work/stack.yaml"
check_err "cloudformation create-change-set with an invalid name refused" "Value 'cli_review' at 'changeSetName' failed to satisfy constraint" \
	awsl cloudformation create-change-set --stack-name cli-stack --change-set-name cli_review --template-body "file://$work/stack.yaml"
check "cloudformation describe-change-set: a change caused by a parameter" "ParameterReference Env" \
	"$(awsl cloudformation describe-change-set --stack-name cli-stack --change-set-name "$cs_name" \
		--query 'Changes[0].ResourceChange.Details[0].[ChangeSource,CausingEntity]' --output text | tr '\t' ' ')"
cat >"$work/import.yaml" <<'YAML'
Resources:
  Topic:
    Type: AWS::SNS::Topic
    Properties: {DisplayName: !ImportValue cli-missing-export}
YAML
awsl cloudformation create-change-set --stack-name cli-import --change-set-name cli-import --change-set-type CREATE \
	--template-body "file://$work/import.yaml" >/dev/null
awsl cloudformation wait change-set-create-complete --stack-name cli-import --change-set-name cli-import
check "cloudformation: a change set importing a missing export is created" "CREATE_COMPLETE" \
	"$(awsl cloudformation describe-change-set --stack-name cli-import --change-set-name cli-import --query Status --output text)"
awsl cloudformation execute-change-set --stack-name cli-import --change-set-name cli-import
for _ in $(seq 50); do
	status=$(awsl cloudformation describe-stacks --stack-name cli-import --query 'Stacks[0].StackStatus' --output text)
	case "$status" in *_IN_PROGRESS) sleep 0.2 ;; *) break ;; esac
done
check "cloudformation: ... and the stack rolls back" "ROLLBACK_COMPLETE No export named cli-missing-export found." \
	"$status $(awsl cloudformation describe-stack-events --stack-name cli-import --query "StackEvents[?ResourceStatus=='ROLLBACK_IN_PROGRESS'].ResourceStatusReason" --output text)"

# --- Resources a stack makes exist ---
cat >"$work/resources.yaml" <<'YAML'
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties: {VisibilityTimeout: 40}
  Topic:
    Type: AWS::SNS::Topic
  Subscription:
    Type: AWS::SNS::Subscription
    Properties: {TopicArn: !Ref Topic, Protocol: sqs, Endpoint: !GetAtt Queue.Arn, RawMessageDelivery: true}
  Setting:
    Type: AWS::SSM::Parameter
    Properties: {Name: /cli/greeting, Type: String, Value: hello}
Outputs:
  QueueUrl: {Value: !Ref Queue}
  TopicArn: {Value: !Ref Topic}
YAML
check "cloudformation deploy (real resources)" "0" \
	"$(awsl cloudformation deploy --stack-name cli-resources --template-file "$work/resources.yaml" >/dev/null 2>&1; echo $?)"
stack_queue=$(awsl cloudformation describe-stacks --stack-name cli-resources --query "Stacks[0].Outputs[?OutputKey=='QueueUrl'].OutputValue" --output text)
stack_topic=$(awsl cloudformation describe-stacks --stack-name cli-resources --query "Stacks[0].Outputs[?OutputKey=='TopicArn'].OutputValue" --output text)
awsl sns publish --topic-arn "$stack_topic" --message "through the stack" >/dev/null
check "sns publish to a stack's topic -> sqs receive on the stack's queue" "through the stack" \
	"$(awsl sqs receive-message --queue-url "$stack_queue" --wait-time-seconds 5 --query 'Messages[0].Body' --output text)"
check "ssm get-parameter of a stack's parameter" "hello" \
	"$(awsl ssm get-parameter --name /cli/greeting --query Parameter.Value --output text)"
awsl sqs set-queue-attributes --queue-url "$stack_queue" --attributes VisibilityTimeout=99
drift_id=$(awsl cloudformation detect-stack-drift --stack-name cli-resources --query StackDriftDetectionId --output text)
for _ in $(seq 50); do
	[ "$(awsl cloudformation describe-stack-drift-detection-status --stack-drift-detection-id "$drift_id" --query DetectionStatus --output text)" = DETECTION_COMPLETE ] && break
	sleep 0.2
done
check "sqs set-queue-attributes on a stack's queue is drift" "Queue /VisibilityTimeout 40 99" \
	"$(awsl cloudformation describe-stack-resource-drifts --stack-name cli-resources --stack-resource-drift-status-filters MODIFIED \
		--query 'StackResourceDrifts[0].[LogicalResourceId,PropertyDifferences[0].PropertyPath,PropertyDifferences[0].ExpectedValue,PropertyDifferences[0].ActualValue]' --output text | tr '\t' ' ')"
want_resources=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["Resources"]))' internal/localcairn/cairn.template.json)
check "cloudformation describe-stack-resources: cairn's stack holds the synthesized template's resources" "$want_resources" \
	"$(awsl cloudformation describe-stack-resources --stack-name cairn --query 'length(StackResources)' --output text)"

# --- Nested stacks packaged by the CLI, transforms, Lambda-backed custom resources ---
mkdir -p "$work/nested"
cat >"$work/nested/parent.yaml" <<'YAML'
Resources:
  Network:
    Type: AWS::CloudFormation::Stack
    Properties:
      TemplateURL: ./network.yaml
      Parameters: {Cidr: 10.7.0.0/16}
Outputs:
  VpcId: {Value: !GetAtt Network.Outputs.VpcId}
YAML
cat >"$work/nested/network.yaml" <<'YAML'
Parameters:
  Cidr: {Type: String}
Resources:
  Vpc:
    Type: AWS::EC2::VPC
    Properties: {CidrBlock: !Ref Cidr}
Outputs:
  VpcId: {Value: !Ref Vpc}
YAML
awsl s3 mb s3://cli-artifacts >/dev/null
check "cloudformation package (a local nested stack)" "0" \
	"$(awsl cloudformation package --template-file "$work/nested/parent.yaml" --s3-bucket cli-artifacts --output-template-file "$work/nested/packaged.yaml" >/dev/null 2>&1; echo $?)"
check "cloudformation deploy of the packaged template" "0" \
	"$(awsl cloudformation deploy --stack-name cli-nested --template-file "$work/nested/packaged.yaml" >/dev/null 2>&1; echo $?)"
check "cloudformation describe-stacks: the nested stack is a stack of its own" "CREATE_COMPLETE" \
	"$(awsl cloudformation describe-stacks --query "Stacks[?ParentId!=null]|[0].StackStatus" --output text)"
check "cloudformation: the parent's output is the child's" "vpc-" \
	"$(awsl cloudformation describe-stacks --stack-name cli-nested --query "Stacks[0].Outputs[0].OutputValue" --output text | cut -c1-4)"

cat >"$work/loop.yaml" <<'YAML'
Transform: AWS::LanguageExtensions
Resources:
  Fn::ForEach::Queues:
    - Name
    - [a, b]
    - Queue${Name}:
        Type: AWS::SQS::Queue
YAML
check "cloudformation deploy (Fn::ForEach)" "0" \
	"$(awsl cloudformation deploy --stack-name cli-loop --template-file "$work/loop.yaml" >/dev/null 2>&1; echo $?)"
check "cloudformation get-template --template-stage Processed" "AWS::SQS::Queue" \
	"$(awsl cloudformation get-template --stack-name cli-loop --template-stage Processed --query 'TemplateBody.Resources.Queueb.Type' --output text)"
cat >"$work/macro.yaml" <<'YAML'
Transform: Count
Resources:
  Bucket: {Type: AWS::S3::Bucket}
YAML
out=$(awsl cloudformation deploy --stack-name cli-macro --template-file "$work/macro.yaml" 2>&1 || true)
check "cloudformation deploy of a macro nothing defines fails as AWS does" "No transform named 000000000000::Count found." \
	"$(grep -o 'No transform named 000000000000::Count found.' <<<"$out" | head -1)"

cat >"$work/custom.yaml" <<'YAML'
Resources:
  Lookup:
    Type: Custom::Lookup
    Properties:
      ServiceToken: arn:aws:lambda:us-east-1:000000000000:function:not-run-here
Outputs:
  ImageId: {Value: !GetAtt Lookup.ImageId}
YAML
if command -v curl >/dev/null 2>&1; then
	curl -fsS -X POST "$AWS_ENDPOINT_URL/_local/cloudformation/custom-resources" \
		-d '{"stack": "cli-custom", "logicalId": "Lookup", "data": {"ImageId": "ami-0123456789abcdef0"}}' >/dev/null
	check "cloudformation deploy (a Lambda-backed custom resource, answered by the stand-in)" "0" \
		"$(awsl cloudformation deploy --stack-name cli-custom --template-file "$work/custom.yaml" >/dev/null 2>&1; echo $?)"
	check "cloudformation: the stand-in's data" "ami-0123456789abcdef0" \
		"$(awsl cloudformation describe-stacks --stack-name cli-custom --query "Stacks[0].Outputs[0].OutputValue" --output text)"
fi

# --- CloudWatch alarms, and the rollback triggers CloudFormation watches ---
awsl cloudwatch put-metric-alarm --alarm-name cli-5xx --namespace AWS/ApplicationELB --metric-name HTTPCode_Target_5XX_Count \
	--statistic Sum --period 60 --evaluation-periods 1 --threshold 5 --comparison-operator GreaterThanThreshold \
	--dimensions Name=LoadBalancer,Value=app/cli/0123456789abcdef
check "cloudwatch describe-alarms (a new alarm)" "arn:aws:cloudwatch:us-east-1:000000000000:alarm:cli-5xx INSUFFICIENT_DATA 5.0" \
	"$(awsl cloudwatch describe-alarms --alarm-names cli-5xx --query 'MetricAlarms[0].[AlarmArn,StateValue,Threshold]' --output text | tr '\t' ' ')"
awsl cloudwatch set-alarm-state --alarm-name cli-5xx --state-value ALARM --state-reason "5xx from the CLI"
check "cloudwatch set-alarm-state -> describe-alarms --state-value ALARM" "cli-5xx 5xx from the CLI" \
	"$(awsl cloudwatch describe-alarms --state-value ALARM --query 'MetricAlarms[].[AlarmName,StateReason]' --output text | tr '\t' ' ')"
check_err "cloudwatch set-alarm-state of a missing alarm refused" "An error occurred (ResourceNotFound) when calling the SetAlarmState operation: Alarm cli-none not found" \
	awsl cloudwatch set-alarm-state --alarm-name cli-none --state-value OK --state-reason x
check_err "cloudwatch set-alarm-state with an unknown state refused" "Member must satisfy enum value set: [OK, ALARM, INSUFFICIENT_DATA]" \
	awsl cloudwatch set-alarm-state --alarm-name cli-5xx --state-value BROKEN --state-reason x
awsl cloudformation create-stack --stack-name cli-guarded --template-body "file://$work/stack.yaml" --parameters ParameterKey=Env,ParameterValue=guarded \
	--rollback-configuration '{"RollbackTriggers":[{"Arn":"arn:aws:cloudwatch:us-east-1:000000000000:alarm:cli-5xx","Type":"AWS::CloudWatch::Alarm"}],"MonitoringTimeInMinutes":0}' >/dev/null
for _ in $(seq 50); do
	status=$(awsl cloudformation describe-stacks --stack-name cli-guarded --query 'Stacks[0].StackStatus' --output text)
	case "$status" in *_IN_PROGRESS) sleep 0.2 ;; *) break ;; esac
done
check "cloudformation: a create whose rollback trigger is in ALARM rolls back, naming the alarm" \
	"ROLLBACK_COMPLETE The following rollback trigger(s) went into ALARM state: [arn:aws:cloudwatch:us-east-1:000000000000:alarm:cli-5xx]. " \
	"$status $(awsl cloudformation describe-stack-events --stack-name cli-guarded --query "StackEvents[?ResourceStatus=='ROLLBACK_IN_PROGRESS'].ResourceStatusReason" --output text)"
check "cloudformation describe-stacks shows the rollback triggers" "arn:aws:cloudwatch:us-east-1:000000000000:alarm:cli-5xx" \
	"$(awsl cloudformation describe-stacks --stack-name cli-guarded --query 'Stacks[0].RollbackConfiguration.RollbackTriggers[0].Arn' --output text)"
cat >"$work/alarm.yaml" <<'YAML'
Resources:
  Latency:
    Type: AWS::CloudWatch::Alarm
    Properties:
      AlarmName: cli-latency
      Namespace: AWS/ApplicationELB
      MetricName: TargetResponseTime
      Statistic: Average
      Period: 60
      EvaluationPeriods: 3
      Threshold: 0.5
      ComparisonOperator: GreaterThanThreshold
YAML
check "cloudformation deploy (an alarm)" "0" \
	"$(awsl cloudformation deploy --stack-name cli-alarms --template-file "$work/alarm.yaml" >/dev/null 2>&1; echo $?)"
check "cloudwatch describe-alarms of a stack's alarm" "cli-latency 3" \
	"$(awsl cloudwatch describe-alarms --alarm-name-prefix cli-lat --query 'MetricAlarms[].[AlarmName,EvaluationPeriods]' --output text | tr '\t' ' ')"
awsl cloudwatch delete-alarms --alarm-names cli-5xx
check "cloudwatch delete-alarms" "cli-latency" "$(awsl cloudwatch describe-alarms --alarm-name-prefix cli- --query 'MetricAlarms[].AlarmName' --output text)"

# --- Secrets Manager ---
secret_arn=$(awsl secretsmanager create-secret --name cli/db --secret-string '{"user":"app","password":"p1"}' --query ARN --output text)
check "secretsmanager create-secret" "arn:aws:secretsmanager:us-east-1:000000000000:secret:cli/db-" "${secret_arn%??????}"
awsl secretsmanager put-secret-value --secret-id cli/db --secret-string '{"user":"app","password":"p2"}' >/dev/null
check "secretsmanager get-secret-value" '{"user":"app","password":"p2"}' \
	"$(awsl secretsmanager get-secret-value --secret-id cli/db --query SecretString --output text)"
check "secretsmanager get-secret-value --version-stage AWSPREVIOUS" '{"user":"app","password":"p1"}' \
	"$(awsl secretsmanager get-secret-value --secret-id "$secret_arn" --version-stage AWSPREVIOUS --query SecretString --output text)"
check "secretsmanager list-secrets --filters" "cli/db" \
	"$(awsl secretsmanager list-secrets --filters Key=name,Values=cli/ --query 'SecretList[].Name' --output text)"
awsl secretsmanager tag-resource --secret-id cli/db --tags Key=team,Value=payments
check "secretsmanager describe-secret" "2 payments" \
	"$(awsl secretsmanager describe-secret --secret-id cli/db --query '[length(VersionIdsToStages), Tags[0].Value]' --output text | tr '\t' ' ')"
check "secretsmanager get-random-password" "20" \
	"$(awsl secretsmanager get-random-password --password-length 20 --exclude-punctuation --query RandomPassword --output text | tr -d '\n' | wc -c | tr -d ' ')"
awsl secretsmanager delete-secret --secret-id cli/db --recovery-window-in-days 7 >/dev/null
check_err "secretsmanager get-secret-value of a secret scheduled for deletion refused" "marked for deletion" \
	awsl secretsmanager get-secret-value --secret-id cli/db
awsl secretsmanager restore-secret --secret-id cli/db >/dev/null
check "secretsmanager restore-secret" '{"user":"app","password":"p2"}' \
	"$(awsl secretsmanager get-secret-value --secret-id cli/db --query SecretString --output text)"

# Dynamic references, resolved when the stack is made; a missing parameter fails the deploy.
cat >"$work/refs.yaml" <<'YAML'
Resources:
  Password:
    Type: AWS::SSM::Parameter
    Properties: {Name: /cli/db-password, Type: String, Value: '{{resolve:secretsmanager:cli/db:SecretString:password}}'}
  Greeting:
    Type: AWS::SSM::Parameter
    Properties: {Name: /cli/greeting-copy, Type: String, Value: '{{resolve:ssm:/cli/greeting}} again'}
  Generated:
    Type: AWS::SecretsManager::Secret
    Properties: {Name: cli/generated, GenerateSecretString: {PasswordLength: 24, ExcludePunctuation: true}}
YAML
check "cloudformation deploy (dynamic references)" "0" \
	"$(awsl cloudformation deploy --stack-name cli-refs --template-file "$work/refs.yaml" >/dev/null 2>&1; echo $?)"
check "{{resolve:secretsmanager:...}} resolved" "p2" "$(awsl ssm get-parameter --name /cli/db-password --query Parameter.Value --output text)"
check "{{resolve:ssm:...}} resolved" "hello again" "$(awsl ssm get-parameter --name /cli/greeting-copy --query Parameter.Value --output text)"
check "AWS::SecretsManager::Secret GenerateSecretString" "24" \
	"$(awsl secretsmanager get-secret-value --secret-id cli/generated --query SecretString --output text | tr -d '\n' | wc -c | tr -d ' ')"
cat >"$work/missing-ref.yaml" <<'YAML'
Resources:
  Topic:
    Type: AWS::SNS::Topic
    Properties: {DisplayName: '{{resolve:ssm:/cli/missing}}'}
YAML
check_err "cloudformation deploy with a reference to a missing parameter fails" "Parameters: [ssm:/cli/missing] cannot be found." \
	awsl cloudformation deploy --stack-name cli-missing-ref --template-file "$work/missing-ref.yaml"

# --- SQS FIFO queues and PurgeQueue ---
fifo_url=$(awsl sqs create-queue --queue-name cli-jobs.fifo --attributes FifoQueue=true,ContentBasedDeduplication=true --query QueueUrl --output text)
check "sqs create-queue (FIFO)" "$AWS_ENDPOINT_URL/000000000000/cli-jobs.fifo" "$fifo_url"
for b in one two one; do
	awsl sqs send-message --queue-url "$fifo_url" --message-body "$b" --message-group-id g >/dev/null
done
check "sqs FIFO: in order, the duplicate dropped" "one two" \
	"$(awsl sqs receive-message --queue-url "$fifo_url" --max-number-of-messages 10 --query 'Messages[].Body' --output text | tr '\t' ' ')"
check_err "sqs FIFO: a message without a group refused" "MessageGroupId" \
	awsl sqs send-message --queue-url "$fifo_url" --message-body x
awsl sqs purge-queue --queue-url "$queue_url"
check_err "sqs purge-queue twice within 60 s refused" "PurgeQueueInProgress" awsl sqs purge-queue --queue-url "$queue_url"

# --- SNS PublishBatch, SSM GetParameterHistory, custom EventBridge buses ---
check "sns publish-batch" "a b" \
	"$(awsl sns publish-batch --topic-arn "$topic_arn" --publish-batch-request-entries Id=a,Message=one Id=b,Message=two \
		--query 'Successful[].Id' --output text | tr '\t' ' ')"
awsl ssm put-parameter --name /cli/greeting --value hi --type String --overwrite >/dev/null
check "ssm get-parameter-history" "hello hi" \
	"$(awsl ssm get-parameter-history --name /cli/greeting --query 'Parameters[].Value' --output text | tr '\t' ' ')"
check "events create-event-bus" "arn:aws:events:us-east-1:000000000000:event-bus/cli-bus" \
	"$(awsl events create-event-bus --name cli-bus --query EventBusArn --output text)"
bus_url=$(awsl sqs create-queue --queue-name cli-bus-events --query QueueUrl --output text)
bus_queue=$(awsl sqs get-queue-attributes --queue-url "$bus_url" --attribute-names QueueArn --query Attributes.QueueArn --output text)
awsl events put-rule --name cli-orders --event-bus-name cli-bus --event-pattern '{"source":["cli"]}' >/dev/null
awsl events put-targets --rule cli-orders --event-bus-name cli-bus --targets "Id=q,Arn=$bus_queue" >/dev/null
awsl events put-events --entries 'Source=cli,DetailType=order,Detail="{}",EventBusName=cli-bus' >/dev/null
check "events put-events to a custom bus reaches its rule's target" '"detail-type": "order"' \
	"$(awsl sqs receive-message --queue-url "$bus_url" --wait-time-seconds 5 --query 'Messages[0].Body' --output text | python3 -c 'import json,sys; print("\"detail-type\": \"%s\"" % json.load(sys.stdin)["detail-type"])')"

if command -v curl >/dev/null 2>&1; then
	calls=$(curl -fsS "$AWS_ENDPOINT_URL/_local/calls" 2>/dev/null || true)
	check "control endpoint counts sns.Publish" '"sns.Publish": 3' "$(grep -o '"sns.Publish": [0-9]*' <<<"$calls")"
fi

if [ "$failures" -gt 0 ]; then
	echo "test-awscli: $failures check(s) failed; emulator log:"
	cat "$work/stderr" "$work/state/local.log"
	exit 1
fi
echo "test-awscli: all checks passed against $AWS_ENDPOINT_URL"

# Many accounts and regions: a second emulator with target stacks (awscli-targets.sh).
bash "$(dirname "$0")/awscli-targets.sh" "$cairn"
