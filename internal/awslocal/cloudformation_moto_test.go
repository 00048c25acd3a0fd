package awslocal_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awslocal"
)

// cfnTarget is one endpoint the CloudFormation scenarios run against.
type cfnTarget struct {
	name, url string
	cfn       *cloudformation.Client
	sqs       *sqs.Client
}

func newCFNTarget(t *testing.T, name, url string) cfnTarget {
	t.Helper()
	cfg := clientConfig(t, url, name == "moto")
	return cfnTarget{name: name, url: url, cfn: cloudformation.NewFromConfig(cfg), sqs: sqs.NewFromConfig(cfg)}
}

// settle waits for a stack to leave its _IN_PROGRESS status and returns it.
func (c cfnTarget) settle(ctx context.Context, stack string) (cfntypes.Stack, error) {
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, err := c.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
		if err != nil {
			return cfntypes.Stack{}, err
		}
		if st := out.Stacks[0]; !strings.HasSuffix(string(st.StackStatus), "_IN_PROGRESS") || time.Now().After(deadline) {
			return st, nil
		}
	}
}

// changeSet creates a change set and waits for it.
func (c cfnTarget) changeSet(ctx context.Context, in *cloudformation.CreateChangeSetInput) (*cloudformation.DescribeChangeSetOutput, error) {
	out, err := c.cfn.CreateChangeSet(ctx, in)
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		cs, err := c.cfn.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{ChangeSetName: out.Id})
		if err != nil || !strings.HasSuffix(string(cs.Status), "_IN_PROGRESS") && cs.Status != cfntypes.ChangeSetStatusCreatePending || time.Now().After(deadline) {
			return cs, err
		}
	}
}

func apiMessage(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	if err != nil {
		return "error"
	}
	return "ok"
}

func maskedParams(ps []cfntypes.Parameter) string {
	var out []string
	for _, p := range ps {
		out = append(out, aws.ToString(p.ParameterKey)+"="+aws.ToString(p.ParameterValue))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

const noEchoStack = `Parameters:
  Secret: {Type: String, NoEcho: true}
Resources:
  Topic: {Type: AWS::SNS::Topic}
`

// cfnScenarios are the CloudFormation edges of issue 33 and 26 run against both.
func cfnScenarios() []struct {
	name string
	run  func(ctx context.Context, c cfnTarget) (string, error)
} {
	secret := []cfntypes.Parameter{{ParameterKey: aws.String("Secret"), ParameterValue: aws.String("hunter2")}}
	importQueue := func(ctx context.Context, c cfnTarget, stack, body string) (string, error) {
		q, err := c.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(stack + "-legacy")})
		if err != nil {
			return "", err
		}
		cs, err := c.changeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String(stack), ChangeSetName: aws.String("i1"),
			ChangeSetType: cfntypes.ChangeSetTypeImport, TemplateBody: aws.String(body),
			ResourcesToImport: []cfntypes.ResourceToImport{{ResourceType: aws.String("AWS::SQS::Queue"), LogicalResourceId: aws.String("Queue"),
				ResourceIdentifier: map[string]string{"QueueUrl": aws.ToString(q.QueueUrl)}}}})
		if err != nil {
			return apiMessage(err), nil
		}
		if _, err := c.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{ChangeSetName: cs.ChangeSetId}); err != nil {
			return "", err
		}
		st, err := c.settle(ctx, stack)
		return fmt.Sprintf("change set %s %s; stack %s", cs.Status, cs.Changes[0].ResourceChange.Action, st.StackStatus), err
	}
	return []struct {
		name string
		run  func(ctx context.Context, c cfnTarget) (string, error)
	}{
		{"GetAtt of an attribute the type does not declare", func(ctx context.Context, c cfnTarget) (string, error) {
			_, err := c.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("d-getatt"),
				TemplateBody: aws.String("Resources:\n  Q: {Type: AWS::SQS::Queue}\n  T:\n    Type: AWS::SNS::Topic\n    Properties: {TopicName: !GetAtt Q.Name}\n")})
			return apiMessage(err), nil
		}},
		{"NoEcho in DescribeStacks", func(ctx context.Context, c cfnTarget) (string, error) {
			if _, err := c.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("d-noecho"), TemplateBody: aws.String(noEchoStack), Parameters: secret}); err != nil {
				return "", err
			}
			st, err := c.settle(ctx, "d-noecho")
			return maskedParams(st.Parameters), err
		}},
		{"NoEcho in DescribeChangeSet", func(ctx context.Context, c cfnTarget) (string, error) {
			cs, err := c.changeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("d-noecho-cs"), ChangeSetName: aws.String("c1"),
				ChangeSetType: cfntypes.ChangeSetTypeCreate, TemplateBody: aws.String(noEchoStack), Parameters: secret})
			if err != nil {
				return "", err
			}
			return maskedParams(cs.Parameters), nil
		}},
		{"IMPORT of an existing queue", func(ctx context.Context, c cfnTarget) (string, error) {
			return importQueue(ctx, c, "d-import", "Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n    DeletionPolicy: Retain\n")
		}},
		{"IMPORT without a DeletionPolicy", func(ctx context.Context, c cfnTarget) (string, error) {
			return importQueue(ctx, c, "d-import-nopolicy", "Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n")
		}},
		{"SignalResource of a resource that waits", func(ctx context.Context, c cfnTarget) (string, error) {
			if c.name == "cairn" {
				// the emulator's local default signals for what nothing local runs: here the
				// signal is the test's
				resp, err := http.Post(c.url+"/_local/cloudformation/signals", "application/json", strings.NewReader(`{"logicalId": "Wait", "signal": "NONE"}`))
				if err != nil {
					return "", err
				}
				resp.Body.Close()
			}
			if _, err := c.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("d-signal"), TemplateBody: aws.String(
				"Resources:\n  Wait:\n    Type: AWS::CloudFormation::WaitCondition\n    CreationPolicy:\n      ResourceSignal: {Count: 1, Timeout: PT1H}\n")}); err != nil {
				return "", err
			}
			_, err := c.cfn.SignalResource(ctx, &cloudformation.SignalResourceInput{StackName: aws.String("d-signal"), LogicalResourceId: aws.String("Wait"),
				UniqueId: aws.String("i-1"), Status: cfntypes.ResourceSignalStatusSuccess})
			if err != nil {
				return apiMessage(err), nil
			}
			st, err := c.settle(ctx, "d-signal")
			return string(st.StackStatus), err
		}},
		{"stack event ids are unique", func(ctx context.Context, c cfnTarget) (string, error) {
			if _, err := c.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("d-events"), TemplateBody: aws.String(
				"Resources:\n  A: {Type: AWS::SQS::Queue}\n  B: {Type: AWS::SQS::Queue}\n  C: {Type: AWS::SNS::Topic}\n")}); err != nil {
				return "", err
			}
			if _, err := c.settle(ctx, "d-events"); err != nil {
				return "", err
			}
			out, err := c.cfn.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String("d-events")})
			if err != nil {
				return "", err
			}
			ids := map[string]bool{}
			for _, ev := range out.StackEvents {
				ids[aws.ToString(ev.EventId)] = true
			}
			return fmt.Sprintf("unique %v", len(ids) == len(out.StackEvents)), nil
		}},
	}
}

// knownMotoCloudFormationDeviations are the scenarios above where moto 5.2 differs from
// AWS, with the documentation that says which side is right.
var knownMotoCloudFormationDeviations = map[string]deviation{
	"NoEcho in DescribeStacks": {aws: "Secret=****", why: "moto returns NoEcho values in clear",
		source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/parameters-section-structure.html (NoEcho: \"returns the parameter value masked as asterisks (*****) for any calls that describe the stack or stack events\")"},
	"NoEcho in DescribeChangeSet": {aws: "Secret=****", why: "moto returns NoEcho values in clear",
		source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/parameters-section-structure.html (NoEcho, as above)"},
	"IMPORT without a DeletionPolicy": {aws: "ValidationError: The following resources to import [Queue] must have DeletionPolicy attribute specified in the template.",
		why:    "moto imports a resource without a DeletionPolicy",
		source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/resource-import.html (\"Each resource to import must have a DeletionPolicy attribute\")"},
	"IMPORT of an existing queue": {aws: "change set CREATE_COMPLETE Import; stack IMPORT_COMPLETE",
		why:    "moto lists the change to import as an Add",
		source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_ResourceChange.html (Action Import) and https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/resource-import-new-stack.html (IMPORT_COMPLETE)"},
	"SignalResource of a resource that waits": {aws: "CREATE_COMPLETE", why: "moto does not implement SignalResource (an internal error)",
		source: "https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_SignalResource.html"},
}

// TestCloudFormationDifferentialAgainstMoto runs the CloudFormation scenarios against
// cairn's emulator and moto_server: they agree, or moto is documented to deviate from AWS
// and cairn does what AWS documents.
func TestCloudFormationDifferentialAgainstMoto(t *testing.T) {
	if testing.Short() {
		t.Skip("starts moto_server")
	}
	moto := newCFNTarget(t, "moto", startMoto(t))
	v := start(t, awslocal.Options{Logger: quiet(), AccountID: "123456789012", CloudFormation: awslocal.CloudFormationTimings{
		ResourceDelay: time.Millisecond, ChangeSetDelay: time.Millisecond}})
	cairn := newCFNTarget(t, "cairn", v.e.URL())
	ctx := context.Background()
	agreed, deviated := 0, 0
	for _, sc := range append(append(cfnScenarios(), cfnList(issue43CFNScenarios())...), cfnList(issue44CFNScenarios())...) {
		t.Run(sc.name, func(t *testing.T) {
			want, werr := sc.run(ctx, moto)
			got, gerr := sc.run(ctx, cairn)
			if gerr != nil {
				t.Fatalf("cairn: %v", gerr)
			}
			if d, ok := knownMotoCloudFormationDeviations[sc.name]; ok {
				if got != d.aws {
					t.Fatalf("cairn: %q; want what AWS documents, %q (%s)", got, d.aws, d.source)
				}
				if werr == nil && want == got {
					t.Logf("moto now agrees with AWS here (%q): remove the deviation", want)
				}
				t.Logf("known moto deviation: %s; moto: %q %v; AWS (and cairn): %q", d.why, want, werr, got)
				deviated++
				return
			}
			if werr != nil {
				t.Fatalf("moto: %v", werr)
			}
			if got != want {
				t.Fatalf("cairn and moto disagree:\ncairn: %s\nmoto:  %s", got, want)
			}
			agreed++
		})
	}
	t.Logf("CloudFormation differential against moto: %d agree, %d documented moto deviations", agreed, deviated)
}
