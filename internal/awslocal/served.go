package awslocal

import (
	"sort"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/cloudwatchlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/ecrlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/kmslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/s3local"
	"github.com/cairn-dev/cairn/internal/awslocal/secretslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/snslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/sqslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/ssmlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/stslocal"
)

// eventsActions are the EventBridge actions eventsAPI.call serves.
var eventsActions = []string{"CreateEventBus", "DeleteEventBus", "DeleteRule", "DescribeEventBus", "DescribeRule", "DisableRule", "EnableRule",
	"ListEventBuses", "ListRules", "ListTargetsByRule", "PutEvents", "PutRule", "PutTargets", "RemoveTargets"}

// ServedOperation is a service the emulator serves and the operations it answers; any
// other operation of it is answered as not served, in the service's error shape.
type ServedOperation struct {
	Service    string // the SigV4 signing name
	Name       string // the service's name
	Operations []string
}

// ServedOperations lists, per service, the operations the emulator serves, by signing name.
func ServedOperations() []ServedOperation {
	out := []ServedOperation{
		{"cloudformation", "CloudFormation", cfnlocal.Actions()},
		{"ecr", "ECR", ecrlocal.Actions()},
		{"events", "EventBridge", eventsActions},
		{"iam", "IAM", iamActions},
		{"kms", "KMS", kmslocal.Actions()},
		{"lambda", "Lambda", lambdaActions},
		{"monitoring", "CloudWatch", cloudwatchlocal.Actions()},
		{"s3", "S3", s3local.Operations()},
		{"secretsmanager", "Secrets Manager", secretslocal.Actions()},
		{"sns", "SNS", snslocal.Actions()},
		{"sqs", "SQS", sqslocal.Actions()},
		{"ssm", "SSM Parameter Store", ssmlocal.Actions()},
		{"sts", "STS", stslocal.Actions()},
	}
	for i := range out {
		ops := append([]string(nil), out[i].Operations...)
		sort.Strings(ops)
		out[i].Operations = ops
	}
	return out
}

// ServedOperationsTable is ServedOperations as the Markdown table docs/local.md shows.
func ServedOperationsTable() string {
	var b strings.Builder
	b.WriteString("| Service | Signing name | Operations served |\n|---|---|---|\n")
	for _, s := range ServedOperations() {
		b.WriteString("| " + s.Name + " | `" + s.Service + "` | " + strings.Join(s.Operations, ", ") + " |\n")
	}
	return b.String()
}
