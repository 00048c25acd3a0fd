package awslocal

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/apimodel"
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

// ServedOperationsTable is the Markdown table docs/local.md shows: per service, every
// operation of AWS's API model of it (apimodel), served or not, with the counts.
func ServedOperationsTable() string {
	tab, err := apimodel.Load()
	if err != nil {
		return "the API models cannot be read: " + err.Error() + "\n"
	}
	var b strings.Builder
	b.WriteString("| Service | Signing name | Protocol | Served | Operations served | Operations of the model not served |\n|---|---|---|---|---|---|\n")
	for _, s := range ServedOperations() {
		m := tab.Service(s.Service)
		if m == nil {
			b.WriteString("| " + s.Name + " | `" + s.Service + "` | (no model) | " + fmt.Sprint(len(s.Operations)) + " | " + strings.Join(s.Operations, ", ") + " | |\n")
			continue
		}
		var not []string
		for _, op := range m.Names() {
			if !served(s.Service, op) {
				not = append(not, op)
			}
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %d of %d | %s | %s |\n", s.Name, s.Service, m.Protocols[0], len(s.Operations), len(m.Operations),
			strings.Join(s.Operations, ", "), strings.Join(not, ", "))
	}
	fmt.Fprintf(&b, "\nThe models are botocore %s's (`internal/awslocal/testdata/apimodels`, `make apimodels`).\n", tab.Botocore)
	return b.String()
}
